"""Helpers for unit tests of usage-based plugins: a Prometheus stand-in, and a handle holding a
real UsageService on a virtual clock, so a test sets node usage, refreshes, places pods at
chosen times and calls the plugin's score directly."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import numpy as np

from builders import UnitHandle
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEvent
from kubesched.framework.shared import SharedObjects
from kubesched.infra.clock import VirtualClock
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.usage.prometheus import PrometheusError, Sample
from kubesched.usage.queries import DEFAULT_QUERIES, parse_rendered
from kubesched.usage.service import UsageService


class FakeTransport:
    """A stand-in for Prometheus in unit tests only. It answers a rendered query (the default
    expression of a resource, wrapped in an aggregation) with the values the test set for that
    resource and aggregation, labelled as node-exporter's `instance`; `down` makes every query
    fail with that message."""

    address = "http://prometheus.test:9090"

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], dict[str, float]] = {}
        self.down = ""

    def set(self, resource: str, values: dict[str, float], aggregation: str = "avg") -> None:
        self.values.setdefault((resource, aggregation), {}).update(values)

    async def query(self, promql: str) -> list[Sample]:
        if self.down:
            raise PrometheusError(self.down)
        expression, series = parse_rendered(promql)
        for resource, default in DEFAULT_QUERIES.items():
            if default == expression:
                answer = self.values.get((resource, series.aggregation), {})
                return [Sample({"instance": f"{name}:9100"}, v, 0.0) for name, v in answer.items()]
        raise PrometheusError(f"no answer for {promql!r}")

    async def close(self) -> None:
        pass


class UsageHandle(UnitHandle):
    """UnitHandle plus what load-aware plugins use: the usage service (real, on a virtual clock,
    with FakeTransport as Prometheus) and recorded events."""

    def __init__(self, cache: Cache) -> None:
        super().__init__(cache)
        self.clock = VirtualClock()
        self.prom = FakeTransport()
        self.usage = UsageService(self.clock, self._spawn, lambda args: self.prom)
        # The plugins find the service among the handle's shared objects, as in a scheduler.
        self.shared = SharedObjects([self.usage])
        self.metrics = SchedulerMetrics()
        self.events: list[tuple[str, str, str, str]] = []

    @staticmethod
    def _spawn(coro: Coroutine[Any, Any, None], what: str) -> None:
        coro.close()  # tests refresh explicitly

    spawn = _spawn

    def cluster_event(self, event: ClusterEvent) -> None:
        pass

    def now(self) -> float:
        return self.clock.now()

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self.events.append((pi.key, type_, reason, message))

    async def refresh(self, at: float | None = None) -> None:
        """Moves the clock to `at` and fetches every provider's series once."""
        if at is not None:
            self.clock.advance_to(at)
        for provider in self.usage.providers.values():
            await provider.refresh()

    def place(self, pi: PodInfo, node: str, at: float) -> None:
        """Records `pi` as placed on `node` by this scheduler at time `at` (the clock moves there)."""
        self.clock.advance_to(at)
        self.usage.pod_placed(pi, self.cache.table.row_of(node), True)


def scores(plugin: Any, handle: UnitHandle, pi: PodInfo, names: list[str] | None = None) -> dict[str, int]:
    """The plugin's score for each named node (all nodes by default), in one cycle."""
    table = handle.cache.table
    names = names or list(table.index)
    rows = np.array([table.row_of(n) for n in names], dtype=np.intp)
    out = plugin.score(CycleState(), pi, table, rows)
    return {n: int(s) for n, s in zip(names, out, strict=True)}
