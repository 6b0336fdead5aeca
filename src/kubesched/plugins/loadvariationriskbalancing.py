"""LoadVariationRiskBalancing (Trimaran): balance the risk of load spikes, not just the average.

Two nodes at 50% average CPU are not equally safe if one swings between 10% and 90%. For each
resource r (cpu, memory), with mu and sigma the node's utilization mean and standard deviation
over `window` as fractions of allocatable:

    mu    = clip(mean + recent + pod request / allocatable, 0, 1)
    sigma = clip(margin * clip(stddev, 0, 1) ^ (1 / sensitivity), 0, 1)
    risk  = (mu + sigma) / 2
    score = 100 * (1 - max over r of risk), rounded half up

margin is `safeVarianceMargin` (1) and sensitivity `safeVarianceSensitivity` (1): a larger margin
weighs the variation more, a larger sensitivity makes even a small deviation count (its root
grows toward 1). As in Trimaran, the pod counts with its requests (not a usage estimate), and the
node's score is its worst resource's.

Two things differ from Trimaran:
- `recent`: pods placed on the node since its sample could show them count with Koordinator's
  usage estimate (`estimation`, see metrics/fresh.py). Trimaran leaves them out, so a burst of
  pods all see the same least risky node; counting them spreads the burst.
- the mean is the `aggregation` over `window` (avg over 15m by default, the window Trimaran's
  load-watcher reports), read from Prometheus together with the standard deviation over the
  same window.

A node lacking either series for either resource, or whose values are older than staleAfter, has
no usage: by `missingMetrics` it scores the mean of the other nodes (FailOpen, the default) or 0
(FailClosed, which is what Trimaran does).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator, model_validator

from kubesched.api.durations import Seconds
from kubesched.api.podinfo import CPU, MEMORY, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, ScorePlugin
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.usage.args import EstimationArgs, UsageArgs
from kubesched.usage.load import LoadReader
from kubesched.usage.queries import Series

NAME = "LoadVariationRiskBalancing"
RESOURCES = (CPU, MEMORY)


class LoadVariationRiskBalancingArgs(UsageArgs):
    window: Seconds = 900.0
    estimation: EstimationArgs = Field(default_factory=EstimationArgs)
    safe_variance_margin: float = Field(1.0, alias="safeVarianceMargin", ge=0, allow_inf_nan=False)
    safe_variance_sensitivity: float = Field(1.0, alias="safeVarianceSensitivity", gt=0, allow_inf_nan=False)

    @field_validator("aggregation")
    @classmethod
    def _mean_like(cls, value: str) -> str:
        if value == "stddev":
            raise ValueError("'stddev' is read anyway; aggregation is the mean-like value (avg, max, latest or a percentile)")
        return value

    @model_validator(mode="after")
    def _window_for_stddev(self) -> LoadVariationRiskBalancingArgs:
        if self.window <= 0:
            raise ValueError("window: must be greater than 0 (the standard deviation is taken over it)")
        return self


def risk(mu: np.ndarray, stddev: np.ndarray, margin: float, sensitivity: float) -> np.ndarray:
    """Trimaran's risk of fractions: (mu + clip(margin * stddev^(1/sensitivity), 0, 1)) / 2."""
    sigma = np.clip(margin * np.clip(stddev, 0.0, 1.0) ** (1.0 / sensitivity), 0.0, 1.0)
    out: np.ndarray = (np.clip(mu, 0.0, 1.0) + sigma) / 2.0
    return out


class LoadVariationRiskBalancing(Plugin, ScorePlugin):
    name = NAME
    Args = LoadVariationRiskBalancingArgs

    def __init__(self, args: LoadVariationRiskBalancingArgs | None, handle: Handle) -> None:
        super().__init__(args or LoadVariationRiskBalancingArgs(), handle)
        a: LoadVariationRiskBalancingArgs = self.args
        self.stddev = {r: Series(r, "stddev", a.window) for r in RESOURCES}
        self.reader = LoadReader(handle, a, a.estimation, RESOURCES, extra=list(self.stddev.values()))

    def close(self) -> None:
        """A reload dropped this instance (framework.generation.retire): stop reading usage."""
        self.reader.close()

    def worst_risk(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """The highest risk over cpu and memory for each of `rows` (NaN: no usable metrics)."""
        a: LoadVariationRiskBalancingArgs = self.args
        load = self.reader.cycle_load(state, table, NAME)
        worst = np.zeros(len(rows))
        for resource in RESOURCES:
            alloc = table.allocatable[rows, table.resource_index[resource]].astype(np.float64)
            request = float(pi.requests.get(resource, 0))
            demand = np.divide(request, alloc, out=np.zeros(len(rows)), where=alloc > 0)
            mu = np.maximum(load.estimated[resource][rows], 0.0) + demand
            r = risk(mu, load.extra[self.stddev[resource]][rows], a.safe_variance_margin, a.safe_variance_sensitivity)
            # No allocatable: nothing fits, the highest risk (Trimaran scores it 0).
            worst = np.fmax(worst, np.where(alloc > 0, r, 1.0))
        return np.where(load.valid[rows], worst, np.nan)

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        worst = self.worst_risk(state, pi, table, rows)
        missing = np.isnan(worst)
        scores = np.floor((1.0 - np.nan_to_num(worst, nan=1.0)) * MAX_NODE_SCORE + 0.5)
        self.reader.fill_missing(scores, missing, pi, NAME)
        out: np.ndarray = scores.astype(np.int64)
        return out
