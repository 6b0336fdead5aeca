"""Why a node cannot allocate a pod's claims, request by request, for `kubesched explain`.

The allocator only answers "no solution" (kube's "cannot allocate all claims"); this looks at the
same inputs again and names the first thing that stops each request on the node: no device at
all, no device of the request's DeviceClass, a request selector that matches none of them, too few
free (in use by which claims, tainted, shared devices without capacity left), then a claim's
matchAttribute / distinctAttribute constraint that no set of the free devices satisfies. When every
request can be met alone and every constraint has candidates, it says the requests compete.

It runs only when an explanation asks (a dry run's nearest misses), never in a scheduling cycle.
Selectors are evaluated in one batch per expression over the node's devices (celvector), from the
columns the DRA manager's slice index keeps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.dra import (
    Device,
    DeviceSelector,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.api.dra.common import ALLOCATION_MODE_ALL
from kubesched.api.objects import Node
from kubesched.api.quantity import canonical_nanos
from kubesched.devices.allocatedstate import AllocatedState, DeviceID
from kubesched.devices.allocator import Allocator, untolerated_taint
from kubesched.devices.capacity import CapacityError, quantity, request_fits, share_of_request
from kubesched.devices.cel import SelectorCompileError
from kubesched.devices.celvector import evaluate_batch
from kubesched.devices.constraints import lookup_attribute, typed_value
from kubesched.devices.manager import DraManager
from kubesched.devices.nodematch import NodeSelectorError, node_matches
from kubesched.devices.pools import PoolGatherError, devices_of, gather_pools
from kubesched.devices.sliceinputs import DeviceColumns
from kubesched.plugins.dynamicresources.claims import kobj

HOLDERS_NAMED = 3  # claims named per group of devices in use (the count is always whole)


@dataclass(slots=True)
class NodeDevices:
    """The devices the node may allocate from, in the allocator's order (complete, valid pools)."""

    ids: list[DeviceID]
    devices: list[Device]
    drivers: list[str]
    columns: DeviceColumns
    positions: np.ndarray  # each device's place in `columns` (which hold whole slices)
    skipped_pools: list[str] = field(default_factory=list)  # incomplete or invalid: the allocator skips them

    @property
    def n(self) -> int:
        return len(self.ids)


def node_devices(dra: DraManager, allocator: Allocator, node: Node) -> NodeDevices | str:
    """The node's devices, or why they cannot be known (the allocator's own error)."""
    name = node.metadata.name
    slices = allocator.slices_on_node.get(name, []) + allocator.slices_shared
    try:
        pools = gather_pools(slices, node, allocator.all_slices)
    except PoolGatherError as exc:
        return f"gather pool information: {exc}"
    ids: list[DeviceID] = []
    devices: list[Device] = []
    drivers: list[str] = []
    positions: list[int] = []
    used_slices: list[ResourceSlice] = []
    skipped: list[str] = []
    offset = 0
    for pool in pools:
        if pool.incomplete or pool.invalid:
            skipped.append(f"{pool.pool_id} ({'being updated' if pool.incomplete else 'invalid'})")
            continue
        for rs in pool.device_slices:
            used_slices.append(rs)
            for index, device in enumerate(devices_of(rs)):
                if rs.spec.per_device_node_selection and not _device_on_node(node, device):
                    continue
                ids.append((pool.driver, pool.name, device.name))
                devices.append(device)
                drivers.append(pool.driver)
                positions.append(offset + index)
            offset += len(devices_of(rs))
    columns = DeviceColumns(dra.slices.columns_of(used_slices))
    return NodeDevices(ids, devices, drivers, columns, np.array(positions, dtype=np.int64), skipped)


def _device_on_node(node: Node, device: Device) -> bool:
    try:
        return node_matches(node, device.node_name, device.all_nodes, device.node_selector)
    except NodeSelectorError:
        return False


def holders(dra: DraManager) -> dict[DeviceID, set[str]]:
    """Which claims hold each device (allocated, or in flight for a pod being placed); admin
    access holds nothing."""
    out: dict[DeviceID, set[str]] = {}
    for claim in [*dra.claims.list(), *dra.claims.in_flight()]:
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for result in allocation.devices.results:
            if not result.admin_access:
                out.setdefault((result.driver, result.pool, result.device), set()).add(kobj(claim))
    return out


@dataclass(frozen=True, slots=True)
class Ask:
    """A request with `exactly`, or one subrequest of `firstAvailable`, as the allocator reads it."""

    name: str
    class_name: str
    selectors: list[DeviceSelector]
    all_mode: bool
    count: int
    tolerations: list[DeviceToleration]
    capacity: Mapping[str, str | int | float] | None
    admin_access: bool

    @staticmethod
    def exact(name: str, spec: ExactDeviceRequest) -> Ask:
        return Ask(name, spec.device_class_name, spec.selectors, spec.allocation_mode == ALLOCATION_MODE_ALL, spec.count,
                   spec.tolerations, spec.capacity.requests if spec.capacity else None, bool(spec.admin_access))

    @staticmethod
    def sub(parent: str, spec: DeviceSubRequest) -> Ask:
        return Ask(f"{parent}/{spec.name}", spec.device_class_name, spec.selectors,
                   spec.allocation_mode == ALLOCATION_MODE_ALL, spec.count, spec.tolerations,
                   spec.capacity.requests if spec.capacity else None, False)


@dataclass(slots=True)
class Verdict:
    """One request on the node: the devices it could take now, how many it needs, and what stops
    it ("" when it could be met on its own)."""

    usable: np.ndarray
    need: int
    problem: str = ""


class NodeDiagnosis:
    """The diagnosis of one node for the pod's claims to allocate."""

    def __init__(self, dra: DraManager, allocated: AllocatedState, found: NodeDevices,
                 held_by: Mapping[DeviceID, set[str]]) -> None:
        self.dra = dra
        self.allocated = allocated
        self.found = found
        self.held_by = held_by
        self._masks: dict[str, tuple[np.ndarray, str]] = {}

    def explain(self, claims: Iterable[ResourceClaim]) -> list[str]:
        parts: list[str] = []
        usable_by_claim: list[tuple[ResourceClaim, dict[str, Verdict]]] = []
        for claim in claims:
            verdicts: dict[str, Verdict] = {}
            blocked = False
            for request in claim.spec.devices.requests:
                verdict, label = self._request(request.name, request.exactly, request.first_available)
                verdicts[request.name] = verdict
                if verdict.problem:
                    parts.append(f"ResourceClaim {kobj(claim)}, request {label}: {verdict.problem}")
                    blocked = True
            if not blocked:
                constraint = self._constraints(claim, verdicts)
                if constraint:
                    parts.append(f"ResourceClaim {kobj(claim)}: {constraint}")
                else:
                    usable_by_claim.append((claim, verdicts))
        if not parts and usable_by_claim:
            parts.append(self._together(usable_by_claim))
        return parts

    # --- one request ---

    def _request(self, name: str, exactly: ExactDeviceRequest | None,
                 first_available: list[DeviceSubRequest]) -> tuple[Verdict, str]:
        if exactly is not None:
            return self.ask(Ask.exact(name, exactly)), name
        verdicts = [(sub.name, self.ask(Ask.sub(name, sub))) for sub in first_available]
        for _, verdict in verdicts:
            if not verdict.problem:
                return verdict, name
        if len(verdicts) == 1:
            return verdicts[0][1], f"{name}/{verdicts[0][0]}"
        every = "; ".join(f"{sub}: {verdict.problem}" for sub, verdict in verdicts)
        none = np.zeros(self.found.n, dtype=bool)
        return Verdict(none, 0, f"no alternative of firstAvailable can be had ({every})"), name

    def ask(self, ask: Ask) -> Verdict:
        found = self.found
        none = np.zeros(found.n, dtype=bool)
        need = ask.count
        device_class = self.dra.device_class(ask.class_name)
        if device_class is None:
            return Verdict(none, need, f'DeviceClass "{ask.class_name}" does not exist')
        of_class = np.ones(found.n, dtype=bool)
        for selector in device_class.spec.selectors:
            mask, error = self._selector(selector)
            if error:
                return Verdict(none, need, f'DeviceClass "{ask.class_name}": {error}')
            of_class &= mask
        in_class = int(np.count_nonzero(of_class))
        if not in_class:
            return Verdict(none, need, f"none of this node's {found.n} device(s) is of DeviceClass \"{ask.class_name}\"")
        matching = of_class.copy()
        for selector in ask.selectors:
            mask, error = self._selector(selector)
            if error:
                return Verdict(none, need, error)
            if not np.any(matching & mask):
                expression = selector.cel.expression if selector.cel is not None else ""
                return Verdict(none, need, f'its selector "{expression}" matches none of this node\'s {in_class} '
                                           f'device(s) of DeviceClass "{ask.class_name}"')
            matching &= mask
        return self._availability(ask, matching)

    def _selector(self, selector: DeviceSelector) -> tuple[np.ndarray, str]:
        """The selector over the node's devices, and the first error it raised on one ("" if none)."""
        expression = selector.cel.expression if selector.cel is not None else ""
        hit = self._masks.get(expression)
        if hit is None:
            found = self.found
            try:
                batch = evaluate_batch(self.dra.selector_cache.get_or_compile(expression), found.columns)
            except SelectorCompileError as exc:
                hit = (np.zeros(found.n, dtype=bool), f'selector "{expression}" does not compile: {exc.detail}')
            else:
                wanted = {int(p): i for i, p in enumerate(found.positions.tolist())}
                errors = [(wanted[p], message) for p, message in sorted(batch.errors.items()) if p in wanted]
                error = f'selector "{expression}" fails on device {"/".join(found.ids[errors[0][0]])}: {errors[0][1]}' \
                    if errors else ""
                hit = (batch.matches[found.positions], error)
            self._masks[expression] = hit
        return hit

    def _availability(self, ask: Ask, matching: np.ndarray) -> Verdict:
        """Of the matching devices, those the request could take now, and what keeps the others."""
        found = self.found
        in_use = np.zeros(found.n, dtype=bool)
        tainted = np.zeros(found.n, dtype=bool)
        short = np.zeros(found.n, dtype=bool)
        taints: Counter[str] = Counter()
        for i in np.flatnonzero(matching).tolist():
            device, device_id = found.devices[i], found.ids[i]
            if device.allow_multiple_allocations:
                try:
                    fits = request_fits(ask.capacity, device.capacity, self.allocated.aggregated_capacity.get(device_id), None)
                except CapacityError:
                    fits = False
                short[i] = not fits
            elif not ask.admin_access and device_id in self.allocated.devices:
                in_use[i] = True
            taint = untolerated_taint(device, ask.tolerations)
            if taint is not None and not in_use[i] and not short[i]:
                tainted[i] = True
                taints[f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"] += 1
        usable = matching & ~in_use & ~tainted & ~short
        total, free = int(np.count_nonzero(matching)), int(np.count_nonzero(usable))
        if ask.all_mode:
            if free == total:
                return Verdict(usable, total)
            head = f"asks for all {total} matching device(s) of this node, {total - free} of them cannot be had"
            return Verdict(usable, total, f"{head}: {self._why_not(in_use, tainted, short, taints, ask)}")
        if free >= ask.count:
            return Verdict(usable, ask.count)
        head = f"needs {ask.count} device(s) of DeviceClass \"{ask.class_name}\""
        if total < ask.count:
            head += f", this node has {total} matching"
            if free == total:
                return Verdict(usable, ask.count, head)
            head += f", {free} of them can be had"
        else:
            head += f", {free} of the {total} matching here can be had"
        return Verdict(usable, ask.count, f"{head}: {self._why_not(in_use, tainted, short, taints, ask)}")

    def _why_not(self, in_use: np.ndarray, tainted: np.ndarray, short: np.ndarray, taints: Counter[str], ask: Ask) -> str:
        found = self.found
        parts: list[str] = []
        used = np.flatnonzero(in_use).tolist()
        if used:
            claims = sorted({c for i in used for c in self.held_by.get(found.ids[i], ())})
            named = ", ".join(claims[:HOLDERS_NAMED]) + (f" and {len(claims) - HOLDERS_NAMED} more" if len(claims) > HOLDERS_NAMED else "")
            parts.append(f"{len(used)} in use" + (f" by {len(claims)} claim(s) ({named})" if claims else ""))
        if taints:
            which = ", ".join(f"{taint} ({n})" if len(taints) > 1 else taint for taint, n in sorted(taints.items()))
            parts.append(f"{int(np.count_nonzero(tainted))} with a taint the request does not tolerate ({which})")
        if np.any(short):
            parts.append(self._capacity_left(short, ask))
        return ", ".join(parts)

    def _capacity_left(self, short: np.ndarray, ask: Ask) -> str:
        """Shared devices without room for one more share: the most any of them has left, per capacity."""
        found = self.found
        rows = np.flatnonzero(short).tolist()
        sharers = {c for i in rows for c in self.held_by.get(found.ids[i], ())}
        detail: list[str] = []
        for name in sorted({n for i in rows for n in found.devices[i].capacity}):
            asked = None
            best: tuple[int, str] | None = None
            for i in rows:
                capacity = found.devices[i].capacity.get(name)
                if capacity is None:
                    continue
                whole = quantity(capacity.value)
                if whole.nanos is None:
                    continue
                used = self.allocated.aggregated_capacity.get(found.ids[i], {}).get(name, 0)
                left = whole.nanos - used
                if best is None or left > best[0]:
                    best = (left, whole.format)
                if asked is None:
                    try:
                        asked = share_of_request(ask.capacity, found.devices[i].capacity)[name].canonical()
                    except CapacityError:
                        asked = "?"
            if best is not None:
                detail.append(f"{name}: one share takes {asked}, at most {canonical_nanos(max(best[0], 0), best[1])} left")
        shared_by = f", shared by {len(sharers)} claim(s)" if sharers else ""
        return f"{len(rows)} shared with too little capacity left{shared_by} ({'; '.join(detail)})"

    # --- a claim's constraints ---

    def _constraints(self, claim: ResourceClaim, verdicts: Mapping[str, Verdict]) -> str:
        for constraint in claim.spec.devices.constraints:
            attribute = constraint.match_attribute or constraint.distinct_attribute
            if attribute is None:
                continue
            names = [n for n in (constraint.requests or list(verdicts)) if n.partition("/")[0] in verdicts]
            involved = [(n, verdicts[n.partition("/")[0]]) for n in names]
            values = [(n, v, self._values(v.usable, attribute)) for n, v in involved]
            need = sum(v.need for _, v, _ in values)
            which = ", ".join(names)
            if constraint.match_attribute is not None:
                common = set.intersection(*(
                    {value for value, count in counts.items() if count >= v.need} for _, v, counts in values)) if values else set()
                if not common:
                    seen = Counter[str]()
                    for _, _, counts in values:
                        seen.update({_show(value): count for value, count in counts.items()})
                    per_value = ", ".join(f"{value}: {count}" for value, count in sorted(seen.items())) or "none has it"
                    return (f"constraint matchAttribute {attribute} on request(s) {which}: no value of it is shared by "
                            f"enough free devices ({need} needed; free devices per value: {per_value})")
            else:
                distinct = set().union(*(counts for _, _, counts in values)) if values else set()
                if len(distinct) < need:
                    return (f"constraint distinctAttribute {attribute} on request(s) {which}: the free devices have "
                            f"{len(distinct)} distinct value(s) of it, {need} device(s) needed")
        return ""

    def _values(self, usable: np.ndarray, attribute: str) -> Counter[tuple[str, object]]:
        """How many of the usable devices have each value of the attribute (devices without it left out)."""
        found = self.found
        counts: Counter[tuple[str, object]] = Counter()
        for i in np.flatnonzero(usable).tolist():
            value = lookup_attribute(found.devices[i], found.drivers[i], attribute)
            typed = typed_value(value) if value is not None else None
            if typed is not None:
                counts[typed] += 1
        return counts

    def _together(self, claims: list[tuple[ResourceClaim, dict[str, Verdict]]]) -> str:
        union = np.zeros(self.found.n, dtype=bool)
        need = 0
        for _, verdicts in claims:
            for verdict in verdicts.values():
                union |= verdict.usable
                need += verdict.need
        names = ", ".join(kobj(claim) for claim, _ in claims)
        return (f"ResourceClaim(s) {names}: every request can be met on its own, but no set of devices meets them all "
                f"together ({int(np.count_nonzero(union))} free device(s) match, {need} requested; shared counters of "
                "partitionable devices or constraints across requests may also stand in the way)")


def _show(value: tuple[str, object]) -> str:
    return str(value[1])


def explain_node(dra: DraManager, allocator: Allocator, node: Node, claims: list[ResourceClaim]) -> list[str]:
    """Per claim and request, what keeps it off the node (kube's words stay in the Filter's reason)."""
    found = node_devices(dra, allocator, node)
    if isinstance(found, str):
        return [found]
    if found.n == 0 and claims:
        names = ", ".join(kobj(claim) for claim in claims)
        skipped = f" (resource pool(s) skipped: {', '.join(found.skipped_pools)})" if found.skipped_pools else ""
        return [f"this node has no devices for ResourceClaim(s) {names}: no ResourceSlice offers any here{skipped}"]
    parts = NodeDiagnosis(dra, allocator.allocated, found, holders(dra)).explain(claims)
    if found.skipped_pools:
        parts.append(f"resource pool(s) the allocator skips here: {', '.join(found.skipped_pools)}")
    return parts
