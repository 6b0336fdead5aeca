"""DynamicResources' writes to claims: PreBind (kube's PreBind and bindClaim), and the background
writes of Unreserve and PostFilter.

PreBind, for each claim of the pod not yet reserved for it: the allocation Reserve chose (if the
claim needed one) and the pod in status.reservedFor are written with one status update,
conditional on the claim's resourceVersion. A conflict gets the latest claim and tries again, five
times in all (client-go's retry.DefaultRetry, 10ms apart); the finalizer
`resource.kubernetes.io/delete-protection` is added first by a plain update when it is missing.
The claim the API server returns is assumed in the claim tracker, so the next cycles see it
allocated before the watch reports it. Once every write succeeded, the allocations leave flight.

Then, if a device of an allocation has binding conditions (DRADeviceBindingConditions), PreBind
posts a `BindingConditionsPending` event and checks every 5 seconds until every condition is True
(a failure condition True fails at once), or bindingTimeout passes. A failure is an Error: the pod
backs off, and its next attempt's Filter finds the claim unavailable, so PostFilter deallocates it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from kubesched.api.dra import FINALIZER, ResourceClaim, ResourceClaimWriteError
from kubesched.api.podinfo import PodInfo
from kubesched.devices.claimtracker import ClaimTrackerError
from kubesched.devices.extendedclaim import is_special_claim_name
from kubesched.devices.manager import DraManager
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.plugins.dynamicresources import extended
from kubesched.plugins.dynamicresources.claims import (
    BindingFailed,
    binding_timed_out,
    format_time,
    has_binding_conditions,
    kobj,
    ready_for_binding,
    reserved_for_pod,
)
from kubesched.plugins.dynamicresources.state import ClaimStore, StateData

log = logging.getLogger(__name__)

RETRY_STEPS = 5  # client-go's retry.DefaultRetry
RETRY_INTERVAL = 0.01
POLL_INTERVAL = 5.0  # binding conditions, as kube polls them
BINDING_PENDING_REASON = "BindingConditionsPending"


class ClaimBindError(Exception):
    """Writing a claim failed; the message is kube's."""


def with_finalizer(finalizers: list[str]) -> list[str]:
    return finalizers if FINALIZER in finalizers else [*finalizers, FINALIZER]


@dataclass(frozen=True, slots=True)
class Binding:
    """What PreBind needs of the plugin: the handle (writes, the claim tracker, the clock), the
    binding timeout in seconds, and the wall clock (seconds since the epoch) timestamps compare to."""

    handle: Handle
    binding_timeout: float
    wall_now: Callable[[], float]

    @property
    def dra(self) -> DraManager:
        return self.handle.dra


async def pre_bind(plugin: Binding, s: StateData, pi: PodInfo, node: str) -> Status | None:
    handle = plugin.handle
    bound: list[str] = []  # uids whose allocation was written
    for index, claim in s.claims.all():
        if reserved_for_pod(pi.pod, claim):
            continue
        allocation = s.infos[index].allocation
        try:
            written = await bind_claim(plugin, s, index, pi, node)
        except (ClaimBindError, extended.ExtendedClaimWriteError) as exc:
            return Status.error(str(exc))
        s.claims.set(index, written)
        if allocation is not None:
            bound.append(claim.metadata.uid)
    status = await _wait_for_binding_conditions(plugin, s, pi, node)
    if status is None:
        # The allocations are in the claims now (and assumed): no longer in flight.
        for uid in bound:
            handle.dra.claims.maybe_remove_pending_allocation(uid, force=True)
    return status


async def bind_claim(plugin: Binding, s: StateData, index: int, pi: PodInfo, node: str) -> ResourceClaim:
    """kube's bindClaim: the claim's allocation (if Reserve chose one) and the pod's reservation
    written; returns the claim as stored. The extended-resource claim is first created (when it
    is still the in-memory one), and afterwards named in the pod's status."""
    handle = plugin.handle
    claim = s.claims.get(index)
    allocation = s.infos[index].allocation
    binding = ClaimStore.binding(pi)
    is_extended = s.claims.is_extended(index)
    if is_extended and allocation is None and not claim.spec.devices.requests:
        return claim  # a device plugin serves the extended resources on this node
    written: ResourceClaim | None = None
    last: ResourceClaimWriteError | None = None
    if is_extended and is_special_claim_name(claim.metadata.name):
        claim = await extended.create_in_api(handle, s, node)
        written = claim  # waited for in the assume cache even if what follows fails
        s.claims.update_extended_claim(claim)
    try:
        for attempt in range(RETRY_STEPS):
            if attempt:
                await handle.clock.sleep(RETRY_INTERVAL)
                try:
                    claim = await handle.get_resource_claim(claim.metadata.namespace, claim.metadata.name)
                except ResourceClaimWriteError as exc:
                    raise ClaimBindError(f"get updated claim {kobj(claim)} after conflict: {exc}") from None
            if claim.metadata.deletion_timestamp is not None:
                raise ClaimBindError(f"claim {kobj(claim)} got deleted in the meantime")
            status = claim.status
            if allocation is not None:
                if status.allocation is not None:
                    raise ClaimBindError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
                if FINALIZER not in claim.metadata.finalizers:
                    protected = msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
                        claim.metadata, finalizers=with_finalizer(claim.metadata.finalizers)))
                    try:
                        claim = await handle.update_resource_claim(protected)
                    except ResourceClaimWriteError as exc:
                        last = exc
                        if exc.conflict:
                            continue
                        raise ClaimBindError(f"add finalizer to claim {kobj(claim)}: {exc}") from None
                status = msgspec.structs.replace(claim.status, allocation=allocation)
            status = msgspec.structs.replace(status, reserved_for=[*status.reserved_for, binding])
            # DRADeviceBindingConditions (on): the allocation is stamped, the binding timeout counts from it.
            if status.allocation is None:
                raise ClaimBindError(f"claim {kobj(claim)} got deallocated elsewhere in the meantime")
            if status.allocation.allocation_timestamp is None:
                status = msgspec.structs.replace(status, allocation=msgspec.structs.replace(
                    status.allocation, allocation_timestamp=format_time(plugin.wall_now())))
            try:
                written = await handle.update_resource_claim_status(msgspec.structs.replace(claim, status=status))
            except ResourceClaimWriteError as exc:
                last = exc
                if exc.conflict:
                    continue
                what = "allocation and reservation" if allocation is not None else "reservation"
                raise ClaimBindError(f"add {what} to claim {kobj(claim)}: {exc}") from None
            claim = written
            break
        else:
            what = "allocation and reservation" if allocation is not None else "reservation"
            raise ClaimBindError(f"add {what} to claim {kobj(claim)}: {last}")
        if is_extended:
            await extended.patch_pod_status(handle, pi, claim, node, s)
        return claim
    finally:
        if written is not None:
            if is_extended:
                # The latest object seen, as kube's deferred wait takes it.
                await extended.wait_in_assume_cache(handle, claim)
            else:
                try:
                    handle.dra.claims.assume(written)
                except ClaimTrackerError as exc:
                    log.debug("claim %s not stored in the assume cache: %s", kobj(written), exc)


async def _wait_for_binding_conditions(plugin: Binding, s: StateData, pi: PodInfo, node: str) -> Status | None:
    """kube's wait for binding conditions, when a device asks for some."""
    claims = [claim for _, claim in s.claims.all()]
    if not has_binding_conditions(claims):
        return None
    handle = plugin.handle
    handle.record_event(pi, "Normal", BINDING_PENDING_REASON, f"waiting for binding conditions for device on node {node}")
    deadline = handle.clock.now() + plugin.binding_timeout
    while True:
        try:
            if _pod_ready(plugin, s):
                return None
        except BindingFailed as exc:
            return Status.error(str(exc))
        except ClaimBindError as exc:
            return Status.error(str(exc))
        now = handle.clock.now()
        if now >= deadline:
            return Status.error("device binding timeout: context deadline exceeded")
        await handle.clock.sleep(min(POLL_INTERVAL, deadline - now))


def _pod_ready(plugin: Binding, s: StateData) -> bool:
    """kube's isPodReadyForBinding over the claims as the tracker has them now."""
    tracker = plugin.dra.claims
    for index, claim in s.claims.all():
        current = tracker.find(claim.metadata.namespace, claim.metadata.name)
        if current is None:
            raise ClaimBindError(f'could not find ResourceClaim "{kobj(claim)}"')
        s.claims.set(index, current)
        if not ready_for_binding(current):
            if binding_timed_out(current, plugin.binding_timeout, plugin.wall_now()):
                raise ClaimBindError(f"device binding timeout: claim={current.metadata.name}")
            return False
    return True


async def deallocate(handle: Handle, released: ResourceClaim) -> None:
    """PostFilter's write: the claim's allocation, reservations and device status cleared."""
    try:
        await handle.update_resource_claim_status(released)
    except ResourceClaimWriteError as exc:
        log.warning("deallocating ResourceClaim %s failed: %s", kobj(released), exc)


async def unreserve(handle: Handle, claim: ResourceClaim, pod_uid: str) -> None:
    """Unreserve's write: the pod taken out of the claim's reservedFor (retried by the next attempt)."""
    try:
        await handle.unreserve_resource_claim(claim, pod_uid)
    except ResourceClaimWriteError as exc:
        log.warning("unreserving ResourceClaim %s failed: %s", kobj(claim), exc)
