"""A pod's ResourceClaims as DynamicResources finds them (kube's foreachPodResourceClaim and the
helpers of k8s.io/dynamic-resource-allocation/resourceclaim it uses), with kube's messages, and
what the plugin reads of a claim's status: whether it is reserved for the pod, and whether its
devices' binding conditions are met.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kubesched.api.dra import ResourceClaim
from kubesched.api.objects import Pod
from kubesched.devices.claimtracker import ClaimNotFound
from kubesched.devices.manager import DraManager, PodClaimError, pod_claim_name
from kubesched.infra.gostrconv import quote


class ClaimLookupError(Exception):
    """A claim of the pod that is missing, being deleted or not the pod's own: the pod cannot be
    scheduled until that changes (kube returns these as UnschedulableAndUnresolvable)."""


def pod_claims(dra: DraManager, pod: Pod) -> list[tuple[str, ResourceClaim]]:
    """Each of the pod's claims with its spec.resourceClaims name, in the pod's order (a template
    for which no claim was needed is left out); ClaimLookupError with kube's message otherwise."""
    out: list[tuple[str, ResourceClaim]] = []
    for pod_claim in pod.spec.resource_claims:
        try:
            named = pod_claim_name(pod, pod_claim)
        except PodClaimError as exc:
            raise ClaimLookupError(str(exc)) from None
        if named.name is None:
            continue
        try:
            claim = dra.claims.get(pod.metadata.namespace, named.name)
        except ClaimNotFound as exc:
            raise ClaimLookupError(str(exc)) from None
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimLookupError(f'resourceclaim "{claim.metadata.name}" is being deleted')
        if named.must_check_owner:
            problem = not_for_pod(pod, claim)
            if problem:
                raise ClaimLookupError(problem)
        out.append((pod_claim.name, claim))
    return out


def not_for_pod(pod: Pod, claim: ResourceClaim) -> str:
    """resourceclaim.IsForPod (PodGroup owners not accepted: DRAWorkloadResourceClaims is off):
    "" when the pod controls the claim, else why not."""
    cm, pm = claim.metadata, pod.metadata
    if cm.namespace != pm.namespace:
        return f"ResourceClaim {cm.namespace}/{cm.name} is not in the same namespace as Pod {pm.namespace}/{pm.name}"
    if not any(ref.controller and ref.uid == pm.uid for ref in cm.owner_references):
        return f"ResourceClaim {cm.namespace}/{cm.name} was not created for Pod {pm.namespace}/{pm.name} (Pod is not owner)"
    return ""


def kobj(claim: ResourceClaim) -> str:
    """klog.KObj's "namespace/name"."""
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """resourceclaim.IsReservedForPod: the pod's uid is among status.reservedFor."""
    uid = pod.metadata.uid
    return any(ref.uid == uid for ref in claim.status.reserved_for)


def can_be_reserved(claim: ResourceClaim) -> bool:
    """resourceclaim.CanBeReserved: always, since v1.37 leaves the limit of reservedFor entries to
    the API server (kept so PreFilter reads as kube's)."""
    return True


def parse_time(stamp: str) -> float:
    """A metav1.Time (RFC 3339) as seconds since the epoch."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def format_time(seconds: float) -> str:
    """metav1.Time's form, to the second."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class BindingFailed(Exception):
    """A device's binding failure condition is true (kube's ErrDeviceBindingFailed)."""


def ready_for_binding(claim: ResourceClaim) -> bool:
    """kube's isClaimReadyForBinding: every binding condition of every allocated device is True
    in status.devices (a device without conditions is ready); BindingFailed when a failure
    condition is True; False without an allocation or a device's status."""
    allocation = claim.status.allocation
    if allocation is None:
        return False
    for result in allocation.devices.results:
        if not result.binding_conditions:
            continue
        status = next((d for d in claim.status.devices
                       if (d.device, d.driver, d.pool) == (result.device, result.driver, result.pool)), None)
        if status is None:
            return False
        conditions = {c.type: c for c in status.conditions}
        for name in result.binding_failure_conditions:
            failed = conditions.get(name)
            if failed is not None and failed.status == "True":
                raise BindingFailed(f"device binding failed: claim={claim.metadata.name}, reason={failed.reason}, "
                                    f"message={quote(failed.message)}")
        for name in result.binding_conditions:
            cond = conditions.get(name)
            if cond is None or cond.status != "True":
                return False
    return True


def binding_timed_out(claim: ResourceClaim, timeout: float, now: float) -> bool:
    """kube's isClaimTimeout: a device of the allocation has binding conditions and the allocation
    is older than `timeout` seconds at `now` (seconds since the epoch)."""
    allocation = claim.status.allocation
    if allocation is None or allocation.allocation_timestamp is None:
        return False
    if not any(result.binding_conditions for result in allocation.devices.results):
        return False
    return parse_time(allocation.allocation_timestamp) + timeout < now


def has_binding_conditions(claims: list[ResourceClaim]) -> bool:
    return any(result.binding_conditions for claim in claims if claim.status.allocation is not None
               for result in claim.status.allocation.devices.results)

