"""A real Framework over a small cache, built from test plugins defined in the test files."""

from __future__ import annotations

import numpy as np

from builders import cache_with, make_node, unit_services
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import EXTENSION_POINTS, Plugin
from kubesched.framework.profile import PluginRef, Profile
from kubesched.framework.runtime import Framework

NODES = ("n0", "n1", "n2", "n3")


class Classes:
    """The registry a Framework resolves plugin names with (only `resolve` is needed)."""

    def __init__(self, classes: list[type[Plugin]]) -> None:
        self.classes = {c.name: c for c in classes}

    def resolve(self, ref: str) -> type[Plugin]:
        return self.classes[ref]


def framework(points: dict[str, list[type[Plugin] | tuple[type[Plugin], int]]], cache: Cache | None = None) -> Framework:
    """A Framework with these plugins at these extension points (a (class, weight) pair at "score")."""
    plugins: dict[str, list[PluginRef]] = {p: [] for p in EXTENSION_POINTS}
    classes: list[type[Plugin]] = []
    for point, entries in points.items():
        for entry in entries:
            cls, weight = entry if isinstance(entry, tuple) else (entry, 1 if point == "score" else 0)
            plugins[point].append(PluginRef(cls.name, weight))
            classes.append(cls)
    profile = Profile("test-scheduler", plugins, {})
    return Framework(profile, Classes(classes), unit_services(cache or cache_with([make_node(n).obj() for n in NODES])))  # type: ignore[arg-type]


def all_rows(fwk: Framework) -> np.ndarray:
    table = fwk.cache.table
    return table.present[: table.size].copy()


def names(fwk: Framework, mask_or_rows: np.ndarray) -> list[str]:
    rows = np.flatnonzero(mask_or_rows) if mask_or_rows.dtype == np.bool_ else mask_or_rows
    return sorted(fwk.cache.table.name_of(int(r)) for r in rows)


def fresh() -> CycleState:
    return CycleState()

