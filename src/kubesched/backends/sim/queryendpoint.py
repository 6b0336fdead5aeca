"""The simulator's query endpoint: a simulated Prometheus server answering kubesched's node-exporter
queries from the usage model (backends.sim.usagemodel).

It stands where the real server would (it implements usage.prometheus.PrometheusTransport, what
the client sends through), so the same usage provider and load-aware plugins run in the
simulator, with the same lag a real installation has: node-exporter is scraped every scrape
interval, `rate(...[1m])` needs two scrapes inside its window and averages between the first and
the last, and the provider refreshes on its own period. A burst of pods therefore lands before
the metrics show it, as it does in production (the herd effect).

Answered, whitespace-insensitively, with Prometheus semantics:

- cpu: `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[W]))`, any window W:
  the busy share between the first and the last scrape in (t-W, t] (counter semantics); no
  sample for a node with fewer than two scrapes in the window;
- memory: `1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes`: the last scrape
  within the 5-minute lookback;
- either wrapped by Series.render in avg_over_time, max_over_time, stddev_over_time or
  quantile_over_time(q, (EXPR)[W:S]): the expression evaluated at the multiples of S in
  (t-W, t], then aggregated (quantile with Prometheus's linear interpolation).

Every sample is labelled {"instance": <node name>} and stamped with the virtual time. Any
other query fails with PrometheusError, as does every query during a simulated outage.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from kubesched.api.durations import parse_duration_or_seconds
from kubesched.backends.sim.usagemodel import UsageModel
from kubesched.infra.clock import VirtualClock
from kubesched.usage.prometheus import PrometheusError, Sample
from kubesched.usage.queries import parse_rendered

LOOKBACK = 300.0  # Prometheus's default lookback delta for instant vectors
MAX_SAMPLES = 50_000_000  # Prometheus's default --query.max-samples
_EPS = 1e-9

_CPU = re.compile(
    r"^1-(?:avgby\(instance\)\(rate\(node_cpu_seconds_total\{mode=(?P<q1>[\"'])idle(?P=q1)\}\[(?P<w1>[0-9a-z]+)\]\)\)"
    r"|avg\(rate\(node_cpu_seconds_total\{mode=(?P<q2>[\"'])idle(?P=q2)\}\[(?P<w2>[0-9a-z]+)\]\)\)by\(instance\))$"
)
_MEMORY = re.compile(r"^1-\(?node_memory_MemAvailable_bytes/node_memory_MemTotal_bytes\)?$")


class SimPrometheus:
    """PrometheusTransport over a UsageModel's scrapes, in virtual time."""

    def __init__(
        self,
        usage: UsageModel,
        clock: VirtualClock,
        *,
        outages: Sequence[tuple[float, float]] = (),
        address: str = "sim://prometheus",
    ) -> None:
        self.usage = usage
        self.clock = clock
        self.outages = list(outages)
        # Outages sorted by start, with the outage reaching furthest among those begun so far:
        # a lookup is a bisection, however many outages a scenario lists.
        ordered = sorted(self.outages)
        self._starts = [start for start, _ in ordered]
        self._reach: list[tuple[float, float]] = []
        for outage in ordered:
            self._reach.append(outage if not self._reach or outage[1] > self._reach[-1][1] else self._reach[-1])
        self.address = address
        self.queries: Counter[str] = Counter()
        self.closed = False

    async def query(self, promql: str) -> list[Sample]:
        return self.evaluate(promql)

    async def close(self) -> None:
        self.closed = True

    def evaluate(self, promql: str) -> list[Sample]:
        """The instant query at the clock's current time (what `query` answers)."""
        now = self.clock.now()
        begun = bisect.bisect_right(self._starts, now)
        if begun and self._reach[begun - 1][1] > now:
            start, end = self._reach[begun - 1]
            raise PrometheusError(
                f"{self.address}: connection refused (simulated Prometheus outage from {start:g}s to {end:g}s)"
            )
        self.queries[promql] += 1
        try:
            expression, series = parse_rendered(promql)
        except ValueError as exc:
            raise self._unknown(promql, str(exc)) from None
        compact = re.sub(r"\s+", "", expression)
        cpu = _CPU.match(compact)
        if cpu is not None:
            try:
                window = parse_duration_or_seconds(cpu["w1"] or cpu["w2"])
            except ValueError as exc:
                raise self._unknown(promql, str(exc)) from None

            def inner(taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                return self._cpu(taus, window)

        elif _MEMORY.match(compact):
            inner = self._memory
        else:
            raise self._unknown(promql)
        if series.aggregation == "latest":
            valid, values = inner(np.array([now]))
            return self._samples(values[0] if valid[0] else None, now)
        if series.step <= 0 or series.window <= 0:
            raise self._unknown(promql, "subquery window and step must be above 0")
        last = np.floor(now / series.step + _EPS)
        first = np.floor((now - series.window) / series.step + _EPS) + 1
        if (last - first + 1) * max(len(self.usage.node_names), 1) > MAX_SAMPLES:
            # Prometheus's own guard (--query.max-samples), and the simulator's memory's.
            raise PrometheusError(
                f"query {promql!r} failed: execution: query processing would load too many samples into memory in "
                "query execution"
            )
        taus = np.arange(first, last + 1) * series.step
        valid, values = inner(taus)
        values = values[valid]
        if not len(values):
            return []
        agg = series.aggregation
        if agg == "avg":
            out = values.mean(axis=0)
        elif agg == "max":
            out = values.max(axis=0)
        elif agg == "stddev":
            out = values.std(axis=0)
        else:
            q = int(agg[1:]) / 100
            out = np.quantile(values, q, axis=0)  # linear interpolation, as Prometheus
        return self._samples(out, now)

    def _unknown(self, promql: str, why: str = "") -> PrometheusError:
        detail = f" ({why})" if why else ""
        return PrometheusError(
            "the simulated Prometheus answers only kubesched's default node-exporter queries (cpu: "
            "1 - avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\"}[1m])), memory: "
            "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes, optionally wrapped in "
            f"avg/max/stddev/quantile_over_time subqueries); cannot answer {promql!r}{detail}"
        )

    def _samples(self, values: np.ndarray | None, now: float) -> list[Sample]:
        if values is None:
            return []
        names = self.usage.node_names
        return [
            Sample({"instance": name}, float(v), now) for name, v in zip(names, values.tolist(), strict=True) if np.isfinite(v)
        ]

    def _cpu(self, taus: np.ndarray, window: float) -> tuple[np.ndarray, np.ndarray]:
        """rate() over the busy counter at each evaluation time: (valid per time, values)."""
        times = self.usage.times
        first = np.searchsorted(times, taus - window + _EPS, side="left")
        last = np.searchsorted(times, taus + _EPS, side="right") - 1
        valid = last - first >= 1
        values = np.zeros((len(taus), len(self.usage.node_names)))
        if valid.any():
            f, ls = first[valid], last[valid]
            counter = self.usage.counter_at
            values[valid] = (counter(ls) - counter(f)) / (times[ls] - times[f])[:, None]
        return valid, values

    def _memory(self, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The last scraped memory utilization within the lookback at each evaluation time."""
        times = self.usage.times
        last = np.searchsorted(times, taus + _EPS, side="right") - 1
        valid = last >= 0
        valid[valid] = times[last[valid]] > taus[valid] - LOOKBACK + _EPS
        values = np.zeros((len(taus), len(self.usage.node_names)))
        if valid.any():
            values[valid] = self.usage.memory_at(last[valid])
        return valid, values
