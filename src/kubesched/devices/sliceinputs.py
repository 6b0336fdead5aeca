"""A ResourceSlice's devices as the device CEL environment reads them: one `DeviceInput` per device
(what `Selector.matches` evaluates) and columns (what celvector.evaluate_batch reads), as
k8s.io/dynamic-resource-allocation/cel's Device is filled from a slice's device.

- Attributes are typed values: int, bool, string, or a version (VersionValue, parsed when an
  expression reads it, so a bad one fails the selector that reads it, as in kube).
- Capacities are quantities (their `value`; the request policy is the allocator's business).
- Names keep the slice's spelling; a name without a domain ("model") is in the slice's driver's
  domain, so `device.attributes["gpu.example.com"].model` reads it (parseQualifiedName).

Columns are built once per slice (`slice_columns`, one pass over its devices' attributes) and
joined for many slices by numpy (`DeviceColumns`): a column is a (map, domain, name) key with one
value per device, None where a device has none. A cluster's columns are rebuilt from its slices'
columns without touching a device again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api import quantity as quantities
from kubesched.api.dra import Device, DeviceAttribute, ResourceSlice
from kubesched.api.objects import Quantity as RawQuantity
from kubesched.devices.cel import AttributeValue, DeviceInput, VersionValue, split_qualified, versions_parse

ATTRIBUTES = "device.attributes"
CAPACITY = "device.capacity"
# (map, domain, name): "device.attributes" or "device.capacity", the domain, the name in it.
ColumnKey = tuple[str, str, str]


def attribute_value(attribute: DeviceAttribute) -> AttributeValue | None:
    """The typed value set in a slice's attribute (validation allows exactly one)."""
    if attribute.int_value is not None:
        return attribute.int_value
    if attribute.bool_value is not None:
        return attribute.bool_value
    if attribute.string_value is not None:
        return attribute.string_value
    if attribute.version_value is not None:
        return VersionValue(attribute.version_value)
    return None


@functools.lru_cache(maxsize=4096)
def _quantity(raw: RawQuantity) -> quantities.Quantity:
    """A capacity's value, parsed once per distinct spelling ("80Gi" on a thousand GPUs)."""
    return quantities.parse(raw)


def device_input(driver: str, device: Device) -> DeviceInput:
    """One device of a slice of `driver`, as a selector sees it."""
    attributes = {name: value for name, attr in device.attributes.items() if (value := attribute_value(attr)) is not None}
    capacity = {name: _quantity(cap.value) for name, cap in device.capacity.items()}
    return DeviceInput(driver, attributes, capacity, bool(device.allow_multiple_allocations))


@dataclass(frozen=True, slots=True)
class SliceColumns:
    """One slice's devices, in the slice's order, and their values by column."""

    inputs: tuple[DeviceInput, ...]
    driver: str
    columns: Mapping[ColumnKey, np.ndarray]  # object arrays, None where a device has no such entry


def slice_columns(rs: ResourceSlice) -> SliceColumns:
    """The slice's DeviceInputs and columns, in one pass over its devices."""
    driver = rs.spec.driver
    inputs = tuple(device_input(driver, device) for device in rs.spec.devices or ())
    n = len(inputs)
    columns: dict[ColumnKey, np.ndarray] = {}
    # One key per distinct name in the slice (a driver's devices mostly share their names); each
    # column is filled where its devices have it.
    for holder in (ATTRIBUTES, CAPACITY):
        for i, device in enumerate(inputs):
            entries = device.attributes if holder == ATTRIBUTES else device.capacity
            for name, value in entries.items():
                key = (holder, *split_qualified(name, driver))
                column = columns.get(key)
                if column is None:
                    column = columns[key] = np.full(n, None, dtype=object)
                column[i] = value
    return SliceColumns(inputs, driver, columns)


class DeviceColumns:
    """Many slices' devices as one batch for celvector.evaluate_batch: the devices in slice order,
    and each column joined from the slices' columns on first use."""

    def __init__(self, slices: Sequence[SliceColumns]) -> None:
        self._slices = tuple(slices)
        self.devices: list[DeviceInput] = [d for s in self._slices for d in s.inputs]
        self.n = len(self.devices)
        self._sizes = np.array([len(s.inputs) for s in self._slices], dtype=np.int64)
        self._joined: dict[ColumnKey, np.ndarray] = {}
        self._drivers: np.ndarray | None = None
        self._multiple: np.ndarray | None = None
        self._unreadable: np.ndarray | None = None

    @classmethod
    def of_slices(cls, slices: Sequence[ResourceSlice]) -> DeviceColumns:
        return cls([slice_columns(rs) for rs in slices])

    def values(self, holder: str, domain: str, name: str) -> np.ndarray:
        key = (holder, domain, name)
        hit = self._joined.get(key)
        if hit is None:
            parts = [s.columns.get(key) for s in self._slices]
            if all(p is None for p in parts):
                hit = np.full(self.n, None, dtype=object)
            else:
                hit = np.concatenate([p if p is not None else np.full(len(s.inputs), None, dtype=object)
                                      for p, s in zip(parts, self._slices, strict=True)]) if parts else np.empty(0, dtype=object)
            self._joined[key] = hit
        return hit

    def drivers(self) -> np.ndarray:
        if self._drivers is None:
            self._drivers = np.repeat(np.array([s.driver for s in self._slices], dtype=object), self._sizes)
        return self._drivers

    def allow_multiple(self) -> np.ndarray:
        if self._multiple is None:
            self._multiple = np.fromiter((d.allow_multiple_allocations for d in self.devices), dtype=bool, count=self.n)
        return self._multiple

    def unreadable(self) -> np.ndarray:
        """Devices with a version that does not parse (the API server refuses such a slice; one
        given as DeviceInputs fails every selector, as in kube)."""
        if self._unreadable is None:
            self._unreadable = np.fromiter((not versions_parse(d) for d in self.devices), dtype=bool, count=self.n)
        return self._unreadable
