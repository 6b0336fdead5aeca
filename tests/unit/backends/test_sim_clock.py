"""The simulator's clock jumps over quiet spans: long arrivals and durations cost no more than short
ones, the scrapes taken at once are the scrapes the timers would have taken, and the figures of the
built-in scenarios do not move."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from builders import make_node, make_pod
from kubesched.api.objects import Node
from kubesched.backends.sim.engine import SimResult, Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.backends.sim.scenarios import load_scenario
from kubesched.backends.sim.usagemodel import UsageModel, _percentile_of_rows, parse_usage
from kubesched.config.parse import default_config
from kubesched.infra.clock import VirtualClock
from kubesched.scheduler.configload import load_config

YEAR = 365 * 86400.0
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "profiles"


def annotated(obj: dict, **annotations: str) -> dict:
    obj["metadata"].setdefault("annotations", {}).update({f"sim.kubesched.io/{k.replace('_', '-')}": v
                                                         for k, v in annotations.items()})
    return obj


def timed_run(objects: list[dict], config_path: Path | None = None) -> tuple[SimResult, Simulation, float]:
    cfg = load_config(config_path) if config_path else default_config()
    sim = Simulation(load_objects(objects), cfg)
    started = time.perf_counter()
    result = asyncio.run(asyncio.wait_for(sim.run(), timeout=60))
    return result, sim, time.perf_counter() - started


# --- the clock ------------------------------------------------------------------------------------


def test_next_time_can_skip_one_timer_without_changing_the_order() -> None:
    clock = VirtualClock()
    ran: list[str] = []
    periodic = clock.call_at(10, lambda: ran.append("scrape"))
    clock.call_at(10, lambda: ran.append("arrival"))
    clock.call_at(30, lambda: ran.append("later"))
    assert clock.peek() is periodic
    assert clock.next_time(skip=periodic) == 10.0
    cancelled = clock.call_at(5, lambda: ran.append("never"))
    cancelled.cancel()
    assert clock.next_time() == 10.0
    assert clock.next_time(skip=clock.call_at(40, lambda: None)) == 10.0  # not the next one: no effect
    clock.advance_to(10)
    clock.run_due()
    assert ran == ["scrape", "arrival"]  # put back where it was: still first at 10
    assert clock.next_time(skip=None) == 30.0
    only = VirtualClock()
    alone = only.call_at(1, lambda: None)
    assert only.next_time(skip=alone) is None and only.peek() is alone


# --- quiet spans cost nothing -------------------------------------------------------------------------


def test_a_pod_arriving_in_a_year_takes_no_time() -> None:
    objects = [
        make_node("n").capacity(cpu="4").without("ephemeral-storage").manifest(),
        make_pod("now").req(cpu="1", memory="100Mi").manifest(),
        annotated(make_pod("late").req(cpu="1", memory="100Mi").manifest(), arrival="8760h"),
    ]
    result, sim, wall = timed_run(objects)
    assert wall < 10  # stepping 15 s at a time took minutes
    assert result.pods_scheduled == 2
    assert result.virtual_seconds == YEAR
    # Every scrape is there, 0, 15, ... up to the arrival's (taken after it, as the timers order them).
    assert sim.usage.samples == round(YEAR / 15) + 1
    assert sim.usage.times[-1] == YEAR
    # The node ran one 1-CPU pod all year: a quarter busy, never hot.
    assert result.node_cpu_util_p99 == 25.0 and result.hotspot_node_seconds == 0.0


def test_a_six_month_duration_takes_no_time() -> None:
    half_year = 4380 * 3600.0
    objects = [
        make_node("n").capacity(cpu="4").without("ephemeral-storage").manifest(),
        annotated(make_pod("job").req(cpu="3", memory="100Mi").manifest(), duration="4380h"),
        annotated(make_pod("short").req(cpu="1", memory="100Mi").manifest(), arrival="1h", duration="30m"),
    ]
    result, sim, wall = timed_run(objects)
    assert wall < 10
    assert result.pods_scheduled == 2
    assert result.virtual_seconds == half_year
    uid = {sp.pod.metadata.name: sp.pod.metadata.uid for sp in sim.input.pods}
    assert sim.cluster.ran_on == {uid["job"]: "n", uid["short"]: "n"}
    # 3 of 4 cpus busy for six months, all 4 for half an hour of it.
    assert result.node_cpu_util_p99 == 75.0 and result.hotspot_node_seconds == 1800.0


def test_a_year_with_a_load_aware_profile_is_refused_up_front() -> None:
    from kubesched.backends.sim.limits import LimitError

    objects = [
        make_node("n").without("ephemeral-storage").manifest(),
        annotated(make_pod("late").req(cpu="100m", memory="100Mi").manifest(), arrival="8760h"),
    ]
    started = time.perf_counter()
    with pytest.raises(LimitError, match="refreshInterval 30s that is 1051231 usage refreshes, over the simulator's "
                                         "limit of 200000"):
        timed_run(objects, EXAMPLES / "load-aware.yaml")
    assert time.perf_counter() - started < 10


def test_many_arrivals_over_a_day_are_quick() -> None:
    nodes = [annotated(make_node("n").capacity(cpu="32", memory="128Gi").without("ephemeral-storage").manifest(), count="50")]
    pods = [annotated(make_pod("p").req(cpu="100m", memory="100Mi").manifest(), count="1000", arrival_interval="86", duration="1h")]
    result, _sim, wall = timed_run(nodes + pods)
    assert result.pods_scheduled == 1000
    assert result.virtual_seconds == pytest.approx(999 * 86 + 3600)
    assert wall < 30


# --- the scrapes taken at once are the scrapes the timers take ------------------------------------------


def _nodes() -> list[Node]:
    return [make_node(n).capacity(memory="8Gi").without("pods", "ephemeral-storage").obj() for n in ("a", "b", "c")]


def _script(model: UsageModel, clock: VirtualClock, step: bool) -> None:
    """Pods start and stop at odd times; between them the model is brought forward either timer by
    timer, or with catch_up as the engine does."""
    events = [(7.0, "start", "p1", "a"), (100.0, "start", "p2", "b"), (4000.0, "stop", "p1", ""),
              (4003.0, "start", "p3", "c"), (90000.0, "stop", "p2", "")]
    model.start()
    for when, what, name, where in [*events, (100000.0, "end", "", "")]:
        if step:
            while (nxt := clock.next_time()) is not None and nxt < when:
                clock.advance_to(nxt)
                clock.run_due()
        else:
            clock.run_due()
            while (taken := model.catch_up(when)) is not None:
                clock.advance_to(taken)
        clock.advance_to(when)
        if what == "start":
            model.pod_started(make_pod(name).uid(name).req(cpu="1500m", memory="1Gi").obj(), where)
        elif what == "stop":
            model.pod_stopped(name)
    model.stop()


@pytest.mark.parametrize("background", [None, "diurnal:30%,period=1h", "bursty:10%,peak=90%,mean=5m"])
def test_catch_up_takes_the_scrapes_the_timers_would(background: str | None) -> None:
    specs = {"b": (parse_usage(background, "cpu"), None)} if background else None
    runs = []
    for step in (True, False):
        clock = VirtualClock()
        model = UsageModel(clock, _nodes(), seed=3, background=specs)
        _script(model, clock, step)
        runs.append(model)
    stepped, jumped = runs
    assert np.array_equal(stepped.times, jumped.times)
    assert np.array_equal(stepped.cpu, jumped.cpu)
    assert np.array_equal(stepped.memory, jumped.memory)
    assert np.allclose(stepped.cpu_counter, jumped.cpu_counter, rtol=1e-12, atol=1e-9)
    assert stepped.summary() == jumped.summary()
    if background is None:
        # Steady usage: after each change, one scrape is sampled anew (two if mid-interval); the rest repeat it.
        assert jumped._rows <= 2 * 5 + 2 and jumped.samples == stepped.samples > 6000
    else:
        assert jumped._rows == jumped.samples  # varying usage: every scrape sampled


def test_weighted_percentile_is_numpys_to_the_bit() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        rows = rng.choice(np.linspace(0, 1, 13), size=(int(rng.integers(1, 9)), int(rng.integers(1, 6))))
        if rng.random() < 0.5:
            rows = rng.random(rows.shape)
        weights = rng.integers(0, 5, len(rows))
        weights[int(rng.integers(len(rows)))] += 1
        for q in (0.0, 50.0, 99.0, 100.0):
            assert _percentile_of_rows(rows, weights, q) == float(np.percentile(np.repeat(rows, weights, axis=0), q))


# --- the built-in scenarios' figures -----------------------------------------------------------------


def _figures(result: SimResult) -> tuple[object, ...]:
    return (result.pods_scheduled, result.pods_unschedulable, result.cycles, result.virtual_seconds,
            result.hotspot_node_seconds, result.node_cpu_util_p99, result.node_cpu_util_stddev,
            result.pending_seconds_p99)


def test_web_batch_figures_are_unchanged() -> None:
    result = asyncio.run(Simulation(load_scenario("web-batch"), default_config()).run())
    # 3749 cycles: kube v1.37's queueing hints retry a pod NodeResourcesFit rejected on every
    # deletion of a bound pod (was 863 when any registered event moved the pool, 366 bound then).
    assert _figures(result) == (375, 3, 3749, 2100.0, 29190.0, 98.17, 24.88, 600.0)


def test_flink_burst_load_aware_figures_are_the_readmes() -> None:
    result = asyncio.run(Simulation(load_scenario("flink-burst"), load_config(EXAMPLES / "load-aware.yaml")).run())
    assert _figures(result) == (1386, 0, 1386, 8454.0, 2715.0, 74.44, 16.96, 0.0)


def test_a_long_run_can_be_cancelled_promptly() -> None:
    """Ctrl-C under asyncio.run cancels the task: the run must reach an await often, even while it
    samples a long span of varying usage with no scheduling in it."""
    objects = [annotated(make_node("n").without("ephemeral-storage").manifest(), count="50", background_cpu="diurnal:30%,period=1h"),
               annotated(make_pod("late").req(cpu="100m", memory="100Mi").manifest(), arrival="720h")]
    sim = Simulation(load_objects(objects), default_config())

    async def main() -> float:
        task = asyncio.create_task(sim.run())
        await asyncio.sleep(0.3)
        cancelled_at = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.perf_counter() - cancelled_at

    assert asyncio.run(main()) < 1.0
    assert 0 < sim.usage.samples < 172_000  # it was stopped part way


def test_stuck_pods_are_not_retried_for_nothing_through_a_long_quiet_span() -> None:
    """300 pods that fit nowhere wait a month for one late arrival. kube retries them every 5
    minutes; with no cluster event between, each retry would fail the same way, so the simulator
    skips them (8,640 pointless rounds of 300 cycles took many minutes)."""
    stuck = [make_pod(f"big-{i}").req(cpu="64", memory="100Mi").manifest() for i in range(300)]
    late = annotated(make_pod("late").req(cpu="1", memory="100Mi").manifest(), arrival="720h")
    result, _, wall = timed_run([make_node("n").capacity(cpu="4").without("ephemeral-storage").manifest(), *stuck, late])
    assert wall < 10
    assert result.placements["default/late"] == "n"
    assert result.pods_unschedulable == 300
    (message,) = set(result.unschedulable.values())
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: ")
    # Retried when something happened (the late pod's arrival and binding), not 8,640 times.
    assert result.cycles < 300 * 5


def test_stuck_pods_still_get_their_chance_when_the_cluster_changes() -> None:
    """A node joining later is an event: the pool's pods move and are placed at once."""
    stuck = [make_pod(f"big-{i}").req(cpu="3", memory="100Mi").manifest() for i in range(3)]
    late_node = annotated(make_node("late-node").capacity(cpu="4").without("ephemeral-storage").manifest(), arrival="240h")
    objects = [make_node("n").capacity(cpu="4").without("ephemeral-storage").manifest(), *stuck]
    result_before, _, _ = timed_run(objects)
    assert result_before.pods_scheduled == 1
    result, _, wall = timed_run([*objects, late_node])
    assert wall < 10
    assert result.pods_scheduled == 2
