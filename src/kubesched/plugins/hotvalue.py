"""HotValue (Crane scheduler's "hot value"): steer pods away from nodes that just took many.

A node's usage does not rise the moment a pod lands on it, so a burst of pods scored on usage
alone all pick the same cold node (the herd effect). Crane counts each node's recent placements
and subtracts a penalty from the node's score. Here that penalty is a score of its own, to weigh
against any other score (LoadAware, TargetLoadPacking, the default plugins...):

    hot value = sum over windows of floor(placements on the node in the last timeRange / divisor)
    score     = max(0, 100 - penaltyPerUnit * hot value)

With Crane's defaults (windows 5m / 5 and 1m / 2, penalty 10 per unit), a node that took 2 pods
in the last minute loses 10 points, one that took 5 in the last 5 minutes and 2 of them in the
last minute loses 20. The division is an integer division, as Crane's: a unit is a full batch of
`divisor` placements. A placement counts when it is strictly younger than the window.

Placements are the scheduler's record of recently placed pods (metrics/fresh.py): every pod this
scheduler assumed, and every pod the watch saw bound by another scheduler, at the time of its
PodScheduled condition. Unlike Crane (which reads Scheduled events and annotates nodes every few
minutes) the count is live, and a pod deleted since it was placed no longer counts. Placements are
remembered for 10 minutes, so a window may not be longer. No Prometheus is needed.
"""

from __future__ import annotations

import numpy as np
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from kubesched.api.durations import Seconds
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, ScorePlugin
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.usage.fresh import FreshPods
from kubesched.usage.queries import format_promql_duration
from kubesched.usage.service import FRESH_HORIZON, usage_service

NAME = "HotValue"
MAX_WINDOWS = 16


class HotWindow(BaseModel):
    """`divisor` placements within `timeRange` make one unit of hot value (Crane calls the
    divisor `count`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    time_range: Seconds = Field(alias="timeRange")
    divisor: int = Field(validation_alias=AliasChoices("divisor", "count"), ge=1)

    @field_validator("time_range")
    @classmethod
    def _within_memory(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be greater than 0")
        if value > FRESH_HORIZON:
            raise ValueError(f"must be at most {format_promql_duration(FRESH_HORIZON)}, how long placements are remembered")
        return value


def _crane_windows() -> list[HotWindow]:
    return [HotWindow.model_validate({"timeRange": 300, "divisor": 5}), HotWindow.model_validate({"timeRange": 60, "divisor": 2})]


class HotValueArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    windows: list[HotWindow] = Field(default_factory=_crane_windows)
    penalty_per_unit: float = Field(10.0, alias="penaltyPerUnit", ge=0, allow_inf_nan=False)

    @field_validator("windows")
    @classmethod
    def _some_window(cls, value: list[HotWindow]) -> list[HotWindow]:
        if not value:
            raise ValueError("at least one window is needed")
        # Every scoring cycle counts placements once per window: Crane uses two.
        if len(value) > MAX_WINDOWS:
            raise ValueError(f"windows: Too many: {len(value)}: must have at most {MAX_WINDOWS} items")
        return value


def hot_values(fresh: FreshPods, now: float, windows: list[HotWindow], rows: int) -> np.ndarray:
    """The hot value of every table row: one bincount per window over the recent placements."""
    n = fresh.size
    alive = fresh.alive[:n]
    placed_at = fresh.placed_at[:n]
    row = fresh.row[:n]
    hot = np.zeros(rows, dtype=np.int64)
    for w in windows:
        recent = alive & (placed_at > now - w.time_range) & (row < rows)
        if recent.any():
            hot += np.bincount(row[recent], minlength=rows)[:rows] // w.divisor
    return hot


class HotValue(Plugin, ScorePlugin):
    name = NAME
    Args = HotValueArgs

    def __init__(self, args: HotValueArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or HotValueArgs(), handle)
        if handle is None:
            raise ValueError(f"{NAME} needs the scheduler's record of placements (a handle)")
        service = usage_service(handle)
        self.fresh = service.track_placements()
        self.clock = service.clock

    def hot(self, table: NodeTable) -> np.ndarray:
        a: HotValueArgs = self.args
        return hot_values(self.fresh, self.clock.now(), a.windows, table.capacity)

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        if not len(self.fresh):
            return np.full(len(rows), MAX_NODE_SCORE, dtype=np.int64)
        a: HotValueArgs = self.args
        penalty = a.penalty_per_unit * self.hot(table)[rows]
        out: np.ndarray = np.floor(np.maximum(0.0, MAX_NODE_SCORE - penalty) + 0.5).astype(np.int64)
        return out
