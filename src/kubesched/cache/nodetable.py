"""The columnar node table: one row per node, numpy columns per attribute.

Filter and Score plugins read whole columns at once, so a cycle costs a handful of
vectorized operations instead of one Python call per node per plugin. Rows of
deleted nodes are tombstoned (``present`` is False) and reused, so a row index is
stable for a node's lifetime and can be held by the pod index.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from kubesched.api.objects import Node
from kubesched.api.podinfo import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, HostPort, PodInfo, normalize_image
from kubesched.api.quantity import QuantityError, resource_value
from kubesched.cache.declaredfeatures import DeclaredFeatures
from kubesched.cache.portindex import PortIndex

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
_GO_INT = re.compile(r"[+-]?[0-9]+")
ABSENT = -1  # label value id of a node without the label
NO_ROW = -1  # in NodeTable.change_log: a generation that changed no row's own state (with_copies)
CHANGE_LOG_LIMIT = 4096  # generations NodeTable.change_log keeps (trimmed by half past it)
_BATCH_MIN = 8  # add_pods/remove_pods below this many pods: one at a time is cheaper than numpy's setup
NO_TAINT = np.iinfo(np.int16).max  # taint position of a node without the taint
# A label column is re-encoded once it holds more than twice its live values plus this many
# (values no node carries any more: the hostnames of nodes long gone, in a cluster that scales).
COMPACT_SLACK = 64


class NodeError(ValueError):
    """A node object that cannot be read; the message names the node and field."""


class LabelColumn:
    """Encoded values of one label key across rows: value id per row, ABSENT if unset.

    Value ids are never reused within a column object (plugins may keep per-value arrays for a
    column while it lives); the table replaces a column that has collected too many dead values
    by a fresh, compact one (see NodeTable._compact_label)."""

    __slots__ = ("_numeric", "ids", "key", "live", "refs", "values", "vocab")

    def __init__(self, key: str, capacity: int) -> None:
        self.key = key
        self.ids = np.full(capacity, ABSENT, dtype=np.int32)
        self.values: list[str] = []
        self.vocab: dict[str, int] = {}
        self.refs: list[int] = []  # rows carrying each value id
        self.live = 0  # value ids carried by at least one row
        self._numeric: np.ndarray | None = None

    def encode(self, value: str) -> int:
        vid = self.vocab.get(value)
        if vid is None:
            vid = len(self.values)
            self.vocab[value] = vid
            self.values.append(value)
            self.refs.append(0)
            self._numeric = None
        return vid

    def set(self, row: int, value: str) -> None:
        self.unset(row)
        vid = self.encode(value)
        self.ids[row] = vid
        self.refs[vid] += 1
        if self.refs[vid] == 1:
            self.live += 1

    def unset(self, row: int) -> None:
        vid = int(self.ids[row])
        if vid == ABSENT:
            return
        self.ids[row] = ABSENT
        self.refs[vid] -= 1
        if self.refs[vid] == 0:
            self.live -= 1

    def numeric(self) -> np.ndarray:
        """Integer reading of each value id (NaN when not an integer), for Gt/Lt."""
        if self._numeric is None or len(self._numeric) != len(self.values):
            out = np.full(len(self.values), np.nan)
            for i, v in enumerate(self.values):
                with contextlib.suppress(ValueError):
                    out[i] = int(v)
            self._numeric = out
        return self._numeric



class PlacedRequests(NamedTuple):
    """Rows and requests of (row, pod) pairs, aligned with them (NodeTable.requests_of)."""

    rows: np.ndarray  # intp, one per pair
    vecs: np.ndarray  # int64, pairs x resource columns
    non_zero: np.ndarray  # int64, pairs x 2 (cpu, memory as kube counts them when unset)

    def subset(self, index: np.ndarray) -> PlacedRequests:
        return PlacedRequests(self.rows[index], self.vecs[index], self.non_zero[index])

class NodeTable:
    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.size = 0  # rows ever used; rows >= size are untouched
        self.names: list[str | None] = []
        self.nodes: list[Node | None] = []
        self.index: dict[str, int] = {}
        self._free: list[int] = []
        self.present = np.zeros(capacity, dtype=bool)
        self.unschedulable = np.zeros(capacity, dtype=bool)
        self.resources: list[str] = list(BASE_RESOURCES)
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.layout_version = 0
        self.allocatable = np.zeros((capacity, len(self.resources)), dtype=np.int64)
        self.requested = np.zeros((capacity, len(self.resources)), dtype=np.int64)
        # cpu and memory requested, counting best-effort containers at the scoring defaults.
        self.non_zero_requested = np.zeros((capacity, 2), dtype=np.int64)
        self.labels: dict[str, LabelColumn] = {}
        self.taint_vocab: dict[tuple[str, str, str], int] = {}
        # A new list object whenever columns are renumbered (compaction): callers caching
        # per-column answers key them on this list's identity.
        self.taint_list: list[tuple[str, str, str]] = []
        self.taint_pos = np.full((capacity, 0), NO_TAINT, dtype=np.int16)
        self.taint_refs: list[int] = []  # rows carrying each taint column
        self.node_labels: list[dict[str, str]] = []
        self.images: list[dict[str, int]] = []
        self.image_rows: dict[str, dict[int, int]] = {}
        self.declared_features = DeclaredFeatures(capacity)  # status.declaredFeatures
        self.ports: list[Counter[HostPort]] = []
        # (protocol, port) -> host IP -> rows using it: kept with `ports`, so NodePorts reads it
        # as it is instead of building it again after every placement.
        self.port_index = PortIndex()
        self.pods: list[dict[str, PodInfo]] = []
        # Bumped on every change; plugins may key caches on it.
        self.generation = 0
        # Bumped only when nodes are added, updated or removed (not when pods move).
        self.node_generation = 0
        # The table generation of each row's last change (its node, or pods on it): per-row
        # caches compare it in one vector operation to find the rows to redo.
        self.row_generation = np.zeros(capacity, dtype=np.int64)
        # The row each generation changed, in order from generation `log_start` (NO_ROW for none):
        # a reader a few generations behind finds the rows to redo here without comparing
        # row_generation across the table. Bounded: a reader further behind than the log reaches
        # compares instead (see changed_since).
        self.change_log: list[int] = []
        self.log_start = 1
        # Copies of the pod being scored counted on every node, for the duration of `with_copies`.
        self.copies = 0

    # --- shape -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.index)

    def rows(self) -> np.ndarray:
        """Indices of present rows."""
        return np.flatnonzero(self.present[: self.size])

    def _grow(self, need: int) -> None:
        if need <= self.capacity:
            return
        cap = max(need, self.capacity * 2)
        extra = cap - self.capacity

        def pad(a: np.ndarray, fill: Any) -> np.ndarray:
            shape = (extra, *a.shape[1:])
            return np.concatenate([a, np.full(shape, fill, dtype=a.dtype)])

        self.present = pad(self.present, False)
        self.unschedulable = pad(self.unschedulable, False)
        self.allocatable = pad(self.allocatable, 0)
        self.requested = pad(self.requested, 0)
        self.non_zero_requested = pad(self.non_zero_requested, 0)
        self.taint_pos = pad(self.taint_pos, NO_TAINT)
        self.row_generation = pad(self.row_generation, 0)
        for col in self.labels.values():
            col.ids = pad(col.ids, ABSENT)
        self.declared_features.grow(cap)
        self.capacity = cap

    def resource_column(self, name: str) -> int:
        """Column of a resource, adding one (allocatable 0 everywhere) for a new extended resource."""
        idx = self.resource_index.get(name)
        if idx is None:
            idx = len(self.resources)
            self.resources.append(name)
            self.resource_index[name] = idx
            zeros = np.zeros((self.capacity, 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, zeros])
            self.requested = np.hstack([self.requested, zeros])
            self.layout_version += 1
        return idx

    def request_vector(self, pi: PodInfo) -> np.ndarray:
        """The pod's requests laid out as this table's resource columns (cached on the pod)."""
        cached = pi.vector_cache
        if cached is not None and cached[0] == self.layout_version:
            vec: np.ndarray = cached[1]
            return vec
        for name in pi.requests:
            self.resource_column(name)
        vec = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in pi.requests.items():
            vec[self.resource_index[name]] = value
        pi.vector_cache = (self.layout_version, vec)
        return vec

    def label_column(self, key: str) -> LabelColumn:
        col = self.labels.get(key)
        if col is None:
            col = LabelColumn(key, self.capacity)
            self.labels[key] = col
        return col

    def label_ids(self, key: str) -> np.ndarray:
        """Value ids of a label key for every row (ABSENT where unset); read-only."""
        col = self.labels.get(key)
        if col is None:
            return np.full(self.capacity, ABSENT, dtype=np.int32)
        return col.ids

    def same_label(self, key: str, a: int, b: int) -> bool:
        """Whether both rows carry the label key with the same value (one topology domain)."""
        col = self.labels.get(key)
        if col is None:
            return False
        value = int(col.ids[a])
        return value != ABSENT and value == int(col.ids[b])

    def alone_in_domain(self, key: str, row: int) -> bool:
        """Whether no other node shares the row's topology domain for `key` (or the row has no
        such label, and so is in no domain)."""
        col = self.labels.get(key)
        if col is None:
            return True
        vid = int(col.ids[row])
        return vid == ABSENT or col.refs[vid] <= 1

    def _taint_column(self, taint: tuple[str, str, str]) -> int:
        idx = self.taint_vocab.get(taint)
        if idx is None:
            idx = len(self.taint_list)
            self.taint_vocab[taint] = idx
            self.taint_list.append(taint)
            self.taint_refs.append(0)
            self.taint_pos = np.hstack([self.taint_pos, np.full((self.capacity, 1), NO_TAINT, dtype=np.int16)])
        return idx

    def _clear_taints(self, row: int) -> None:
        for col in np.flatnonzero(self.taint_pos[row] != NO_TAINT):
            self.taint_refs[col] -= 1
        self.taint_pos[row, :] = NO_TAINT

    def _compact_taints(self) -> None:
        """Keeps the taint columns bounded by the taints nodes carry now. Taint values churn
        (cluster-autoscaler stamps times into some), so columns no node has any more go once
        they outnumber the live ones; the list is then a new object (see taint_list)."""
        live = [c for c, refs in enumerate(self.taint_refs) if refs]
        if len(self.taint_list) - len(live) <= len(live) + COMPACT_SLACK:
            return
        self.taint_list = [self.taint_list[c] for c in live]
        self.taint_refs = [self.taint_refs[c] for c in live]
        self.taint_vocab = {taint: i for i, taint in enumerate(self.taint_list)}
        self.taint_pos = np.ascontiguousarray(self.taint_pos[:, live])

    # --- nodes -------------------------------------------------------------------

    def upsert_node(self, node: Node) -> int:
        """Add or update a node's row from its object; pods on it are kept."""
        name = node.metadata.name
        if not name:
            raise NodeError("node without metadata.name")
        alloc: dict[str, int] = {}
        for res, raw in node.status.allocatable.items():
            try:
                alloc[res] = resource_value(res, raw)
            except QuantityError as exc:
                raise NodeError(f"node {name}: status.allocatable[{res}]: {exc}") from None
        row = self.index.get(name)
        if row is None:
            row = self._free.pop() if self._free else self.size
            if row == self.size:
                self._grow(row + 1)
                self.size += 1
                self.names.append(name)
                self.nodes.append(node)
                self.node_labels.append({})
                self.images.append({})
                self.ports.append(Counter())
                self.pods.append({})
            self.index[name] = row
            self.names[row] = name
            self.present[row] = True
        self.nodes[row] = node
        self.unschedulable[row] = node.spec.unschedulable
        for res in alloc:
            self.resource_column(res)
        self.allocatable[row, :] = 0
        for res, value in alloc.items():
            self.allocatable[row, self.resource_index[res]] = value
        self._set_labels(row, node.metadata.labels)
        self._clear_taints(row)
        for pos, t in enumerate(node.spec.taints):
            col = self._taint_column((t.key, t.value, t.effect))
            if self.taint_pos[row, col] == NO_TAINT:
                self.taint_pos[row, col] = pos
                self.taint_refs[col] += 1
        self._compact_taints()
        self._set_images(row, node)
        self.declared_features.set(row, node.status.declared_features)
        self.node_generation += 1
        self._changed(row)
        return row

    def _set_labels(self, row: int, labels: dict[str, str]) -> None:
        old = self.node_labels[row]
        dropped = [key for key in old if key not in labels]
        for key in dropped:
            self.labels[key].unset(row)
            self._compact_label(key)
        for key, value in labels.items():
            if old.get(key) != value:
                self.label_column(key).set(row, value)
                if key in old:
                    self._compact_label(key)
        self.node_labels[row] = dict(labels)

    def _compact_label(self, key: str) -> None:
        """Keeps a column's vocabulary bounded by the values nodes carry now: a key no node has
        goes, and a column mostly made of dead values is re-encoded as a new LabelColumn (so a
        plugin holding the old one sees the change by identity; the caller bumps the generations)."""
        col = self.labels[key]
        if col.live == 0:
            del self.labels[key]
            return
        if len(col.values) <= 2 * col.live + COMPACT_SLACK:
            return
        fresh = LabelColumn(key, self.capacity)
        remap = np.full(len(col.values) + 1, ABSENT, dtype=np.int32)  # shifted by one: ABSENT stays ABSENT
        for vid, value in enumerate(col.values):
            if col.refs[vid]:
                new = fresh.encode(value)
                remap[vid + 1] = new
                fresh.refs[new] = col.refs[vid]
        fresh.live = col.live
        fresh.ids = remap[col.ids.astype(np.int64) + 1]
        self.labels[key] = fresh

    def _drop_images(self, row: int) -> None:
        for image in self.images[row]:
            holders = self.image_rows[image]
            holders.pop(row, None)
            if not holders:  # no node has it any more: image names churn with every release
                del self.image_rows[image]
        self.images[row] = {}

    def _set_images(self, row: int, node: Node) -> None:
        self._drop_images(row)
        images: dict[str, int] = {}
        for img in node.status.images:
            for name in img.names:
                images[normalize_image(name)] = img.size_bytes
        for image, size in images.items():
            self.image_rows.setdefault(image, {})[row] = size
        self.images[row] = images

    def remove_node(self, name: str) -> int | None:
        """Tombstone a node's row. Pods still on it must be removed by the caller first."""
        row = self.index.pop(name, None)
        if row is None:
            return None
        self.present[row] = False
        self.unschedulable[row] = False
        self.allocatable[row, :] = 0
        self.requested[row, :] = 0
        self.non_zero_requested[row, :] = 0
        self._set_labels(row, {})
        self._clear_taints(row)
        self._compact_taints()
        self._drop_images(row)
        self.declared_features.set(row, ())
        for hp, count in self.ports[row].items():
            self.port_index.remove(hp, row, count)
        self.ports[row] = Counter()
        self.pods[row] = {}
        self.names[row] = None
        self.nodes[row] = None
        self._free.append(row)
        self.node_generation += 1
        self._changed(row)
        return row

    # --- pods on nodes -------------------------------------------------------------

    def add_pod(self, row: int, pi: PodInfo) -> None:
        vec = self.request_vector(pi)  # first: a new resource column replaces self.requested
        self.requested[row] += vec
        self.non_zero_requested[row, 0] += pi.non_zero_cpu
        self.non_zero_requested[row, 1] += pi.non_zero_memory
        if pi.host_ports:
            self._index_ports(row, pi)
        self.pods[row][pi.uid] = pi
        self._changed(row)

    def _index_ports(self, row: int, pi: PodInfo) -> None:
        self.ports[row].update(pi.host_ports)
        for hp in pi.host_ports:
            self.port_index.add(hp, row)

    def remove_pod(self, row: int, pi: PodInfo) -> None:
        if self.pods[row].pop(pi.uid, None) is None:
            return
        vec = self.request_vector(pi)
        self.requested[row] -= vec
        self.non_zero_requested[row, 0] -= pi.non_zero_cpu
        self.non_zero_requested[row, 1] -= pi.non_zero_memory
        if pi.host_ports:
            self._unindex_ports(row, pi)
        self._changed(row)

    def _unindex_ports(self, row: int, pi: PodInfo) -> None:
        self.ports[row].subtract(pi.host_ports)
        self.ports[row] = +self.ports[row]
        for hp in pi.host_ports:
            self.port_index.remove(hp, row)

    def requests_of(self, placed: Sequence[tuple[int, PodInfo]]) -> PlacedRequests:
        """The rows and requests of (row, pod) pairs as arrays, for add_pods/remove_pods; a caller
        that adds and removes the same pods over and over builds them once."""
        rows = np.fromiter((row for row, _ in placed), dtype=np.intp, count=len(placed))
        vectors = [self.request_vector(pi) for _, pi in placed]
        if any(len(v) != len(self.resources) for v in vectors):  # a pod brought a new resource column
            vectors = [self.request_vector(pi) for _, pi in placed]
        vecs = np.array(vectors, dtype=np.int64).reshape(len(placed), len(self.resources))
        non_zero = np.array([(pi.non_zero_cpu, pi.non_zero_memory) for _, pi in placed], dtype=np.int64).reshape(len(placed), 2)
        return PlacedRequests(rows, vecs, non_zero)

    def add_pods(self, placed: Sequence[tuple[int, PodInfo]], requests: PlacedRequests | None = None) -> None:
        """add_pod for many (row, pod) pairs at once, rows possibly repeated: the requests summed
        in one numpy step (preemption's dry run puts back a victim on each of a hundred nodes).
        `requests`: requests_of(placed), when the caller has it."""
        if len(placed) < _BATCH_MIN:
            for row, pi in placed:
                self.add_pod(row, pi)
            return
        req = requests if requests is not None else self.requests_of(placed)
        np.add.at(self.requested, req.rows, req.vecs)
        np.add.at(self.non_zero_requested, req.rows, req.non_zero)
        for row, pi in placed:
            if pi.host_ports:
                self._index_ports(row, pi)
            self.pods[row][pi.uid] = pi
        self._changed_rows(req.rows)

    def remove_pods(self, placed: Sequence[tuple[int, PodInfo]], requests: PlacedRequests | None = None) -> None:
        """remove_pod for many (row, pod) pairs at once; pairs whose pod is not on the row are
        passed over, as remove_pod passes them over."""
        if len(placed) < _BATCH_MIN:
            for row, pi in placed:
                self.remove_pod(row, pi)
            return
        present = [self.pods[row].pop(pi.uid, None) is not None for row, pi in placed]
        req = requests if requests is not None else self.requests_of(placed)
        if not all(present):
            req = req.subset(np.flatnonzero(present))
            placed = [pair for pair, there in zip(placed, present, strict=True) if there]
        np.subtract.at(self.requested, req.rows, req.vecs)
        np.subtract.at(self.non_zero_requested, req.rows, req.non_zero)
        for row, pi in placed:
            if pi.host_ports:
                self._unindex_ports(row, pi)
        self._changed_rows(req.rows)

    @contextlib.contextmanager
    def with_copies(self, pi: PodInfo, count: int = 1) -> Any:
        """A what-if for joint placement (jointplan): `count` copies of the pod counted as requested
        on every node while the block runs, so Score plugins that read the requests (or, through
        `copies`, the pod's usage estimate) score the pod as the next of its kind on each node.
        Nothing else sees them: they are taken off again before anything else runs."""
        size = self.size
        vec = self.request_vector(pi) * count
        nz = np.array([pi.non_zero_cpu, pi.non_zero_memory], dtype=np.int64) * count
        self.requested[:size] += vec
        self.non_zero_requested[:size] += nz
        self.copies += count
        self._changed(NO_ROW)
        try:
            yield
        finally:
            self.requested[:size] -= vec
            self.non_zero_requested[:size] -= nz
            self.copies -= count
            self._changed(NO_ROW)

    def _changed(self, row: int) -> None:
        """A new generation, changing `row` (NO_ROW: none; with_copies's copies are no row's own
        state, and every row is as before once they are taken off)."""
        self.generation += 1
        if row != NO_ROW:
            self.row_generation[row] = self.generation
        log = self.change_log
        log.append(row)
        if len(log) > CHANGE_LOG_LIMIT:
            half = len(log) // 2
            del log[:half]
            self.log_start += half

    def _changed_rows(self, rows: np.ndarray) -> None:
        """_changed for each of many rows in turn (a generation each, as the change log keeps one
        row per generation); nothing reads the table in between."""
        first = self.generation + 1
        self.generation += len(rows)
        self.row_generation[rows] = np.arange(first, self.generation + 1)
        log = self.change_log
        log.extend(rows.tolist())
        if len(log) > CHANGE_LOG_LIMIT:
            half = len(log) // 2
            del log[:half]
            self.log_start += half

    def changed_since(self, generation: int) -> list[int] | None:
        """The rows changed after `generation` (repeats possible), or None when the log does not
        reach back that far: compare row_generation then."""
        behind = self.generation - generation
        if behind <= 0:
            return []
        first = generation + 1 - self.log_start
        if first < 0:
            return None
        rows = self.change_log[first:]
        return [r for r in rows if r != NO_ROW] if NO_ROW in rows else rows

    # --- convenience for plugins and tests ---------------------------------------------

    def row_of(self, name: str) -> int:
        return self.index[name]

    def name_of(self, row: int) -> str:
        name = self.names[row]
        assert name is not None, f"row {row} is not a node"
        return name

    def names_of(self, rows: Iterable[int]) -> list[str]:
        return [self.name_of(int(r)) for r in rows]
