"""StorageCapacityScoring (kube's volumebinding scorer.go): per storage class, how full the volumes
a node would use are, through the configured shape, averaged over the classes.

A node with static bindings is scored on the chosen PVs (requested over capacity, summed per
class); a node without, on the CSIStorageCapacity of the volumes it would provision.
"""

from __future__ import annotations

import numpy as np

from kubesched.api.storage import quantity_value
from kubesched.plugins.helper.shape import MAX_UTILIZATION
from kubesched.plugins.volumebinding.binder import Found

# Per storage class, summed over a row's volumes: (requested, capacity, rows that have one).
_ByClass = tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]


def _static(found: Found, rows: np.ndarray) -> tuple[_ByClass, np.ndarray]:
    """The chosen PVs per class, and which rows bind any."""
    n = rows.size
    requested: dict[str, np.ndarray] = {}
    capacity: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    static = np.zeros(n, dtype=bool)
    for pvc, chosen in found.matched:
        picks = chosen[rows]
        has = picks >= 0
        if not has.any():
            continue
        static |= has
        want = quantity_value(pvc.spec.resources.requests)
        for idx in np.unique(picks[has]).tolist():
            pv = found.volumes[idx]
            cls = pv.spec.storage_class_name
            hit = picks == idx
            req = requested.setdefault(cls, np.zeros(n, dtype=np.int64))
            cap = capacity.setdefault(cls, np.zeros(n, dtype=np.int64))
            req[hit] += want
            cap[hit] += quantity_value(pv.spec.capacity)
            present.setdefault(cls, np.zeros(n, dtype=bool))[hit] = True
    return (requested, capacity, present), static


def _dynamic(found: Found, rows: np.ndarray, static: np.ndarray) -> _ByClass:
    """For rows without static bindings, the capacity of the volumes to provision per class."""
    n = rows.size
    requested: dict[str, np.ndarray] = {}
    capacity: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    for i, (pvc, prov_rows) in enumerate(found.provisions):
        cap_rows = found.capacity_of.get(i)
        if cap_rows is None:
            continue
        picks = np.where(prov_rows[rows] & ~static, cap_rows[rows], -1)
        has = picks >= 0
        if not has.any():
            continue
        cls = pvc.spec.storage_class_name or ""
        req = requested.setdefault(cls, np.zeros(n, dtype=np.int64))
        cap = capacity.setdefault(cls, np.zeros(n, dtype=np.int64))
        present.setdefault(cls, np.zeros(n, dtype=bool))[has] = True
        req[has] += quantity_value(pvc.spec.resources.requests)
        for idx in np.unique(picks[has]).tolist():
            raw = found.capacities[idx].capacity
            cap[picks == idx] = quantity_value({"q": raw}, "q") if raw is not None else 0  # kube assigns, not adds
    return requested, capacity, present


def capacity_scores(found: Found, rows: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """The score of each of `rows`: the shape (`lookup`, helper.shape.shape_lookup) at each
    class's utilization, averaged over the classes the row uses and rounded half up."""
    n = rows.size
    static_groups, static = _static(found, rows)
    total = np.zeros(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    for requested, capacity, present in (static_groups, _dynamic(found, rows, static)):
        for cls, req in requested.items():
            cap = capacity[cls]
            where = present[cls]
            safe = np.maximum(cap, 1)
            util = np.where((cap == 0) | (req > cap), MAX_UTILIZATION, req * MAX_UTILIZATION // safe)
            total += np.where(where, lookup[np.clip(util, 0, MAX_UTILIZATION)], 0)
            count += where
    # math.Round of the mean: half away from zero (scores are non-negative).
    safe = np.maximum(count, 1)
    q, r = np.divmod(total, safe)
    out: np.ndarray = np.where(count > 0, q + (2 * r >= safe), 0).astype(np.int64)
    return out
