"""The usage service load-aware plugins share: the providers of node usage (one per Prometheus
source) and the pods placed since the metrics were taken.

The scheduler knows nothing of it: the first load-aware plugin makes it through the handle's
shared objects (`usage_service`), it follows placements as a listener of the cache, and it tells
the queue about new samples with a cluster event of its own (USAGE_UPDATE).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kubesched.api.podinfo import PodInfo
from kubesched.framework.events import ActionType, ClusterEvent
from kubesched.framework.handle import Handle
from kubesched.infra.clock import Clock
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.usage.args import PrometheusArgs
from kubesched.usage.fresh import FreshPods, scheduled_at
from kubesched.usage.provider import TransportFactory, UsageProvider, http_transport

# New node usage samples arrived: pods a load-aware plugin rejected may fit now.
USAGE_UPDATE = ClusterEvent("NodeUsage", ActionType.Update)


@dataclass(frozen=True, slots=True)
class UsageTransport:
    """How the usage service reaches Prometheus, when a backend provides it as a shared object
    (the simulator answers from its own series); by default, Prometheus's HTTP API."""

    make: TransportFactory


def usage_service(handle: Handle) -> UsageService:
    """The scheduler's usage service, made (and attached) by the first plugin that asks."""
    return handle.shared.get(UsageService, lambda: _attached(handle))


def _attached(handle: Handle) -> UsageService:
    transport = handle.shared.find(UsageTransport)
    service = UsageService(handle.clock, handle.spawn, transport.make if transport else None, handle.metrics)
    service.on_refreshed = lambda: handle.cluster_event(USAGE_UPDATE)
    handle.cache.subscribe(service)
    service.start()
    return service


# Placements older than this are in every sample by now (settleTime is 90 s by default); a
# reader whose settle time is longer (a long aggregation window) extends it (remember_for).
FRESH_HORIZON = 600.0


class UsageService:
    """What load-aware plugins share: one provider per Prometheus source, and the recently placed
    pods they must count on top of the metrics (it follows placements as a cache listener)."""

    def __init__(
        self,
        clock: Clock,
        spawn: Callable[[Coroutine[Any, Any, None], str], None],
        transport: TransportFactory | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.clock = clock
        self._spawn = spawn
        self._transport = transport or http_transport
        self._metrics = metrics
        self.providers: dict[str, UsageProvider] = {}  # by the source's args as JSON
        self._users: dict[str, int] = {}  # readers of each provider
        self.fresh = FreshPods()
        self.wall_clock: Callable[[], float] = time.time
        # Placements are remembered only once a plugin needs them, so profiles without
        # load-aware plugins pay nothing.
        self.tracking = False
        self.on_refreshed: Callable[[], None] | None = None
        self.horizon = FRESH_HORIZON
        self._pruning = False
        self._started = False

    def remember_for(self, settle: float) -> None:
        """A reader counts placements for `settle` seconds: keep them at least that long."""
        self.horizon = max(self.horizon, settle + 60.0)

    def provider(self, args: PrometheusArgs) -> UsageProvider:
        """The provider of this source, shared by every plugin that reads it: one more user."""
        key = args.model_dump_json()
        self._users[key] = self._users.get(key, 0) + 1
        p = self.providers.get(key)
        if p is None:
            if not self.providers and self._metrics is not None:
                self._register(self._metrics)
            p = UsageProvider(args, self._transport(args), self.clock, self._spawn, self._refreshed)
            self.providers[key] = p
            self.tracking = True
            if self._started:
                p.start()  # first refresh now (when the clock runs), then every refreshInterval
        return p

    def release(self, args: PrometheusArgs) -> None:
        """A plugin reading this source is gone (a reload dropped it): the provider stops
        refreshing once nobody reads it, instead of querying Prometheus for a configuration
        no longer in force."""
        key = args.model_dump_json()
        users = self._users.get(key, 0) - 1
        if users > 0:
            self._users[key] = users
            return
        self._users.pop(key, None)
        p = self.providers.pop(key, None)
        if p is not None:
            p.stop()
            self._spawn(p.transport.close(), f"closing the usage connection to {args.address}")

    def track_placements(self) -> FreshPods:
        """For plugins that count recent placements without reading Prometheus: old ones are
        forgotten every minute (a provider's refreshes do it when there is one)."""
        self.tracking = True
        if self._started:
            self._start_pruning()
        return self.fresh

    def start(self) -> None:
        """Starts refreshing: each provider now and every refreshInterval (a provider added later
        starts at once), and, when only placements are tracked, forgetting old ones every minute."""
        self._started = True
        for p in self.providers.values():
            p.start()
        if self.tracking:
            self._start_pruning()

    def _start_pruning(self) -> None:
        if not self._pruning and not self.providers:
            self._pruning = True
            self.clock.call_at(self.clock.now() + 60.0, self._prune_timer)

    # --- pods placed since the metrics were taken ---------------------------------------------------

    def pod_placed(self, pi: PodInfo, row: int, assumed: bool) -> None:
        """A placement (cache.PodListener): one this scheduler assumed counts from now; one someone
        else bound (or that ran before we started) from when its PodScheduled condition says."""
        if not self.tracking:
            return
        now = self.clock.now()
        self.fresh.placed(pi, row, now if assumed else scheduled_at(pi, now, self.wall_clock()))

    def pod_removed(self, uid: str) -> None:
        if self.fresh.slot:
            self.fresh.removed(uid)

    def _refreshed(self, provider: UsageProvider) -> None:
        if provider.pod_usage:
            self.fresh.observe(provider.pod_usage.get("cpu", {}), provider.pod_usage.get("memory", {}))
        self._prune()

    def _prune(self) -> None:
        self.fresh.forget_before(self.clock.now() - self.horizon)
        if self.on_refreshed is not None:
            self.on_refreshed()

    def _prune_timer(self) -> None:
        self._prune()
        self.clock.call_at(self.clock.now() + 60.0, self._prune_timer)

    async def close(self) -> None:
        for p in self.providers.values():
            p.stop()
            await p.transport.close()

    # --- /metrics ------------------------------------------------------------------------------------

    def _register(self, metrics: SchedulerMetrics) -> None:
        providers = self.providers

        def per_source(fn: Callable[[UsageProvider], dict[tuple[str, ...], float]]) -> Callable[[], dict[tuple[str, ...], float]]:
            return lambda: {(p.args.address, *k): v for p in providers.values() for k, v in fn(p).items()}

        metrics.add_counter_source(
            "kubesched_usage_query_failures_total",
            "Usage queries to Prometheus that failed (error, timeout, unusable answer), by series.",
            ["source", "series"],
            per_source(lambda p: {(s,): float(n) for s, n in p.failures.items()}),
        )
        metrics.add_counter_source(
            "kubesched_usage_refreshes_total",
            "Completed refreshes of node usage from Prometheus, whether or not every query answered.",
            ["source"],
            per_source(lambda p: {(): float(p.refreshes)}),
        )
        metrics.add_gauge(
            "kubesched_usage_available",
            "1 if the last refresh of node usage answered every query, else 0.",
            ["source"],
            per_source(lambda p: {(): 0.0 if p.problem or not p.refreshes else 1.0}),
        )
        metrics.add_gauge(
            "kubesched_usage_nodes",
            "Nodes with a usage value held, by series.",
            ["source", "series"],
            per_source(lambda p: {(s.label,): float(len(d.values)) for s, d in p.series.items()}),
        )
        metrics.add_gauge(
            "kubesched_usage_oldest_value_age_seconds",
            "Age of the oldest node usage value held, by series.",
            ["source", "series"],
            per_source(
                lambda p: {(s.label,): p.clock.now() - min(d.fetched.values()) for s, d in p.series.items() if d.fetched}
            ),
        )
        metrics.add_gauge(
            "kubesched_usage_fresh_pods",
            "Pods counted on their node with an estimated usage because the metrics may not show them yet.",
            [],
            lambda: {(): float(len(self.fresh))},
        )
