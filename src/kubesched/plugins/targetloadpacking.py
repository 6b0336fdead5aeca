"""TargetLoadPacking (Trimaran): pack nodes up to a target CPU utilization, then spread.

For each node, U is the CPU it would use with the pod, in percent of its allocatable CPU:

    U = 100 * (measured + recent + pod) / allocatable

- measured: the node's CPU utilization from Prometheus (the `aggregation` over `window`, avg by
  default, as Trimaran reads load-watcher's average) times its allocatable millicores;
- recent: the predicted CPU of pods placed on the node that the sample cannot show yet (placed
  after it, or less than `settleTime` before it, window + 90 s by default; see metrics/fresh.py);
- pod: the incoming pod's predicted CPU.

A pod's predicted CPU is Trimaran's: its CPU limit if it sets one, else its CPU request times
`defaultRequestsMultiplier` (1.5), else `defaultRequests.cpu` (1000m). The pod's requests and
limits are taken as totals: a pod whose containers all set limits is predicted at the sum of the
limits, and otherwise at request * multiplier. (Trimaran predicts container by container, which
differs only for a pod mixing containers with and without limits; the totals let the prediction
of every recently placed pod run as one vectorized operation.)

With X = `targetUtilization` (40 by default), the score rises from X on an idle node to 100 at
U = X, then falls to 0 at U = 100; a node past 100 scores 0:

    score = (100 - X) * U / X + X     for U <= X
          = X * (100 - U) / (100 - X) for X < U <= 100
          = 0                         for U > 100

So pods fill the busiest node still below the target (best fit around X) instead of spreading
thin, leaving the headroom above X for bursts. Unlike Trimaran, U is against allocatable rather
than capacity CPU: allocatable is what pods may use.

Trimaran scores a node without metrics 0. Here `missingMetrics` decides: FailOpen (the default)
gives such a node the mean score of the nodes that have metrics, FailClosed gives it 0.
"""

from __future__ import annotations

import numpy as np
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from kubesched.api.durations import Seconds
from kubesched.api.podinfo import CPU, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, ScorePlugin
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.usage.args import EstimationArgs, Millicores, UsageArgs
from kubesched.usage.fresh import footprint
from kubesched.usage.load import LoadReader, NodeLoad

NAME = "TargetLoadPacking"


class DefaultRequests(BaseModel):
    """The CPU predicted for a pod that sets neither a CPU limit nor a CPU request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu: Millicores = Field(1000, ge=0)


class TargetLoadPackingArgs(UsageArgs):
    # Percent of allocatable CPU to pack nodes up to.
    target_utilization: int = Field(40, alias="targetUtilization", ge=1, le=99)
    default_requests: DefaultRequests = Field(default_factory=DefaultRequests, alias="defaultRequests")
    # Trimaran spells it defaultRequestsMultiplier (a string there; a number or a numeric string here).
    default_requests_multiplier: float = Field(
        1.5,
        validation_alias=AliasChoices("defaultRequestsMultiplier", "requestsMultiplier", "default_requests_multiplier"),
        gt=0,
        le=100,
        allow_inf_nan=False,
    )
    # How long before a sample a placed pod may still be missing from it (default: window + 90 s).
    settle_time: Seconds | None = Field(None, alias="settleTime")


def predict_cpu(request: np.ndarray, limit: np.ndarray, multiplier: float, default: float) -> np.ndarray:
    """Trimaran's predicted CPU (millicores) of pods given their total CPU request and limit
    (limit 0: some container has none): the limit, else request * multiplier, else the default."""
    request = np.asarray(request, dtype=np.float64)
    limit = np.asarray(limit, dtype=np.float64)
    return np.where(limit > 0, limit, np.where(request > 0, np.floor(request * multiplier + 0.5), default))


def target_score(util: np.ndarray, target: float) -> np.ndarray:
    """The score of each utilization percentage around the target, rounded half up; NaN scores 0."""
    u = np.maximum(util, 0.0)
    rising = (MAX_NODE_SCORE - target) * u / target + target
    falling = target * (MAX_NODE_SCORE - u) / (MAX_NODE_SCORE - target)
    score = np.where(u <= target, rising, np.where(u <= MAX_NODE_SCORE, falling, 0.0))
    return np.floor(np.nan_to_num(score, nan=0.0) + 0.5)


class TargetLoadPacking(Plugin, ScorePlugin):
    name = NAME
    Args = TargetLoadPackingArgs

    def __init__(self, args: TargetLoadPackingArgs | None, handle: Handle) -> None:
        super().__init__(args or TargetLoadPackingArgs(), handle)
        a: TargetLoadPackingArgs = self.args
        self.reader = LoadReader(handle, a, EstimationArgs.model_validate({"settleTime": a.settle_time}), [CPU])

    def close(self) -> None:
        """A reload dropped this instance (framework.generation.retire): stop reading usage."""
        self.reader.close()

    def _predict(self, request: np.ndarray, limit: np.ndarray) -> np.ndarray:
        a: TargetLoadPackingArgs = self.args
        return predict_cpu(request, limit, a.default_requests_multiplier, float(a.default_requests.cpu))

    def recent_cpu(self, load: NodeLoad, table: NodeTable) -> np.ndarray:
        """Predicted millicores per row of the pods placed since the row's sample could see them."""
        n = table.capacity
        fresh = self.reader.service.fresh
        if not len(fresh):
            return np.zeros(n)
        now = self.reader.service.clock.now()
        sampled = np.where(load.valid, now - load.age, np.inf)
        slots = fresh.not_yet_sampled(sampled, self.reader.settle)
        if slots.size == 0:
            return np.zeros(n)
        amounts = fresh.amounts[slots]
        predicted = self._predict(amounts[:, 0], amounts[:, 1])
        return np.bincount(fresh.row[slots], weights=predicted, minlength=n)[:n]

    def utilization(self, state: CycleState, pi: PodInfo, table: NodeTable) -> np.ndarray:
        """U per row of the table, in percent (NaN: no usable metrics, inf: no allocatable CPU)."""
        load = self.reader.cycle_load(state, table, NAME)
        fp = footprint(pi)
        pod = float(self._predict(np.array([fp.cpu_request]), np.array([fp.cpu_limit]))[0])
        alloc = table.allocatable[:, table.resource_index[CPU]].astype(np.float64)
        used = load.measured[CPU] * alloc + self.recent_cpu(load, table) + pod
        out: np.ndarray = np.divide(100.0 * used, alloc, out=np.full(table.capacity, np.inf), where=alloc > 0)
        return out

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        a: TargetLoadPackingArgs = self.args
        util = self.utilization(state, pi, table)[rows]
        scores = target_score(util, float(a.target_utilization))
        load = self.reader.cycle_load(state, table, NAME)
        self.reader.fill_missing(scores, ~load.valid[rows], pi, NAME)
        return scores.astype(np.int64)
