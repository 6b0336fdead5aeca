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
from kubesched.framework.interface import Handle
from kubesched.metrics.args import EstimationArgs, UsageArgs
from kubesched.metrics.fresh import estimate, footprint
from kubesched.metrics.provider import UsageProvider, UsageService
from kubesched.metrics.queries import Series

ESTIMATED = (CPU, MEMORY)  # resources a pod's usage can be estimated for from its requests


@dataclass(slots=True)
class NodeLoad:
    """Per-row columns of the table; NaN where a value is missing or stale."""

    measured: dict[str, np.ndarray]
    estimated: dict[str, np.ndarray]
    extra: dict[Series, np.ndarray]
    valid: np.ndarray
    age: np.ndarray


class LoadReader:
    def __init__(
        self,
        handle: Handle | None,
        usage: UsageArgs,
        estimation: EstimationArgs,
        resources: Sequence[str],
        extra: Sequence[Series] = (),
        service: UsageService | None = None,
    ) -> None:
        svc = service if service is not None else (handle.usage if handle is not None else None)
        if svc is None:
            raise ValueError("a load-aware plugin needs the scheduler's usage service")
        self.service: UsageService = svc
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

    def read(self, table: NodeTable) -> NodeLoad:
        now = self.service.clock.now()
        n = table.capacity
        oldest_fetch = np.full(n, np.inf)
        measured: dict[str, np.ndarray] = {}
        for resource, series in self.main.items():
            col = self.provider.column(series, table)
            measured[resource] = col.value
            oldest_fetch = np.minimum(oldest_fetch, col.fetched)
        extra = {}
        for series in self.extra:
            col = self.provider.column(series, table)
            extra[series] = col.value
            oldest_fetch = np.minimum(oldest_fetch, col.fetched)
        age = now - oldest_fetch
        valid = age <= self.usage.stale_after
        for values in (*measured.values(), *extra.values()):
            valid &= ~np.isnan(values)
        measured = {r: np.where(valid, v, np.nan) for r, v in measured.items()}
        extra = {s: np.where(valid, v, np.nan) for s, v in extra.items()}
        estimated = dict(measured)
        fresh = self.service.fresh
        if len(fresh):
            # The newest fetch that covers the node: later placements are not in it.
            sampled = np.where(valid, oldest_fetch, np.inf)
            slots = fresh.not_yet_sampled(sampled, self.settle)
            if slots.size:
                cpu, mem = fresh.estimated_per_row(slots, self.estimation, n)
                for resource, amount in ((CPU, cpu), (MEMORY, mem)):
                    if resource in estimated:
                        estimated[resource] = estimated[resource] + _fraction(amount, table, resource)
        return NodeLoad(measured, estimated, extra, valid, age)

    def pod_fraction(self, pi: PodInfo, table: NodeTable) -> dict[str, np.ndarray]:
        """The incoming pod's estimated usage as a fraction of each node's allocatable."""
        cpu, mem = estimate(footprint(pi), self.estimation)
        out = {}
        for resource, amount in ((CPU, cpu), (MEMORY, mem)):
            if resource in self.main:
                out[resource] = _fraction(np.full(table.capacity, amount), table, resource)
        return out

    def report_problem(self, pi: PodInfo, effect: str) -> None:
        """A Warning event on the pod, once per outage, saying metrics are unavailable and what the
        plugin does about it."""
        p = self.provider
        if not p.problem or p.problem_since == self._reported_since or self.handle is None:
            return
        self._reported_since = p.problem_since
        self.handle.record_event(
            pi, "Warning", "UsageMetricsUnavailable", f"node usage from {p.args.address} unavailable: {p.problem}; {effect}"
        )


def _fraction(amount: np.ndarray, table: NodeTable, resource: str) -> np.ndarray:
    col = table.resource_index.get(resource)
    if col is None:
        return np.zeros(table.capacity)
    alloc = table.allocatable[:, col].astype(np.float64)
    return np.divide(amount[: table.capacity], alloc, out=np.zeros(table.capacity), where=alloc > 0)
