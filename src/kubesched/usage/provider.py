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
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.cache.nodetable import NodeTable
from kubesched.infra.clock import Clock, Timer
from kubesched.usage.args import PrometheusArgs
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
