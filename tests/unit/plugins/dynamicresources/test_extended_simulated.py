"""Extended resources backed by DRA, end to end on the simulated cluster (kube v1.37.2's
DRAExtendedResource): a pod requesting `example.com/gpu` that a DeviceClass maps is placed on a
node without allocatable for it but with devices, the claim the scheduler creates for it is
allocated and reserved, the pod's status names it, and the resourceclaim controller deletes it
when the pod finishes; a node whose allocatable has the resource serves it as before."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

from builders import make_device_class, make_node, make_pod
from builders.dra import make_resource_claim, make_resource_slice
from kubesched.api.dra import FINALIZER, RESOURCE_CLAIM, ResourceClaim, ResourceClaimWriteError
from kubesched.api.objects import Pod
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.backends.sim.cluster import SimCluster
from kubesched.devices.extendedclaim import EXTENDED_RESOURCE_CLAIM_ANNOTATION
from unit.simkit import run

GPU = "example.com/gpu"
NOT_HELPFUL = "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."


def _node(name: str, **allocatable: str) -> dict[str, Any]:
    return make_node(name).capacity(cpu="4", **allocatable).label(name=name).without("ephemeral-storage").manifest()


def _gpu_pod(name: str, count: str = "1") -> Any:
    return make_pod(name).req({"cpu": "100m", GPU: count}).limits({GPU: count})


def _pod(sim: Any, name: str) -> Pod:
    return next(p for p in sim.cluster.pods.values() if p.metadata.name == name)


def _claims(sim: Any) -> dict[str, ResourceClaim]:
    return dict(sim.cluster.devices.get(RESOURCE_CLAIM, {}))


def test_a_pod_is_placed_on_the_node_with_devices_and_its_created_claim_allocated_and_reserved() -> None:
    objects = [_node("n1"), _node("n2"), make_device_class("gpu", GPU), make_resource_slice("n2-gpus", "n2", devices=2),
               _gpu_pod("trainer").manifest()]
    result, sim = run(objects)
    assert result.placements == {"default/trainer": "n2"}
    pod = _pod(sim, "trainer")
    ((key, claim),) = _claims(sim).items()
    name = claim.metadata.name
    assert key == f"default/{name}" and name.startswith("trainer-extended-resources-")
    assert claim.metadata.generate_name == "trainer-extended-resources-"
    assert claim.metadata.annotations == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    (owner,) = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Pod", "trainer", pod.metadata.uid, True)
    assert FINALIZER in claim.metadata.finalizers
    # The container's requests sorted: cpu, example.com/gpu, so the request is the second one.
    (request,) = claim.spec.devices.requests
    assert request.name == "container-0-request-1"
    assert request.exactly is not None and (request.exactly.device_class_name, request.exactly.count) == ("gpu", 1)
    allocation = claim.status.allocation
    assert allocation is not None
    assert [(r.request, r.pool, r.device) for r in allocation.devices.results] == [("container-0-request-1", "n2", "gpu-0")]
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [("pods", "trainer", pod.metadata.uid)]
    status = pod.status.extended_resource_claim_status
    assert status is not None and status.resource_claim_name == name
    assert [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings] == [
        ("c", GPU, "container-0-request-1")]
    # The scheduler's view agrees, and nothing stays in flight (the temporary uid included).
    assert sim.scheduler.dra.claims.get("default", name).status == claim.status
    assert list(sim.scheduler.dra.claims.in_flight()) == []


def test_a_node_with_allocatable_for_the_resource_serves_it_without_a_claim() -> None:
    objects = [_node("n1"), _node("n2", **{GPU: "2"}), make_device_class("gpu", GPU), _gpu_pod("plugin").manifest()]
    result, sim = run(objects)
    assert result.placements == {"default/plugin": "n2"}
    assert _claims(sim) == {}
    assert _pod(sim, "plugin").status.extended_resource_claim_status is None


def test_devices_run_out_and_the_next_pod_reads_kubes_message() -> None:
    objects = [_node("n1"), _node("n2"), make_device_class("gpu", GPU), make_resource_slice("n2-gpus", "n2", devices=1),
               _gpu_pod("a").manifest(), _gpu_pod("b").arrival("1s").manifest()]
    result, sim = run(objects)
    assert result.placements == {"default/a": "n2", "default/b": None}
    assert result.unschedulable == {"default/b": f"0/2 nodes are available: 2 cannot allocate all claims. {NOT_HELPFUL}"}
    assert [c.metadata.owner_references[0].name for c in _claims(sim).values()] == ["a"]


def test_two_devices_for_one_container_and_the_user_claim_beside_them() -> None:
    objects = [_node("n1"), _node("n2"), make_device_class("gpu", GPU), make_resource_slice("n1-gpus", "n1", devices=3),
               make_resource_claim("own"),
               _gpu_pod("both", "2").resource_claim("mine", claim="own").manifest()]
    result, sim = run(objects)
    assert result.placements == {"default/both": "n1"}
    claims = _claims(sim)
    own = claims.pop("default/own")
    ((_, extended),) = claims.items()
    assert own.status.allocation is not None and extended.status.allocation is not None
    devices = [r.device for r in own.status.allocation.devices.results + extended.status.allocation.devices.results]
    assert sorted(devices) == ["gpu-0", "gpu-1", "gpu-2"]  # never one device twice
    assert [r.request for r in extended.status.allocation.devices.results] == ["container-0-request-1"] * 2


def test_the_claim_is_deleted_when_the_pod_finishes() -> None:
    objects = [_node("n1"), _node("n2"), make_device_class("gpu", GPU), make_resource_slice("n2-gpus", "n2", devices=1),
               _gpu_pod("job").duration("10s").manifest(), _gpu_pod("next").arrival("20s").manifest()]
    result, sim = run(objects)
    # The first pod's device came free when it finished: the second got it, under a claim of its own.
    assert result.placements == {"default/job": "n2", "default/next": "n2"}
    assert _pod(sim, "job").status.phase == "Succeeded"
    ((_, claim),) = _claims(sim).items()
    assert claim.metadata.owner_references[0].name == "next"
    assert sim.scheduler.dra.claims.find("default", _pod(sim, "job").status.extended_resource_claim_status.resource_claim_name) is None  # type: ignore[union-attr]


# --- kube's dynamicresources_test.go cases for extended resources ---------------------------------


def _failed_events(sim: Any) -> list[str]:
    return [e.message for e in sim.cluster.events if e.reason == "FailedScheduling"]


def test_a_class_that_maps_nothing_leaves_the_resource_to_noderesourcesfit() -> None:
    # non-DRA-extended-resource-name-with-zero-allocatable: DynamicResources skips the pod.
    objects = [_node("n1", **{GPU: "0"}), _node("n2"), make_device_class("gpu"), make_resource_slice("n1-gpus", "n1"),
               _gpu_pod("p").manifest()]
    result, sim = run(objects)
    assert result.placements == {"default/p": None}
    assert result.unschedulable["default/p"].startswith("0/2 nodes are available: 2 Insufficient example.com/gpu.")
    assert _claims(sim) == {}


def test_the_implicit_name_of_a_class_and_two_containers() -> None:
    # implicit-extended-resource-name-two-containers-with-resources: one request per container.
    implicit = "deviceclass.resource.kubernetes.io/gpu"
    pod = make_pod("p").req({"cpu": "100m", implicit: "1"}).limits({implicit: "1"}).manifest()
    second = dict(pod["spec"]["containers"][0], name="d")
    second["resources"] = {"requests": {implicit: "2"}, "limits": {implicit: "2"}}
    pod["spec"]["containers"].append(second)
    result, sim = run([_node("n1"), make_device_class("gpu"), make_resource_slice("n1-gpus", "n1", devices=3), pod])
    assert result.placements == {"default/p": "n1"}
    ((_, claim),) = _claims(sim).items()
    assert [(r.name, r.exactly.count) for r in claim.spec.devices.requests if r.exactly] == [
        ("container-0-request-1", 1), ("container-1-request-0", 2)]
    status = _pod(sim, "p").status.extended_resource_claim_status
    assert status is not None
    assert [(m.container_name, m.request_name) for m in status.request_mappings] == [
        ("c", "container-0-request-1"), ("d", "container-1-request-0")]


def test_a_claim_of_an_earlier_attempt_is_deleted_and_the_pod_tries_anew() -> None:
    # extended-resource-name-with-resources-has-claim: Filter refuses every node with it,
    # PostFilter deletes it ("deletion of ResourceClaim completed"). Here it holds the node's one
    # device (a PreBind that failed after writing the allocation): its deletion gives the device
    # back and moves the pod, whose next attempt makes its own claim.
    pod = _gpu_pod("p").uid("p-uid").manifest()
    stale = make_resource_claim("p-extended-resources-old")
    stale["metadata"]["annotations"] = {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
    stale["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "p-uid",
                                             "controller": True}]
    stale["status"] = {"allocation": {
        "devices": {"results": [{"request": "device", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    result, sim = run([_node("n1"), make_device_class("gpu", GPU), make_resource_slice("n1-gpus", "n1", devices=1),
                       stale, pod])
    assert result.placements == {"default/p": "n1"}
    claims = _claims(sim)
    assert "default/p-extended-resources-old" not in claims
    ((_, claim),) = claims.items()
    assert claim.status.allocation is not None and claim.metadata.name.startswith("p-extended-resources-")
    assert _failed_events(sim)[:1] == [
        "0/1 nodes are available: 1 cannot schedule extended resource claim. deletion of ResourceClaim completed, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."]


def test_a_failed_create_is_prebinds_error_and_nothing_stays_in_flight() -> None:
    # extended-resource-name-claim-creation-failure.
    async def refuse(cluster: SimCluster, claim: ResourceClaim) -> ResourceClaim:
        raise ResourceClaimWriteError("claim creation errors")

    objects = [_node("n1"), make_device_class("gpu", GPU), make_resource_slice("n1-gpus", "n1"), _gpu_pod("p").manifest()]
    with mock.patch.object(SimCluster, "create_resource_claim", refuse):
        result, sim = run(objects)
    assert result.placements == {"default/p": None}
    assert "create claim for extended resources default/: claim creation errors" in _failed_events(sim)[0]
    assert _claims(sim) == {}
    assert list(sim.scheduler.dra.claims.in_flight()) == []


def test_a_failed_pod_status_patch_deletes_the_created_claim_and_the_next_attempt_binds() -> None:
    # extended-resource-name-with-resources-fail-patch, then extended-resource-name-bind-failure's
    # Unreserve: the claim written to the API server is deleted.
    patch = SimCluster.set_extended_resource_claim_status
    calls: list[str] = []

    async def fail_once(cluster: SimCluster, pi: PodInfo, status: Any) -> None:
        calls.append(status.resource_claim_name)
        if len(calls) == 1:
            raise ResourceClaimWriteError("patch error")
        await patch(cluster, pi, status)

    objects = [_node("n1"), make_device_class("gpu", GPU), make_resource_slice("n1-gpus", "n1", devices=1),
               _gpu_pod("p").manifest()]
    with mock.patch.object(SimCluster, "set_extended_resource_claim_status", fail_once):
        result, sim = run(objects)
    assert result.placements == {"default/p": "n1"}
    assert "update pod default/p ExtendedResourceClaimStatus: patch error" in _failed_events(sim)[0]
    first, second = calls
    assert first != second
    ((key, claim),) = _claims(sim).items()
    assert key == f"default/{second}" and claim.status.allocation is not None
    assert [r.device for r in claim.status.allocation.devices.results] == ["gpu-0"]  # the first claim gave it back
    assert list(sim.scheduler.dra.claims.in_flight()) == []


def test_the_claim_goes_with_its_deleted_pod() -> None:
    objects = [_node("n1"), make_device_class("gpu", GPU), make_resource_slice("n1-gpus", "n1"), _gpu_pod("p").manifest()]
    result, sim = run(objects)
    assert result.placements == {"default/p": "n1"} and len(_claims(sim)) == 1
    asyncio.run(sim.cluster.delete_pod(make_pod_info(_pod(sim, "p")), "deleted"))
    assert _claims(sim) == {}
    assert sim.scheduler.dra.claims.list() == []
