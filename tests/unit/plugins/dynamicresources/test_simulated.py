"""DynamicResources end to end on the simulated cluster: claims written by hand as manifests are
allocated while their pods are placed, with kube-scheduler v1.37.2's messages when they cannot be."""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

from builders import make_device_class, make_node, make_pod, make_resource_claim
from builders.dra import make_resource_slice
from kubesched.api.dra import FINALIZER, RESOURCE_CLAIM, ResourceClaim
from kubesched.api.podinfo import PodInfo
from kubesched.backends.sim.cluster import SimCluster
from unit.simkit import run

NODES = [make_node(f"n{i}").capacity(cpu="4").label(name=f"n{i}").without("ephemeral-storage").manifest()
         for i in (1, 2)]
NOT_HELPFUL = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."


def stored(sim: Any, name: str) -> ResourceClaim:
    claim: ResourceClaim = sim.cluster.devices[RESOURCE_CLAIM][f"default/{name}"]
    return claim


def claimer(name: str, claim: str, **more: Any) -> dict[str, Any]:
    builder = make_pod(name).req(cpu="100m").resource_claim("gpu", claim=claim)
    if more.get("node_selector"):
        builder.node_selector(more["node_selector"])
    return builder.manifest()


def uid_of(sim: Any, name: str) -> str:
    return next(p.metadata.uid for p in sim.cluster.pods.values() if p.metadata.name == name)


def test_a_pod_with_a_named_claim_is_placed_and_the_claim_allocated_and_reserved() -> None:
    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n2-gpus", "n2", devices=1),
               make_resource_claim("c1"), claimer("trainer", "c1")]
    result, sim = run(objects)
    assert result.placements == {"default/trainer": "n2"}
    claim = stored(sim, "c1")
    assert FINALIZER in claim.metadata.finalizers
    allocation = claim.status.allocation
    assert allocation is not None
    assert [(r.request, r.driver, r.pool, r.device) for r in allocation.devices.results] == [
        ("device", "gpu.example.com", "n2", "gpu-0")]
    assert allocation.node_selector is not None
    assert allocation.allocation_timestamp is not None
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [("pods", "trainer", uid_of(sim, "trainer"))]
    # The scheduler's view (the assume cache) agrees with the cluster's, nothing is left in flight.
    tracked = sim.scheduler.dra.claims.get("default", "c1")
    assert tracked.status == claim.status
    assert list(sim.scheduler.dra.claims.in_flight()) == []


def test_two_pods_never_share_a_dedicated_device() -> None:
    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n1-gpus", "n1", devices=1),
               make_resource_claim("c1"), make_resource_claim("c2"), claimer("a", "c1"), claimer("b", "c2")]
    result, sim = run(objects)
    placed = {k: v for k, v in result.placements.items() if v}
    assert placed == {"default/a": "n1"}
    assert result.unschedulable == {"default/b": f"0/2 nodes are available: 2 cannot allocate all claims. {NOT_HELPFUL}"}
    assert stored(sim, "c2").status.allocation is None


def test_two_pods_sharing_one_claim_go_to_its_node_and_both_are_reserved() -> None:
    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n2-gpus", "n2", devices=1),
               make_resource_claim("shared"), claimer("a", "shared"), claimer("b", "shared")]
    result, sim = run(objects)
    assert result.placements == {"default/a": "n2", "default/b": "n2"}
    assert sorted(r.name for r in stored(sim, "shared").status.reserved_for) == ["a", "b"]


def test_missing_claim_and_class_keep_the_pod_pending_with_kubes_messages() -> None:
    objects = [*NODES, make_resource_slice("n1-gpus", "n1"), make_resource_claim("c1", device_class="tpu"),
               claimer("no-class", "c1"), claimer("no-claim", "nope")]
    result, _ = run(objects)
    assert result.unschedulable["default/no-class"] == (
        f"0/2 nodes are available: request device: device class tpu does not exist. {NOT_HELPFUL}")
    assert result.placements["default/no-claim"] is None
    assert result.unschedulable.get("default/no-claim", 'could not find ResourceClaim "default/nope"').endswith(
        'could not find ResourceClaim "default/nope"')


def test_an_allocated_claim_holds_the_pod_to_its_nodes() -> None:
    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n1-gpus", "n1"),
               make_resource_claim("c1"), claimer("first", "c1")]
    # The second pod shares the claim but may only go to n2: the claim's devices are on n1.
    later = make_pod("second").req(cpu="100m").resource_claim("gpu", claim="c1").node_selector(name="n2").arrival("5s")
    result, _ = run([*objects, later.manifest()])
    assert result.placements["default/first"] == "n1"
    assert result.placements["default/second"] is None
    assert result.unschedulable["default/second"] == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        f"1 resourceclaim not available on the node. {NOT_HELPFUL}")


def test_a_claim_allocated_elsewhere_and_reserved_for_nobody_is_deallocated_then_allocated_again() -> None:
    # The claim comes allocated on n1 (kubectl get -o yaml of a claim a finished pod left), and the
    # pod may only go to n2: PostFilter gives the devices back, the next attempt allocates on n2.
    claim = make_resource_claim("c1")
    claim["status"] = {"allocation": {
        "devices": {"results": [{"request": "device", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n1-gpus", "n1"), make_resource_slice("n2-gpus", "n2"),
               claim, claimer("mover", "c1", node_selector={"name": "n2"})]
    result, sim = run(objects)
    assert result.placements == {"default/mover": "n2"}
    allocation = stored(sim, "c1").status.allocation
    assert allocation is not None and [r.pool for r in allocation.devices.results] == ["n2"]


def test_prioritized_list_prefers_the_node_with_the_first_alternative() -> None:
    big = make_device_class("big")
    small = make_device_class("small")
    big["spec"] = {"selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "big"'}}]}
    small["spec"] = {"selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "small"'}}]}
    slices = []
    for node, model in (("n1", "small"), ("n2", "big")):
        rs = make_resource_slice(f"{node}-gpus", node, devices=1)
        rs["spec"]["devices"][0]["attributes"] = {"model": {"string": model}}
        slices.append(rs)
    claim = make_resource_claim("c1")
    claim["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "big"}, {"name": "small", "deviceClassName": "small"}]}]
    # n1 is emptier (NodeResourcesFit and BalancedAllocation prefer it slightly); the big GPU on n2 wins.
    filler = make_pod("filler").req(cpu="1").node("n2").manifest()
    result, sim = run([*NODES, big, small, *slices, claim, filler, claimer("trainer", "c1")])
    assert result.placements["default/trainer"] == "n2"
    allocation = stored(sim, "c1").status.allocation
    assert allocation is not None and [r.request for r in allocation.devices.results] == ["gpu/big"]


def test_the_pods_own_claims_decide_not_an_equal_pods() -> None:
    # Two identical pods (same owner) with different claims: signatures are not used for them.
    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n1-gpus", "n1", devices=1),
               make_resource_slice("n2-gpus", "n2", devices=1), make_resource_claim("c1"), make_resource_claim("c2")]
    pods = [claimer("a", "c1"), claimer("b", "c2")]
    for pod in pods:
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                               "uid": "rs-uid", "controller": True}]
    result, sim = run([*objects, *copy.deepcopy(pods)])
    assert sorted(result.placements.values()) == ["n1", "n2"]
    pools = sorted(r.pool for c in ("c1", "c2") for r in stored(sim, c).status.allocation.devices.results)  # type: ignore[union-attr]
    assert pools == ["n1", "n2"]


def test_a_pod_with_claims_is_nominated_to_its_node_before_prebind_and_a_pod_without_is_not() -> None:
    # kube's NominatedNodeNameForExpectation: DynamicResources' pre-flight says PreBind has work,
    # so the binding cycle writes status.nominatedNodeName first (binding then clears it).
    seen: list[tuple[str, str | None]] = []
    nominate = SimCluster.set_nominated_node

    def recording(cluster: SimCluster, pi: PodInfo, node: str | None) -> None:
        seen.append((pi.pod.metadata.name, node))
        nominate(cluster, pi, node)

    objects = [*NODES, make_device_class("gpu"), make_resource_slice("n2-gpus", "n2", devices=1),
               make_resource_claim("c1"), claimer("trainer", "c1"), make_pod("web").req(cpu="100m").manifest()]
    with mock.patch.object(SimCluster, "set_nominated_node", recording):
        result, sim = run(objects)
    assert result.placements == {"default/trainer": "n2", "default/web": "n1"}
    assert seen == [("trainer", "n2")]
    assert all(not p.status.nominated_node_name for p in sim.cluster.pods.values())
