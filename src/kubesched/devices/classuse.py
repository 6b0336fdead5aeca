"""How much of each DeviceClass's devices claims hold, for the simulation report: per class, the
devices its selectors match in every ResourceSlice, how many of them are allocated (whole or
shared at least once), and for devices several claims share (allowMultipleAllocations) how much of
each capacity the shares consume. A device matched by two classes counts in both.

Selectors are evaluated in one batch per expression over all devices (celvector); a selector that
fails to compile or errs on a device leaves that device out, as the allocator would never pick it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.dra import Device, DeviceClass, ResourceSlice
from kubesched.devices.allocatedstate import AllocatedState
from kubesched.devices.capacity import quantity
from kubesched.devices.cel import SelectorCache, SelectorCompileError
from kubesched.devices.celvector import evaluate_batch
from kubesched.devices.sliceinputs import DeviceColumns


@dataclass(frozen=True, slots=True)
class CapacityUse:
    """One capacity of a class's shared devices: consumed and total, in nano-units, and the
    format to print them in."""

    name: str
    used: int
    total: int
    format: str


@dataclass(frozen=True, slots=True)
class ClassUse:
    name: str
    devices: int
    allocated: int
    shared: int  # devices with allowMultipleAllocations
    capacity: Sequence[CapacityUse] = field(default_factory=tuple)


def class_use(classes: Mapping[str, DeviceClass], slices: Sequence[ResourceSlice], allocated: AllocatedState,
              cache: SelectorCache, columns: DeviceColumns | None = None) -> list[ClassUse]:
    """Per class, by name, the use of the devices it selects; [] when there is no device at all."""
    columns = columns or DeviceColumns.of_slices(slices)
    if columns.n == 0:
        return []
    devices = [(rs.spec.driver, rs.spec.pool.name, d) for rs in slices for d in rs.spec.devices or []]
    taken = np.fromiter((allocated.is_allocated((driver, pool, d.name)) for driver, pool, d in devices), dtype=bool,
                        count=columns.n)
    shareable = columns.allow_multiple()
    out: list[ClassUse] = []
    for name in sorted(classes):
        selected = np.ones(columns.n, dtype=bool)
        for selector in classes[name].spec.selectors:
            if selector.cel is None:
                continue
            try:
                selected &= evaluate_batch(cache.get_or_compile(selector.cel.expression), columns).matches
            except SelectorCompileError:
                selected[:] = False
        shared_rows = np.flatnonzero(selected & shareable).tolist()
        out.append(ClassUse(name, int(np.count_nonzero(selected)), int(np.count_nonzero(selected & taken)),
                            len(shared_rows), _capacity([devices[i] for i in shared_rows], allocated)))
    return out


def _capacity(shared: Sequence[tuple[str, str, Device]], allocated: AllocatedState) -> tuple[CapacityUse, ...]:
    totals: dict[str, list[int | str]] = {}  # name -> [used, total, format]
    for driver, pool, device in shared:
        consumed = allocated.aggregated_capacity.get((driver, pool, device.name), {})
        for cap_name, capacity in device.capacity.items():
            whole = quantity(capacity.value)
            if whole.nanos is None:
                continue
            entry = totals.setdefault(cap_name, [0, 0, whole.format])
            entry[0] = int(entry[0]) + consumed.get(cap_name, 0)
            entry[1] = int(entry[1]) + whole.nanos
    return tuple(CapacityUse(name, int(used), int(total), str(fmt)) for name, (used, total, fmt) in sorted(totals.items()))
