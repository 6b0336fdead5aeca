"""The scheduler's Prometheus metrics, under kube-scheduler's names.

Scheduling cycles take a fraction of a millisecond, so metrics are batched: an
observation is appended to a plain list (tens of nanoseconds) and folded into
histogram buckets with numpy only when the list grows long or a scrape comes in.
A custom collector renders the folded state, so dashboards built for
kube-scheduler (scheduler_schedule_attempts_total, ..._duration_seconds, ...)
work unchanged.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

FOLD_AT = 4096  # pending observations per label set before folding into buckets
ATTEMPTS_LABEL_CAP = 15  # attempts at or above this share the SLI histogram label "15+"
# Filter reasons are mostly fixed strings, but some name a resource or a volume: the label set of
# kubesched_filter_rejections_total stays bounded by telling at most this many apart per plugin.
REASONS_PER_PLUGIN = 32
OTHER_REASON = "other"
TIE = "(tie)"

Labels = tuple[str, ...]


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class BatchedHistogram:
    """A labelled histogram whose observations are buffered and folded with numpy."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.bounds = np.asarray(buckets, dtype=np.float64)
        # Plain doubles (8 bytes a value, not a float object's 32): with dozens of label sets
        # each holding up to FOLD_AT values, lists of floats were megabytes.
        self._pending: dict[Labels, array[float]] = {}
        self._counts: dict[Labels, np.ndarray] = {}
        self._sums: dict[Labels, float] = {}

    def observe(self, labels: Labels, value: float) -> None:
        pending = self._pending.get(labels)
        if pending is None:
            pending = self._pending[labels] = array("d")
        pending.append(value)
        if len(pending) >= FOLD_AT:
            self._fold(labels, pending)

    def _fold(self, labels: Labels, pending: array[float]) -> None:
        values = np.array(pending, dtype=np.float64)  # a copy: the buffer is emptied next
        del pending[:]
        counts = self._counts.get(labels)
        if counts is None:
            counts = self._counts[labels] = np.zeros(self.bounds.size + 1, dtype=np.int64)
            self._sums[labels] = 0.0
        # side="left": a value equal to a bound belongs to that bucket (le is inclusive).
        np.add.at(counts, np.searchsorted(self.bounds, values, side="left"), 1)
        self._sums[labels] += float(values.sum())

    def count(self, labels: Labels) -> int:
        counts = self._counts.get(labels)
        return len(self._pending.get(labels, ())) + (int(counts.sum()) if counts is not None else 0)

    def collect(self) -> HistogramMetricFamily:
        for labels, pending in self._pending.items():
            if pending:
                self._fold(labels, pending)
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        edges = [f"{b:g}" for b in self.bounds.tolist()] + ["+Inf"]
        for labels, counts in self._counts.items():
            cumulative = np.cumsum(counts).tolist()
            family.add_metric(list(labels), list(zip(edges, cumulative, strict=True)), self._sums[labels])
        return family


class DurationHistogram:
    """Durations in fixed logarithmic buckets, for quantiles over a run of any length.

    A list of every cycle's duration grows by one float per cycle forever; this holds a fixed
    `BUCKETS_PER_OCTAVE * octaves` counts instead. Bucket i covers [low * r**i, low * r**(i+1))
    with r = 2**(1/BUCKETS_PER_OCTAVE), and a quantile is reported as its bucket's geometric
    middle, so for durations inside [low, high) it is within a factor r**0.5 of the exact order
    statistic: 2**(1/64), about 1.1%, with 32 buckets per octave. Durations outside the range
    are clamped to its ends (1 microsecond to about 1.1 hours by default).
    """

    BUCKETS_PER_OCTAVE = 32

    __slots__ = ("_counts", "_inv_log_r", "_log_low", "count", "high", "low", "total")

    def __init__(self, low: float = 1e-6, octaves: int = 32) -> None:
        self.low = low
        self.high = low * 2.0**octaves
        self._counts = [0] * (octaves * self.BUCKETS_PER_OCTAVE)
        self._log_low = math.log2(low)
        self._inv_log_r = float(self.BUCKETS_PER_OCTAVE)  # 1 / log2(r)
        self.count = 0
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        if seconds <= self.low:
            i = 0
        else:
            i = min(int((math.log2(seconds) - self._log_low) * self._inv_log_r), len(self._counts) - 1)
        self._counts[i] += 1

    def __len__(self) -> int:
        return self.count

    def quantile(self, q: float) -> float:
        """The duration of rank int(q * count) (0-based) among those observed, to within the
        bucket error; 0.0 when nothing was observed."""
        if not self.count:
            return 0.0
        rank = min(self.count - 1, int(q * self.count))
        seen = 0
        for i, n in enumerate(self._counts):
            seen += n
            if seen > rank:
                return self.low * 2.0 ** ((i + 0.5) / self._inv_log_r)
        raise AssertionError("unreachable: the counts add up to count")

    def cumulative(self) -> list[tuple[float, float]]:
        """(upper bound, observations at or below it) per bucket, as a Prometheus histogram's
        buckets read: the last bound is +Inf."""
        out, seen = [], 0
        for i, n in enumerate(self._counts):
            seen += n
            out.append((self.low * 2.0 ** ((i + 1) / self._inv_log_r), float(seen)))
        out[-1] = (math.inf, float(seen))
        return out


class LabelledCounter:
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels, amount: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def get(self, labels: Labels) -> float:
        return self.values.get(labels, 0.0)

    def collect(self) -> CounterMetricFamily:
        # prometheus_client appends _total itself.
        family = CounterMetricFamily(self.name.removesuffix("_total"), self.documentation, labels=self.labelnames)
        for labels, value in self.values.items():
            family.add_metric(list(labels), value)
        return family


GaugeSource = Callable[[], dict[Labels, float]]


class SchedulerMetrics(Collector):
    """Everything the scheduler counts. Hot paths call the plain methods; a scrape renders them."""

    def __init__(self) -> None:
        self.attempts = LabelledCounter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
            "while 'error' means an internal scheduler problem.",
            ["result", "profile"],
        )
        self.attempt_duration = BatchedHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            exponential_buckets(0.001, 2, 15),
        )
        self.extension_point_duration = BatchedHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            exponential_buckets(0.0001, 2, 12),
        )
        self.plugin_duration = BatchedHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            exponential_buckets(0.00001, 1.5, 20),
        )
        self.sli_duration = BatchedHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue "
            "and might involve multiple scheduling attempts.",
            ["attempts"],
            exponential_buckets(0.01, 2, 20),
        )
        self.preemption_attempts = LabelledCounter(
            "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now", []
        )
        self.preemption_victims = BatchedHistogram(
            "scheduler_preemption_victims", "Number of selected preemption victims", [], exponential_buckets(1, 2, 7)
        )
        self.preemption_pdb_violations = LabelledCounter(
            "scheduler_preemption_pdb_violations_total",
            "Total number of pod disruption budget violations caused by preemption.",
            ["preemptor"],
        )
        self.incoming_pods = LabelledCounter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
        )
        self.bind_failures = LabelledCounter(
            "kubesched_bind_failures_total", "Binding cycles that failed, by the reason the API or a plugin gave.", ["reason"]
        )
        self.filter_rejections = LabelledCounter(
            "kubesched_filter_rejections_total",
            "Nodes rejected for a pod by a Filter plugin (the first to reject each node), by the reason it gave. "
            f"At most {REASONS_PER_PLUGIN} reasons per plugin and profile are told apart; later ones count as 'other'.",
            ["profile", "plugin", "reason"],
        )
        self.score_decided = LabelledCounter(
            "kubesched_score_decided_total",
            "Scoring cycles by the Score plugin that gave the chosen node the most of its lead over the runner-up; "
            f"plugin '{TIE}' when the top score was shared and the node was picked at random.",
            ["profile", "plugin"],
        )
        self.group_attempts = LabelledCounter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod groups, by the result.",
            ["result", "profile"],
        )
        self.group_attempt_duration = BatchedHistogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds.",
            ["result", "profile"],
            exponential_buckets(0.001, 2, 15),
        )
        self.batch_attempts = LabelledCounter(
            "scheduler_batch_attempts_total", "Counts of results when we attempt to use batching.", ["profile", "result"]
        )
        self._reasons_seen: dict[tuple[str, str], set[str]] = {}
        self.counters: list[LabelledCounter] = [
            self.attempts, self.preemption_attempts, self.incoming_pods, self.bind_failures, self.filter_rejections,
            self.score_decided, self.group_attempts, self.batch_attempts, self.preemption_pdb_violations,
        ]
        self.histograms: list[BatchedHistogram] = [
            self.attempt_duration,
            self.extension_point_duration,
            self.plugin_duration,
            self.sli_duration,
            self.preemption_victims,
            self.group_attempt_duration,
        ]
        # Gauges read state on scrape (queue lengths, leadership, metric ages...).
        self._gauges: list[tuple[str, str, list[str], GaugeSource]] = []
        self._counter_sources: list[tuple[str, str, list[str], GaugeSource]] = []

    # --- what the scheduler reports ---------------------------------------------------------------

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        labels = (result, profile)
        self.attempts.inc(labels)
        self.attempt_duration.observe(labels, seconds)

    def attempt_group(self, result: str, profile: str, seconds: float) -> None:
        labels = (result, profile)
        self.group_attempts.inc(labels)
        self.group_attempt_duration.observe(labels, seconds)

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        self.extension_point_duration.observe((point, status, profile), seconds)

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        self.plugin_duration.observe((plugin, point, status), seconds)

    def scheduled_after(self, attempts: int, seconds: float) -> None:
        # Capped as kube-scheduler caps it ("15+"): one label set per attempt count would grow
        # with the worst-placed pod of a long run.
        label = "15+" if attempts >= ATTEMPTS_LABEL_CAP else str(attempts)
        self.sli_duration.observe((label,), seconds)

    def preemption(self, victims: int, pdb_violations: int = 0, preemptor: str = "pod") -> None:
        """A preemption: its victims, and those of them a PodDisruptionBudget protected
        (`preemptor`: "pod" or "podgroup", as kube labels them)."""
        self.preemption_attempts.inc(())
        self.preemption_victims.observe((), float(victims))
        if pdb_violations:
            self.preemption_pdb_violations.inc((preemptor,), float(pdb_violations))

    def outcome(self, profile: str, rejections: Sequence[tuple[str, str, int]], decided_by: str | None) -> None:
        """A cycle's per-plugin outcome: the nodes each Filter plugin rejected, and which Score
        plugin decided the winner (None: the cycle did not compare scored nodes)."""
        for plugin, reason, nodes in rejections:
            seen = self._reasons_seen.setdefault((profile, plugin), set())
            if reason not in seen:
                if len(seen) >= REASONS_PER_PLUGIN:
                    reason = OTHER_REASON
                else:
                    seen.add(reason)
            self.filter_rejections.inc((profile, plugin, reason), nodes)
        if decided_by is not None:
            self.score_decided.inc((profile, decided_by))

    def bind_failed(self, reason: str) -> None:
        self.bind_failures.inc((reason,))

    def add_gauge(self, name: str, documentation: str, labelnames: Sequence[str], source: GaugeSource) -> None:
        """A gauge whose samples `source` returns at scrape time."""
        self._gauges.append((name, documentation, list(labelnames), source))

    def add_counter_source(self, name: str, documentation: str, labelnames: Sequence[str], source: GaugeSource) -> None:
        """A counter kept elsewhere (the API client, a watch) and read at scrape time."""
        self._counter_sources.append((name, documentation, list(labelnames), source))

    # --- exposition ----------------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        for counter in self.counters:
            yield counter.collect()
        for histogram in self.histograms:
            yield histogram.collect()
        for name, doc, labelnames, source in self._gauges:
            gauge = GaugeMetricFamily(name, doc, labels=labelnames)
            for labels, value in source().items():
                gauge.add_metric(list(labels), value)
            yield gauge
        for name, doc, labelnames, source in self._counter_sources:
            family = CounterMetricFamily(name.removesuffix("_total"), doc, labels=labelnames)
            for labels, value in source().items():
                family.add_metric(list(labels), value)
            yield family

    def registry(self) -> CollectorRegistry:
        """A registry holding these metrics alone (plus nothing global), for /metrics."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return registry
