"""DynamicResources' part for extended resources served by DRA (kube v1.37.2's
extendeddynamicresources.go and its calls in dynamicresources.go): the cycle state and cluster
writes around the pure logic of devices/extendedclaim.py.

- PreFilter (`pre_filter`): a pod requesting an extended resource some DeviceClass maps gets one
  more claim in its store: the one an earlier attempt created (annotated, owned by the pod), else
  the in-memory claim of this attempt (SPECIAL_CLAIM_NAME, a temporary uid, no requests).
- Filter (`filter_node`): a claim of an earlier attempt that has requests refuses every node
  (`cannot schedule extended resource claim`, so PostFilter deletes it); a requested resource the
  node neither lists nor DRA serves refuses the node (`cannot fit resource`); otherwise the node's
  variant of the claim asks for the resources the node has no allocatable for, and the container
  mappings to its requests are kept for PreBind.
- PostFilter and Unreserve delete a claim that exists in the API server (`delete_claim`), after
  Unreserve took its allocation out of flight (`unreserve`).
- PreBind (prebind.bind_claim calls these): `create_in_api` creates the node's claim (generateName),
  `wait_in_assume_cache` waits until the informer delivered it and assumes the written status,
  `patch_pod_status` writes the pod's status.extendedResourceClaimStatus.
"""

from __future__ import annotations

import logging

from kubesched.api.dra import ResourceClaim, ResourceClaimWriteError
from kubesched.api.objects import ContainerExtendedResourceRequest, Node
from kubesched.api.podinfo import PodInfo
from kubesched.api.quantity import QuantityError, resource_value
from kubesched.devices.claimtracker import ClaimNotFound, ClaimTrackerError
from kubesched.devices.extendedclaim import (
    CANNOT_FIT_RESOURCE,
    CANNOT_SCHEDULE_CLAIM,
    ExtendedClaimError,
    claim_to_create,
    extended_claim_status,
    find_extended_resource_claim,
    has_mapped_extended_resource,
    in_memory_claim,
    is_special_claim_name,
    node_extended_resources,
    requests_and_mappings,
    with_requests,
)
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.plugins.dynamicresources.claims import kobj
from kubesched.plugins.dynamicresources.state import StateData

log = logging.getLogger(__name__)

# kube's AssumeExtendedResourceTimeoutDefaultSeconds and its poll interval.
ASSUME_TIMEOUT = 120.0
ASSUME_POLL_INTERVAL = 1.0


class ExtendedClaimWriteError(Exception):
    """A PreBind step for the extended-resource claim failed; the message is kube's."""


def pre_filter(handle: Handle, pi: PodInfo, s: StateData) -> ResourceClaim | None:
    """kube's preFilterExtendedResources: the pod's extended-resource claim (found or in memory),
    None when it requests no resource a DeviceClass maps. Remembers the pod's requests of
    resources DRA may serve for Filter."""
    if not pi.dra_resources:
        return None
    requests = {name: pi.requests[name] for name in pi.dra_resources}
    classes = handle.cache.device_classes
    if not len(classes) or not has_mapped_extended_resource(requests, classes):
        return None
    s.extended_requests = requests
    found = find_extended_resource_claim(pi.pod, handle.dra.claims.list())
    if found is not None:
        return found
    return in_memory_claim(pi.pod)


def filter_node(handle: Handle, s: StateData, pi: PodInfo, node: Node
                ) -> tuple[ResourceClaim | None, list[ContainerExtendedResourceRequest], Status | None]:
    """kube's filterExtendedResources for one node: (the node's variant of the claim or None,
    the container mappings, a refusal or None)."""
    claim = s.claims.extended_claim()
    if claim is None:
        return None, [], None
    if claim.spec.devices.requests:
        # A claim an earlier attempt created: PostFilter deletes it and the pod tries anew.
        return None, [], Status.unresolvable(CANNOT_SCHEDULE_CLAIM)
    classes = handle.cache.device_classes
    extended = node_extended_resources(s.extended_requests, classes, _allocatable(node, s.extended_requests))
    if extended is None:
        return None, [], Status.unresolvable(CANNOT_FIT_RESOURCE)
    if s.claims.no_user_claim and not extended:
        return None, [], None  # every resource is a device plugin's here: NodeResourcesFit checked them
    if claim.status.allocation is not None:
        return None, [], None
    requests, mappings = requests_and_mappings(pi.pod, extended, classes)
    return with_requests(claim, requests), mappings, None


def _allocatable(node: Node, requested: dict[str, int]) -> dict[str, int]:
    """The node's allocatable of the requested resources it lists (kube's scalar resources: a
    listed resource counts, even at 0)."""
    listed = node.status.allocatable
    out: dict[str, int] = {}
    for name in requested:
        raw = listed.get(name)
        if raw is None:
            continue
        try:
            out[name] = resource_value(name, raw)
        except QuantityError:
            out[name] = 0
    return out


def unreserve(handle: Handle, pi: PodInfo, s: StateData) -> None:
    """kube's unreserveExtendedResourceClaim: the allocation out of flight (the assume cache back to
    the informer's object), and a claim that exists in the API server deleted."""
    claim = s.claims.extended_claim()
    if claim is None:
        return
    tracker = handle.dra.claims
    if tracker.maybe_remove_pending_allocation(s.claims.initial_extended_uid):
        tracker.restore(claim.metadata.namespace, claim.metadata.name)
    if is_special_claim_name(claim.metadata.name):
        return
    handle.spawn(delete_claim_logged(handle, claim), f"delete ResourceClaim {kobj(claim)}")


async def delete_claim(handle: Handle, claim: ResourceClaim) -> None:
    """kube's deleteClaim (the backend removes the delete-protection finalizer first)."""
    meta = claim.metadata
    await handle.delete_resource_claim(meta.namespace, meta.name, meta.uid)


async def delete_claim_logged(handle: Handle, claim: ResourceClaim) -> None:
    try:
        await delete_claim(handle, claim)
    except ResourceClaimWriteError as exc:
        log.error("delete ResourceClaim %s: %s", kobj(claim), exc)


async def create_in_api(handle: Handle, s: StateData, node: str) -> ResourceClaim:
    """kube's createExtendedResourceClaimInAPI: the claim Filter made for the node, created."""
    found = s.node_allocations.get(node)
    if found is None or found.extended_claim is None:
        raise ExtendedClaimWriteError(f"extended resource claim not found for node {node}")
    claim = claim_to_create(found.extended_claim)
    try:
        return await handle.create_resource_claim(claim)
    except ResourceClaimWriteError as exc:
        raise ExtendedClaimWriteError(f"create claim for extended resources {kobj(claim)}: {exc}") from None


async def wait_in_assume_cache(handle: Handle, claim: ResourceClaim) -> None:
    """kube's waitForExtendedClaimInAssumeCache: the written claim assumed once the informer has
    delivered the created one (polled every second, for at most 120 s); a failure is only logged,
    as the claim exists."""
    deadline = handle.clock.now() + ASSUME_TIMEOUT
    while True:
        try:
            handle.dra.claims.assume(claim)
            return
        except ClaimNotFound:
            pass
        except ClaimTrackerError as exc:
            log.debug("claim %s not stored in the assume cache: %s", kobj(claim), exc)
            return
        now = handle.clock.now()
        if now >= deadline:
            log.debug("claim %s not stored in the assume cache after retries", kobj(claim))
            return
        await handle.clock.sleep(min(ASSUME_POLL_INTERVAL, deadline - now))


async def patch_pod_status(handle: Handle, pi: PodInfo, claim: ResourceClaim, node: str, s: StateData) -> None:
    """kube's patchPodExtendedResourceClaimStatus: the pod's status names the claim and maps its
    containers to the claim's requests."""
    found = s.node_allocations.get(node)
    mappings = found.mappings if found is not None else []
    try:
        status = extended_claim_status(pi.pod, mappings, claim.metadata.name)
    except ExtendedClaimError as exc:
        raise ExtendedClaimWriteError(str(exc)) from None
    try:
        await handle.set_extended_resource_claim_status(pi, status)
    except ResourceClaimWriteError as exc:
        meta = pi.pod.metadata
        raise ExtendedClaimWriteError(f"update pod {meta.namespace}/{meta.name} ExtendedResourceClaimStatus: {exc}") from None
