"""Per-node attached CSI volume counts for NodeVolumeLimits (kube counts them afresh in every
Filter), kept between cycles.

Counting a node means resolving every volume of every pod on it through its claim and volume;
doing that for each of thousands of nodes in every cycle was nearly all of the plugin's cost
(SchedulingCSIPVs/5000Nodes: 15 pods/s). Here each row's answer is kept with the table's row
generation it was computed at and the storage objects it read:

- a row is counted again when its node or the pods on it change (NodeTable.row_generation,
  which preemption's trial removals bump too), or when a claim, volume, class, CSINode or
  VolumeAttachment it depends on changes (the StorageIndex journal);
- each driver's limit, whether the row's CSINode lists it, and the row's attached count are
  columns over the table's rows, so a cycle's verdict is a few vector operations plus the rows
  that changed since the last one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.storage import (
    CSI_NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
)
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.storage import POD_LEFT_NODE, StorageIndex


def claim_read(key: str) -> str:
    return f"pvc:{key}"


def volume_read(name: str) -> str:
    return f"pv:{name}"


def class_read(name: str) -> str:
    return f"sc:{name}"


@dataclass(slots=True)
class NodeCount:
    """What the pods on one node (and its VolumeAttachments) attach."""

    uniques: dict[str, str] = field(default_factory=dict)  # pods' volumes: unique name -> driver
    counts: dict[str, int] = field(default_factory=dict)  # driver -> attached volumes
    error: str | None = None  # a pod's volume that cannot be resolved (the node's Filter errors)
    reads: set[str] = field(default_factory=set)  # storage objects the count depends on


# (node name, the table's pods on the node) -> its count
CountNode = Callable[[str, dict[str, Any]], NodeCount]


class AttachedVolumes:
    def __init__(self, storage: StorageIndex, count_node: CountNode) -> None:
        self._storage = storage
        self._count_node = count_node
        self._table: NodeTable | None = None
        self._capacity = 0
        self._seen = -1  # storage generation caught up to
        self.computed_at = np.zeros(0, dtype=np.int64)  # row generation each row was counted at
        self.has_csinode = np.zeros(0, dtype=bool)
        self.has_limits = np.zeros(0, dtype=bool)
        self._limits: dict[str, np.ndarray] = {}  # driver -> the row's limit (-1: none)
        self._listed: dict[str, np.ndarray] = {}  # driver -> the row's CSINode lists it
        self._counts: dict[str, np.ndarray] = {}  # driver -> volumes attached on the row
        self._row_drivers: dict[int, set[str]] = {}
        self._row_count: dict[int, NodeCount] = {}
        self.errors: dict[int, str] = {}
        self._readers: dict[str, set[int]] = {}  # storage object -> rows whose count read it
        self.holders: dict[str, set[int]] = {}  # unique volume -> rows whose pods use it

    # --- columns -------------------------------------------------------------------------------

    def limit(self, driver: str) -> np.ndarray:
        return self._column(self._limits, driver, -1, np.int64)

    def listed(self, driver: str) -> np.ndarray:
        return self._column(self._listed, driver, False, bool)

    def count(self, driver: str) -> np.ndarray:
        return self._column(self._counts, driver, 0, np.int64)

    def _column(self, columns: dict[str, np.ndarray], driver: str, fill: Any, dtype: Any) -> np.ndarray:
        col = columns.get(driver)
        if col is None:
            col = columns[driver] = np.full(self._capacity, fill, dtype=dtype)
        return col

    # --- keeping current -------------------------------------------------------------------------

    def refresh(self, table: NodeTable) -> None:
        """Brings every present row's answer up to date with the table and the storage objects."""
        if table is not self._table:
            self._reset(table)
        elif table.capacity != self._capacity:
            self._grow(table.capacity)
        self._catch_up(table)
        size = table.size
        stale = np.flatnonzero(self.computed_at[:size] != table.row_generation[:size])
        for row in stale.tolist():
            self._recount(table, row)

    def _reset(self, table: NodeTable) -> None:
        self._table = table
        self._capacity = 0
        self.computed_at = np.zeros(0, dtype=np.int64)
        self.has_csinode = np.zeros(0, dtype=bool)
        self.has_limits = np.zeros(0, dtype=bool)
        self._limits, self._listed, self._counts = {}, {}, {}
        self._row_drivers, self._row_count, self.errors = {}, {}, {}
        self._readers, self.holders = {}, {}
        self._seen = self._storage.generation
        self._grow(table.capacity)

    def _grow(self, capacity: int) -> None:
        extra = capacity - self._capacity

        def pad(a: np.ndarray, fill: Any) -> np.ndarray:
            return np.concatenate([a, np.full(extra, fill, dtype=a.dtype)])

        self.computed_at = pad(self.computed_at, -1)
        self.has_csinode = pad(self.has_csinode, False)
        self.has_limits = pad(self.has_limits, False)
        for columns, fill in ((self._limits, -1), (self._listed, False), (self._counts, 0)):
            for driver, col in columns.items():
                columns[driver] = pad(col, fill)
        self._capacity = capacity

    def _catch_up(self, table: NodeTable) -> None:
        storage = self._storage
        if storage.generation == self._seen:
            return
        journal = storage.journal
        if not journal or journal[0][0] > self._seen + 1:
            self.computed_at[:] = -1  # fell behind the journal: count everything again
        else:
            for generation, resource, obj in reversed(journal):
                if generation <= self._seen:
                    break
                self._invalidate(table, resource, obj)
        self._seen = storage.generation

    def _invalidate(self, table: NodeTable, resource: str, obj: Any) -> None:
        if resource == POD_LEFT_NODE:
            return  # its row's generation was bumped
        meta = obj.metadata
        if resource == PERSISTENT_VOLUME_CLAIM:
            rows = self._readers.get(claim_read(f"{meta.namespace}/{meta.name}"))
        elif resource == PERSISTENT_VOLUME:
            rows = self._readers.get(volume_read(meta.name))
        elif resource == STORAGE_CLASS:
            rows = self._readers.get(class_read(meta.name))
        elif resource == CSI_NODE:
            rows = {table.index[meta.name]} if meta.name in table.index else None
        elif resource == VOLUME_ATTACHMENT:
            node = obj.spec.node_name
            rows = {table.index[node]} if node in table.index else None
        else:
            return  # CSIDrivers are read in the cycle; pods leaving nodes bump their rows
        for row in rows or ():
            self.computed_at[row] = -1

    def _recount(self, table: NodeTable, row: int) -> None:
        for driver in self._row_drivers.pop(row, ()):
            self.limit(driver)[row] = -1
            self.listed(driver)[row] = False
            self.count(driver)[row] = 0
        old = self._row_count.pop(row, None)
        if old is not None:
            for read in old.reads:
                self._drop(self._readers, read, row)
            for unique in old.uniques:
                self._drop(self.holders, unique, row)
        self.errors.pop(row, None)
        self.has_limits[row] = False
        node = table.names[row] if table.present[row] else None
        csinode = self._storage.csinode(node) if node is not None else None
        self.has_csinode[row] = csinode is not None
        self.computed_at[row] = table.row_generation[row]
        if node is None or csinode is None:
            return
        drivers: set[str] = set()
        for d in csinode.spec.drivers:
            drivers.add(d.name)
            self.listed(d.name)[row] = True
            if d.allocatable is not None and d.allocatable.count is not None:
                self.limit(d.name)[row] = int(d.allocatable.count)
                self.has_limits[row] = True
        self._row_drivers[row] = drivers
        if not self.has_limits[row]:
            return  # no limits: what is attached does not matter
        count = self._count_node(node, table.pods[row])
        self._row_count[row] = count
        for read in count.reads:
            self._readers.setdefault(read, set()).add(row)
        for unique in count.uniques:
            self.holders.setdefault(unique, set()).add(row)
        for driver, n in count.counts.items():
            drivers.add(driver)
            self.count(driver)[row] = n
        if count.error is not None:
            self.errors[row] = count.error

    @staticmethod
    def _drop(index: dict[str, set[int]], key: str, row: int) -> None:
        rows = index.get(key)
        if rows is not None:
            rows.discard(row)
            if not rows:
                del index[key]
