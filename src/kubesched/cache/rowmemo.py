"""Per-node answers kept across scheduling cycles.

Much of what a Filter or Score plugin computes for a node depends on that node's row alone (its
node and the pods on it) and on a few facts about the pod, such as its requests. Between two
cycles a placement changes one row, so the answer for every other node is the one computed last
time: a `RowMemo` keeps the answer for every row per key (the facts about the pod) and computes
again only the rows the table changed since (NodeTable.changed_since, else row_generation).
Identical pods from one owner, the common case, then cost a row's work instead of the table's.

Two ways to read it:
- `values`: every row current (a Filter's verdicts). A few changed rows go through `row`, the
  plugin's answer for one row in plain Python, when it has one: a numpy call costs about a
  microsecond whatever its size, so one row through the vectorized computation costs as much as
  a few thousand.
- `at`: the rows asked for only (a Score's sampled nodes). Changed rows are left until one of
  them is asked for (or too many have piled up), then computed together in one pass.

What a memo may hold: a function of the row's own state and the key, nothing else (not the
other rows, not the cycle's other plugins, not the time). With `with_copies` active (joint
placement's what-if) the table is not any row's own state: the memo computes afresh and keeps
nothing."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from kubesched.cache.nodetable import NodeTable

# The answer for the rows given (an index array, or every row as slice(0, size)), aligned with them.
Compute = Callable[[np.ndarray | slice], np.ndarray]
# The answer for one row, as the vectorized computation gives it.
ComputeRow = Callable[[int], int]

DEFAULT_SLOTS = 8  # keys kept per memo (distinct pod shapes); the least recently used goes first
LOG_READ_LIMIT = 64  # changes read from the table's log; past that, row generations are compared
ROW_BY_ROW = 8  # changed rows at most computed one by one with a ComputeRow
PENDING_LIMIT = 64  # changed rows `at` leaves for later at most


class _Entry:
    __slots__ = ("computed_at", "pending", "synced", "values")

    def __init__(self, values: np.ndarray, computed_at: np.ndarray, synced: int) -> None:
        self.values = values
        self.computed_at = computed_at  # each row's row_generation when its value was computed
        self.synced = synced  # the table generation the log was read up to
        self.pending: set[int] = set()  # rows changed since their value was computed


class RowMemo:
    """Answers per row and key (int64), for one NodeTable at a time (another table, or a new
    resource column, starts afresh). What it returns is read-only and valid until the next call."""

    def __init__(self, slots: int = DEFAULT_SLOTS) -> None:
        self.slots = slots
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._table: NodeTable | None = None
        self._layout = -1

    def values(self, table: NodeTable, key: Hashable, compute: Compute, row: ComputeRow | None = None) -> np.ndarray:
        """Every row's answer, rows [0, table.size)."""
        size = table.size
        if table.copies:
            fresh: np.ndarray = compute(slice(0, size))
            return fresh
        entry = self._entry(table, key, compute)
        if entry.pending:
            stale = sorted(entry.pending)
            if row is not None and len(stale) <= ROW_BY_ROW:
                answers = [row(r) for r in stale]
                self._store(table, entry, np.array(stale, dtype=np.intp), np.array(answers, dtype=np.int64))
            else:
                self._compute(table, entry, np.array(stale, dtype=np.intp), compute)
        out: np.ndarray = entry.values[:size]
        return out

    def at(self, table: NodeTable, key: Hashable, compute: Compute, rows: np.ndarray) -> np.ndarray:
        """The answers at `rows` (sorted row indices), aligned with them."""
        if table.copies:
            fresh: np.ndarray = compute(rows)
            return fresh
        entry = self._entry(table, key, compute)
        if entry.pending and (len(entry.pending) > PENDING_LIMIT or self._asked(entry.pending, rows)):
            # All of them, at about the cost of one.
            self._compute(table, entry, np.array(sorted(entry.pending), dtype=np.intp), compute)
        out: np.ndarray = entry.values[rows]
        return out

    @staticmethod
    def _asked(pending: set[int], rows: np.ndarray) -> bool:
        """Whether a pending row is among `rows` (sorted); the bounds rule most out without numpy."""
        if not rows.size:
            return False
        lo, hi = int(rows[0]), int(rows[-1])
        inside = [r for r in pending if lo <= r <= hi]
        if not inside:
            return False
        candidates = np.array(inside, dtype=np.intp)
        pos = np.minimum(np.searchsorted(rows, candidates), rows.size - 1)
        return bool((rows[pos] == candidates).any())

    # --- keeping entries current -------------------------------------------------------------------

    def _entry(self, table: NodeTable, key: Hashable, compute: Compute) -> _Entry:
        if table is not self._table or table.layout_version != self._layout:
            self._entries.clear()
            self._table, self._layout = table, table.layout_version
        entry = self._entries.get(key)
        if entry is None:
            return self._fill(table, key, compute)
        self._entries.move_to_end(key)
        if entry.synced != table.generation:
            self._read_changes(table, entry)
        return entry

    def _fill(self, table: NodeTable, key: Hashable, compute: Compute) -> _Entry:
        size = table.size
        values = np.empty(table.capacity, dtype=np.int64)
        values[:size] = compute(slice(0, size))
        values.flags.writeable = False
        computed_at = np.full(table.capacity, -1, dtype=np.int64)
        computed_at[:size] = table.row_generation[:size]
        entry = self._entries[key] = _Entry(values, computed_at, table.generation)
        if len(self._entries) > self.slots:
            self._entries.popitem(last=False)
        return entry

    def _read_changes(self, table: NodeTable, entry: _Entry) -> None:
        """Adds the rows changed since the entry last looked to its pending rows."""
        if len(entry.values) < table.capacity:  # the table grew; its new rows are in the log too
            grown = np.empty(table.capacity, dtype=np.int64)
            grown[: len(entry.values)] = entry.values
            grown.flags.writeable = False
            at = np.full(table.capacity, -1, dtype=np.int64)
            at[: len(entry.computed_at)] = entry.computed_at
            entry.values, entry.computed_at = grown, at
        logged = table.changed_since(entry.synced)
        if logged is not None and len(logged) + len(entry.pending) <= LOG_READ_LIMIT:
            entry.pending.update(logged)
        else:
            size = table.size
            entry.pending = set(np.flatnonzero(entry.computed_at[:size] != table.row_generation[:size]).tolist())
        entry.synced = table.generation

    def _compute(self, table: NodeTable, entry: _Entry, stale: np.ndarray, compute: Compute) -> None:
        size = table.size
        if stale.size * 4 >= size:  # most rows: one pass over the table is cheaper
            self._store(table, entry, slice(0, size), compute(slice(0, size)))
            entry.pending.clear()
        else:
            self._store(table, entry, stale, compute(stale))

    @staticmethod
    def _store(table: NodeTable, entry: _Entry, where: np.ndarray | slice, answers: np.ndarray) -> None:
        values = entry.values
        values.flags.writeable = True
        try:
            values[where] = answers
        finally:
            values.flags.writeable = False
        entry.computed_at[where] = table.row_generation[where]
        if isinstance(where, np.ndarray):
            entry.pending.difference_update(where.tolist())
