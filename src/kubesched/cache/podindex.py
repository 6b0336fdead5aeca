"""Index of pods placed on nodes, for plugins that count matching pods (affinity, spread)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.api.selectors import Selector


def _has_pod_affinity(pi: PodInfo) -> tuple[bool, bool]:
    """(has any pod (anti-)affinity, has required anti-affinity)."""
    aff = pi.pod.spec.affinity
    if aff is None:
        return False, False
    a, anti = aff.pod_affinity, aff.pod_anti_affinity
    any_terms = bool(
        (a and (a.required_during_scheduling_ignored_during_execution or a.preferred_during_scheduling_ignored_during_execution))
        or (
            anti
            and (
                anti.required_during_scheduling_ignored_during_execution
                or anti.preferred_during_scheduling_ignored_during_execution
            )
        )
    )
    required_anti = bool(anti and anti.required_during_scheduling_ignored_during_execution)
    return any_terms, required_anti


def _counted(pi: PodInfo, live_only: bool) -> bool:
    """Whether a match counts: always, or (`live_only`) unless the pod is terminating."""
    return not (live_only and pi.pod.metadata.deletion_timestamp is not None)


# Selectors whose matching pods are kept current as pods come and go (the ones asked most recently).
MATCH_CACHE_SIZE = 64


@dataclass(slots=True)
class _Matches:
    """The pods one (selector, namespaces) matches, and how many on each row."""

    uids: dict[str, int] = field(default_factory=dict)  # uid -> row
    per_row: dict[int, int] = field(default_factory=dict)

    def add(self, uid: str, row: int) -> None:
        self.uids[uid] = row
        self.per_row[row] = self.per_row.get(row, 0) + 1

    def remove(self, uid: str) -> None:
        row = self.uids.pop(uid, None)
        if row is not None:
            left = self.per_row[row] - 1
            if left:
                self.per_row[row] = left
            else:
                del self.per_row[row]


class PodIndex:
    """Pods on nodes (bound or assumed), with an inverted label index.

    `matching` finds pods for a selector in time proportional to the pods that share a
    label with it, not to the cluster size; `rows_matching` keeps those matches counted per
    node for the selectors asked most recently, and `counts_matching` gives them per row.
    """

    def __init__(self) -> None:
        self.infos: dict[str, PodInfo] = {}
        self.row: dict[str, int] = {}
        self._by_label: dict[tuple[str, str], set[str]] = {}
        self._by_key: dict[str, set[str]] = {}
        self.with_affinity: dict[str, PodInfo] = {}
        self.with_required_anti_affinity: dict[str, PodInfo] = {}
        # (selector, namespaces, live pods only) -> its matches, kept current (rows_matching).
        self._matches: OrderedDict[tuple[Selector, frozenset[str] | None, bool], _Matches] = OrderedDict()

    def __len__(self) -> int:
        return len(self.infos)

    def add(self, pi: PodInfo, row: int) -> None:
        uid = pi.uid
        self.infos[uid] = pi
        self.row[uid] = row
        for k, v in pi.labels.items():
            self._by_label.setdefault((k, v), set()).add(uid)
            self._by_key.setdefault(k, set()).add(uid)
        any_terms, required_anti = _has_pod_affinity(pi)
        if any_terms:
            self.with_affinity[uid] = pi
        if required_anti:
            self.with_required_anti_affinity[uid] = pi
        for (selector, namespaces, live_only), matches in self._matches.items():
            if (namespaces is None or pi.namespace in namespaces) and _counted(pi, live_only) and selector.matches(pi.labels):
                matches.add(uid, row)

    def remove(self, pi: PodInfo) -> None:
        uid = pi.uid
        if self.infos.pop(uid, None) is None:
            return
        self.row.pop(uid, None)
        for k, v in pi.labels.items():
            bucket = self._by_label.get((k, v))
            if bucket is not None:
                bucket.discard(uid)
                if not bucket:
                    del self._by_label[(k, v)]
            keys = self._by_key.get(k)
            if keys is not None:
                keys.discard(uid)
                if not keys:
                    del self._by_key[k]
        self.with_affinity.pop(uid, None)
        self.with_required_anti_affinity.pop(uid, None)
        for matches in self._matches.values():
            matches.remove(uid)

    def matching(self, selector: Selector, namespaces: Collection[str] | None = None) -> list[PodInfo]:
        """Pods whose labels match `selector`, restricted to `namespaces` (None: all)."""
        if selector.nothing:
            return []
        candidates: Iterable[str] | None = None
        best = -1
        for req in selector.requirements:
            if req.operator == "In":
                ids: set[str] = set()
                for value in req.values:
                    ids |= self._by_label.get((req.key, value), set())
            elif req.operator == "Exists":
                ids = self._by_key.get(req.key, set())
            else:
                continue
            if best < 0 or len(ids) < best:
                candidates, best = ids, len(ids)
        pool = self.infos.keys() if candidates is None else candidates
        out = []
        infos = self.infos
        for uid in pool:
            pi = infos[uid]
            if namespaces is not None and pi.namespace not in namespaces:
                continue
            if selector.matches(pi.labels):
                out.append(pi)
        return out

    def rows_matching(self, selector: Selector, namespaces: Collection[str] | None = None, *,
                      live_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(rows, how many matching pods on each) for `selector` in `namespaces` (None: all): what
        `matching` finds (without terminating pods if `live_only`), counted per node. Kept current as
        pods come and go for the selectors asked most recently, so a term every pod of a workload
        repeats costs a copy, not a walk."""
        per_row = self._kept(selector, namespaces, live_only).per_row
        return (np.fromiter(per_row.keys(), dtype=np.int64, count=len(per_row)),
                np.fromiter(per_row.values(), dtype=np.int64, count=len(per_row)))

    def rows_matching_all(self, terms: Sequence[tuple[Selector, Collection[str] | None]]) -> np.ndarray:
        """The row of each pod that every (selector, namespaces) of `terms` matches (a row once per
        such pod): the pods that satisfy all of a pod's affinity terms at once, from the kept
        matches of each term, so a workload repeating its terms pays a set intersection per cycle."""
        kept = sorted((self._kept(sel, ns, False).uids for sel, ns in terms), key=len)
        if not kept:
            return np.zeros(0, dtype=np.int64)
        smallest, others = kept[0], kept[1:]
        return np.fromiter((row for uid, row in smallest.items() if all(uid in o for o in others)), dtype=np.int64)

    def _kept(self, selector: Selector, namespaces: Collection[str] | None, live_only: bool) -> _Matches:
        """The matches of one (selector, namespaces), found on first ask and kept current after."""
        key = (selector, None if namespaces is None else frozenset(namespaces), live_only)
        matches = self._matches.get(key)
        if matches is None:
            matches = _Matches()
            for pi in self.matching(selector, namespaces):
                if _counted(pi, live_only):
                    matches.add(pi.uid, self.row[pi.uid])
            self._matches[key] = matches
            if len(self._matches) > MATCH_CACHE_SIZE:
                self._matches.popitem(last=False)
        else:
            self._matches.move_to_end(key)
        return matches

    def counts_matching(self, selector: Selector, namespaces: Collection[str] | None, size: int, *,
                        live_only: bool = False) -> np.ndarray:
        """`rows_matching` as a count for each of the table's first `size` rows."""
        rows, times = self.rows_matching(selector, namespaces, live_only=live_only)
        counts = np.zeros(size, dtype=np.int64)
        inside = rows < size
        counts[rows[inside]] = times[inside]
        return counts
