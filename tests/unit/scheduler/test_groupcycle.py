"""PodGroups (GenericWorkload) on the simulated cluster: the group cycle, GangScheduling's quorum,
kube v1.37.2's messages, PodGroup status and the group's queueing (kubesched.scheduler.groupcycle,
queue.groups). The expected strings are those docs/design/podgroups-upstream.md observed from
the real kube-scheduler v1.37.2."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from builders import make_node, make_pod, make_pod_group, make_priority_class
from kubesched.backends.sim.cluster import SimCluster
from kubesched.infra import features
from kubesched.plugins.defaultpreemption import DefaultPreemption
from unit.simkit import run

NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"


def member(name: str, group_name: str, cpu: str = "500m", *, labels: dict[str, str] | None = None,
           annotations: dict[str, str] | None = None, priority_class: str | None = None,
           affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    """A member of a scheduling.k8s.io PodGroup (as the simulated pods: 100Mi of memory)."""
    builder = make_pod(name).req(cpu=cpu, memory="100Mi").label(labels or {}).annotation(annotations or {}).group(group_name)
    if priority_class is not None:
        builder.priority_class(priority_class)
    if affinity is not None:
        builder.spec(affinity=affinity)
    return builder.manifest()


def run_groups(objects: list[dict[str, Any]], **kw: Any) -> Any:
    with features.gates(generic_workload=True):
        return run(objects, **kw)


def conditions(sim: Any, name: str) -> list[tuple[str, str, str]]:
    pg = sim.cluster.pod_groups[f"default/{name}"]
    return [(c.status, c.reason, c.message) for c in pg.status.conditions]


def first_messages(sim: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in sim.cluster.events:
        if e.reason == "FailedScheduling":
            out.setdefault(e.pod.split("/", 1)[1], e.message)
    return out


NODES = [
    make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(),
    make_node("n2").capacity(cpu="4").without("ephemeral-storage").manifest(),
]


def test_a_gang_that_fits_is_placed_whole_in_one_group_cycle() -> None:
    result, sim = run_groups([*NODES, make_pod_group("ga"), *(member(f"ga-{i}", "ga") for i in range(3))])
    assert result.pods_scheduled == 3 and not result.unschedulable
    assert conditions(sim, "ga") == [("True", "Scheduled", "")]
    assert sim.scheduler.metrics.group_attempts.get(("scheduled", "default-scheduler")) == 1
    assert not [e for e in sim.cluster.events if e.reason == "FailedScheduling"]
    assert {e.message for e in sim.cluster.events if e.reason == "Scheduled"} == {
        f"Successfully assigned default/ga-{i} to {result.placements[f'default/ga-{i}']}" for i in range(3)}


def test_a_gang_that_cannot_fit_is_placed_nowhere_with_kube_messages() -> None:
    result, sim = run_groups([*NODES, make_pod_group("gb"), *(member(f"gb-{i}", "gb", cpu="3") for i in range(3))])
    assert result.pods_scheduled == 0 and not sim.scheduler.cache.placed
    message = f"minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, {NO_VICTIMS}"
    assert first_messages(sim) == {
        "gb-0": f"pod group is unschedulable, {message}",
        "gb-1": f"pod group is unschedulable, {message}",
        "gb-2": "0/2 nodes are available: 2 Insufficient cpu.",
    }
    assert conditions(sim, "gb") == [("False", "Unschedulable", message)]
    # Every member's failed attempt counts as a pod's (kube's handleSchedulingFailure per member).
    group_attempts = sim.scheduler.metrics.group_attempts.get(("unschedulable", "default-scheduler"))
    assert group_attempts and sim.scheduler.metrics.attempts.get(("unschedulable", "default-scheduler")) == 3 * group_attempts
    gb0 = next(p for p in sim.cluster.pods.values() if p.metadata.name == "gb-0")
    (cond,) = [c for c in gb0.status.conditions if c.type == "PodScheduled"]
    assert (cond.status, cond.reason) == ("False", "Unschedulable")


def test_a_group_that_cannot_fit_retries_on_its_backoff_alone() -> None:
    _result, sim = run_groups([*NODES, make_pod_group("gb"), *(member(f"gb-{i}", "gb", cpu="3") for i in range(3))])
    times = sorted({e.time for e in sim.cluster.events if e.pod == "default/gb-2"})
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # 1, 2, 4, 8, 16 s doubling, in 1-second windows, capped at 10 x sqrt(3) = 17.3 s.
    assert gaps[:4] == [2.0, 3.0, 5.0, 9.0], times[:6]
    assert max(gaps) <= 18.0


def test_members_never_tried_get_the_group_message_without_preemption() -> None:
    _result, sim = run_groups([*NODES, make_pod_group("gc"), *(member(f"gc-{i}", "gc", cpu="8") for i in range(3))])
    assert first_messages(sim) == {
        "gc-0": "0/2 nodes are available: 2 Insufficient cpu.",
        "gc-1": "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining",
        "gc-2": "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining",
    }
    assert conditions(sim, "gc") == [
        ("False", "Unschedulable", f"minCount (3) cannot be satisfied: 0 scheduled, 2 remaining, {NO_VICTIMS}")]


def test_a_basic_group_places_every_member_that_fits() -> None:
    objects = [*NODES, make_pod_group("basic", None), member("b-0", "basic", cpu="3"), member("b-1", "basic", cpu="3"),
               member("b-2", "basic", cpu="3")]
    result, sim = run_groups(objects)
    assert result.pods_scheduled == 2
    assert conditions(sim, "basic") == [("True", "Scheduled", "")]
    _nothing, sim2 = run_groups([*NODES, make_pod_group("none", None), member("x-0", "none", cpu="8")])
    assert first_messages(sim2) == {"x-0": "0/2 nodes are available: 2 Insufficient cpu."}
    assert conditions(sim2, "none") == [
        ("False", "Unschedulable", f"minCount (1) cannot be satisfied: 0 scheduled, 0 remaining, {NO_VICTIMS}")]


def test_a_gang_waits_silently_for_its_last_member_and_then_goes_at_once() -> None:
    late = member("g-2", "g", annotations={"sim.kubesched.io/arrival": "30s"})
    result, sim = run_groups([*NODES, make_pod_group("g"), member("g-0", "g"), member("g-1", "g"), late])
    assert result.pods_scheduled == 3
    assert {sim.cluster.bound_at[p.metadata.uid] for p in sim.cluster.pods.values()} == {30.0}
    assert not [e for e in sim.cluster.events if e.reason == "FailedScheduling"]  # gated: no event, no condition
    assert all(not p.status.conditions or p.spec.node_name for p in sim.cluster.pods.values())


def test_members_wait_for_their_pod_group_to_appear() -> None:
    pg = make_pod_group("later", metadata={"annotations": {"sim.kubesched.io/arrival": "20s"}})
    result, sim = run_groups([*NODES, pg, *(member(f"l-{i}", "later") for i in range(3))])
    assert result.pods_scheduled == 3
    assert {sim.cluster.bound_at[p.metadata.uid] for p in sim.cluster.pods.values()} == {20.0}
    assert not [e for e in sim.cluster.events if e.reason == "FailedScheduling"]


def test_a_member_whose_priority_is_not_the_groups_fails_the_group_with_a_scheduler_error() -> None:
    objects = [*NODES, make_priority_class("high", 1000),
               make_pod_group("gp", priorityClassName="high"), *(member(f"gp-{i}", "gp") for i in range(3))]
    result, sim = run_groups(objects)
    message = "all pods in a single pod group should have the same priority as the pod group's priority, got 0 and 1000"
    assert result.pods_scheduled == 0 and set(first_messages(sim).values()) == {message}
    assert conditions(sim, "gp") == [("False", "SchedulerError", message)]
    gp0 = next(p for p in sim.cluster.pods.values() if p.metadata.name == "gp-0")
    assert [(c.reason, c.message) for c in gp0.status.conditions if c.type == "PodScheduled"] == [("SchedulerError", message)]


def test_min_count_below_the_size_binds_the_members_that_fit() -> None:
    objects = [*NODES, make_pod_group("gm", 2), *(member(f"gm-{i}", "gm", cpu="3") for i in range(3))]
    result, sim = run_groups(objects)
    assert result.pods_scheduled == 2
    assert conditions(sim, "gm") == [("True", "Scheduled", "")]
    assert first_messages(sim) == {"gm-2": "0/2 nodes are available: 2 Insufficient cpu."}


def test_without_the_gate_the_scheduling_group_is_not_read() -> None:
    result, _ = run([*NODES, *(member(f"g-{i}", "nowhere") for i in range(3))])
    assert result.pods_scheduled == 3


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"schedulingPolicy": {}}, 'spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'),
        ({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}},
         'spec.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`'),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "spec.schedulingPolicy.gang.minCount: Required value"),
    ],
)
def test_pod_groups_the_api_server_refuses_are_refused(spec: dict[str, Any], message: str) -> None:
    from kubesched.backends.sim.clusterinput import ManifestError
    from kubesched.backends.sim.manifests import load_objects

    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "bad"}, "spec": spec}
    with pytest.raises(ManifestError) as info:
        load_objects([pg])
    assert message in str(info.value)


def test_a_higher_priority_gang_preempts_what_stands_in_its_way() -> None:
    high = make_priority_class("high", 1000)
    low = [make_pod(f"low-{i}").req(cpu="3", memory="100Mi").node(f"n{i + 1}").manifest() for i in range(2)]
    gang = [make_pod_group("gh", 2, priorityClassName="high"),
            *(member(f"gh-{i}", "gh", cpu="3", priority_class="high", annotations={"sim.kubesched.io/arrival": "1s"})
              for i in range(2))]
    result, sim = run_groups([high, *NODES, *low, *gang])
    assert {result.placements[f"default/gh-{i}"] for i in range(2)} == {"n1", "n2"}
    assert sorted(result.preempted) == ["default/low-0", "default/low-1"]
    uid = sim.cluster.pod_groups["default/gh"].metadata.uid
    assert {e.message for e in sim.cluster.events if e.reason == "Preempted"} == {f"Preempted by podgroup {uid} on node cluster"}
    assert first_messages(sim) == {"gh-0": "0/2 nodes are available: 2 Insufficient cpu.",
                                   "gh-1": "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"}
    assert conditions(sim, "gh") == [("True", "Scheduled", "")]


def gang_preemption() -> list[dict[str, Any]]:
    """A gang of two that fits only once both low pods (one per node) are gone."""
    high = make_priority_class("high", 1000)
    low = [make_pod(f"low-{i}").req(cpu="3", memory="100Mi").node(f"n{i + 1}").manifest() for i in range(2)]
    gang = [make_pod_group("gh", 2, priorityClassName="high"),
            *(member(f"gh-{i}", "gh", cpu="3", priority_class="high", annotations={"sim.kubesched.io/arrival": "1s"})
              for i in range(2))]
    return [high, *NODES, *low, *gang]


def test_a_preempting_gang_waits_until_the_cache_sees_its_last_victim_go(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each deletion's API call returns at once but its watch event comes later, the later the
    # deletion (0.3 s, 0.6 s): when the first victim is seen gone the API calls are all done.
    # The gang stays held at PreEnqueue until the last is seen, then goes once and fits; let go
    # earlier it would find the second victim still running and delete it again.
    calls: list[str] = []
    real_delete = SimCluster.delete_pod

    async def lagging_delete(self: SimCluster, pi: Any, reason: str) -> None:
        calls.append(pi.key)
        sched: Any = self._sched()
        observe = sched.on_pod_delete
        lag = 0.3 * len(calls)
        sched.on_pod_delete = lambda uid: self.at(self.clock.now() + lag, lambda: observe(uid))
        try:
            await real_delete(self, pi, reason)
        finally:
            del sched.on_pod_delete

    gates: list[str] = []
    real_pre_enqueue = DefaultPreemption.pre_enqueue

    def recording_pre_enqueue(self: DefaultPreemption, pi: Any) -> Any:
        status = real_pre_enqueue(self, pi)
        if status is not None:
            gates.append(status.message())
        return status

    monkeypatch.setattr(SimCluster, "delete_pod", lagging_delete)
    monkeypatch.setattr(DefaultPreemption, "pre_enqueue", recording_pre_enqueue)
    result, sim = run_groups(gang_preemption())
    assert {result.placements[f"default/gh-{i}"] for i in range(2)} == {"n1", "n2"}
    assert sorted(calls) == ["default/low-0", "default/low-1"]  # each victim deleted once
    assert set(gates) == {"waiting for the preemption for this pod group to be finished"}
    metrics = sim.scheduler.metrics.group_attempts
    assert (metrics.get(("unschedulable", "default-scheduler")), metrics.get(("scheduled", "default-scheduler"))) == (1, 1)
    plugin = sim.scheduler.frameworks["default-scheduler"].instances["DefaultPreemption"]
    assert plugin.executor.preempting == {} and plugin.executor.deleting == {}


def test_a_failed_deletion_lets_the_held_gang_go_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # kube activates the preemptor's pods when a deletion fails: no deletion event will come to
    # let the gang go. The activation reaches the gang held at PreEnqueue; it preempts again.
    failures = [RuntimeError("apiserver said no")]
    real_delete = SimCluster.delete_pod

    async def failing_once(self: SimCluster, pi: Any, reason: str) -> None:
        if failures:
            raise failures.pop()
        await real_delete(self, pi, reason)

    monkeypatch.setattr(SimCluster, "delete_pod", failing_once)
    result, sim = run_groups(gang_preemption())
    assert {result.placements[f"default/gh-{i}"] for i in range(2)} == {"n1", "n2"}
    assert sorted(result.preempted) == ["default/low-0", "default/low-1"]
    metrics = sim.scheduler.metrics.group_attempts
    assert (metrics.get(("unschedulable", "default-scheduler")), metrics.get(("scheduled", "default-scheduler"))) == (2, 1)
    # Activated at once, not after a backoff or a five-minute flush.
    assert max(e.time for e in sim.cluster.events if e.reason == "Scheduled") < 5.0


def test_a_gang_preempts_a_pod_elsewhere_in_its_zone_that_its_anti_affinity_refuses() -> None:
    # Every candidate is taken off the pod index too before the group is placed: left there, the
    # pod on n2 kept the zone closed and no placement was found (kube preempts both; the kube
    # integration test compares).
    zone = "topology.kubernetes.io/zone"
    high = make_priority_class("high", 1000)
    nodes = [make_node(f"n{i}").capacity(cpu="4").without("ephemeral-storage").label({zone: "z0"}).manifest() for i in (1, 2)]
    low = [
        make_pod("low-full").req(cpu="3", memory="100Mi").node("n1").manifest(),
        make_pod("low-near").req(cpu="100m", memory="100Mi").label(app="noisy").node("n2").manifest(),
    ]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": zone}]}}
    gang = [make_pod_group("ga", 1, priorityClassName="high"),
            member("ga-0", "ga", cpu="2", priority_class="high", affinity=affinity,
                   annotations={"sim.kubesched.io/arrival": "1s"})]
    result, _ = run_groups([high, *nodes, *low, *gang])
    assert result.placements["default/ga-0"] == "n1"
    assert sorted(result.preempted) == ["default/low-full", "default/low-near"]


def test_a_gang_undone_on_its_nominated_nodes_leaves_them_as_they_were() -> None:
    # Members nominated to nodes (by an earlier preemption) are assumed there in turn; the next
    # member must not count an assumed one a second time as nominated. Counted twice, the group's
    # undo left its cpu on n1 and n2 for good, and the gang never fit again (the kube-apiserver
    # run of GangPreemptionBasic stalled so). kube drops a pod's nomination when it assumes it.
    nominated = {"a": "n1", "b": "n2"}
    members = [member(name, "g", cpu="3") for name in ("a", "b", "c")]
    for m in members[:2]:
        m["status"] = {"nominatedNodeName": nominated[m["metadata"]["name"]]}
    high = make_priority_class("high", 1000)
    later = (
        make_pod("later")
        .req(cpu="3", memory="100Mi")
        .arrival("60s")
        .spec(priorityClassName="high", nodeSelector={"kubernetes.io/hostname": "n1"})
        .manifest()
    )
    result, sim = run_groups([high, *NODES, make_pod_group("g"), *members, later])
    # c fits nowhere: the group is undone every time. A pod that outranks the members' nominations
    # then finds n1 as empty as it is.
    assert [result.placements[f"default/{m}"] for m in "abc"] == [None, None, None]
    assert result.placements["default/later"] == "n1"
    nominator = sim.scheduler.nominator  # the undo gave the members their nominations back
    assert {pi.pod.metadata.name: n for n, pods in nominator.by_node.items() for pi in pods.values()} == nominated
    table = sim.scheduler.cache.table
    for row in range(table.size):
        counted = sum((table.request_vector(p) for p in table.pods[row].values()), np.zeros_like(table.requested[row]))
        assert (table.requested[row] == counted).all(), table.names[row]


def test_a_gang_whose_members_may_not_preempt_says_so() -> None:
    high = make_priority_class("high-never", 1000, preemptionPolicy="Never")
    low = [make_pod(f"low-{i}").req(cpu="3", memory="100Mi").node(f"n{i + 1}").manifest() for i in range(2)]
    gang = [make_pod_group("gn", 2, priorityClassName="high-never"),
            *(member(f"gn-{i}", "gn", cpu="3", priority_class="high-never") for i in range(2))]
    result, sim = run_groups([high, *NODES, *low, *gang])
    assert result.pods_scheduled == 0 and not result.preempted
    assert conditions(sim, "gn") == [("False", "Unschedulable", "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
                                      "pod group preemption: not eligible due to preemptionPolicy=Never.")]
