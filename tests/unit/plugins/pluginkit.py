"""What the plugin tests ask of any plugin: its scores as the runtime computes them, and which
events its registration covers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint


def score_all(plugin: Any, pi: PodInfo, table: NodeTable, rows: np.ndarray | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """PreScore (which must pass), Score and NormalizeScore on `rows` (every node by default), as
    the runtime runs them: the raw and the normalized score per node name."""
    rows = table.rows() if rows is None else rows
    state = CycleState()
    status = plugin.pre_score(state, pi, table, rows)
    assert status is None, status
    raw = plugin.score(state, pi, table, rows)
    norm = plugin.normalize_score(state, pi, raw)
    names = table.names_of(rows)
    return dict(zip(names, raw.tolist(), strict=True)), dict(zip(names, norm.tolist(), strict=True))


def covers(events: Sequence[ClusterEventWithHint], resource: str, action: ActionType) -> bool:
    return any(e.event.covers(ClusterEvent(resource, action)) for e in events)


def check_coverage(events: Sequence[ClusterEventWithHint], covered: Iterable[tuple[str, ActionType]] = (),
                   not_covered: Iterable[tuple[str, ActionType]] = ()) -> None:
    """The registered events cover each of `covered` and none of `not_covered`."""
    for resource, action in covered:
        assert covers(events, resource, action), (resource, action)
    for resource, action in not_covered:
        assert not covers(events, resource, action), (resource, action)
