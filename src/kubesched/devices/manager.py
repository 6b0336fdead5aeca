"""What DynamicResources reads of the cluster (kube's SharedDRAManager, dra_manager.go): the claims
with their assume cache and in-flight allocations (claimtracker.py), the slices by pool and node
(slicetracker.py) and the DeviceClasses by name; one per scheduler, shared by every profile, fed
by the backend's events. Also how a pod's claims are named (k8s.io/dynamic-resource-allocation's
resourceclaim.Name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Node, Pod, PodResourceClaim
from kubesched.devices.allocator import Allocator
from kubesched.devices.cel import SelectorCache
from kubesched.devices.claimtracker import ClaimTracker
from kubesched.devices.slicetracker import SliceIndex

# resourceclaim.ErrClaimNotFound and ErrAPIUnsupported.
CLAIM_NOT_CREATED = "ResourceClaim not created yet"
API_UNSUPPORTED = "none of the supported fields are set"


class PodClaimError(Exception):
    """A pod's claim that cannot be named yet (or ever), with kube's message."""

    def __init__(self, message: str, *, not_created: bool) -> None:
        super().__init__(message)
        self.not_created = not_created


@dataclass(frozen=True, slots=True)
class PodClaimName:
    """resourceclaim.Name's answer: the claim's name (None when the template needed none), and
    whether the claim must be checked to be the pod's own (made from a template for it)."""

    name: str | None
    must_check_owner: bool


def pod_claim_name(pod: Pod, pod_claim: PodResourceClaim) -> PodClaimName:
    """The ResourceClaim an entry of spec.resourceClaims stands for: its resourceClaimName, or for a
    template the claim named in status.resourceClaimStatuses; PodClaimError until that is set."""
    meta = pod.metadata
    if pod_claim.resource_claim_name is not None:
        return PodClaimName(pod_claim.resource_claim_name, False)
    if pod_claim.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return PodClaimName(status.resource_claim_name, True)
        raise PodClaimError(f'pod "{meta.namespace}/{meta.name}": {CLAIM_NOT_CREATED}', not_created=True)
    raise PodClaimError(f'pod "{meta.namespace}/{meta.name}", spec.resourceClaim "{pod_claim.name}": {API_UNSUPPORTED}',
                        not_created=False)


class DraManager:
    """Claims, slices and classes for DynamicResources. `classes` is the scheduler's map of
    DeviceClasses by name (kept by the cache's DeviceClassIndex, which also answers which
    extended resources DRA serves), read here, never copied."""

    def __init__(self, classes: Mapping[str, DeviceClass] | None = None) -> None:
        self.claims = ClaimTracker()
        self.slices = SliceIndex()
        self.classes: Mapping[str, DeviceClass] = classes if classes is not None else {}
        self.selector_cache = SelectorCache()

    def device_class(self, name: str) -> DeviceClass | None:
        return self.classes.get(name)

    # --- events (the backends' claims and slices) --------------------------------------

    def on_claim(self, claim: ResourceClaim) -> None:
        self.claims.on_add(claim)

    def on_claim_delete(self, namespace: str, name: str) -> None:
        self.claims.on_delete(namespace, name)

    def on_slice(self, rs: ResourceSlice) -> ResourceSlice | None:
        return self.slices.set(rs)

    def on_slice_delete(self, name: str) -> ResourceSlice | None:
        return self.slices.remove(name)

    # --- what a scheduling cycle reads -------------------------------------------------

    def pod_claims(self, pod: Pod) -> list[tuple[PodResourceClaim, ResourceClaim | None]]:
        """Each of the pod's claims with the claim object (None while it does not exist);
        PodClaimError for one that cannot be named yet. Claims a template needed none for are left
        out, as kube leaves them out."""
        out: list[tuple[PodResourceClaim, ResourceClaim | None]] = []
        for pod_claim in pod.spec.resource_claims:
            named = pod_claim_name(pod, pod_claim)
            if named.name is None:
                continue
            out.append((pod_claim, self.claims.find(pod.metadata.namespace, named.name)))
        return out

    def allocator(self) -> Allocator:
        """One allocator for a scheduling cycle (kube's NewAllocator in PreFilter): every slice, the
        classes, and the devices allocated or in flight now. It serves every node of the cycle, so
        selectors are evaluated once per expression over all devices."""
        return Allocator(self.classes, self.slices.all(), self.claims.gather_allocated_state(), self.selector_cache,
                         columns=self.slices.columns)

    def allocator_for(self, node: Node) -> Allocator:
        """An allocator over the slices the node may use, the classes, and the devices allocated or
        in flight now."""
        candidates, pool_slices = self.slices.for_node(node.metadata.name)
        del candidates  # the pools' slices include them; the allocator matches nodes itself
        return Allocator(self.classes, pool_slices, self.claims.gather_allocated_state(), self.selector_cache,
                         columns=self.slices.columns)
