"""What one simulation may ask for: counts, sizes and spans of virtual time, refused up front.

A simulation expands every workload into pods, keeps every object in memory and samples usage
every scrape interval, so a typo (`replicas: 50000000`, `arrival: 1000y`, `scrapeInterval:
1ms`) would otherwise run until memory or patience runs out. Each limit below is checked before
the work it bounds starts, and a LimitError names the limit and the input that went over it.

The figures behind them were measured on a 2-core, 24 GiB machine (2026-11): a simulated node
costs about 2.6 KiB (objects and the scheduler's node table), a pod about 3 KiB once loaded and
another 5 KiB once the scheduler has seen it; SchedulingBasic on 5,000 nodes places about 770
pods/s. kube's own scalability envelope is 5,000 nodes and 150,000 pods; the limits leave room
for what-ifs well beyond it while a run at a limit stays within a few GiB and under an hour.

- MAX_NODES (50,000): nodes in one run (after `sim.kubesched.io/count` copies), 10x kube's
  envelope; about 130 MiB of nodes, and a scheduling cycle over them takes a few milliseconds.
- MAX_PODS (1,000,000): pods in one run, counting every expanded replica, count copy and Job
  pod; about 8 GiB at the limit (200,000 pods on 5,000 nodes peaked at 1.55 GiB and took 10
  minutes on a busy machine) and 20 to 50 minutes of scheduling on 5,000 nodes.
- MAX_REPLICAS (= MAX_PODS): one workload's replicas (a Job's parallelism), checked before its
  pods are made, so that one document cannot exhaust memory on its own.
- MAX_COUNT_NODES / MAX_COUNT_PODS: a `sim.kubesched.io/count` annotation, on a Node / a Pod.
- MAX_VIRTUAL_SECONDS (10 years): any point in virtual time the input names (an arrival, a
  duration, arrival + arrival-interval x replicas, the end of an outage). Beyond it a unit is
  far more likely wrong than meant, and float seconds lose sub-millisecond precision.
- MIN_SCRAPE_INTERVAL (1 s): the simulated node-exporter's scrape interval. Prometheus setups
  scrape every 10-60 s; below a second the sampling cost says nothing more about placement.
- MIN_BURST_MEAN (1 s): a bursty usage model's mean burst length. The model flips between
  bursts and pauses one draw at a time, so its cost grows with their number; bursts shorter
  than a second cannot be told apart from noise by scrapes at least a second apart.
- MAX_SCRAPES (5,000,000): scrapes in one run (its span of virtual time / scrapeInterval), e.g.
  2.4 years at 15 s. Spans where nothing changes and all usage is steady cost 12 bytes a scrape
  (they are stored as one repeated sample), so this bounds the run's index of scrape times.
- MAX_SAMPLE_CELLS (50,000,000): nodes x sampled scrapes, the usage history kept for the
  simulated Prometheus and the figures (24 bytes a cell: 1.2 GiB at the limit). A scrape is
  sampled anew when usage varies (diurnal, bursty models) or a pod started or stopped.
- MAX_REFRESHES (200,000): refreshes of load-aware plugins' usage in one run (its span /
  prometheus refreshInterval); each costs a few queries to the simulated Prometheus (about 1 ms).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence, Sized
from typing import Protocol

from kubesched.api.objects import Pod

MAX_NODES = 50_000
MAX_PODS = 1_000_000
MAX_REPLICAS = MAX_PODS
MAX_COUNT_NODES = MAX_NODES
MAX_COUNT_PODS = MAX_PODS
MAX_VIRTUAL_SECONDS = 10 * 365 * 86400.0
MIN_SCRAPE_INTERVAL = 1.0
MIN_BURST_MEAN = 1.0
MAX_SCRAPES = 5_000_000
MAX_SAMPLE_CELLS = 50_000_000
MAX_REFRESHES = 200_000
# Bench sizes are scenario sizes: the same limits.
MAX_BENCH_NODES = MAX_NODES
MAX_BENCH_PODS = MAX_PODS


class LimitError(ValueError):
    """An input over one of the simulator's limits; the message names the limit and the input.

    `field` is the field path or input that went over (empty when it is the run as a whole),
    `detail` the rest of the message, so a loader can put the object's name in front."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}" if field else detail)
        self.field = field
        self.detail = detail


def span_text(seconds: float) -> str:
    """Seconds with a readable unit beside them: `31536000s (1 year)`."""
    if not math.isfinite(seconds):
        return f"{seconds}s"
    text = f"{seconds:g}s"
    for unit, size in (("year", 365 * 86400.0), ("day", 86400.0), ("hour", 3600.0)):
        if seconds >= size:
            n = f"{seconds / size:.3g}"
            return f"{text} ({n} {unit}{'' if n == '1' else 's'})"
    return text


def check_replicas(replicas: int, field: str = "spec.replicas") -> None:
    """One workload's replicas (or a Job's parallelism): at most MAX_REPLICAS pods."""
    if replicas > MAX_REPLICAS:
        raise LimitError(field, f"{replicas} pods is over the simulator's limit of {MAX_REPLICAS} pods in one run")


def check_count(kind: str, count: int, field: str = "metadata.annotations[sim.kubesched.io/count]") -> None:
    """A `sim.kubesched.io/count` annotation on a Node or a Pod, before any copy is made."""
    limit, noun = (MAX_COUNT_NODES, "nodes") if kind == "Node" else (MAX_COUNT_PODS, "pods")
    if count > limit:
        raise LimitError(field, f"{count} {noun} is over the simulator's limit of {limit} {noun} in one run")


def check_totals(nodes: int, pods: int, where: str = "") -> None:
    """Running totals of one run's nodes and pods; `where` (e.g. the document being added) leads
    the message. Call it before a document's objects are made, with the totals they would give."""
    if nodes > MAX_NODES:
        raise LimitError(where, f"{nodes} nodes in one run is over the simulator's limit of {MAX_NODES} nodes")
    if pods > MAX_PODS:
        raise LimitError(where, f"{pods} pods in one run is over the simulator's limit of {MAX_PODS} pods")


def check_time(seconds: float, field: str) -> None:
    """A point or span of virtual time the input names (arrival, duration, outage end)."""
    if not seconds <= MAX_VIRTUAL_SECONDS:
        raise LimitError(
            field, f"{span_text(seconds)} is over the simulator's limit of {span_text(MAX_VIRTUAL_SECONDS)} of virtual time"
        )


def check_arrivals(arrival: float, interval: float, replicas: int, field: str) -> None:
    """The last of `replicas` staggered arrivals (arrival + interval x (replicas - 1))."""
    last = arrival + interval * max(replicas - 1, 0)
    if not last <= MAX_VIRTUAL_SECONDS:
        raise LimitError(
            field,
            f"the last of {replicas} pods arrives at {span_text(last)}, over the simulator's limit of "
            f"{span_text(MAX_VIRTUAL_SECONDS)} of virtual time"
        )


def check_scrape_interval(seconds: float, field: str = "data[scrapeInterval]") -> None:
    if not seconds >= MIN_SCRAPE_INTERVAL:
        raise LimitError(field, f"{seconds:g}s is under the simulator's minimum scrape interval of {MIN_SCRAPE_INTERVAL:g}s")


def check_bench(nodes: int, pods: int) -> None:
    """`kubesched bench --nodes/--pods`, before anything is built."""
    if nodes > MAX_BENCH_NODES:
        raise LimitError("--nodes", f"{nodes} is over the simulator's limit of {MAX_BENCH_NODES} nodes in one run")
    if pods > MAX_BENCH_PODS:
        raise LimitError("--pods", f"{pods} is over the simulator's limit of {MAX_BENCH_PODS} pods in one run")


# --- a whole run ---------------------------------------------------------------------------------
# What the run checks read of the loaded input (clusterinput.ClusterInput), declared here because
# manifests.py imports this module for its limits.


class _TimedPod(Protocol):
    @property
    def pod(self) -> Pod: ...

    @property
    def arrival(self) -> float: ...

    @property
    def duration(self) -> float | None: ...


class _Settings(Protocol):
    @property
    def scrape_interval(self) -> float: ...

    @property
    def prometheus_outages(self) -> Sequence[tuple[float, float]]: ...


class RunInput(Protocol):
    @property
    def nodes(self) -> Sized: ...

    @property
    def pods(self) -> Sequence[_TimedPod]: ...

    @property
    def settings(self) -> _Settings: ...



def horizon(cluster: RunInput) -> tuple[float, str]:
    """The latest time the input itself names (an arrival, or an arrival plus a run duration),
    and what names it, for messages. The run goes on a little longer (the settle time, pods
    that wait before they run), which the checks allow for."""
    latest, why = 0.0, ""
    for sp in cluster.pods:
        end = sp.arrival + (sp.duration or 0.0)
        if end > latest:
            latest = end
            runs = f" and runs {span_text(sp.duration)}" if sp.duration else ""
            why = f"pod {sp.pod.key} arrives at {span_text(sp.arrival)}{runs}"
    return latest, why


def check_cluster(cluster: RunInput, settle: float, varying_usage: bool) -> None:
    """Everything about one run that is known before it starts: sizes, times, scrape steps.

    `settle` is how long the run may go on after the last cluster change; `varying_usage` says
    whether some usage model varies with time (then every scrape is sampled anew)."""
    check_totals(len(cluster.nodes), len(cluster.pods))
    for sp in cluster.pods:
        check_time(sp.arrival, f"pod {sp.pod.key}: sim.kubesched.io/arrival")
        if sp.duration is not None:
            check_time(sp.duration, f"pod {sp.pod.key}: sim.kubesched.io/duration")
    settings = cluster.settings
    for start, end in settings.prometheus_outages:
        check_time(end, f"kubesched-simulation: data[prometheusOutages]: outage {start:g}-{end:g}")
    interval = settings.scrape_interval
    check_scrape_interval(interval, "kubesched-simulation: data[scrapeInterval]")
    latest, why = horizon(cluster)
    if latest > MAX_VIRTUAL_SECONDS:
        raise LimitError(
            "", f"{why}: it ends at {span_text(latest)}, over the simulator's limit of {span_text(MAX_VIRTUAL_SECONDS)} "
            "of virtual time"
        )
    span = latest + settle
    scrapes = math.floor(span / interval) + 1
    cause = f" ({why})" if why else ""
    if scrapes > MAX_SCRAPES:
        raise LimitError(
            "",
            f"the run spans up to {span_text(span)} of virtual time{cause}: at scrapeInterval {interval:g}s that is "
            f"{scrapes} scrapes, over the simulator's limit of {MAX_SCRAPES} scrapes in one run; raise "
            "scrapeInterval (kubesched-simulation ConfigMap) or shorten the scenario"
        )
    # A sample is taken anew at each scrape while usage varies, else only around pod starts and stops.
    sampled = scrapes if varying_usage else min(scrapes, 4 * len(cluster.pods) + 2)
    cells = sampled * len(cluster.nodes)
    if cells > MAX_SAMPLE_CELLS:
        what = "usage varies with time (diurnal or bursty models)" if varying_usage else "pods start and stop"
        raise LimitError(
            "",
            f"the run samples usage on {len(cluster.nodes)} nodes at up to {sampled} scrapes ({what}; span "
            f"{span_text(span)}{cause}, scrapeInterval {interval:g}s): {cells} node-samples, over the simulator's limit "
            f"of {MAX_SAMPLE_CELLS}; raise scrapeInterval or simulate fewer nodes or a shorter span"
        )


def check_refreshes(cluster: RunInput, settle: float, intervals: Iterable[float]) -> None:
    """Load-aware plugins refresh usage every refreshInterval for the whole run."""
    latest, why = horizon(cluster)
    span = latest + settle
    for interval in intervals:
        refreshes = math.floor(span / interval) + 1 if interval > 0 else math.inf
        if refreshes > MAX_REFRESHES:
            cause = f" ({why})" if why else ""
            raise LimitError(
                "",
                f"the run spans up to {span_text(span)} of virtual time{cause}: at the profile's prometheus "
                f"refreshInterval {interval:g}s that is {refreshes} usage refreshes, over the simulator's limit of "
                f"{MAX_REFRESHES} in one run; raise refreshInterval or shorten the scenario"
            )
