"""Node-wide evaluation of label requirements and taints over the NodeTable's encoded columns.

Each function answers for every row at once. They serve the node selector terms of
plugins.helper.nodeselector (NodeAffinity, VolumeBinding), TaintToleration, PodTopologySpread
(nodeAffinityPolicy / nodeTaintsPolicy) and any plugin that needs "which nodes carry this
label / taint".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.objects import Toleration
from kubesched.api.selectors import Requirement, Selector
from kubesched.cache.nodetable import ABSENT, NO_TAINT, NodeTable


def requirement_mask(table: NodeTable, req: Requirement) -> np.ndarray:
    """Rows whose labels satisfy one node selector requirement."""
    size = table.size
    col = table.labels.get(req.key)
    if col is None:
        ids = np.full(size, ABSENT, dtype=np.int32)
    else:
        ids = col.ids[:size]
    op = req.operator
    if op in ("Exists", "DoesNotExist"):
        present: np.ndarray = ids != ABSENT
        return present if op == "Exists" else ~present
    if op in ("In", "NotIn"):
        wanted = [] if col is None else [col.vocab[v] for v in req.values if v in col.vocab]
        if not wanted:
            hit = np.zeros(size, dtype=bool)
        elif len(wanted) == 1:
            hit = ids == wanted[0]
        else:
            hit = np.isin(ids, wanted)
        return hit if op == "In" else ~hit
    # Gt / Lt compare the label as an integer; a missing or non-integer label never matches.
    if col is None:
        return np.zeros(size, dtype=bool)
    bound = int(next(iter(req.values)))
    numeric = col.numeric()
    values = np.where(ids != ABSENT, numeric[np.maximum(ids, 0)] if numeric.size else np.nan, np.nan)
    with np.errstate(invalid="ignore"):
        return values > bound if op == "Gt" else values < bound


def match_labels_mask(table: NodeTable, labels: Mapping[str, str]) -> np.ndarray:
    """Rows carrying every key=value of a plain map selector (spec.nodeSelector)."""
    mask = np.ones(table.size, dtype=bool)
    for key, value in labels.items():
        mask &= requirement_mask(table, Requirement(key, "In", frozenset((value,))))
    return mask


def selector_mask(table: NodeTable, selector: Selector) -> np.ndarray:
    """Rows whose labels match a compiled label selector."""
    if selector.nothing:
        return np.zeros(table.size, dtype=bool)
    mask = np.ones(table.size, dtype=bool)
    for req in selector.requirements:
        mask &= requirement_mask(table, req)
    return mask


# --- taints ---------------------------------------------------------------------------------


def tolerates(tol: Toleration, key: str, value: str, effect: str) -> bool:
    """kube's Toleration.ToleratesTaint."""
    if tol.effect and tol.effect != effect:
        return False
    if tol.key and tol.key != key:
        return False
    op = tol.operator or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return tol.value == value
    return False


@dataclass(slots=True)
class UntoleratedTaints:
    """Taint columns with the given effects that a set of tolerations does not tolerate (kube's
    FindMatchingUntoleratedTaint, shared by TaintToleration and PodTopologySpread).

    `table.taint_list` only grows until the table renumbers its columns, and then it is a new
    list: while it is the same list, the answer for its first `seen` entries stays valid and
    only new columns need checking."""

    tolerations: Sequence[Toleration]
    effects: frozenset[str]
    seen: int = 0
    cols: list[int] = field(default_factory=list)
    array: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    source: list[tuple[str, str, str]] | None = None

    def columns(self, table: NodeTable) -> np.ndarray:
        taints = table.taint_list
        if taints is not self.source:  # renumbered (or another table): start over
            self.source, self.seen, self.cols = taints, 0, []
            self.array = np.zeros(0, dtype=np.int64)
        if self.seen != len(taints):
            for col in range(self.seen, len(taints)):
                key, value, effect = taints[col]
                if effect in self.effects and not any(tolerates(t, key, value, effect) for t in self.tolerations):
                    self.cols.append(col)
            self.seen = len(taints)
            self.array = np.asarray(self.cols, dtype=np.int64)
        return self.array


def first_untolerated_column(table: NodeTable, cols: np.ndarray) -> np.ndarray | None:
    """Per row, the column among `cols` of the taint that comes first in the node's own taint
    list, or -1 when the node carries none of them; None when no row carries any."""
    size = table.size
    if cols.size == 0:
        return None
    sub = table.taint_pos[:size, cols]
    # A row-wise min is cheap; the costlier argmin only runs on the rows that have such a taint.
    tainted = np.flatnonzero(sub.min(axis=1) != NO_TAINT) if size else np.zeros(0, dtype=np.int64)
    if tainted.size == 0:
        return None
    out = np.full(size, -1, dtype=np.int64)
    out[tainted] = cols[sub[tainted].argmin(axis=1)]
    return out
