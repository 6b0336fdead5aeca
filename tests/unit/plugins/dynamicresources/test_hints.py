"""DynamicResources' queueing hints and Score, as kube's isSchedulableAfterClaimChange,
isSchedulableAfterTargetPodUpdate and computeScore answer them."""

from __future__ import annotations

import msgspec

from kubesched.api.dra import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceClaim,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimStatus,
)
from kubesched.api.objects import ObjectMeta, OwnerReference, Pod, PodResourceClaim, PodResourceClaimStatus, PodSpec
from kubesched.api.podinfo import make_pod_info
from kubesched.devices.manager import DraManager
from kubesched.framework.events import TARGET_POD, ActionType, QueueingHint, pod_changes
from kubesched.plugins.dynamicresources.queueing import Hints
from kubesched.plugins.dynamicresources.score import compute_score
from kubesched.plugins.dynamicresources.state import ClaimStore, NodeAllocation

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip


def claim(name: str, uid: str, *, allocated: bool = False, rv: str = "1", requests: list[DeviceRequest] | None = None,
          owner: str | None = None) -> ResourceClaim:
    owners = [OwnerReference(kind="Pod", name="p", uid=owner, controller=True)] if owner else []
    status = ResourceClaimStatus(allocation=AllocationResult(devices=DeviceAllocationResult(results=[
        DeviceRequestAllocationResult(request="r", driver="d", pool="p", device="x")]))) if allocated else ResourceClaimStatus()
    spec = ResourceClaimSpec(devices=DeviceClaim(requests=requests or [
        DeviceRequest(name="r", exactly=ExactDeviceRequest(device_class_name="gpu"))]))
    return ResourceClaim(metadata=ObjectMeta(name=name, namespace="ns", uid=uid, resource_version=rv,
                                             owner_references=owners), spec=spec, status=status)


def pod(*claims: PodResourceClaim, statuses: list[PodResourceClaimStatus] | None = None) -> Pod:
    return Pod(metadata=ObjectMeta(name="p", namespace="ns", uid="pod-uid"), spec=PodSpec(resource_claims=list(claims)),
               status=msgspec.structs.replace(Pod().status, resource_claim_statuses=statuses or []))


def test_claim_hints() -> None:
    dra = DraManager()
    mine, other = claim("mine", "u1"), claim("other", "u2")
    dra.on_claim(mine)
    dra.on_claim(other)
    hints = Hints(dra)
    pi = make_pod_info(pod(PodResourceClaim(name="gpu", resource_claim_name="mine")))
    assert hints.after_claim_change(pi, None, mine) is Q  # created
    assert hints.after_claim_change(pi, None, other) is SKIP  # not the pod's
    finalizer = msgspec.structs.replace(mine, metadata=msgspec.structs.replace(mine.metadata, finalizers=["f"]))
    assert hints.after_claim_change(pi, mine, finalizer) is SKIP  # status unchanged
    assert hints.after_claim_change(pi, mine, claim("mine", "u1", allocated=True)) is Q
    # Another claim's deallocation or allocated deletion frees devices; an unallocated one's does not.
    assert hints.after_claim_change(pi, claim("other", "u2", allocated=True), other) is Q
    assert hints.after_claim_change(pi, claim("other", "u2", allocated=True), None) is Q
    assert hints.after_claim_change(pi, other, None) is SKIP
    # A pod whose claim does not exist yet skips every claim event but its claim's creation.
    waiting = make_pod_info(pod(PodResourceClaim(name="gpu", resource_claim_name="later")))
    assert hints.after_claim_change(waiting, None, other) is SKIP


def test_the_pods_update_naming_its_template_claim_requeues_it() -> None:
    dra = DraManager()
    dra.on_claim(claim("p-gpu-abc", "u1", owner="pod-uid"))
    hints = Hints(dra)
    entry = PodResourceClaim(name="gpu", resource_claim_template_name="t")
    before = make_pod_info(pod(entry))
    after = make_pod_info(pod(entry, statuses=[PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-abc")]))
    assert [e.action for e in pod_changes(after, before, TARGET_POD)] == [ActionType.UpdatePodGeneratedResourceClaim]
    assert hints.after_target_pod_update(before, before, after) is Q
    assert hints.after_target_pod_update(before, before, before) is SKIP
    # A claim not owned by the pod is refused, as kube's IsForPod.
    dra.on_claim(claim("p-gpu-abc", "u1", owner="someone-else", rv="2"))
    assert hints.after_target_pod_update(before, before, after) is SKIP


def test_score_counts_the_chosen_subrequests_place_in_its_list() -> None:
    subs = [DeviceSubRequest(name=n, device_class_name="gpu") for n in ("a", "b", "c")]
    prioritized = claim("c", "u1", requests=[DeviceRequest(name="r", first_available=subs),
                                            DeviceRequest(name="x", exactly=ExactDeviceRequest(device_class_name="gpu"))])

    def chose(*requests: str) -> AllocationResult:
        return AllocationResult(devices=DeviceAllocationResult(results=[
            DeviceRequestAllocationResult(request=r, driver="d", pool="p", device=r) for r in requests]))

    store = ClaimStore([prioritized])
    assert compute_score(store, NodeAllocation([chose("r/a", "x")])) == 8
    assert compute_score(store, NodeAllocation([chose("r/c", "x")])) == 6
