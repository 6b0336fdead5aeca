"""DRA's structured allocator, with the answers of kube-scheduler v1.37.2's (the "incubating"
implementation of k8s.io/dynamic-resource-allocation/structured, which v1.37.2's default feature
gates select): for one node, the devices for all the unallocated claims of a pod, or None.

The search is kube's depth-first backtracking, in kube's fixed order: claim, request, then (with
firstAvailable) subrequest in order, then one device after the other from the pools (sorted by
driver and pool name), slices (by name) and devices (as listed), a request's devices in increasing
position so each set is tried once. The first full solution wins: which device a claim gets is
observable and the same as kube's. What the search checks per candidate, in kube's order: in use
(already allocated, or picked for this pod; admin access may share), the class's then the
request's CEL selectors, the device's node (perDeviceNodeSelection), the capacity left (consumable
capacity), shared counters (partitionable devices; a shared device already in use has paid them),
taints against the request's tolerations, then the claim's constraints.

Covered: ExactCount and All, firstAvailable, admin access, matchAttribute / distinctAttribute,
taints and tolerations, partitionable devices (shared counters), consumable capacity (devices with
allowMultipleAllocations shared by several claims and requests, capacity requests, request
policies; capacity.py), binding conditions, the result's configuration, node selector, shareID and
consumed capacity. Compatibility groups and derived attributes are alpha and off; the API server
drops those fields.

A share of a device gets a new random shareID (a UUID, as kube's); `new_share_id` may replace the
generator (tests). `columns` (the slices' columns kept by the caller across cycles: the DRA
manager's slice index) spares converting unchanged slices for the
selectors again; the caller forgets what it no longer needs.

Selectors are evaluated once per expression over every device of the allocator's slices
(celvector's batch evaluation), lazily, so an allocator serving all nodes of a scheduling cycle
pays for CEL once; an error on a device is raised only when the search reaches that device, as
kube's lazy evaluation would.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kubesched.api.dra import (
    AllocationResult,
    CapacityRequirements,
    Device,
    DeviceClass,
    DeviceSelector,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.api.dra.common import ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_RESULTS_MAX_SIZE
from kubesched.api.objects import Node
from kubesched.api.quantity import parse as parse_quantity
from kubesched.devices.allocatedstate import AllocatedState, DeviceID
from kubesched.devices.allocresult import NodeSelectorResultError, ResultDevice, SelectedRequest, build_result
from kubesched.devices.capacity import CapacityError, Consumed, add_consumed, remove_consumed, request_fits, share_of_request
from kubesched.devices.cel import SelectorCache, SelectorCompileError, selector_compile_error, selector_error
from kubesched.devices.constraints import Constraint
from kubesched.devices.nodematch import NodeSelectorError, node_matches
from kubesched.devices.pools import Pool, PoolGatherError, devices_of, gather_pools
from kubesched.devices.selectortable import ColumnsOf, SelectorTable

__all__ = ["AllocatedState", "AllocationError", "AllocationTimeout", "Allocator", "DeviceID", "device_id_text"]


def device_id_text(device_id: DeviceID) -> str:
    return "/".join(device_id)


class AllocationError(Exception):
    """Allocation must stop: bad input (a class or claim kube would refuse to allocate for).
    `failed_on_node` marks the errors that only concern this node (kube's ErrFailedAllocationOnNode):
    the scheduler reports them as the node's unschedulable reason instead of aborting."""

    def __init__(self, message: str, *, failed_on_node: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.failed_on_node = failed_on_node


@dataclass(frozen=True, slots=True)
class _Request:
    """A request with `exactly`, or one subrequest of `firstAvailable` (kube's requestAccessor)."""

    name: str
    class_name: str
    mode: str
    count: int
    admin_access: bool
    selectors: list[DeviceSelector]
    tolerations: list[DeviceToleration]
    capacity: CapacityRequirements | None

    @staticmethod
    def exact(name: str, spec: ExactDeviceRequest) -> _Request:
        return _Request(name, spec.device_class_name, spec.allocation_mode, spec.count, bool(spec.admin_access),
                        spec.selectors, spec.tolerations, spec.capacity)

    @staticmethod
    def sub(spec: DeviceSubRequest) -> _Request:
        return _Request(spec.name, spec.device_class_name, spec.allocation_mode, spec.count, False,
                        spec.selectors, spec.tolerations, spec.capacity)

    @property
    def capacity_requests(self) -> Mapping[str, str | int | float] | None:
        return self.capacity.requests if self.capacity is not None else None


@dataclass(slots=True)
class _Candidate:
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: str | None  # the parent request's name, for a subrequest
    device_class: DeviceClass
    num_devices: int = 0
    selected_subrequest: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent is not None else self.request.name


class AllocationTimeout(Exception):
    """The search ran past the caller's deadline (kube's context deadline: DynamicResources'
    filterTimeout)."""


class _MaxSizeExceeded(Exception):
    """kube's errAllocationResultMaxSizeExceeded: more devices than a claim's result can hold."""


RequestKey = tuple[int, int, int]  # claim, request, subrequest
Counters = dict[str, dict[str, int]]  # counter set -> counter -> nano-units


class Allocator:
    """Allocates claims node by node from one view of the slices and classes (kube creates one
    per scheduling cycle); it keeps selector results and pools' available counters across nodes."""

    def __init__(self, classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice],
                 allocated: AllocatedState | None = None, selector_cache: SelectorCache | None = None,
                 new_share_id: Callable[[], str] | None = None, columns: ColumnsOf | None = None) -> None:
        self.classes = classes
        self.new_share_id = new_share_id or (lambda: str(uuid.uuid4()))
        self.allocated = allocated or AllocatedState()
        self.all_slices = list(slices)
        self.slices_on_node: dict[str, list[ResourceSlice]] = {}
        self.slices_shared: list[ResourceSlice] = []
        for s in self.all_slices:
            if s.spec.node_name:
                self.slices_on_node.setdefault(s.spec.node_name, []).append(s)
            else:
                self.slices_shared.append(s)
        self.selectors = SelectorTable(self.all_slices, selector_cache or SelectorCache(), columns)
        self.available_counters: dict[tuple[str, str], Counters] = {}

    def allocate(self, node: Node, claims: Sequence[ResourceClaim], deadline: float | None = None) -> list[AllocationResult] | None:
        """One result per claim, in order; None when the claims do not fit on the node.
        AllocationError (with kube's message) for input kube refuses to allocate;
        AllocationTimeout once time.monotonic() passes `deadline` during the search."""
        slices = self.slices_on_node.get(node.metadata.name, []) + self.slices_shared
        try:
            pools = gather_pools(slices, node, self.all_slices)
        except PoolGatherError as exc:
            raise AllocationError(f"gather pool information: {exc}") from None
        return _Search(self, node, list(claims), pools, deadline).run()

    def has_devices_for(self, node_name: str) -> bool:
        """Whether any slice may have devices on the node (its own, or one not tied to a node):
        on a node without, every claim with a request fails alike, whatever the node."""
        return bool(self.slices_shared) or node_name in self.slices_on_node


def _kobj(claim: ResourceClaim) -> str:
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class _Search:
    """One Allocate call: the state of the depth-first search."""

    def __init__(self, owner: Allocator, node: Node, claims: list[ResourceClaim], pools: list[Pool],
                 deadline: float | None = None) -> None:
        self.owner = owner
        self.deadline = deadline
        self.node = node
        self.claims = claims
        self.pools = pools
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        # Capacity consumed by this allocation's shares, by device (kube's allocatingCapacity);
        # an entry, even empty, marks the device as shared by this allocation.
        self.allocating_capacity: dict[DeviceID, Consumed] = {}
        self.consumed_counters: dict[tuple[str, str], Counters] = {}
        self.results: list[list[ResultDevice]] = [[] for _ in claims]
        self.selectable_cache: dict[tuple[DeviceID, RequestKey], bool] = {}

    # --- the checks before searching (kube's Allocate up to allocateOne) ---

    def run(self) -> list[AllocationResult] | None:
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.spec.devices.requests):
                if request.first_available:
                    least = None
                    for si, sub in enumerate(request.first_available):
                        data = self._validate(ci, (ci, ri, si), _Request.sub(sub), request.name)
                        self.request_data[(ci, ri, si)] = data
                        least = data.num_devices if least is None else min(least, data.num_devices)
                    need = least or 0
                elif request.exactly is not None:
                    data = self._validate(ci, (ci, ri, 0), _Request.exact(request.name, request.exactly), None)
                    self.request_data[(ci, ri, 0)] = data
                    need = data.num_devices
                else:
                    raise AllocationError(f"claim {_kobj(claim)}, request {request.name}: "
                                          "missing device class name (unsupported request type?)")
                if need > ALLOCATION_RESULTS_MAX_SIZE - min_devices:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request.name}: adding {need} devices exceeds the claim limit of "
                        f"{ALLOCATION_RESULTS_MAX_SIZE}, with {min_devices} already accounted for")
                min_devices += need
            constraints = []
            for i, c in enumerate(claim.spec.devices.constraints):
                if c.match_attribute is not None:
                    constraints.append(Constraint(c.match_attribute, frozenset(c.requests), distinct=False))
                elif c.distinct_attribute is not None:
                    constraints.append(Constraint(c.distinct_attribute, frozenset(c.requests), distinct=True))
                else:
                    raise AllocationError(f"claim {_kobj(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)")
            self.constraints.append(constraints)
        try:
            done = self._allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSizeExceeded:
            raise AllocationError("allocation max size exceeded") from None
        if not done:
            if any(p.invalid for p in self.pools):
                raise AllocationError("invalid resource pools were encountered", failed_on_node=True)
            return None
        out = []
        for ci, claim in enumerate(self.claims):
            try:
                out.append(build_result(claim, self.results[ci], self._selected_data(ci, claim), self.node.metadata.name))
            except NodeSelectorResultError as exc:
                raise AllocationError(f"create NodeSelector for claim {claim.metadata.name}: {exc}") from None
        return out

    def _selected_data(self, ci: int, claim: ResourceClaim) -> list[SelectedRequest]:
        """Per request: (name, chosen subrequest's name or None, its class)."""
        out: list[SelectedRequest] = []
        for ri, request in enumerate(claim.spec.devices.requests):
            data = self.request_data[(ci, ri, 0)]
            if data.parent is not None:
                data = self.request_data[(ci, ri, data.selected_subrequest)]
                out.append((request.name, data.request.name, data.device_class))
            else:
                out.append((request.name, None, data.device_class))
        return out

    def _validate(self, ci: int, key: RequestKey, request: _Request, parent: str | None) -> _RequestData:
        claim = _kobj(self.claims[ci])
        for i, selector in enumerate(request.selectors):
            if selector.cel is None:
                raise AllocationError(f"claim {claim}, request {request.name}, selector #{i}: "
                                      "CEL expression empty (unsupported selector type?)")
        if not request.class_name:
            raise AllocationError(f"claim {claim}, request {request.name}: missing device class name (unsupported request type?)")
        device_class = self.owner.classes.get(request.class_name)
        if device_class is None:
            raise AllocationError(f"claim {claim}, request {request.name}: could not retrieve device class "
                                  f"{request.class_name}: deviceclasses.resource.k8s.io \"{request.class_name}\" not found")
        data = _RequestData(request, parent, device_class)
        if request.mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.incomplete or pool.invalid:
                    state = "being updated" if pool.incomplete else "invalid"
                    raise AllocationError(f"claim {claim}, request {request.name}: asks for all devices, "
                                          f"but resource pool {pool.pool_id} is currently {state}")
                for slice_ in pool.device_slices:
                    for index, device in enumerate(devices_of(slice_)):
                        if not self._selectable(key, data, slice_, index):
                            continue
                        candidate = _Candidate((slice_.spec.driver, slice_.spec.pool.name, device.name), device, slice_, pool)
                        # Only whether the device could ever hold the request: what is left is
                        # checked when the search takes it, so a device in use fails All mode.
                        if not self._capacity_fits(ci, request, candidate, device.name, static=True):
                            continue
                        data.all_devices.append(candidate)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {claim}, request {request.name}: unsupported count mode {request.mode}")
        return data

    # --- the search (kube's allocateOne) ---

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_subrequest: bool, start: tuple[int, int, int]) -> bool:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.devices.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSizeExceeded:
                return False
        key = (ci, ri, si)
        data = self.request_data[key]
        if not in_subrequest and data.parent is not None:
            return self._allocate_first_available(ci, ri, di)
        request = data.request
        all_mode = request.mode == ALLOCATION_MODE_ALL
        if all_mode and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE - len(self.results[ci]):
            raise _MaxSizeExceeded
        if all_mode:
            undo = self._allocate_device(ci, key, data.all_devices[di], must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, in_subrequest, (0, 0, 0))
            except _MaxSizeExceeded:
                undo()
                raise
            if not done:
                undo()
            return done
        return self._allocate_some(ci, key, data, di, in_subrequest, start)

    def _allocate_first_available(self, ci: int, ri: int, di: int) -> bool:
        all_exceeded = True
        si = 0
        while (ci, ri, si) in self.request_data:
            try:
                done = self._allocate_one(ci, ri, si, di, True, (0, 0, 0))
            except _MaxSizeExceeded:
                si += 1
                continue
            all_exceeded = False
            if done:
                self.request_data[(ci, ri, 0)].selected_subrequest = si
                return True
            si += 1
        if all_exceeded:
            raise _MaxSizeExceeded
        return False

    def _allocate_some(self, ci: int, key: RequestKey, data: _RequestData, di: int, in_subrequest: bool,
                       start: tuple[int, int, int]) -> bool:
        request = data.request
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = start[1] if pi == start[0] else 0
            for sli in range(first_slice, len(pool.device_slices)):
                slice_ = pool.device_slices[sli]
                devices = devices_of(slice_)
                first_device = start[2] if pi == start[0] and sli == start[1] else 0
                for dvi in range(first_device, len(devices)):
                    device = devices[dvi]
                    device_id = (pool.driver, pool.name, device.name)
                    if request.admin_access:
                        if ci in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    if not self._selectable(key, data, slice_, dvi):
                        continue
                    candidate = _Candidate(device_id, device, slice_, pool)
                    if not self._capacity_fits(ci, request, candidate, device_id_text(device_id), static=False):
                        continue
                    undo = self._allocate_device(ci, key, candidate, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(key[0], key[1], key[2], di + 1, in_subrequest, (pi, sli, dvi + 1))
                    except _MaxSizeExceeded:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    # --- one candidate ---

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated.devices or bool(self.allocating.get(device_id))

    def _selectable(self, key: RequestKey, data: _RequestData, slice_: ResourceSlice, index: int) -> bool:
        device = devices_of(slice_)[index]
        device_id = (slice_.spec.driver, slice_.spec.pool.name, device.name)
        hit = self.selectable_cache.get((device_id, key))
        if hit is not None:
            return hit
        ok = (self._selectors_match(key[0], data.device_class, data.device_class.spec.selectors, slice_, index, device_id)
              and self._selectors_match(key[0], None, data.request.selectors, slice_, index, device_id))
        if ok and slice_.spec.per_device_node_selection:
            try:
                ok = node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
            except NodeSelectorError as exc:
                raise AllocationError(str(exc)) from None
        self.selectable_cache[(device_id, key)] = ok
        return ok

    def _selectors_match(self, ci: int, device_class: DeviceClass | None, selectors: list[DeviceSelector],
                         slice_: ResourceSlice, index: int, device_id: DeviceID) -> bool:
        owner = f"class {device_class.metadata.name}" if device_class is not None else f"claim {_kobj(self.claims[ci])}"
        for i, selector in enumerate(selectors):
            assert selector.cel is not None  # checked when the request was validated
            try:
                matches, error = self.owner.selectors.lookup(selector.cel.expression, slice_, index)
            except SelectorCompileError as exc:
                raise AllocationError(selector_compile_error(owner, i, exc.detail)) from None
            if error is not None:
                raise AllocationError(selector_error(owner, i, device_id_text(device_id), error))
            if not matches:
                return False
        return True

    def _capacity_fits(self, ci: int, request: _Request, candidate: _Candidate, shown_as: str, *, static: bool,
                       verb: str = "checking") -> bool:
        """kube's CmpRequestOverCapacity: the request's share fits what is left of the device's
        capacities (`static`: of the whole device, as All mode first asks)."""
        device_id = candidate.device_id
        allocated = allocating = None
        if not static:
            allocated = self.owner.allocated.aggregated_capacity.get(device_id)
            allocating = self.allocating_capacity.get(device_id)
        try:
            return request_fits(request.capacity_requests, candidate.device.capacity, allocated, allocating)
        except CapacityError as exc:
            raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: {verb} capacity for device "
                                  f"{shown_as}: {exc}") from None

    def _shared_in_use(self, device_id: DeviceID) -> bool:
        """deviceCapacityInUse: allocated claims or this allocation already share the device."""
        return self.owner.allocated.is_shared(device_id) or device_id in self.allocating_capacity

    def _allocate_device(self, ci: int, key: RequestKey, candidate: _Candidate, *, must: bool) -> Callable[[], None] | None:
        """Takes the candidate for the request if it is free (or shareable), its counters suffice,
        its taints are tolerated, the claim's constraints hold and its capacity suffices; returns
        how to give it back, None if not taken."""
        data = self.request_data[key]
        request = data.request
        device, device_id = candidate.device, candidate.device_id
        shareable = bool(device.allow_multiple_allocations)
        if request.admin_access:
            if not shareable and ci in self.allocating.get(device_id, ()):
                return None
        elif self._in_use(device_id):
            return None
        counters_taken = False
        # A shared device in use has paid its counters already; another share must not again.
        if device.consumes_counters and not (shareable and self._shared_in_use(device_id)):
            if not self._take_counters(candidate):
                return None
            counters_taken = True
        base, sub = (data.parent, request.name) if data.parent is not None else (request.name, "")
        constraints = self.constraints[ci]
        added = 0
        marked = False

        def roll_back() -> None:
            if marked:
                self.allocating[device_id].discard(ci)
            for c in reversed(constraints[:added]):
                c.remove(base, sub)
            if counters_taken:
                self._give_back_counters(candidate)

        if _taint_prevents(device, request.tolerations):
            roll_back()
            return None
        for constraint in constraints:
            if not constraint.add(base, sub, device, candidate.pool.driver):
                roll_back()
                if must:
                    raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: cannot add device "
                                          f"{device_id_text(device_id)} because a claim constraint would not be satisfied")
                return None
            added += 1
        if not shareable:
            self.allocating.setdefault(device_id, set()).add(ci)
            marked = True
        try:
            fits = self._capacity_fits(ci, request, candidate, device_id_text(device_id), static=False, verb="rechecking")
        except AllocationError:
            roll_back()
            raise
        if not fits:
            roll_back()
            return None
        share_id: str | None = None
        consumed: dict[str, str] = {}
        share: Consumed = {}
        entry_existed = False
        if shareable:
            try:
                amounts = share_of_request(request.capacity_requests, device.capacity)
            except CapacityError as exc:
                roll_back()
                raise AllocationError(f"claim {_kobj(self.claims[ci])}, request {request.name}: computing consumed capacity "
                                      f"for device {device_id_text(device_id)}: {exc}") from None
            share_id = self.owner.new_share_id()
            share = {name: q.nanos for name, q in amounts.items() if q.nanos is not None}
            consumed = {name: amounts[name].canonical() for name in sorted(amounts)}
            entry_existed = device_id in self.allocating_capacity
            add_consumed(self.allocating_capacity, device_id, share)
        results = self.results[ci]
        results.append(ResultDevice(request=request.name, parent=data.parent, device_id=device_id, device=device,
                                    slice=candidate.slice, admin_access=True if request.admin_access else None,
                                    tolerations=request.tolerations, share_id=share_id, consumed_capacity=consumed))
        size = len(results) - 1

        def undo() -> None:
            del results[size:]
            if shareable:
                remove_consumed(self.allocating_capacity, device_id, share)
                if entry_existed and device_id not in self.allocating_capacity:
                    self.allocating_capacity[device_id] = {}  # an earlier share still marks it shared
            roll_back()

        return undo

    # --- shared counters (partitionable devices) ---

    def _available(self, pool: Pool) -> Counters:
        """The pool's counters less what allocated devices consume (kept for the allocator's life)."""
        key = (pool.driver, pool.name)
        hit = self.owner.available_counters.get(key)
        if hit is not None:
            return hit
        available = {name: {c: _nanos(v.value) for c, v in cs.counters.items()} for name, cs in pool.counter_sets.items()}
        for slice_ in pool.device_slices + pool.other_slices:
            for device in devices_of(slice_):
                if not self.owner.allocated.is_allocated((slice_.spec.driver, slice_.spec.pool.name, device.name)):
                    continue
                for consumption in device.consumes_counters:
                    counters = available.get(consumption.counter_set, {})
                    for c, v in consumption.counters.items():
                        if c in counters:
                            counters[c] -= _nanos(v.value)
        self.owner.available_counters[key] = available
        return available

    def _take_counters(self, candidate: _Candidate) -> bool:
        pool = candidate.pool
        available = self._available(pool)
        consumed = self.consumed_counters.setdefault((pool.driver, pool.name), {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for c, v in consumption.counters.items():
                counters[c] = counters.get(c, 0) + _nanos(v.value)
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            if any(amount < used.get(c, 0) for c, amount in counters.items()):
                self._give_back_counters(candidate)
                return False
        return True

    def _give_back_counters(self, candidate: _Candidate) -> None:
        consumed = self.consumed_counters[(candidate.pool.driver, candidate.pool.name)]
        for consumption in candidate.device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for c, v in consumption.counters.items():
                counters[c] -= _nanos(v.value)


def _nanos(value: str | int | float) -> int:
    nanos = parse_quantity(value).nanos
    if nanos is None:
        raise AllocationError(f"counter value {value}: too large to count")
    return nanos


def _taint_prevents(device: Device, tolerations: list[DeviceToleration]) -> bool:
    """A NoSchedule or NoExecute taint no toleration of the request tolerates (other effects,
    None among them, never prevent allocation)."""
    return any(taint.effect in ("NoSchedule", "NoExecute")
               and not any(_tolerates(t, taint.key, taint.value, taint.effect) for t in tolerations)
               for taint in device.taints)


def _tolerates(toleration: DeviceToleration, key: str, value: str, effect: str) -> bool:
    if toleration.effect and toleration.effect != effect:
        return False
    if toleration.key and toleration.key != key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == value
    return toleration.operator == "Exists"
