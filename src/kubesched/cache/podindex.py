"""Index of pods placed on nodes, for plugins that count matching pods (affinity, spread)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

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


class PodIndex:
    """Pods on nodes (bound or assumed), with an inverted label index.

    `matching` finds pods for a selector in time proportional to the pods that share a
    label with it, not to the cluster size; `count_by_row` turns them into a per-node
    count with one bincount.
    """

    def __init__(self) -> None:
        self.infos: dict[str, PodInfo] = {}
        self.row: dict[str, int] = {}
        self._by_label: dict[tuple[str, str], set[str]] = {}
        self._by_key: dict[str, set[str]] = {}
        self.with_affinity: dict[str, PodInfo] = {}
        self.with_required_anti_affinity: dict[str, PodInfo] = {}

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

    def count_by_row(self, pods: Iterable[PodInfo], size: int) -> np.ndarray:
        rows = np.fromiter((self.row[p.uid] for p in pods), dtype=np.int64)
        return np.bincount(rows, minlength=size)[:size] if rows.size else np.zeros(size, dtype=np.int64)
