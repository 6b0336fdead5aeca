"""MultiDimensionalScore: one score from CPU headroom, memory headroom, network latency and
topology distance to the pod's peers (the four-dimension weighted model of article 003, §2.3).

Each dimension is scored 0..100 per node, higher is better:

- cpu:      100 - estimated CPU utilization % with the pod (node usage from Prometheus, plus
            pods placed since the sample and the pod itself at Koordinator's estimate, as
            LoadAware computes it);
- memory:   the same for memory;
- latency:  100 * (1 - min(ms, maxLatencyMs) / maxLatencyMs), the node's network latency in ms
            read from the node label `latencyLabel` (kubesched.io/network-latency-ms; a plain
            number, "ms" suffix allowed). 0 ms scores 100, maxLatencyMs (500) or more scores 0;
- topology: 100 * (3 - d) / 3, with d the distance to the nearest peer: 0 on a node running a
            peer, 1 in a peer's rack, 2 in a peer's zone, 3 farther. Peers are the pods of the
            same namespace carrying the pod's own value of `peerLabel`
            (app.kubernetes.io/instance). The rack is the node label `rackLabel`, by default
            topology.kubernetes.io/rack: a convention (Kubernetes defines zone and region, not
            rack), so set it to whatever your nodes carry. Two nodes share a rack when both their
            rack and zone labels are equal, as rack names are often reused across zones.

The score is the weighted mean sum(w_i * s_i) / sum(w_i), 0..100, with `weights` defaulting to
the article's table: cpu 0.4, memory 0.3, latency 0.2, topology 0.3. (The article subtracts the
latency; here the latency dimension is a score like the others, so its weight is positive.)

Missing information:
- a node without fresh usage metrics: with missingMetrics FailOpen (the default) its cpu and
  memory dimensions fall back to requested / allocatable (the pod's request included), the
  allocation-based view of the same headroom, rather than a neutral value: the request-based
  view still tells a full node from an empty one. With FailClosed they score 0;
- a node without (a readable) latency label scores the mean latency score of the nodes that have
  one;
- a dimension nothing is known about for any candidate node (no node has the latency label, the
  pod has no peers or no peer label) is left out of the mean, weight included. Scoring it the
  same on every node would rank the nodes identically but squeeze the others into a narrower
  range.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kubesched.api.podinfo import CPU, MEMORY, PodInfo
from kubesched.api.selectors import Requirement, Selector
from kubesched.cache.nodetable import ABSENT, LabelColumn, NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, ScorePlugin
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.helper.args import check_label_key
from kubesched.usage.args import EstimationArgs, UsageArgs
from kubesched.usage.load import LoadReader

NAME = "MultiDimensionalScore"
LATENCY_LABEL = "kubesched.io/network-latency-ms"
PEER_LABEL = "app.kubernetes.io/instance"
RACK_LABEL = "topology.kubernetes.io/rack"
ZONE_LABEL = "topology.kubernetes.io/zone"
MAX_DISTANCE = 3


class DimensionWeights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu: float = Field(0.4, ge=0, allow_inf_nan=False)
    memory: float = Field(0.3, ge=0, allow_inf_nan=False)
    latency: float = Field(0.2, ge=0, allow_inf_nan=False)
    topology: float = Field(0.3, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _some_weight(self) -> DimensionWeights:
        if self.cpu + self.memory + self.latency + self.topology <= 0:
            raise ValueError("at least one of cpu, memory, latency and topology needs a weight above 0")
        return self


class MultiDimensionalScoreArgs(UsageArgs):
    estimation: EstimationArgs = Field(default_factory=EstimationArgs)
    weights: DimensionWeights = Field(default_factory=DimensionWeights)
    latency_label: str = Field(LATENCY_LABEL, alias="latencyLabel")
    max_latency_ms: float = Field(500.0, alias="maxLatencyMs", gt=0, allow_inf_nan=False)
    peer_label: str = Field(PEER_LABEL, alias="peerLabel")
    rack_label: str = Field(RACK_LABEL, alias="rackLabel")
    zone_label: str = Field(ZONE_LABEL, alias="zoneLabel")

    @field_validator("latency_label", "peer_label", "rack_label", "zone_label")
    @classmethod
    def _label_key(cls, value: str) -> str:
        return check_label_key(value)


def parse_latency(value: str) -> float:
    """Milliseconds from a label value ("12", "0.5", "12ms"); NaN if not a non-negative number."""
    text = value.strip().removesuffix("ms")
    try:
        ms = float(text)
    except ValueError:
        return math.nan
    return ms if math.isfinite(ms) and ms >= 0 else math.nan


def topology_distance(on_peer: np.ndarray, rack: np.ndarray, zone: np.ndarray, peer_rows: np.ndarray) -> np.ndarray:
    """Distance 0..3 of every row to the nearest of `peer_rows`. `rack` identifies a rack
    (-1: none) and `zone` a zone (ABSENT: none), one entry per row."""
    peer_racks = np.unique(rack[peer_rows])
    peer_zones = np.unique(zone[peer_rows])
    same_rack = (rack >= 0) & np.isin(rack, peer_racks[peer_racks >= 0])
    same_zone = (zone != ABSENT) & np.isin(zone, peer_zones[peer_zones != ABSENT])
    return np.where(on_peer, 0, np.where(same_rack, 1, np.where(same_zone, 2, MAX_DISTANCE)))


class MultiDimensionalScore(Plugin, ScorePlugin):
    name = NAME
    Args = MultiDimensionalScoreArgs

    def __init__(self, args: MultiDimensionalScoreArgs | None, handle: Handle) -> None:
        super().__init__(args or MultiDimensionalScoreArgs(), handle)
        self.handle: Handle = handle
        a: MultiDimensionalScoreArgs = self.args
        w = a.weights
        self.resource_weights = {r: wt for r, wt in ((CPU, w.cpu), (MEMORY, w.memory)) if wt > 0}
        # Without a cpu or memory weight, nothing is read from Prometheus.
        self.reader = LoadReader(handle, a, a.estimation, list(self.resource_weights)) if self.resource_weights else None
        self._fail_open = a.missing_metrics == "FailOpen"
        self._latency_vocab: tuple[LabelColumn | None, np.ndarray] = (None, np.empty(0))

    def close(self) -> None:
        """A reload dropped this instance (framework.generation.retire): stop reading usage."""
        if self.reader is not None:
            self.reader.close()

    # --- dimensions: each returns scores for `rows`, or None when nothing is known -----------------

    def headroom(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> dict[str, np.ndarray]:
        """100 - utilization % with the pod, per weighted resource, for `rows`."""
        if self.reader is None:
            return {}
        load = self.reader.cycle_load(state, table, NAME)
        pod = self.reader.pod_fraction(pi, table)
        valid = load.valid[rows]
        out = {}
        for resource in self.resource_weights:
            util = load.estimated[resource][rows] + pod[resource][rows]
            if not valid.all():
                fallback = self._requested(pi, table, rows, resource) if self._fail_open else np.ones(len(rows))
                util = np.where(valid, util, fallback)
            out[resource] = (1.0 - np.clip(util, 0.0, 1.0)) * MAX_NODE_SCORE
        if not valid.all():
            self.reader.report_problem(pi, self._effect())
        return out

    @staticmethod
    def _requested(pi: PodInfo, table: NodeTable, rows: np.ndarray, resource: str) -> np.ndarray:
        col = table.resource_index[resource]
        alloc = table.allocatable[rows, col].astype(np.float64)
        requested = table.requested[rows, col] + pi.requests.get(resource, 0)
        out: np.ndarray = np.divide(requested, alloc, out=np.ones(len(rows)), where=alloc > 0)
        return out

    def latency(self, table: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        a: MultiDimensionalScoreArgs = self.args
        col = table.labels.get(a.latency_label)
        if col is None:
            return None
        # Parsed once per label value: a column's vocabulary only grows.
        cached_col, parsed = self._latency_vocab
        if cached_col is not col or len(parsed) != len(col.values):
            parsed = np.array([parse_latency(v) for v in col.values], dtype=np.float64)
            self._latency_vocab = (col, parsed)
        if parsed.size == 0:
            return None
        ids = col.ids[rows]
        ms = np.where(ids != ABSENT, parsed[np.maximum(ids, 0)], np.nan)
        known = ~np.isnan(ms)
        if not known.any():
            return None
        scores = (1.0 - np.minimum(ms, a.max_latency_ms) / a.max_latency_ms) * MAX_NODE_SCORE
        if not known.all():
            scores[~known] = scores[known].mean()
        return scores

    def peer_rows(self, pi: PodInfo) -> np.ndarray:
        """Rows of the nodes running the pod's peers (empty: no peers)."""
        a: MultiDimensionalScoreArgs = self.args
        value = pi.labels.get(a.peer_label)
        if value is None:
            return np.empty(0, dtype=np.int64)
        index = self.handle.cache.pods
        selector = Selector((Requirement(a.peer_label, "In", frozenset((value,))),))
        peers = [p for p in index.matching(selector, (pi.namespace,)) if p.uid != pi.uid]
        return np.fromiter((index.row[p.uid] for p in peers), dtype=np.int64, count=len(peers))

    def topology(self, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray | None:
        a: MultiDimensionalScoreArgs = self.args
        peer_rows = self.peer_rows(pi)
        if peer_rows.size == 0:
            return None
        n = table.capacity
        on_peer = np.zeros(n, dtype=bool)
        on_peer[peer_rows] = True
        zone = table.label_ids(a.zone_label)[:n]
        rack_col = table.labels.get(a.rack_label)
        if rack_col is None:
            rack = np.full(n, -1, dtype=np.int64)
        else:
            # A rack is a (zone, rack) pair: one id per pair, -1 where the rack label is absent.
            ids = rack_col.ids[:n].astype(np.int64)
            rack = np.where(ids != ABSENT, (zone.astype(np.int64) + 1) * (len(rack_col.values) + 1) + ids, -1)
        distance = topology_distance(on_peer, rack, zone, peer_rows)
        out: np.ndarray = (MAX_DISTANCE - distance[rows]) / MAX_DISTANCE * MAX_NODE_SCORE
        return out

    # --- the score -------------------------------------------------------------------------------------

    def dimensions(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Each dimension's 0..100 scores for `rows`; dimensions nothing is known about are absent."""
        w = self.args.weights
        out = dict(self.headroom(state, pi, table, rows))
        if w.latency > 0 and (lat := self.latency(table, rows)) is not None:
            out["latency"] = lat
        if w.topology > 0 and (topo := self.topology(pi, table, rows)) is not None:
            out["topology"] = topo
        return out

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        w: DimensionWeights = self.args.weights
        weight_of = {CPU: w.cpu, MEMORY: w.memory, "latency": w.latency, "topology": w.topology}
        total = np.zeros(len(rows))
        weight = 0.0
        for dim, scores in self.dimensions(state, pi, table, rows).items():
            total += weight_of[dim] * scores
            weight += weight_of[dim]
        if weight == 0:
            return np.full(len(rows), MAX_NODE_SCORE // 2, dtype=np.int64)
        return np.floor(total / weight + 0.5).astype(np.int64)

    def _effect(self) -> str:
        if self._fail_open:
            return f"{NAME} scores the cpu and memory of nodes without fresh usage by their requests (missingMetrics: FailOpen)"
        return f"{NAME} scores the cpu and memory of nodes without fresh usage 0 (missingMetrics: FailClosed)"
