"""The simulated cluster's resourceclaim controller: claims made from templates (named, owned and
annotated as kube-controller-manager makes them) and recorded in the pod's status, a missing
template's event, reservations of pods bound without the scheduler, and claims released,
deallocated and deleted when their pods finish or go."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from builders import make_node, make_pod
from builders.dra import make_claim_template, make_device_class, make_resource_claim
from kubesched.api.dra import (
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
)
from kubesched.api.podinfo import make_pod_info
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.manifests import load_objects
from kubesched.backends.sim.resourceclaims import POD_CLAIM_ANNOTATION, ResourceClaimController, generate_name
from kubesched.infra.clock import VirtualClock
from unit.simkit import run


class _Watch:
    """Records what reaches the scheduler, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_"):
            raise AttributeError(name)
        return lambda *args: self.seen.append((name, args))

    def kinds(self) -> list[str]:
        return [name for name, _ in self.seen]


def _cluster(*objects: dict[str, Any]) -> tuple[SimCluster, _Watch, list[Any]]:
    """A simulated cluster with a recording scheduler, the input's DRA objects created, and the
    input's pods (not created yet)."""
    loaded = load_objects([make_node("n1").capacity(cpu="8").manifest(), *objects])
    cluster = SimCluster(VirtualClock())
    watch = _Watch()
    cluster.connect(watch)  # type: ignore[arg-type]
    cluster.claims = ResourceClaimController(cluster, upcoming={sp.pod.metadata.uid for sp in loaded.pods})
    for resource, obj, _ in loaded.devices:
        cluster.add_device_object(resource, obj)
    return cluster, watch, [sp.pod for sp in loaded.pods]


def _claims(cluster: SimCluster) -> dict[str, ResourceClaim]:
    return cluster.devices.get(RESOURCE_CLAIM, {})


def _gpu_pod(name: str = "train", entry: str = "gpu", template: str = "one-gpu") -> dict[str, Any]:
    return make_pod(name).req(cpu="1").resource_claim(entry, template=template).manifest()


# --- naming ---------------------------------------------------------------------------------------


def test_generate_name_is_pod_and_entry() -> None:
    assert generate_name("train", "gpu") == "train-gpu-"


def test_a_long_generate_name_cuts_both_parts_in_proportion() -> None:
    # 60 + 3 + 2 = 65 characters: the pod keeps 60*57//65 = 52, the entry 3*57//65 = 2, no trailing hyphen.
    assert generate_name("a" * 60, "gpu") == "a" * 52 + "-gp"
    assert len(generate_name("p" * 200, "c" * 40)) <= 57


# --- claims from templates ------------------------------------------------------------------------


def test_a_template_entry_gets_a_claim_owned_by_the_pod_and_recorded_in_its_status() -> None:
    template = make_claim_template("one-gpu")
    template["spec"]["metadata"] = {"labels": {"team": "ml"}, "annotations": {"note": "from-template"}}
    cluster, watch, (pod,) = _cluster(make_device_class("gpu"), template, _gpu_pod())
    cluster.create_pod(pod)
    (claim,) = _claims(cluster).values()
    meta = claim.metadata
    assert meta.name.startswith("train-gpu-") and len(meta.name) == len("train-gpu-") + 5
    assert meta.generate_name == "train-gpu-"
    assert meta.namespace == "default"
    assert meta.labels == {"team": "ml"}
    assert meta.annotations == {"note": "from-template", POD_CLAIM_ANNOTATION: "gpu"}
    (owner,) = meta.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller) == ("v1", "Pod", "train", pod.metadata.uid, True)
    assert claim.spec == cluster.devices[RESOURCE_CLAIM_TEMPLATE]["default/one-gpu"].spec.spec
    assert meta.uid and meta.resource_version and meta.creation_timestamp == "1970-01-01T00:00:00Z"
    stored = cluster.pods[pod.metadata.uid]
    assert [(s.name, s.resource_claim_name) for s in stored.status.resource_claim_statuses] == [("gpu", meta.name)]
    # The scheduler sees the pod, then its claim, then the pod updated with the claim's name.
    assert watch.kinds()[-3:] == ["on_pod_add", "on_resource_claim", "on_pod_update"]
    assert watch.seen[-1][1][0] is stored and watch.seen[-3][1][0] is not stored


def test_entries_are_recorded_sorted_and_a_named_claim_is_left_alone() -> None:
    pod = (make_pod("p").resource_claim("zeta", template="one-gpu").resource_claim("alpha", template="one-gpu")
           .resource_claim("shared", claim="shared-gpu").manifest())
    cluster, _, (obj,) = _cluster(make_device_class("gpu"), make_claim_template("one-gpu"),
                                  make_resource_claim("shared-gpu"), pod)
    cluster.create_pod(obj)
    statuses = cluster.pods[obj.metadata.uid].status.resource_claim_statuses
    assert [s.name for s in statuses] == ["alpha", "zeta"]
    assert len(_claims(cluster)) == 3  # the named claim, and one per template entry


def test_names_repeat_from_run_to_run_and_two_pods_never_share_one() -> None:
    objects = [make_device_class("gpu"), make_claim_template("one-gpu"), _gpu_pod("a"), _gpu_pod("b")]
    first, _, pods = _cluster(*objects)
    again, _, pods_again = _cluster(*objects)
    for cluster, created in ((first, pods), (again, pods_again)):
        for pod in created:
            cluster.create_pod(pod)
    assert sorted(_claims(first)) == sorted(_claims(again))
    assert len(_claims(first)) == 2


def test_a_missing_template_leaves_the_pod_without_a_claim_and_says_why() -> None:
    cluster, watch, (pod,) = _cluster(_gpu_pod(template="absent"))
    cluster.create_pod(pod)
    assert not _claims(cluster)
    assert not cluster.pods[pod.metadata.uid].status.resource_claim_statuses
    (event,) = cluster.events
    assert (event.pod, event.type, event.reason) == ("default/train", "Warning", "FailedResourceClaimCreation")
    assert event.message == ('PodResourceClaim gpu: resource claim template "absent": '
                             'resourceclaimtemplate.resource.k8s.io "absent" not found')
    assert watch.kinds()[-1] == "on_pod_add"


def test_a_template_created_later_gets_the_waiting_pod_its_claim() -> None:
    cluster, _, (pod,) = _cluster(_gpu_pod())
    cluster.create_pod(pod)
    assert not _claims(cluster)
    template = load_objects([make_claim_template("one-gpu")]).devices[0][1]
    cluster.add_device_object(RESOURCE_CLAIM_TEMPLATE, template)
    (claim,) = _claims(cluster).values()
    assert cluster.pods[pod.metadata.uid].status.resource_claim_statuses[0].resource_claim_name == claim.metadata.name


def test_the_simulation_creates_claims_and_a_pod_on_a_node_without_devices_waits() -> None:
    result, sim = run([make_node("n1").capacity(cpu="8").manifest(), make_device_class("gpu"),
                       make_claim_template("one-gpu"), _gpu_pod(), make_pod("cpu-only").req(cpu="1").manifest()])
    assert result.placements == {"default/train": None, "default/cpu-only": "n1"}
    assert result.unschedulable["default/train"] == ("0/1 nodes are available: 1 cannot allocate all claims. preemption: "
                                                     "0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    (claim,) = _claims(sim.cluster).values()
    (pod,) = [p for p in sim.cluster.pods.values() if p.metadata.name == "train"]
    assert pod.status.resource_claim_statuses[0].resource_claim_name == claim.metadata.name


# --- release ------------------------------------------------------------------------------------


def _allocate(cluster: SimCluster, key: str, *pods: Any) -> None:
    """What DynamicResources' PreBind writes: an allocation, reserved for the pods."""
    claim = _claims(cluster)[key]
    refs = [ResourceClaimConsumerReference(resource="pods", name=p.metadata.name, uid=p.metadata.uid) for p in pods]
    status = msgspec.structs.replace(claim.status, allocation=AllocationResult(), reserved_for=refs)
    _claims(cluster)[key] = msgspec.structs.replace(claim, status=status)


def _bind(cluster: SimCluster, pod: Any) -> None:
    asyncio.run(cluster.bind(make_pod_info(cluster.pods[pod.metadata.uid]), "n1"))


def _running_with_generated_claim() -> tuple[SimCluster, _Watch, Any, str]:
    """A pod bound with its claim (made from a template) allocated and reserved for it."""
    cluster, watch, (pod,) = _cluster(make_device_class("gpu"), make_claim_template("one-gpu"), _gpu_pod())
    cluster.create_pod(pod)
    (key,) = _claims(cluster)
    _allocate(cluster, key, pod)
    _bind(cluster, pod)
    return cluster, watch, pod, key


def test_a_finished_pod_releases_deallocates_and_deletes_its_generated_claim() -> None:
    cluster, watch, pod, key = _running_with_generated_claim()
    before = len(watch.seen)
    cluster.complete(pod.metadata.uid)
    assert key not in _claims(cluster)
    kinds = watch.kinds()[before:]
    assert kinds == ["on_pod_update", "on_resource_claim", "on_resource_claim_delete"]
    released = watch.seen[before + 1][1][0]
    assert released.status.reserved_for == [] and released.status.allocation is None
    assert watch.seen[-1][1] == ("default", key.split("/")[1])


def test_a_shared_claim_stays_allocated_while_another_pod_holds_it() -> None:
    a = make_pod("a").resource_claim("gpu", claim="shared").manifest()
    b = make_pod("b").resource_claim("gpu", claim="shared").manifest()
    cluster, _, (pa, pb) = _cluster(make_device_class("gpu"), make_resource_claim("shared"), a, b)
    cluster.create_pod(pa)
    cluster.create_pod(pb)
    _allocate(cluster, "default/shared", pa, pb)
    for pod in (pa, pb):
        _bind(cluster, pod)
    cluster.complete(pa.metadata.uid)
    claim = _claims(cluster)["default/shared"]
    assert [ref.name for ref in claim.status.reserved_for] == ["b"]
    assert claim.status.allocation is not None
    cluster.complete(pb.metadata.uid)
    claim = _claims(cluster)["default/shared"]
    # Not generated for a pod: deallocated, kept.
    assert claim.status.reserved_for == [] and claim.status.allocation is None


def test_a_deleted_pod_takes_its_generated_claims_with_it() -> None:
    cluster, watch, pod, _ = _running_with_generated_claim()
    asyncio.run(cluster.delete_pod(make_pod_info(cluster.pods[pod.metadata.uid]), "preempted"))
    assert not _claims(cluster)
    assert watch.kinds()[-3:] == ["on_pod_delete", "on_resource_claim", "on_resource_claim_delete"]


def test_a_pending_pod_deleted_loses_its_unallocated_claim() -> None:
    cluster, _, (pod,) = _cluster(make_device_class("gpu"), make_claim_template("one-gpu"), _gpu_pod())
    cluster.create_pod(pod)
    asyncio.run(cluster.delete_pod(make_pod_info(cluster.pods[pod.metadata.uid]), "preempted"))
    assert not _claims(cluster)


def test_every_write_is_a_new_resource_version() -> None:
    cluster, watch, pod, key = _running_with_generated_claim()
    created = int(_claims(cluster)[key].metadata.resource_version)
    cluster.complete(pod.metadata.uid)
    released = next(args[0] for name, args in reversed(watch.seen) if name == "on_resource_claim")
    assert int(released.metadata.resource_version) > created


# --- the input's claims ---------------------------------------------------------------------------


def _reserved_claim(name: str, *pods: tuple[str, str]) -> dict[str, Any]:
    claim = make_resource_claim(name)
    claim["status"] = {"allocation": {"devices": {"results": [
                           {"request": "device", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}},
                       "reservedFor": [{"resource": "pods", "name": n, "uid": uid} for n, uid in pods]}
    return claim


def test_an_input_claim_reserved_for_a_pod_the_input_never_creates_is_released() -> None:
    cluster, _, _ = _cluster(make_device_class("gpu"), _reserved_claim("old", ("gone", "uid-gone")))
    claim = _claims(cluster)["default/old"]
    assert claim.status.reserved_for == [] and claim.status.allocation is None


def test_an_input_claim_reserved_for_a_pod_still_to_come_stays() -> None:
    pod = make_pod("later").uid("uid-later").resource_claim("gpu", claim="held").arrival("60").manifest()
    cluster, _, _ = _cluster(make_device_class("gpu"), _reserved_claim("held", ("later", "uid-later")), pod)
    claim = _claims(cluster)["default/held"]
    assert [r.name for r in claim.status.reserved_for] == ["later"] and claim.status.allocation is not None


def test_a_pod_bound_in_the_input_is_reserved_on_its_allocated_claim() -> None:
    pod = make_pod("running").node("n1").resource_claim("gpu", claim="held").manifest()
    cluster, _, (obj,) = _cluster(make_device_class("gpu"), _reserved_claim("held"), pod)
    cluster.create_pod(obj)
    claim = _claims(cluster)["default/held"]
    assert [(r.resource, r.name, r.uid) for r in claim.status.reserved_for] == [("pods", "running", obj.metadata.uid)]


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_pod_created_finished_releases_its_claim(phase: str) -> None:
    pod = make_pod("done").uid("uid-done").node("n1").resource_claim("gpu", claim="held").status(phase=phase).manifest()
    cluster, _, (obj,) = _cluster(make_device_class("gpu"), _reserved_claim("held", ("done", "uid-done")), pod)
    cluster.create_pod(obj)
    claim = _claims(cluster)["default/held"]
    assert claim.status.reserved_for == [] and claim.status.allocation is None
