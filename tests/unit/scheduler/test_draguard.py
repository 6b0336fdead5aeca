"""Pods whose extended resources only DRA would serve stay pending on the simulated cluster, with a
message naming the missing part, everywhere the node choice is made (scheduler.draguard); pods
without DRA are placed as before. Pods' own ResourceClaims are DynamicResources' (its tests are in
tests/unit/plugins/dynamicresources/)."""

from __future__ import annotations

from typing import Any

from builders import make_device_class, make_node, make_pod, make_pod_group, make_resource_claim
from kubesched.infra import features
from unit.simkit import run

NEEDS_DRA = "which needs the DynamicResources plugin: kubesched does not implement it yet"
NOT_HELPFUL = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
GPU = "example.com/gpu"

NODES = [make_node(f"n{i}").capacity(cpu="4").without("ephemeral-storage").manifest() for i in (1, 2)]
# n2 has GPUs from a device plugin (its allocatable), n1 has none.
MIXED = [make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(),
         make_node("n2").capacity({"cpu": "4", GPU: "2"}).without("ephemeral-storage").manifest()]


def gpu_pod(name: str, count: int = 1) -> dict[str, Any]:
    return make_pod(name).req({"cpu": "100m", GPU: str(count)}).limits({GPU: str(count)}).manifest()


def failed(sim: Any, name: str) -> list[str]:
    return [e.message for e in sim.cluster.events if e.reason == "FailedScheduling" and e.pod == f"default/{name}"]


def condition(sim: Any, name: str) -> tuple[str, str, str]:
    pod = next(p for p in sim.cluster.pods.values() if p.metadata.name == name)
    (cond,) = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    return cond.status, cond.reason, cond.message


def test_an_extended_resource_a_device_class_maps_stays_pending_where_no_node_has_it() -> None:
    result, sim = run([*NODES, make_device_class("gpu", GPU), gpu_pod("cuda")])
    message = (f'0/2 nodes are available: pod uses dynamic resource allocation (extended resource "{GPU}" of DeviceClass '
               f'"gpu"), {NEEDS_DRA}. {NOT_HELPFUL}')
    assert result.unschedulable == {"default/cuda": message}
    assert condition(sim, "cuda") == ("False", "Unschedulable", message)


def test_the_implicit_name_of_every_device_class_is_dras() -> None:
    pod = make_pod("implicit").req({"cpu": "100m", "deviceclass.resource.kubernetes.io/gpu": "1"}).manifest()
    result, _ = run([*NODES, make_device_class("gpu"), pod])
    assert '(extended resource "deviceclass.resource.kubernetes.io/gpu" of DeviceClass "gpu")' in result.unschedulable[
        "default/implicit"]


def test_an_extended_resource_no_device_class_maps_is_placed_as_before() -> None:
    objects = [*MIXED, make_device_class("gpu", "example.com/other"), gpu_pod("cuda"), gpu_pod("greedy", 3)]
    result, _ = run(objects)
    assert result.placements == {"default/cuda": "n2", "default/greedy": None}
    assert result.unschedulable["default/greedy"] == f"0/2 nodes are available: 2 Insufficient example.com/gpu. {NOT_HELPFUL}"
    without_classes, _ = run([*MIXED, gpu_pod("cuda"), gpu_pod("greedy", 3)])
    assert without_classes.placements == result.placements
    assert without_classes.unschedulable == result.unschedulable


def test_a_device_plugins_node_still_serves_a_resource_dra_also_maps() -> None:
    # kube's shouldDelegateResourceToDRA: a node with the resource in its allocatable serves it
    # itself; only the others would need DRA.
    result, sim = run([*MIXED, make_device_class("gpu", GPU), gpu_pod("cuda"), gpu_pod("greedy", 3)])
    assert result.placements == {"default/cuda": "n2", "default/greedy": None}
    assert result.unschedulable["default/greedy"] == (
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 node(s) didn't satisfy plugin(s) [DynamicResources]. "
        f"{NOT_HELPFUL}")
    explanation = sim.scheduler.explain("default", "greedy")
    groups = {(g["plugin"], g["reason"]): g["nodes"] for g in explanation["filter"]["rejected"]}
    assert groups == {("PreFilter", "node(s) didn't satisfy plugin(s) [DynamicResources]"): ["n1"],
                      ("NodeResourcesFit", "Insufficient example.com/gpu"): ["n2"]}


def test_identical_pods_never_go_where_dra_would_be_needed() -> None:
    # n1 is the emptiest node (the best score) but has no device plugin: OpportunisticBatching's
    # next-best hint must not take a pod there either.
    nodes = [make_node("n1").capacity(cpu="64").without("ephemeral-storage").manifest(),
             *(make_node(f"n{i}").capacity({"cpu": "4", GPU: "4"}).without("ephemeral-storage").manifest() for i in (2, 3))]
    pods = [gpu_pod(f"cuda-{i}") for i in range(8)]
    result, _ = run([*nodes, make_device_class("gpu", GPU), *pods])
    assert sorted(node or "" for node in result.placements.values()) == ["n2"] * 4 + ["n3"] * 4


def test_a_device_class_created_later_applies_to_the_pods_after_it() -> None:
    late_class = make_device_class("gpu", GPU, annotations={"sim.kubesched.io/arrival": "10s"})
    later = make_pod("later").req({"cpu": "100m", GPU: "3"}).limits({GPU: "3"}).arrival("20s").manifest()
    _result, sim = run([*MIXED, late_class, gpu_pod("early", 3), later])
    assert failed(sim, "early")[0].startswith("0/2 nodes are available: 2 Insufficient example.com/gpu.")
    assert failed(sim, "later")[0].startswith(
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 node(s) didn't satisfy plugin(s) [DynamicResources].")


def test_no_victim_is_evicted_for_a_pod_whose_claim_no_node_can_allocate() -> None:
    # Without its claim, the pod preempts one of the low pods; with it, no node has a device
    # (DynamicResources: cannot allocate all claims, unresolvable), so preemption cannot help.
    low = [make_pod(f"low-{i}").req(cpu="3", memory="100Mi").node(f"n{i}").manifest() for i in (1, 2)]
    high = (make_pod("trainer").req(cpu="3", memory="100Mi").priority(1000).resource_claim("gpu", claim="shared-gpu")
            .arrival("1s").manifest())
    result, _ = run([*NODES, *low, make_resource_claim("shared-gpu"), high])
    assert not result.preempted and result.placements["default/trainer"] is None


def test_no_victim_is_evicted_for_a_gang_with_a_member_whose_claim_cannot_be_allocated() -> None:
    # As test_groupcycle's gang that preempts both low pods, with one member that claims a device.
    low = [make_pod(f"low-{i}").req(cpu="3", memory="100Mi").node(f"n{i + 1}").manifest() for i in range(2)]
    gang = [make_pod_group("gh", 2, priorityClassName="priority-1000"),
            make_pod("gh-0").req(cpu="3", memory="100Mi").group("gh").priority(1000).arrival("1s").manifest(),
            make_pod("gh-1").req(cpu="3", memory="100Mi").group("gh").priority(1000).arrival("1s")
            .resource_claim("gpu", claim="shared-gpu").manifest()]
    with features.gates(generic_workload=True):
        result, sim = run([*NODES, *low, make_resource_claim("shared-gpu"), *gang])
    assert not result.preempted and not any(result.placements[f"default/gh-{i}"] for i in range(2))
    pg = sim.cluster.pod_groups["default/gh"]
    assert [(c.status, c.reason) for c in pg.status.conditions] == [("False", "Unschedulable")]
