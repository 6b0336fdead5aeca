"""The scheduler end to end on the simulated cluster: cycles, messages, events, queueing, binding."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_node, make_pod, make_priority_class
from kubesched.scheduler.observer import _best_few
from unit.sample_plugins import HoldAtPermit
from unit.simkit import profile_config, run


def test_places_pods_and_posts_scheduled_events():
    result, sim = run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_node("n2").without("ephemeral-storage").manifest(),
            make_pod("a").req(cpu="100m", memory="100Mi").manifest(),
            make_pod("b").req(cpu="100m", memory="100Mi").manifest(),
        ]
    )
    assert result.pods_scheduled == 2 and result.pods_unschedulable == 0
    scheduled = [e for e in sim.cluster.events if e.reason == "Scheduled"]
    assert {e.message for e in scheduled} == {
        f"Successfully assigned default/{p} to {result.placements['default/' + p]}" for p in ("a", "b")
    }


def test_kube_format_failure_message_event_and_condition():
    objects = [
        make_node("small").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("gpu").without("ephemeral-storage").taints([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]).manifest(),
        make_node("cordoned").without("ephemeral-storage").unschedulable().manifest(),
        make_pod("resident").req(cpu="1500m", memory="100Mi").node("small").manifest(),
        make_pod("big").req(cpu="1", memory="100Mi").manifest(),
    ]
    result, sim = run(objects)
    message = result.unschedulable["default/big"]
    assert message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable."
    )
    # Only the small node could be helped by preemption, and its resident has no lower priority.
    assert message.endswith(
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )
    failed = [e for e in sim.cluster.events if e.reason == "FailedScheduling"]
    assert failed and failed[-1].type == "Warning" and failed[-1].message == message
    big = next(p for p in sim.cluster.pods.values() if p.metadata.name == "big")
    (cond,) = [c for c in big.status.conditions if c.type == "PodScheduled"]
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", message)


def test_no_nodes():
    result, _ = run([make_pod("a").req(cpu="100m", memory="100Mi").manifest()])
    assert result.unschedulable["default/a"] == "no nodes available to schedule pods"


def test_pod_waits_until_a_completing_pod_frees_the_node():
    objects = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("first").req(cpu="1", memory="100Mi").duration("60s").manifest(),
        make_pod("second").req(cpu="1", memory="100Mi").arrival("1s").manifest(),
    ]
    result, sim = run(objects)
    assert result.placements == {"default/first": "n1", "default/second": "n1"}
    record = sim.scheduler.recorder.latest["default/second"]
    assert record.attempt >= 2 and record.time >= 60


def test_preemption_evicts_lower_priority_and_places_preemptor():
    objects = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_pod("low-1").req(cpu="1", memory="100Mi").priority(1).manifest(),
        make_pod("low-2").req(cpu="1", memory="100Mi").priority(1).manifest(),
        make_pod("high").req(cpu="1", memory="100Mi").arrival("5s").priority(100).manifest(),
    ]
    result, sim = run(objects)
    assert result.placements["default/high"] == "n1"
    assert len(result.preempted) == 1  # one victim is enough: the minimal set
    assert sum(1 for v in result.placements.values() if v) == 2
    assert sim.cluster.event_counts["Preempted"] == 1


def test_preemption_policy_never_does_not_evict():
    never = make_priority_class("polite", 100, preemptionPolicy="Never")
    objects = [
        never,
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("low").req(cpu="1", memory="100Mi").priority(1).manifest(),
        make_pod("high").req(cpu="1", memory="100Mi").arrival("5s").priority_class("polite").manifest(),
    ]
    result, _ = run(objects)
    assert result.preempted == [] and result.placements["default/high"] is None
    assert "not eligible due to preemptionPolicy=Never" in result.unschedulable["default/high"]


def test_other_schedulers_pods_and_gated_pods_are_left_alone():
    objects = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_pod("mine").req(cpu="100m", memory="100Mi").manifest(),
        make_pod("theirs").req(cpu="100m", memory="100Mi").scheduler("other-scheduler").manifest(),
        make_pod("gated").req(cpu="100m", memory="100Mi").gate("example.com/wait").manifest(),
        make_pod("prebound").req(cpu="100m", memory="100Mi").node("n1").manifest(),
    ]
    result, sim = run(objects)
    assert set(result.placements) == {"default/mine", "default/gated"}
    # Reported as the cluster shows it (the PodScheduled condition below), not with the plugin's
    # PreEnqueue status, which the scheduler keeps (kube-scheduler only logs it).
    assert result.unschedulable == {"default/gated": "Scheduling is blocked due to non-empty scheduling gates"}
    gated = next(p for p in sim.cluster.pods.values() if p.metadata.name == "gated")
    assert [(c.type, c.status, c.reason, c.message) for c in gated.status.conditions] == [
        ("PodScheduled", "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
    ]
    assert sim.scheduler.pending_reason(gated.metadata.uid, "default/gated") == ("waiting for scheduling gates: [example.com/wait]", True)
    assert result.pods_gated == 1


def test_two_profiles_each_schedule_their_own_pods():
    config = profile_config(
        {"schedulerName": "default-scheduler"},
        {
            "schedulerName": "bin-packer",
            # As in real bin-packing setups: BalancedAllocation would pull toward emptier nodes.
            "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
        },
    )
    objects = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        make_node("n3").without("ephemeral-storage").manifest(),
    ]
    objects += [make_pod(f"pack-{i}").req(cpu="500m", memory="100Mi").scheduler("bin-packer").manifest() for i in range(4)]
    result, _ = run(objects, config)
    nodes = {result.placements[f"default/pack-{i}"] for i in range(4)}
    assert len(nodes) == 1  # MostAllocated packs onto one node
    spread, _ = run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_node("n2").without("ephemeral-storage").manifest(),
            make_node("n3").without("ephemeral-storage").manifest(),
        ]
        + [make_pod(f"p-{i}").req(cpu="500m", memory="100Mi").manifest() for i in range(3)]
    )
    assert len(set(spread.placements.values())) == 3  # LeastAllocated spreads


def test_user_plugins_by_module_path_in_per_node_form():
    config = profile_config(
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "filter": {"enabled": [{"name": "unit.sample_plugins:EvenOnly"}]},
                "score": {"enabled": [{"name": "unit.sample_plugins:PreferHighest", "weight": 50}]},
            },
        }
    )
    objects = [make_node(f"n{i}").without("ephemeral-storage").manifest() for i in range(1, 9)] + [
        make_pod("a").req(cpu="100m", memory="100Mi").manifest()
    ]
    result, sim = run(objects, config)
    assert result.placements["default/a"] == "n8"
    record = sim.scheduler.recorder.latest["default/a"]
    assert ("EvenOnly", "node(s) had an odd name", 4) in record.rejections


def test_permit_wait_times_out_then_unreserves_and_retries():
    HoldAtPermit.reserved.clear()
    HoldAtPermit.unreserved.clear()
    config = profile_config(
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "reserve": {"enabled": [{"name": "unit.sample_plugins:HoldAtPermit"}]},
                "permit": {"enabled": [{"name": "unit.sample_plugins:HoldAtPermit"}]},
            },
        }
    )
    result, sim = run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_pod("waiter").req(cpu="100m", memory="100Mi").label(permit="wait").manifest(),
            make_pod("ok").req(cpu="100m", memory="100Mi").manifest(),
        ],
        config,
    )
    assert result.placements["default/ok"] == "n1"
    assert result.placements["default/waiter"] is None
    assert HoldAtPermit.unreserved.count("default/waiter") >= 1
    # Nothing is left counted on the node for the rejected pod.
    table = sim.scheduler.cache.table
    assert table.requested[table.row_of("n1"), table.resource_index["pods"]] == 1


def test_reserve_and_permit_rejections_unreserve():
    HoldAtPermit.reserved.clear()
    HoldAtPermit.unreserved.clear()
    config = profile_config(
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "reserve": {"enabled": [{"name": "unit.sample_plugins:HoldAtPermit"}]},
                "permit": {"enabled": [{"name": "unit.sample_plugins:HoldAtPermit"}]},
            },
        }
    )
    result, sim = run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_pod("r").req(cpu="100m", memory="100Mi").label(reserve="fail").manifest(),
            make_pod("d").req(cpu="100m", memory="100Mi").label(permit="deny").manifest(),
        ],
        config,
    )
    # kube reports both as a FitError over the node the pod was assumed on.
    assert result.unschedulable["default/r"] == "0/1 nodes are available: 1 reserve refused."
    assert result.unschedulable["default/d"] == "0/1 nodes are available: 1 denied at permit."
    assert "default/r" in HoldAtPermit.unreserved and "default/d" in HoldAtPermit.unreserved
    assert not sim.scheduler.cache.table.requested.any()


def test_failed_bind_is_forgotten_and_retried_never_bound_twice(monkeypatch):
    from kubesched.backends.sim.cluster import SimCluster
    from kubesched.framework.status import Status

    original = SimCluster.bind
    calls: dict[str, int] = {}

    async def flaky(self, pi, node):
        calls[pi.key] = calls.get(pi.key, 0) + 1
        if calls[pi.key] == 1:
            return Status.error("Internal error occurred: etcd timeout")
        return await original(self, pi, node)

    monkeypatch.setattr(SimCluster, "bind", flaky)
    result, sim = run(
        [
            make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
            make_pod("a").req(cpu="600m", memory="100Mi").manifest(),
            make_pod("b").req(cpu="600m", memory="100Mi").manifest(),
        ]
    )
    assert calls["default/a"] == 2
    assert sum(1 for v in result.placements.values() if v) == 1
    assert sim.cluster.binds == 1
    assert sim.scheduler.stats.bind_failures >= 1


def test_a_failed_bind_is_reported_like_any_failed_attempt(monkeypatch):
    # One failure path: the event carries kube's wrapped Bind error, the PodScheduled condition is
    # set, and the pod returns through backoff and binds on the retry.
    from kubesched.backends.sim.cluster import SimCluster
    from kubesched.framework.status import Status

    original = SimCluster.bind
    conditions: list[tuple[str, str]] = []

    async def flaky(self, pi, node):
        if not conditions:
            conditions.append(("bind", ""))
            return Status.error("Internal error occurred: etcd timeout")
        current = self.pods[pi.uid]
        conditions.extend((c.reason, c.message) for c in current.status.conditions if c.type == "PodScheduled")
        return await original(self, pi, node)

    monkeypatch.setattr(SimCluster, "bind", flaky)
    result, sim = run([make_node("n1").without("ephemeral-storage").manifest(), make_pod("a").req(cpu="100m", memory="100Mi").manifest()])
    assert result.placements == {"default/a": "n1"}
    message = 'running Bind plugin "DefaultBinder": Internal error occurred: etcd timeout'
    assert [(e.reason, e.message) for e in sim.cluster.events] == [
        ("FailedScheduling", message),
        ("Scheduled", "Successfully assigned default/a to n1"),
    ]
    assert conditions == [("bind", ""), ("SchedulerError", message)]  # an error, not a rejection
    assert sim.scheduler.stats.bind_failures == 1 and sim.scheduler.stats.errors == 1


def test_bind_of_a_deleted_pod_is_not_requeued():
    from kubesched.backends.sim.cluster import SimCluster

    async def vanish(self, pi, node):
        self.pods.pop(pi.uid, None)
        self._sched().on_pod_delete(pi.uid)
        return await SimCluster.bind.__wrapped__(self, pi, node) if hasattr(SimCluster.bind, "__wrapped__") else None

    import kubesched.backends.sim.cluster as cluster_mod

    original = cluster_mod.SimCluster.bind
    try:
        cluster_mod.SimCluster.bind = vanish  # type: ignore[method-assign]
        _result, sim = run(
            [make_node("n1").without("ephemeral-storage").manifest(), make_pod("a").req(cpu="100m", memory="100Mi").manifest()]
        )
    finally:
        cluster_mod.SimCluster.bind = original  # type: ignore[method-assign]
    assert not sim.scheduler.queue.pods
    assert not sim.scheduler.cache.placed


@pytest.mark.parametrize("seed", [0, 7])
def test_same_seed_same_placements(seed):
    objects = [make_node(f"n{i}").without("ephemeral-storage").manifest() for i in range(20)] + [
        make_pod(f"p{i}").req(cpu="100m", memory="100Mi").manifest() for i in range(60)
    ]
    first, _ = run(objects, seed=seed)
    second, _ = run(objects, seed=seed)
    assert first.placements == second.placements


def test_ties_are_broken_by_the_seed():
    objects = [make_node(f"n{i}").without("ephemeral-storage").manifest() for i in range(20)] + [
        make_pod("p").req(cpu="100m", memory="100Mi").manifest()
    ]
    chosen = {run(objects, seed=s)[0].placements["default/p"] for s in range(10)}
    assert len(chosen) > 1


@settings(max_examples=300, deadline=None)
@given(totals=st.lists(st.integers(0, 5), min_size=1, max_size=60), k=st.integers(1, 5))
def test_the_best_few_recorded_are_the_highest_totals_first_lowest_index_among_equals(totals, k):
    array = np.array(totals, dtype=np.int64)
    k = min(k, array.size)
    ties = np.flatnonzero(array == array.max())
    expected = sorted(range(array.size), key=lambda i: (-totals[i], i))[:k]
    assert _best_few(array, ties, k).tolist() == expected


async def test_the_loop_is_paced_after_each_cycle_and_stops_while_paced():
    """Scheduler.run awaits `pace(stop)` after every cycle (the kube backend's room for writes):
    no pod is popped while it waits, and stopping ends the loop."""
    import asyncio

    from builders import make_node, make_pod
    from kubesched.backends.sim.cluster import SimCluster
    from kubesched.backends.sim.manifests import load_objects
    from kubesched.config.parse import parse_config_text
    from kubesched.infra.clock import VirtualClock
    from kubesched.scheduler.core import Scheduler
    from unit.simkit import config_text

    clock = VirtualClock()
    sim = SimCluster(clock)
    sched = Scheduler(parse_config_text(config_text(), "config.yaml"), sim, clock, seed=1)
    sim.scheduler = sched
    loaded = load_objects(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            *(make_pod(f"p{i}").req(cpu="100m", memory="100Mi").manifest() for i in range(4)),
        ]
    )
    for n in loaded.nodes:
        sched.on_node_add(n)
    for sp in loaded.pods:
        sim.create_pod(sp.pod)
    stop = asyncio.Event()
    room = asyncio.Event()
    cycles_when_paced: list[int] = []

    async def pace(given: asyncio.Event) -> None:
        assert given is stop
        cycles_when_paced.append(sched.queue.scheduling_cycle)
        if len(cycles_when_paced) == 2:
            await room.wait()  # the backend is full: the loop waits here

    loop = asyncio.ensure_future(sched.run(stop, pace=pace))
    for _ in range(50):
        await asyncio.sleep(0)
    assert cycles_when_paced == [1, 2]  # one pace per cycle; the third pod waits
    room.set()
    for _ in range(50):
        await asyncio.sleep(0)
    assert cycles_when_paced == [1, 2, 3, 4]
    stop.set()
    await asyncio.wait_for(loop, 1)
