"""Device selector results for every device of an allocator's slices, one expression at a time:
evaluated once, in a batch (celvector, over the slices' columns from sliceinputs), the first time
the search asks about the expression, then looked up by (slice, device index). An allocator serves
all nodes of a scheduling cycle, so a class selector costs one batch per cycle instead of one CEL
call per device per node.

A slice's columns come from `columns_of`: sliceinputs.slice_columns by default (every device
converted once per allocator), or the DRA manager's slice index (slicetracker.SliceIndex.columns),
which keeps them across scheduling cycles, so a slice is converted once while it is unchanged (that is where the time goes: at 1,000 nodes x
8 GPUs, converting the slices costs more than the search on every node).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kubesched.api.dra import ResourceSlice
from kubesched.devices.cel import SelectorCache
from kubesched.devices.celvector import evaluate_batch
from kubesched.devices.sliceinputs import DeviceColumns, SliceColumns, slice_columns

ColumnsOf = Callable[[ResourceSlice], SliceColumns]


class SelectorTable:
    def __init__(self, slices: Sequence[ResourceSlice], cache: SelectorCache, columns_of: ColumnsOf | None = None) -> None:
        self._cache = cache
        self._slices = slices
        self._columns_of = columns_of or slice_columns
        self._offsets: dict[int, int] = {}
        total = 0
        for s in slices:
            self._offsets[id(s)] = total
            total += len(s.spec.devices or [])
        self._columns: DeviceColumns | None = None
        self._results: dict[str, tuple[np.ndarray, dict[int, str]]] = {}

    def lookup(self, expression: str, slice_: ResourceSlice, index: int) -> tuple[bool, str | None]:
        """(matches, runtime error message or None) of the expression on the slice's device;
        SelectorCompileError when it does not compile."""
        hit = self._results.get(expression)
        if hit is None:
            selector = self._cache.get_or_compile(expression)
            if self._columns is None:
                self._columns = DeviceColumns([self._columns_of(s) for s in self._slices])
            batch = evaluate_batch(selector, self._columns)
            hit = self._results[expression] = (batch.matches, batch.errors)
        position = self._offsets[id(slice_)] + index
        return bool(hit[0][position]), hit[1].get(position)
