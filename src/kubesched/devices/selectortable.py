"""Device selector results for every device of an allocator's slices, one expression at a time:
evaluated once, in a batch (celvector), the first time the search asks about the expression, then
looked up by (slice, device index). An allocator serves all nodes of a scheduling cycle, so a class
selector costs one batch per cycle instead of one CEL call per device per node.

The conversion from a slice's device to the CEL input below is a minimal private adapter, to be
replaced by the devices/ conversion of slices to DeviceInput columns when that lands.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api.dra import Device, ResourceSlice
from kubesched.api.quantity import QuantityError
from kubesched.api.quantity import parse as parse_quantity
from kubesched.devices.cel import AttributeValue, DeviceInput, SelectorCache, VersionValue
from kubesched.devices.celvector import evaluate_batch


class SelectorTable:
    def __init__(self, slices: Sequence[ResourceSlice], cache: SelectorCache) -> None:
        self._cache = cache
        self._slices = slices
        self._offsets: dict[int, int] = {}
        total = 0
        for s in slices:
            self._offsets[id(s)] = total
            total += len(s.spec.devices or [])
        self._inputs: list[DeviceInput] | None = None
        self._results: dict[str, tuple[np.ndarray, dict[int, str]]] = {}

    def lookup(self, expression: str, slice_: ResourceSlice, index: int) -> tuple[bool, str | None]:
        """(matches, runtime error message or None) of the expression on the slice's device;
        SelectorCompileError when it does not compile."""
        hit = self._results.get(expression)
        if hit is None:
            selector = self._cache.get_or_compile(expression)
            batch = evaluate_batch(selector, self._device_inputs())
            hit = self._results[expression] = (batch.matches, batch.errors)
        position = self._offsets[id(slice_)] + index
        error = hit[1].get(position)
        return bool(hit[0][position]), error

    def _device_inputs(self) -> list[DeviceInput]:
        if self._inputs is None:
            self._inputs = [_device_input(s.spec.driver, d) for s in self._slices for d in s.spec.devices or []]
        return self._inputs


# --- the private adapter (see the module's docstring) ---


def _device_input(driver: str, device: Device) -> DeviceInput:
    attributes: dict[str, AttributeValue] = {}
    for name, attribute in device.attributes.items():
        if attribute.string_value is not None:
            attributes[name] = attribute.string_value
        elif attribute.int_value is not None:
            attributes[name] = attribute.int_value
        elif attribute.bool_value is not None:
            attributes[name] = attribute.bool_value
        elif attribute.version_value is not None:
            attributes[name] = VersionValue(attribute.version_value)
    capacity = {}
    for name, amount in device.capacity.items():
        try:
            capacity[name] = parse_quantity(amount.value)
        except QuantityError:
            continue  # refused by the API server; a selector reading it sees no such key
    return DeviceInput(driver, attributes, capacity, bool(device.allow_multiple_allocations))
