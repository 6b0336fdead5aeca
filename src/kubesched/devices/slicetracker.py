"""ResourceSlices as the scheduler keeps them: by name, by pool and by node, so the allocator for
one node is handed the slices that may be on that node (and the other slices of their pools, which
pool gathering reads to tell a complete pool from one being updated) without scanning every slice.

Where a slice's devices are decides where it is indexed:
- `nodeName`: under that node;
- `perDeviceNodeSelection` with a nodeName on every device: under each of those nodes;
- `allNodes`, `nodeSelector`, or per-device selection with any device not pinned to one node:
  among the slices every node must consider (pool gathering then matches the selector).

A slice's devices as CEL inputs and columns (sliceinputs.slice_columns) are built once per slice
version, on first use, and dropped when the slice changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from kubesched.api.dra import ResourceSlice
from kubesched.devices.sliceinputs import SliceColumns, slice_columns

PoolKey = tuple[str, str]  # driver, pool name
K = TypeVar("K", str, PoolKey)


def pool_key(rs: ResourceSlice) -> PoolKey:
    return rs.spec.driver, rs.spec.pool.name


def pinned_nodes(rs: ResourceSlice) -> frozenset[str] | None:
    """The nodes a slice's devices can only be on, or None when any node may have them."""
    spec = rs.spec
    if spec.node_name:
        return frozenset((spec.node_name,))
    if spec.all_nodes or spec.node_selector is not None:
        return None
    if spec.per_device_node_selection:
        devices = spec.devices or []
        if devices and all(d.node_name for d in devices):
            return frozenset(d.node_name for d in devices if d.node_name)
        return None
    # No node selection at all (the API server refuses it): pool gathering finds it on no node.
    return frozenset()


class SliceIndex:
    def __init__(self) -> None:
        self._slices: dict[str, ResourceSlice] = {}
        self._pools: dict[PoolKey, dict[str, ResourceSlice]] = {}
        self._by_node: dict[str, dict[str, ResourceSlice]] = {}
        self._anywhere: dict[str, ResourceSlice] = {}
        self._columns: dict[str, SliceColumns] = {}
        self.revision = 0  # changes with every slice added, updated or deleted

    def __len__(self) -> int:
        return len(self._slices)

    def set(self, rs: ResourceSlice) -> ResourceSlice | None:
        """A slice added or updated; returns its previous state."""
        old = self.remove(rs.metadata.name)
        name = rs.metadata.name
        self.revision += 1
        self._slices[name] = rs
        self._pools.setdefault(pool_key(rs), {})[name] = rs
        nodes = pinned_nodes(rs)
        if nodes is None:
            self._anywhere[name] = rs
        else:
            for node in nodes:
                self._by_node.setdefault(node, {})[name] = rs
        return old

    def remove(self, name: str) -> ResourceSlice | None:
        """A slice deleted; returns its last state (None if it was not known)."""
        old = self._slices.pop(name, None)
        if old is None:
            return None
        self.revision += 1
        self._columns.pop(name, None)
        _discard(self._pools, pool_key(old), name)
        nodes = pinned_nodes(old)
        if nodes is None:
            del self._anywhere[name]
        else:
            for node in nodes:
                _discard(self._by_node, node, name)
        return old

    def get(self, name: str) -> ResourceSlice | None:
        return self._slices.get(name)

    def all(self) -> list[ResourceSlice]:
        return list(self._slices.values())

    def pool(self, driver: str, pool: str) -> list[ResourceSlice]:
        """Every slice of one pool, all generations."""
        return list(self._pools.get((driver, pool), {}).values())

    def pools(self) -> list[PoolKey]:
        return list(self._pools)

    def candidates(self, node_name: str) -> list[ResourceSlice]:
        """The slices that may have devices on the node: its own, then those any node considers."""
        own = self._by_node.get(node_name)
        return [*own.values(), *self._anywhere.values()] if own else list(self._anywhere.values())

    def for_node(self, node_name: str) -> tuple[list[ResourceSlice], list[ResourceSlice]]:
        """(the node's candidate slices, every slice of their pools): what pool gathering for the
        node reads, the second standing in for "all slices" (it only looks at the pools it found)."""
        candidates = self.candidates(node_name)
        keys = dict.fromkeys(pool_key(rs) for rs in candidates)
        return candidates, [rs for key in keys for rs in self._pools[key].values()]

    def columns(self, rs: ResourceSlice) -> SliceColumns:
        """The slice's devices as CEL inputs and columns, built once per slice version."""
        name = rs.metadata.name
        hit = self._columns.get(name)
        if hit is None or self._slices.get(name) is not rs:
            hit = slice_columns(rs)
            if self._slices.get(name) is rs:
                self._columns[name] = hit
        return hit

    def columns_of(self, slices: Iterable[ResourceSlice]) -> list[SliceColumns]:
        return [self.columns(rs) for rs in slices]


def _discard(index: dict[K, dict[str, ResourceSlice]], key: K, name: str) -> None:
    members = index.get(key)
    if members is not None:
        members.pop(name, None)
        if not members:
            del index[key]
