"""OpportunisticBatching (kube v1.37): signatures, hints, and when a pod takes a whole cycle."""

from __future__ import annotations

import asyncio

import pytest

from builders import make_node, make_pod
from kubesched.backends.sim.cluster import SimCluster
from kubesched.infra import features
from kubesched.infra.clock import VirtualClock
from kubesched.scheduler.configload import load_config_text
from kubesched.scheduler.core import Scheduler

NO_DEFAULT_SPREAD = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List, defaultConstraints: []}
"""
DEFAULTS = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _run(config: str, pods: list, nodes: int = 200, *, gap: float = 0.0, gate: bool = True) -> tuple[Scheduler, SimCluster]:
    async def go() -> tuple[Scheduler, SimCluster]:
        clock = VirtualClock()
        sim = SimCluster(clock)
        with features.gates(opportunistic_batching=gate):
            sched = Scheduler(load_config_text(config, "test"), sim, clock, seed=1)
            for i in range(nodes):
                n = make_node(f"n{i:03d}").capacity(cpu="4").obj()
                sim.nodes[n.metadata.name] = n
                sched.on_node_add(n)
            for p in pods:
                sim.create_pod(p)
                while sched.schedule_one():
                    pass
                await sched.drain_bindings()
                clock.advance_to(clock.now() + gap)
        return sched, sim

    return asyncio.run(go())


def _batched(sched: Scheduler) -> int:
    return sum(b.batched for b in sched._batches.values())


def _nodes(sim: SimCluster) -> list[str]:
    return [p.spec.node_name for p in sorted(sim.pods.values(), key=lambda p: p.metadata.name)]


def test_identical_pods_after_the_first_take_the_next_nodes_of_its_scoring() -> None:
    sched, sim = _run(NO_DEFAULT_SPREAD, [make_pod(f"p{i:02d}").req(cpu="1").obj() for i in range(12)])
    assert _batched(sched) == 11
    placed = _nodes(sim)
    assert all(placed) and len(set(placed)) == 12  # each hint is a node the first pod's cycle scored, one each


def test_without_the_gate_every_pod_takes_a_whole_cycle() -> None:
    sched, sim = _run(NO_DEFAULT_SPREAD, [make_pod(f"p{i:02d}").req(cpu="1").obj() for i in range(6)], gate=False)
    assert _batched(sched) == 0 and all(_nodes(sim))


def test_the_default_profile_signs_no_pod() -> None:
    # PodTopologySpread's system default constraints make every pod unsignable, as upstream.
    sched, _ = _run(DEFAULTS, [make_pod(f"p{i:02d}").req(cpu="1").obj() for i in range(6)])
    assert _batched(sched) == 0


def test_a_pod_of_another_signature_takes_a_whole_cycle_and_starts_a_new_batch() -> None:
    pods = [
        make_pod("a0").req(cpu="1").obj(),
        make_pod("a1").req(cpu="1").obj(),
        make_pod("b0").req(cpu="2").obj(),
        make_pod("b1").req(cpu="2").obj(),
    ]
    sched, _ = _run(NO_DEFAULT_SPREAD, pods)
    assert _batched(sched) == 2  # a1 on a0's list, b1 on b0's


def test_a_kept_list_older_than_half_a_second_is_not_used() -> None:
    sched, _ = _run(NO_DEFAULT_SPREAD, [make_pod(f"p{i}").req(cpu="1").obj() for i in range(4)], gap=0.6)
    assert _batched(sched) == 0


def test_a_node_the_last_pod_filled_is_passed_over() -> None:
    # One host port per node: the node a pod took no longer fits the next, which takes the next best.
    sched, sim = _run(NO_DEFAULT_SPREAD, [make_pod(f"w{i}").image("pause").host_port(80).obj() for i in range(10)], nodes=10)
    assert _batched(sched) == 9
    assert sorted(_nodes(sim)) == [f"n{i:03d}" for i in range(10)]


@pytest.mark.parametrize("spec", [
    {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}},
    {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
                                    "labelSelector": {"matchLabels": {"a": "b"}}}]},
])
def test_pods_whose_placement_depends_on_other_pods_are_not_signed(spec: dict[str, object]) -> None:
    sched, _ = _run(NO_DEFAULT_SPREAD, [make_pod(f"p{i}").req(cpu="1").label(a="b").spec(**spec).obj() for i in range(4)])
    assert _batched(sched) == 0
