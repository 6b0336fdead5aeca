"""LoadAware: keep pods off nodes that are busy in fact, not just on paper.

A node's estimated utilization is what Prometheus last reported (an aggregation over a window,
avg by default) plus the estimated usage of pods placed since the sample could see them (see
metrics/fresh.py), plus the incoming pod's estimate. The Filter rejects a node where that would
pass a resource's threshold (cpu 65%, memory 95% by default, as Koordinator; a node may set its
own with the annotation kubesched.io/usage-thresholds: "cpu=80,memory=90"). The Score is the
weighted mean over resources of 100 - utilization%: with cpu alone, the articles' 100 - cpu%.

A node without a fresh value is, by `missingMetrics`, passed and given the average score of the
nodes that have one (FailOpen, the default: a Prometheus outage changes nothing but the quality
of placement), or filtered out and scored 0 (FailClosed).
"""

from __future__ import annotations

import json
import logging

import numpy as np
from pydantic import Field, field_validator

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, ScorePlugin
from kubesched.framework.status import Code
from kubesched.framework.types import MAX_NODE_SCORE, FilterResult
from kubesched.usage.args import EstimationArgs, UsageArgs
from kubesched.usage.load import LoadReader
from kubesched.usage.service import USAGE_UPDATE

NAME = "LoadAware"
THRESHOLDS_ANNOTATION = "kubesched.io/usage-thresholds"
NO_METRICS = "node(s) had no fresh usage metrics"
OPEN_EFFECT = f"{NAME} passes nodes without fresh usage and scores them as the mean of the others (missingMetrics: FailOpen)"
CLOSED_EFFECT = f"{NAME} filters out nodes without fresh usage (missingMetrics: FailClosed)"

log = logging.getLogger(__name__)


def exceeded(resource: str) -> str:
    return f"node(s) {resource} usage exceed threshold"


class LoadAwareArgs(UsageArgs):
    estimation: EstimationArgs = Field(default_factory=EstimationArgs)
    # Percent of allocatable; a resource without one (or 0) is not filtered on.
    thresholds: dict[str, float] = Field(default_factory=lambda: {"cpu": 65.0, "memory": 95.0})
    resource_weights: dict[str, int] = Field(default_factory=lambda: {"cpu": 1, "memory": 1}, alias="resourceWeights")

    @field_validator("thresholds")
    @classmethod
    def _check_thresholds(cls, value: dict[str, float]) -> dict[str, float]:
        for resource, pct in value.items():
            if not 0 <= pct <= 100:
                raise ValueError(f"{resource}: {pct} is not a percentage between 0 and 100")
        return value

    @field_validator("resource_weights")
    @classmethod
    def _check_weights(cls, value: dict[str, int]) -> dict[str, int]:
        if not value or all(w == 0 for w in value.values()):
            raise ValueError("at least one resource needs a weight above 0")
        for resource, w in value.items():
            if w < 0:
                raise ValueError(f"{resource}: weight {w} must not be negative")
        return value


def parse_thresholds(text: str) -> dict[str, float]:
    """The annotation's thresholds: "cpu=80,memory=90" or a JSON object; ValueError if neither."""
    text = text.strip()
    raw: dict[str, object] = {}
    if text.startswith("{"):
        decoded = json.loads(text)
        if not isinstance(decoded, dict):
            raise ValueError("not an object")
        raw = decoded
    else:
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, val = part.partition("=")
            if not sep:
                raise ValueError(f"{part!r} is not resource=percent")
            raw[key.strip()] = val.strip().rstrip("%")
    out = {}
    for resource, amount in raw.items():
        pct = float(str(amount))
        if not 0 <= pct <= 100:
            raise ValueError(f"{resource}: {pct} is not between 0 and 100")
        out[resource] = pct
    return out


class LoadAware(Plugin, FilterPlugin, ScorePlugin, EnqueueExtensions):
    name = NAME
    Args = LoadAwareArgs

    def __init__(self, args: LoadAwareArgs | None, handle: Handle) -> None:
        super().__init__(args or LoadAwareArgs(), handle)
        a: LoadAwareArgs = self.args
        resources = sorted(set(a.thresholds) | {r for r, w in a.resource_weights.items() if w})
        self.reader = LoadReader(handle, a, a.estimation, resources)
        self._fail_open = a.missing_metrics == "FailOpen"
        self._limits_key: tuple[int, int] = (-1, -1)
        self._limits: dict[str, np.ndarray] = {}

    def close(self) -> None:
        """A reload dropped this instance (framework.generation.retire): stop reading usage."""
        self.reader.close()

    def events_to_register(self) -> list[ClusterEvent]:
        # New usage samples, a freed node, or a node's thresholds changing may let the pod in.
        return [
            USAGE_UPDATE,
            ClusterEvent(POD, ActionType.Delete),
            ClusterEvent(NODE, ActionType.Add),
            ClusterEvent(NODE, ActionType.Update),
        ]

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        load = self.reader.cycle_load(state, table, NAME)
        pod = self.reader.pod_fraction(pi, table)
        codes = np.zeros(table.capacity, dtype=np.uint8)
        reasons: dict[int, tuple[Code, tuple[str, ...]]] = {}
        for i, (resource, limit) in enumerate(self._row_limits(table).items(), start=1):
            after = load.estimated[resource] + pod.get(resource, 0.0)
            over = (after * 100 > limit) & (codes == 0)  # NaN compares False: missing passes here
            if over.any():
                codes[over] = i
                reasons[i] = (Code.UNSCHEDULABLE, (exceeded(resource),))
        if not load.valid[: table.size].all():
            missing = ~load.valid & (codes == 0)
            if not self._fail_open and missing.any():
                codes[missing] = 255
                reasons[255] = (Code.UNSCHEDULABLE, (NO_METRICS,))
            self.reader.report_problem(pi, OPEN_EFFECT if self._fail_open else CLOSED_EFFECT)
        if not reasons:
            return None
        return FilterResult.from_reasons(codes, reasons)

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        load = self.reader.cycle_load(state, table, NAME)
        pod = self.reader.pod_fraction(pi, table)
        a: LoadAwareArgs = self.args
        total = np.zeros(len(rows))
        weight = 0
        for resource, w in a.resource_weights.items():
            if not w:
                continue
            after = load.estimated[resource][rows] + pod.get(resource, np.zeros(table.capacity))[rows]
            total += w * np.clip(1.0 - after, 0.0, 1.0) * MAX_NODE_SCORE
            weight += w
        scores = total / weight
        self.reader.fill_missing(scores, ~load.valid[rows], pi, NAME, CLOSED_EFFECT)
        return scores.astype(np.int64)

    def _row_limits(self, table: NodeTable) -> dict[str, np.ndarray]:
        """Threshold per resource per row (inf: none), with the nodes' annotation overrides."""
        key = (table.node_generation, table.capacity)
        if key == self._limits_key:
            return self._limits
        a: LoadAwareArgs = self.args
        limits = {r: np.full(table.capacity, pct if pct > 0 else np.inf) for r, pct in a.thresholds.items()}
        for name, row in table.index.items():
            node = table.nodes[row]
            text = node.metadata.annotations.get(THRESHOLDS_ANNOTATION) if node is not None else None
            if not text:
                continue
            try:
                own = parse_thresholds(text)
            except (ValueError, TypeError) as exc:
                log.warning("node %s: annotation %s=%r ignored: %s", name, THRESHOLDS_ANNOTATION, text, exc)
                continue
            for resource, pct in own.items():
                if resource in limits:
                    limits[resource][row] = pct if pct > 0 else np.inf
        self._limits_key, self._limits = key, limits
        return limits
