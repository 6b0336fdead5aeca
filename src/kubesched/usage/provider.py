"""The usage provider: node utilization from Prometheus, refreshed in the background.

One provider per Prometheus source (address, queries, node label) serves every load-aware plugin
of every profile. Each refresh sends one instant query per series a plugin asked for (a
resource's utilization under an aggregation over a window), for all nodes at once, concurrently,
each bounded by the timeout. Nothing in a scheduling cycle ever waits for Prometheus: a cycle
reads the last answers as per-row columns, with the time each value was fetched, and the
plugin decides what an old or missing value means.

A failed refresh keeps the previous values; they age, and past `staleAfter` the plugins treat
them as missing. Failures are logged on change, counted in /metrics, and reported to plugins
(which put them in an event) through `problem`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.clock import Clock, Timer
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.usage.args import PrometheusArgs
from kubesched.usage.fresh import FreshPods, scheduled_at
from kubesched.usage.prometheus import HttpPrometheus, PrometheusError, PrometheusTransport, Sample
from kubesched.usage.queries import Series

log = logging.getLogger(__name__)

TransportFactory = Callable[[PrometheusArgs], PrometheusTransport]


def http_transport(args: PrometheusArgs) -> PrometheusTransport:
    return HttpPrometheus(args.address, args.timeout, bearer_token_file=args.bearer_token_file or None)


@dataclass
class SeriesValues:
    """The latest answer for one series: value and fetch time per node name."""

    query: str
    values: dict[str, float] = field(default_factory=dict)
    fetched: dict[str, float] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True, slots=True)
class Column:
    """One series as per-row arrays of the node table: utilization (NaN: no value) and fetch time
    (-inf: never)."""

    value: np.ndarray
    fetched: np.ndarray


def node_key(label_value: str) -> str:
    """A series' node label reduced to a host: "10.0.0.5:9100" -> "10.0.0.5", "[::1]:9100" -> "::1"."""
    if label_value.startswith("["):
        return label_value[1 : label_value.find("]")] if "]" in label_value else label_value
    host, sep, port = label_value.rpartition(":")
    if sep and port.isdigit() and ":" not in host:
        return host
    return label_value


class UsageProvider:
    def __init__(
        self,
        args: PrometheusArgs,
        transport: PrometheusTransport,
        clock: Clock,
        spawn: Callable[[Coroutine[Any, Any, None], str], None],
        on_refresh: Callable[[UsageProvider], None] | None = None,
    ) -> None:
        self.args = args
        self.transport = transport
        self.clock = clock
        self._spawn = spawn
        self.series: dict[Series, SeriesValues] = {}
        self.version = 0
        self.refreshes = 0
        self.failures: dict[str, int] = {}  # by series label
        self.problem = ""  # what is wrong right now, "" when the last refresh answered in full
        self.problem_since: float | None = None
        self._timer: Timer | None = None
        self._running = False
        self._columns: dict[Series, tuple[tuple[int, int], Column]] = {}
        self._table: NodeTable | None = None  # the node table columns were last made for
        self._started = False
        self._on_refresh = on_refresh
        # Per-pod usage by resource, keyed "namespace/name" (cpu in millicores, memory in bytes).
        self.pod_usage: dict[str, dict[str, float]] = {r: {} for r in args.pod_queries}

    # --- what plugins ask for -------------------------------------------------------------------

    def require(self, series: Series) -> None:
        if series.resource not in self.args.queries:
            known = ", ".join(sorted(self.args.queries))
            raise ValueError(f"no query for resource {series.resource!r} (prometheus.queries has {known})")
        if series not in self.series:
            self.series[series] = SeriesValues(series.render(self.args.queries[series.resource]))

    def column(self, series: Series, table: NodeTable) -> Column:
        """The series as columns of `table`, rebuilt only when an answer or the nodes change."""
        key = (self.version, table.node_generation)
        cached = self._columns.get(series)
        if cached is not None and cached[0] == key:
            return cached[1]
        data = self.series[series]
        self._table = table
        value = np.full(table.capacity, np.nan)
        fetched = np.full(table.capacity, -np.inf)
        aliases = _aliases(table)
        for name, v in data.values.items():
            row = aliases.get(name)
            if row is not None:
                value[row] = v
                fetched[row] = data.fetched[name]
        col = Column(value, fetched)
        self._columns[series] = (key, col)
        return col

    # --- refreshing --------------------------------------------------------------------------------

    def start(self) -> None:
        """Schedules the first refresh now and the next ones every refreshInterval."""
        if not self._started:
            self._started = True
            self._timer = self.clock.call_at(self.clock.now(), self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self) -> None:
        self._timer = self.clock.call_at(self.clock.now() + self.args.refresh_interval, self._tick)
        if self._running:
            return  # the previous refresh is still waiting for its timeout
        self._spawn(self.refresh(), f"usage refresh from {self.args.address}")

    async def refresh(self) -> None:
        if not self.series:
            return
        self._running = True
        try:
            items = list(self.series.items())
            pod_items = list(self.args.pod_queries.items())
            answers = await asyncio.gather(
                *(self._query(data.query) for _, data in items), *(self._query(q) for _, q in pod_items)
            )
            now = self.clock.now()
            problems = []
            for (resource, _q), answer in zip(pod_items, answers[len(items) :], strict=True):
                if isinstance(answer, str):
                    self.failures[f"pod:{resource}"] = self.failures.get(f"pod:{resource}", 0) + 1
                    problems.append(answer)
                else:
                    self._store_pods(resource, answer)
            answers = answers[: len(items)]
            for (series, data), answer in zip(items, answers, strict=True):
                if isinstance(answer, str):
                    data.error = answer
                    self.failures[series.label] = self.failures.get(series.label, 0) + 1
                    problems.append(answer)
                    continue
                if not answer:
                    # Often a Prometheus that just restarted, or a query that matches nothing:
                    # the values held go on aging, and it is said.
                    answer_problem = f"{self.transport.address}: no series for {data.query!r}"
                    data.error = answer_problem
                    self.failures[series.label] = self.failures.get(series.label, 0) + 1
                    problems.append(answer_problem)
                    continue
                data.error = ""
                self._store(data, answer, now)
            self._set_problem("; ".join(dict.fromkeys(problems)), now)
            self.refreshes += 1
            self.version += 1
            if self._on_refresh is not None:
                self._on_refresh(self)
        finally:
            self._running = False

    async def _query(self, promql: str) -> list[Sample] | str:
        try:
            return await asyncio.wait_for(self.transport.query(promql), self.args.timeout)
        except TimeoutError:
            return f"{self.transport.address} did not answer within {self.args.timeout:g}s"
        except PrometheusError as exc:
            return str(exc)
        except Exception as exc:  # a transport bug must not stop refreshing
            log.exception("usage query to %s failed", self.transport.address)
            return f"{type(exc).__name__}: {exc}"

    def _store(self, data: SeriesValues, samples: list[Sample], now: float) -> None:
        label = self.args.node_label
        answered = set()
        for s in samples:
            node = s.labels.get(label)
            if node is None:
                continue
            key = node_key(node)
            data.values[key] = s.value
            data.fetched[key] = now
            answered.add(key)
        self._forget_gone_nodes(data, answered)

    def _forget_gone_nodes(self, data: SeriesValues, answered: set[str]) -> None:
        """A value held for a node that is neither in this answer nor in the node table is of a
        node deleted: dropped, or a cluster whose nodes come and go would keep every one's last
        value. Values of existing nodes missing from the answer are kept and age, as before."""
        table = self._table
        if table is None or len(data.values) == len(answered):
            return
        aliases = _aliases(table)
        for key in [k for k in data.values if k not in answered and k not in aliases]:
            del data.values[key]
            data.fetched.pop(key, None)

    def _store_pods(self, resource: str, samples: list[Sample]) -> None:
        scale = 1000.0 if resource == "cpu" else 1.0  # cores to millicores
        usage = {}
        for s in samples:
            ns, name = s.labels.get("namespace"), s.labels.get("pod")
            if ns and name:
                usage[f"{ns}/{name}"] = s.value * scale
        self.pod_usage[resource] = usage

    def _set_problem(self, problem: str, now: float) -> None:
        if problem and not self.problem:
            log.warning("usage metrics from %s unavailable: %s", self.args.address, problem)
            self.problem_since = now
        elif not problem and self.problem:
            log.info("usage metrics from %s available again", self.args.address)
            self.problem_since = None
        self.problem = problem



def _aliases(table: NodeTable) -> dict[str, int]:
    """Node name and every address of each node, to its row."""
    out: dict[str, int] = {}
    for name, row in table.index.items():
        out[name] = row
        node = table.nodes[row]
        if node is not None:
            for addr in node.status.addresses:
                out.setdefault(addr.address, row)
    return out


# Placements older than this are in every sample by now (settleTime is 90 s by default); a
# reader whose settle time is longer (a long aggregation window) extends it (remember_for).
FRESH_HORIZON = 600.0


class UsageService:
    """What the scheduler holds for load-aware plugins: one provider per Prometheus source, and
    the recently placed pods they must count on top of the metrics."""

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
        self.fresh = FreshPods()
        self.wall_clock: Callable[[], float] = time.time
        # Placements are remembered only once a plugin needs them, so profiles without
        # load-aware plugins pay nothing.
        self.tracking = False
        self.on_refreshed: Callable[[], None] | None = None
        self.horizon = FRESH_HORIZON

    def remember_for(self, settle: float) -> None:
        """A reader counts placements for `settle` seconds: keep them at least that long."""
        self.horizon = max(self.horizon, settle + 60.0)

    def provider(self, args: PrometheusArgs) -> UsageProvider:
        key = args.model_dump_json()
        p = self.providers.get(key)
        if p is None:
            if not self.providers and self._metrics is not None:
                self._register(self._metrics)
            p = UsageProvider(args, self._transport(args), self.clock, self._spawn, self._refreshed)
            self.providers[key] = p
            self.tracking = True
        return p

    def track_placements(self) -> FreshPods:
        """For plugins that count recent placements without reading Prometheus."""
        self.tracking = True
        return self.fresh

    # --- pods placed since the metrics were taken ---------------------------------------------------

    def pod_assumed(self, pi: PodInfo, row: int) -> None:
        if self.tracking:
            self.fresh.placed(pi, row, self.clock.now())

    def pod_bound_elsewhere(self, pi: PodInfo, row: int) -> None:
        """A pod someone else bound (or that was running before we started), placed when its
        PodScheduled condition says."""
        if self.tracking:
            self.fresh.placed(pi, row, scheduled_at(pi, self.clock.now(), self.wall_clock()))

    def pod_gone(self, uid: str) -> None:
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

    def start(self) -> None:
        for p in self.providers.values():
            p.start()
        if self.tracking and not self.providers:
            self._prune_timer()

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
