"""Extended resources served by dynamic resource allocation (DRAExtendedResource, GA and locked on
in kube v1.37.2), as NodeResourcesFit and NodeResourcesBalancedAllocation see them.

A DeviceClass maps an extended resource name to DRA: its spec.extendedResourceName, and always
`deviceclass.resource.kubernetes.io/<class>` (the cache's DeviceClassIndex answers which class).
On a node whose allocatable has none of a mapped resource (kube's shouldDelegateResourceToDRA:
allocatable 0 or absent), NodeResourcesFit's Filter leaves the resource to DynamicResources; a node
with some (a device plugin's) is checked as before.

Scoring (kube's getDRAPreScoredParams and calculateDRAResourceTotals): when a scored resource is
mapped, a node without allocatable for it counts, in place of allocatable and requested, the
devices of the mapping class that are on the node (every ResourceSlice, its nodeName, allNodes or
node selector, or each device's with perDeviceNodeSelection; the class's CEL selectors) and how
many of them allocated claims hold (in-flight allocations included). A node where that count is 0
leaves the resource out, as a node without allocatable does. A selector that fails to compile or
to evaluate on one of a node's devices leaves the resource out on that node (kube logs the error
and scores the node without it).

Cost: the per-device work (class selectors in one batch over every slice's columns, each device's
node or node mask) is done once per class, slice revision and node set, and the count of
allocated devices once per change of the allocated state; a cycle then sums columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.dra import DeviceClass, ResourceSlice
from kubesched.api.objects import NodeSelector
from kubesched.cache.nodetable import NodeTable
from kubesched.devices.allocatedstate import AllocatedState, DeviceID
from kubesched.devices.cel import SelectorCompileError
from kubesched.devices.celvector import evaluate_batch
from kubesched.devices.manager import DraManager
from kubesched.devices.sliceinputs import DeviceColumns
from kubesched.framework.handle import Handle
from kubesched.plugins.helper.nodeselector import parse_node_selector, terms_mask
from kubesched.plugins.helper.resourcescoring import DraTotals

_KEPT = 16  # classes whose device layout is kept


def mapped_resources(handle: Handle | None, names: Iterable[str]) -> frozenset[str]:
    """Those of `names` a DeviceClass maps to DRA (none without a handle, as kube's nil DRA manager)."""
    if handle is None:
        return frozenset()
    classes = handle.cache.device_classes
    if not len(classes):
        return frozenset()
    return frozenset(name for name in names if classes.class_for(name) is not None)


@dataclass(slots=True)
class _ClassDevices:
    """The devices of one class, by where they are: pinned to one row each, or on a mask of rows."""

    pinned_ids: list[DeviceID]
    pinned_rows: np.ndarray  # intp, one per pinned device
    spread_ids: list[DeviceID]
    spread_masks: list[np.ndarray]  # bool over the table's rows, one per spread device
    capacity: np.ndarray  # int64 per row: devices of the class on the node
    broken: np.ndarray  # bool per row: a selector failed on one of the node's devices
    allocated_for: AllocatedState | None = None
    allocated: np.ndarray | None = None


class DeviceTotals:
    """Per row, the devices of a class on the node and how many are allocated (one per plugin)."""

    def __init__(self) -> None:
        self._layouts: dict[tuple[str, int], tuple[tuple[int, int, int, int], _ClassDevices]] = {}

    def of(self, handle: Handle, table: NodeTable, resource: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(capacity, allocated) over every row of the table for a mapped resource, None when no
        class maps it. Rows where a selector failed count nothing."""
        name = handle.cache.device_classes.class_for(resource)
        dc = handle.cache.device_classes.classes.get(name) if name is not None else None
        if dc is None:
            return None
        dra = handle.dra
        layout = self._layout(dra, table, dc)
        state = dra.claims.gather_allocated_state()
        if layout.allocated is None or layout.allocated_for is not state:
            layout.allocated = _allocated_per_row(layout, state, table.size)
            layout.allocated_for = state
        capacity = np.where(layout.broken, 0, layout.capacity)
        allocated = np.where(layout.broken, 0, layout.allocated)
        return capacity, allocated

    def _layout(self, dra: DraManager, table: NodeTable, dc: DeviceClass) -> _ClassDevices:
        key = (dc.metadata.name, id(table))
        fresh = (id(dc), dra.slices.revision, table.node_generation, table.size)
        hit = self._layouts.get(key)
        if hit is not None and hit[0] == fresh:
            return hit[1]
        layout = _class_devices(dra, table, dc)
        if len(self._layouts) >= _KEPT:
            self._layouts.clear()
        self._layouts[key] = (fresh, layout)
        return layout


def _class_devices(dra: DraManager, table: NodeTable, dc: DeviceClass) -> _ClassDevices:
    slices = dra.slices.all()
    size = table.size
    matches, failed = _class_matches(dra, slices, dc)
    pinned_ids: list[DeviceID] = []
    pinned_rows: list[int] = []
    spread_ids: list[DeviceID] = []
    spread_masks: list[np.ndarray] = []
    broken = np.zeros(size, dtype=bool)
    offset = 0
    for rs in slices:
        spec = rs.spec
        devices = spec.devices or []
        slice_rows: np.ndarray | int | None = None
        if not spec.per_device_node_selection:
            slice_rows = _rows_of(table, spec.node_name, spec.all_nodes, spec.node_selector, slice_level=True)
        for i, device in enumerate(devices):
            position = offset + i
            rows = slice_rows if slice_rows is not None else _rows_of(
                table, device.node_name, device.all_nodes, device.node_selector, slice_level=False)
            if isinstance(rows, int):
                if rows < 0:
                    continue
                if position in failed:
                    broken[rows] = True
                elif matches[position]:
                    pinned_ids.append((spec.driver, spec.pool.name, device.name))
                    pinned_rows.append(rows)
                continue
            if position in failed:
                broken |= rows
            elif matches[position]:
                spread_ids.append((spec.driver, spec.pool.name, device.name))
                spread_masks.append(rows)
        offset += len(devices)
    rows_array = np.array(pinned_rows, dtype=np.intp)
    capacity = np.bincount(rows_array, minlength=size).astype(np.int64)[:size]
    for mask in spread_masks:
        capacity += mask
    return _ClassDevices(pinned_ids, rows_array, spread_ids, spread_masks, capacity, broken)


def _class_matches(dra: DraManager, slices: list[ResourceSlice], dc: DeviceClass) -> tuple[np.ndarray, set[int]]:
    """Per device of the slices in order: whether every CEL selector of the class matches it, and
    the devices where one failed (a selector that does not compile fails on every device)."""
    total = sum(len(rs.spec.devices or []) for rs in slices)
    matches = np.ones(total, dtype=bool)
    failed: set[int] = set()
    expressions = [s.cel.expression for s in dc.spec.selectors if s.cel is not None]
    if not expressions or not total:
        return matches, failed
    columns = DeviceColumns(dra.slices.columns_of(slices))
    for expression in expressions:
        try:
            selector = dra.selector_cache.get_or_compile(expression)
        except SelectorCompileError:
            return np.zeros(total, dtype=bool), set(range(total))
        # kube stops at a device's first selector that does not match: a later one's failure
        # on that device does not count.
        batch = evaluate_batch(selector, columns)
        failed.update(i for i in batch.errors if matches[i])
        matches &= batch.matches
    return matches, failed


def _rows_of(table: NodeTable, node_name: str | None, all_nodes: bool | None, selector: NodeSelector | None,
             *, slice_level: bool) -> np.ndarray | int:
    """The rows a slice's (or a device's) node selection puts its devices on: one row (-1: none
    in the table) or a mask. A slice with no selection at all counts on every node, as kube's
    scorer reads it; a device with none counts nowhere."""
    if all_nodes:
        return np.ones(table.size, dtype=bool)
    if node_name:
        row = table.index.get(node_name)
        return -1 if row is None else row
    if selector is not None:
        terms = parse_node_selector(selector)
        if any(term.errors for term in terms):
            return np.zeros(table.size, dtype=bool)
        return terms_mask(table, terms)
    return np.ones(table.size, dtype=bool) if slice_level else -1


def _allocated_per_row(layout: _ClassDevices, state: AllocatedState, size: int) -> np.ndarray:
    held = np.fromiter((state.is_allocated(d) for d in layout.pinned_ids), dtype=bool, count=len(layout.pinned_ids))
    allocated = np.bincount(layout.pinned_rows[held], minlength=size).astype(np.int64)[:size]
    for device_id, mask in zip(layout.spread_ids, layout.spread_masks, strict=True):
        if state.is_allocated(device_id):
            allocated += mask
    return allocated


def dra_totals(handle: Handle | None, totals: DeviceTotals, table: NodeTable, names: Sequence[str]) -> DraTotals | None:
    """The devices standing for the scored resources a DeviceClass maps, None when none is mapped
    (kube's getDRAPreScoredParams: then nothing DRA's is read at all)."""
    mapped = mapped_resources(handle, names)
    if handle is None or not mapped:
        return None
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in mapped:
        found = totals.of(handle, table, name)
        if found is not None:
            out[name] = found
    return out or None
