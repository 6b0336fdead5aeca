"""What a load-aware plugin reads in a cycle: each node's utilization as the metrics report it,
plus the estimated usage of pods placed since (the estimated utilization), as table columns.

A node's value is missing when Prometheus has none for it or the newest is older than
staleAfter; `valid` says which rows have every series the plugin needs. What a missing value
means (fail open or closed) is the plugin's decision, from its args.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.podinfo import CPU, MEMORY, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.usage.args import EstimationArgs, UsageArgs
from kubesched.usage.fresh import estimate, footprint
from kubesched.usage.provider import UsageProvider
from kubesched.usage.queries import Series
from kubesched.usage.service import usage_service

ESTIMATED = (CPU, MEMORY)  # resources a pod's usage can be estimated for from its requests


@dataclass(slots=True)
class NodeLoad:
    """Per-row columns of the table; NaN where a value is missing or stale."""

    measured: dict[str, np.ndarray]
    estimated: dict[str, np.ndarray]
    extra: dict[Series, np.ndarray]
    valid: np.ndarray
    age: np.ndarray


@dataclass(slots=True)
class _Base:
    measured: dict[str, np.ndarray]
    extra: dict[Series, np.ndarray]
    oldest_fetch: np.ndarray
    complete: np.ndarray  # every series has a value


class LoadReader:
    def __init__(
        self,
        handle: Handle,
        usage: UsageArgs,
        estimation: EstimationArgs,
        resources: Sequence[str],
        extra: Sequence[Series] = (),
    ) -> None:
        svc = usage_service(handle)
        self.service = svc
        self.handle = handle
        self.usage = usage
        self.estimation = estimation
        self.provider: UsageProvider = svc.provider(usage.prometheus)
        window = usage.window if usage.aggregation != "latest" else 0.0
        self.main = {r: Series(r, usage.aggregation, window) for r in resources}
        self.extra = list(extra)
        for series in (*self.main.values(), *self.extra):
            self.provider.require(series)
        self._reported_since: float | None = None
        self.settle = estimation.settle_for(usage)
        svc.remember_for(self.settle)
        self._base_cache: tuple[tuple[int, int, int], _Base] | None = None
        self._masked: tuple[_Base, np.ndarray, dict[str, np.ndarray], dict[Series, np.ndarray]] | None = None
        self._inverse_key: tuple[int, int] | None = None
        self._inverse: dict[str, np.ndarray] = {}
        self._pod_cache: tuple[tuple[str, int, int, int], dict[str, np.ndarray]] | None = None

    def close(self) -> None:
        """The plugin reading is gone: the provider loses a reader (usage.service release)."""
        self.service.release(self.usage.prometheus)

    def cycle_load(self, state: CycleState, table: NodeTable, plugin: str) -> NodeLoad:
        """`read` once per scheduling cycle: Filter and Score, PreScore and Score share it."""
        load: NodeLoad | None = state.read(plugin)
        if load is None:
            load = self.read(table)
            state.write(plugin, load)
        return load

    def fill_missing(self, scores: np.ndarray, missing: np.ndarray, pi: PodInfo, plugin: str, closed_effect: str = "") -> None:
        """Scores of nodes without fresh usage, in place, as `missingMetrics` says: FailOpen, the
        mean of the others (rounded), so they are neither preferred nor avoided; FailClosed, 0.
        Says so in an event, once per outage."""
        if not missing.any():
            return
        if self.usage.missing_metrics == "FailOpen":
            known = scores[~missing]
            scores[missing] = np.floor(known.mean() + 0.5) if known.size else 0.0
            effect = f"{plugin} scores nodes without fresh usage as the mean of the others (missingMetrics: FailOpen)"
        else:
            scores[missing] = 0.0
            effect = closed_effect or f"{plugin} scores nodes without fresh usage 0 (missingMetrics: FailClosed)"
        self.report_problem(pi, effect)

    def read(self, table: NodeTable) -> NodeLoad:
        now = self.service.clock.now()
        base = self._base(table)
        valid = ((now - base.oldest_fetch) <= self.usage.stale_after) & base.complete
        masked = self._masked
        if masked is None or masked[0] is not base or not np.array_equal(masked[1], valid):
            measured = {r: np.where(valid, v, np.nan) for r, v in base.measured.items()}
            extra = {s: np.where(valid, v, np.nan) for s, v in base.extra.items()}
            self._masked = masked = (base, valid, measured, extra)
        _, valid, measured, extra = masked
        estimated = dict(measured)
        fresh = self.service.fresh
        if len(fresh):
            # The newest fetch that covers the node: later placements are not in it.
            sampled = np.where(valid, base.oldest_fetch, np.inf)
            slots = fresh.not_yet_sampled(sampled, self.settle)
            if slots.size:
                cpu, mem = fresh.estimated_per_row(slots, self.estimation, table.capacity)
                for resource, amount in ((CPU, cpu), (MEMORY, mem)):
                    if resource in estimated:
                        estimated[resource] = estimated[resource] + amount * self._inverse_allocatable(table, resource)
        return NodeLoad(measured, estimated, extra, valid, now - base.oldest_fetch)

    def _base(self, table: NodeTable) -> _Base:
        """The provider's answers as columns, rebuilt only when an answer or the nodes change."""
        key = (self.provider.version, table.node_generation, table.capacity)
        if self._base_cache is not None and self._base_cache[0] == key:
            return self._base_cache[1]
        oldest_fetch = np.full(table.capacity, np.inf)
        complete = np.ones(table.capacity, dtype=bool)
        columns = {series: self.provider.column(series, table) for series in (*self.main.values(), *self.extra)}
        for col in columns.values():
            oldest_fetch = np.minimum(oldest_fetch, col.fetched)
            complete &= ~np.isnan(col.value)
        measured = {resource: columns[series].value for resource, series in self.main.items()}
        extra = {series: columns[series].value for series in self.extra}
        base = _Base(measured, extra, oldest_fetch, complete)
        self._base_cache = (key, base)
        return base

    def _inverse_allocatable(self, table: NodeTable, resource: str) -> np.ndarray:
        """1 / allocatable per row (0 where a node has none), cached while the nodes stay the same."""
        key = (table.node_generation, table.capacity)
        if self._inverse_key != key:
            self._inverse = {}
            self._inverse_key = key
        inv = self._inverse.get(resource)
        if inv is None:
            col = table.resource_index.get(resource)
            inv = np.zeros(table.capacity)
            if col is not None:
                alloc = table.allocatable[:, col].astype(np.float64)
                np.divide(1.0, alloc, out=inv, where=alloc > 0)
            self._inverse[resource] = inv
        return inv

    def pod_fraction(self, pi: PodInfo, table: NodeTable) -> dict[str, np.ndarray]:
        """The incoming pod's estimated usage as a fraction of each node's allocatable (computed
        once per pod and node layout: Filter and Score both ask), with the copies of it a joint
        plan's what-if counts on every node (NodeTable.with_copies)."""
        key = (pi.uid, table.node_generation, table.capacity, table.copies)
        if self._pod_cache is not None and self._pod_cache[0] == key:
            return self._pod_cache[1]
        cpu, mem = (amount * (1 + table.copies) for amount in estimate(footprint(pi), self.estimation))
        out = {}
        for resource, amount in ((CPU, cpu), (MEMORY, mem)):
            if resource in self.main:
                out[resource] = amount * self._inverse_allocatable(table, resource)
        self._pod_cache = (key, out)
        return out

    def report_problem(self, pi: PodInfo, effect: str) -> None:
        """A Warning event on the pod, once per outage, saying metrics are unavailable and what the
        plugin does about it."""
        p = self.provider
        if not p.problem or p.problem_since == self._reported_since:
            return
        self._reported_since = p.problem_since
        self.handle.record_event(
            pi, "Warning", "UsageMetricsUnavailable", f"node usage from {p.args.address} unavailable: {p.problem}; {effect}"
        )
