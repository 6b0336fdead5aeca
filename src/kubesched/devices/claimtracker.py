"""ResourceClaims as kube-scheduler v1.37.2 keeps them for DynamicResources (its claimTracker over
an assume cache, dra_manager.go and util/assumecache): claims by namespace/name, the devices their
allocations hold, and the allocations still in flight.

- **Assume cache.** Each claim has the informer's object and the latest one. The scheduler assumes
  a newer object once its status write succeeded (`assume`), so the next cycle sees the claim
  allocated before the informer catches up; an informer object replaces the latest only when its
  resourceVersion is strictly newer than the latest's (an older or equal one is ignored whole,
  the informer's copy included); `restore` drops the assumed object. Versions are integers, as
  the assume cache parses them.
- **Allocated devices**, kept incrementally as kube's allocatedDevices: a claim that gains an
  allocation adds its devices, one that loses it (or is deleted) removes them; admin access
  results count as nothing. Dedicated devices form a set (as kube's: one claim's release frees a
  device even if an inconsistent second claim also lists it), shares of devices with
  allowMultipleAllocations a set of (device, shareID), and their consumed capacity is summed per
  device (dropped when it sums to zero).
- **Events.** Every change of a claim's latest object, the informer's or an assumed one, goes to
  the listeners (the scheduler's queue), as kube's assume cache sends it to its handlers.
- **In flight.** A claim allocated in a scheduling cycle whose status write has not happened yet
  (`signal_pending_allocation`, reference-counted by the pods sharing it) counts as allocated for
  everyone else (`gather_allocated_state`), so two pods never get the same device.

All of it runs on the scheduler's thread: kube's locks and revision retries have no counterpart.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kubesched.api.dra import ResourceClaim
from kubesched.api.quantity import Quantity, QuantityError
from kubesched.api.quantity import parse as parse_quantity
from kubesched.devices.allocator import AllocatedState, DeviceID

log = logging.getLogger(__name__)

DESCRIPTION = "ResourceClaim"  # the assume cache's description, in its messages
SharedDeviceID = tuple[str, str, str, str]  # driver, pool, device, shareID
# The in-memory claim of a pod's DRA-backed extended resources (not a valid object name).
SPECIAL_CLAIM_NAME = "<extended-resources>"

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1


class ClaimTrackerError(Exception):
    """An assume-cache or tracker error, with kube's message."""


class ClaimNotFound(ClaimTrackerError):
    pass


def claim_key(namespace: str, name: str) -> str:
    """cache.MetaNamespaceKeyFunc: "namespace/name", or the name alone without a namespace."""
    return f"{namespace}/{name}" if namespace else name


def _key_of(claim: ResourceClaim) -> str:
    return claim_key(claim.metadata.namespace, claim.metadata.name)


def object_version(key: str, claim: ResourceClaim) -> int:
    """The resourceVersion as an int64, as the assume cache reads it (strconv.ParseInt)."""
    raw = claim.metadata.resource_version
    if not _INT64.fullmatch(raw):
        reason = "invalid syntax"
    elif not -_INT64_MAX - 1 <= int(raw) <= _INT64_MAX:
        reason = "value out of range"
    else:
        return int(raw)
    raise ClaimTrackerError(f'error parsing ResourceVersion "{raw}" for {DESCRIPTION} "{key}": '
                            f'strconv.ParseInt: parsing "{raw}": {reason}')


@dataclass(slots=True)
class _Entry:
    api: ResourceClaim  # the informer's object
    latest: ResourceClaim  # the informer's, or the one assumed after it


@dataclass(slots=True)
class _InFlight:
    claim: ResourceClaim
    sharers: int


@dataclass(frozen=True, slots=True)
class ClaimDevices:
    """What one claim's allocation holds (kube's foreachAllocatedDevice, consumable capacity on)."""

    dedicated: tuple[DeviceID, ...]
    shared: tuple[SharedDeviceID, ...]
    # Per shared device with consumedCapacity: capacity name -> quantity.
    consumed: tuple[tuple[DeviceID, tuple[tuple[str, Quantity], ...]], ...]

    @staticmethod
    def of(claim: ResourceClaim) -> ClaimDevices:
        allocation = claim.status.allocation
        if allocation is None:
            return _NOTHING
        dedicated: list[DeviceID] = []
        shared: list[SharedDeviceID] = []
        consumed: list[tuple[DeviceID, tuple[tuple[str, Quantity], ...]]] = []
        for result in allocation.devices.results:
            if result.admin_access:
                continue  # admin access does not hold the device
            device_id = (result.driver, result.pool, result.device)
            if result.share_id is None:
                dedicated.append(device_id)
                continue
            shared.append((*device_id, result.share_id))
            if result.consumed_capacity:
                consumed.append((device_id, tuple((name, _quantity(q)) for name, q in result.consumed_capacity.items())))
        return ClaimDevices(tuple(dedicated), tuple(shared), tuple(consumed))

    @property
    def empty(self) -> bool:
        return not self.dedicated and not self.shared and not self.consumed


_NOTHING = ClaimDevices((), (), ())


def _quantity(raw: str | int | float) -> Quantity:
    try:
        return parse_quantity(raw)
    except QuantityError:
        # The API server refuses such a status; counting it as nothing beats stopping the scheduler.
        return Quantity(0, "DecimalSI")


class _AllocatedDevices:
    """The devices the claims' latest objects hold (kube's allocatedDevices), with a revision that
    changes whenever they do."""

    def __init__(self) -> None:
        self.revision = 0
        self.ids: set[DeviceID] = set()
        self.share_ids: set[SharedDeviceID] = set()
        # device -> capacity name -> [nano-units, the format of the first quantity added]
        self.capacities: dict[DeviceID, dict[str, list[int | str]]] = {}

    def observe(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        """An add (old None), update or delete (new None) of a claim's latest object."""
        had = old is not None and old.status.allocation is not None
        has = new is not None and new.status.allocation is not None
        if old is None and new is not None:
            if has:
                self._apply(ClaimDevices.of(new), +1)
        elif new is None and old is not None:
            self._apply(ClaimDevices.of(old), -1)
        elif has and not had:
            assert new is not None
            self._apply(ClaimDevices.of(new), +1)
        elif had and not has:
            assert old is not None
            self._apply(ClaimDevices.of(old), -1)
        # Both allocated: an allocation is immutable, nothing changes.

    def _apply(self, held: ClaimDevices, sign: int) -> None:
        if held.empty:
            return
        self.revision += 1
        if sign > 0:
            self.ids.update(held.dedicated)
            self.share_ids.update(held.shared)
        else:
            self.ids.difference_update(held.dedicated)
            self.share_ids.difference_update(held.shared)
        for device_id, amounts in held.consumed:
            add_capacity(self.capacities, device_id, amounts, sign)


def add_capacity(capacities: dict[DeviceID, dict[str, list[int | str]]], device_id: DeviceID,
                 amounts: tuple[tuple[str, Quantity], ...], sign: int) -> None:
    """ConsumedCapacityCollection's Insert (sign +1) or Remove (-1): a removal only subtracts
    names the device has and drops the device once every amount is zero."""
    per_device = capacities.get(device_id)
    if per_device is None:
        if sign < 0:
            return
        per_device = capacities[device_id] = {}
    for name, quantity in amounts:
        nanos = quantity.nanos or 0
        have = per_device.get(name)
        if have is None:
            if sign > 0:
                per_device[name] = [nanos, quantity.format]
        else:
            have[0] = int(have[0]) + sign * nanos
    if sign < 0 and all(amount == 0 for amount, _ in per_device.values()):
        del capacities[device_id]


def capacity_nanos(capacities: dict[DeviceID, dict[str, list[int | str]]]) -> dict[DeviceID, dict[str, int]]:
    """The consumed capacity as the allocator's AllocatedState holds it: nano-units by name."""
    return {device_id: {name: int(amount) for name, (amount, _fmt) in per.items()}
            for device_id, per in capacities.items()}


class ClaimTracker:
    """kube's ResourceClaimTracker over its assume cache, fed by the backend's claim events."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._in_flight: dict[str, _InFlight] = {}  # by claim uid
        self._allocated = _AllocatedDevices()
        self._gathered: tuple[int, AllocatedState] | None = None
        # Told of every change of a claim's latest object (added: old None; deleted: new None), as
        # kube's assume cache tells its event handlers: a claim assumed after the scheduler's own
        # status write moves the pods waiting on it at once, not when the informer catches up.
        self.listeners: list[Callable[[ResourceClaim | None, ResourceClaim | None], None]] = []

    def __len__(self) -> int:
        return len(self._entries)

    # --- the informer's side -----------------------------------------------------------

    def on_add(self, claim: ResourceClaim) -> None:
        """An informer add or update: kept if new, or newer than the latest (assumed) object."""
        key = _key_of(claim)
        entry = self._entries.get(key)
        old: ResourceClaim | None = None
        if entry is not None:
            try:
                newer = object_version(key, claim) > object_version(key, entry.latest)
            except ClaimTrackerError as exc:
                log.warning("Add failed: couldn't get object version: %s", exc)
                return
            if not newer:
                return
            old = entry.latest
        self._entries[key] = _Entry(claim, claim)
        self._emit(old, claim)

    on_update = on_add

    def on_delete(self, namespace: str, name: str) -> None:
        entry = self._entries.pop(claim_key(namespace, name), None)
        if entry is not None:
            self._emit(entry.latest, None)

    # --- lookups -----------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> ResourceClaim:
        """The latest object; ClaimNotFound with the assume cache's message."""
        key = claim_key(namespace, name)
        entry = self._entries.get(key)
        if entry is None:
            raise ClaimNotFound(f'could not find {DESCRIPTION} "{key}"')
        return entry.latest

    def find(self, namespace: str, name: str) -> ResourceClaim | None:
        entry = self._entries.get(claim_key(namespace, name))
        return entry.latest if entry is not None else None

    def api_object(self, namespace: str, name: str) -> ResourceClaim | None:
        """The informer's object (GetAPIObj), whatever is assumed over it."""
        entry = self._entries.get(claim_key(namespace, name))
        return entry.api if entry is not None else None

    def list(self) -> list[ResourceClaim]:
        return [entry.latest for entry in self._entries.values()]

    # --- assume and restore ------------------------------------------------------------

    def assume(self, claim: ResourceClaim) -> None:
        """AssumeClaimAfterAPICall: the object the API server returned becomes the latest, unless
        the cache already holds a newer one (an error, with kube's message)."""
        key = _key_of(claim)
        entry = self._entries.get(key)
        if entry is None:
            raise ClaimNotFound(f'could not find {DESCRIPTION} "{key}"')
        new_version = object_version(key, claim)
        stored_version = object_version(key, entry.latest)
        if new_version < stored_version:
            raise ClaimTrackerError(f'{DESCRIPTION} "{key}" is out of sync (stored: {stored_version}, assume: {new_version})')
        old, entry.latest = entry.latest, claim
        self._emit(old, claim)

    def restore(self, namespace: str, name: str) -> None:
        """AssumedClaimRestore: back to the informer's object (nothing if the claim is unknown)."""
        entry = self._entries.get(claim_key(namespace, name))
        if entry is not None and entry.latest is not entry.api:
            old, entry.latest = entry.latest, entry.api
            self._emit(old, entry.api)

    def is_assumed(self, namespace: str, name: str) -> bool:
        entry = self._entries.get(claim_key(namespace, name))
        return entry is not None and entry.latest is not entry.api

    # --- in-flight allocations ---------------------------------------------------------

    def signal_pending_allocation(self, uid: str, allocated: ResourceClaim) -> None:
        """SignalClaimPendingAllocation: `allocated` (with its status.allocation) is in flight;
        another pod sharing it adds a reference. A claim the cache already shows allocated is not
        put in flight (the pod's cycle state was stale)."""
        in_flight = self._in_flight.get(uid)
        if in_flight is not None:
            in_flight.sharers += 1
            return
        if allocated.metadata.name != SPECIAL_CLAIM_NAME:
            namespace, name = allocated.metadata.namespace, allocated.metadata.name
            try:
                current = self.get(namespace, name)
            except ClaimNotFound as exc:
                raise ClaimTrackerError(f"look up assumed claim {namespace}/{name}, UID={uid}: {exc}") from None
            if current.metadata.uid == uid and current.status.allocation is not None:
                return
        self._in_flight[uid] = _InFlight(allocated, 1)
        self._gathered = None

    def maybe_remove_pending_allocation(self, uid: str, force: bool = False) -> bool:
        """MaybeRemoveClaimPendingAllocation: one reference less (all of them with `force`);
        True when the claim is no longer in flight."""
        in_flight = self._in_flight.get(uid)
        if in_flight is None:
            return False
        if force or in_flight.sharers == 1:
            del self._in_flight[uid]
            self._gathered = None
            return True
        in_flight.sharers -= 1
        return False

    def pending_allocation(self, uid: str) -> ResourceClaim | None:
        """The in-flight claim (its status.allocation is GetPendingAllocation's answer)."""
        in_flight = self._in_flight.get(uid)
        return in_flight.claim if in_flight is not None else None

    def in_flight(self) -> Iterator[ResourceClaim]:
        return (f.claim for f in self._in_flight.values())

    # --- allocated state ---------------------------------------------------------------

    @property
    def revision(self) -> int:
        """Changes whenever the devices held by the cache's claims do."""
        return self._allocated.revision

    def list_all_allocated_devices(self) -> frozenset[DeviceID]:
        """ListAllAllocatedDevices: dedicated devices of the cache's claims and of the in-flight
        ones, not looking at shares (as kube's)."""
        devices = set(self._allocated.ids)
        for claim in self.in_flight():
            devices.update(ClaimDevices.of(claim).dedicated)
        return frozenset(devices)

    def gather_allocated_state(self) -> AllocatedState:
        """GatherAllocatedState with consumable capacity on (v1.37.2's default): the dedicated
        devices, the shares and the consumed capacity, in-flight claims included. Built once per
        change of either, not per cycle."""
        cached = self._gathered
        if cached is not None and cached[0] == self._allocated.revision:
            return cached[1]
        ids = set(self._allocated.ids)
        shares = set(self._allocated.share_ids)
        capacities = {device_id: {name: list(v) for name, v in per.items()}
                      for device_id, per in self._allocated.capacities.items()}
        for claim in self.in_flight():
            held = ClaimDevices.of(claim)
            ids.update(held.dedicated)
            shares.update(held.shared)
            for device_id, amounts in held.consumed:
                add_capacity(capacities, device_id, amounts, +1)
        state = AllocatedState(frozenset(ids), frozenset(shares), capacity_nanos(capacities))
        self._gathered = (self._allocated.revision, state)
        return state

    def _emit(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        """The assume cache's event to its handlers: kube's allocatedDevices, then the listeners
        (the scheduler's queue), for the informer's changes and the assumed ones alike."""
        self._allocated.observe(old, new)
        for listener in self.listeners:
            listener(old, new)
