"""Real resource usage in the simulator: what pods and nodes actually consume, not what they request.

Load-aware scheduling can only be judged against usage that differs from requests, so every
simulated pod carries a CPU and a memory usage model, and every node a background load (what
runs there outside kubesched's pods: system daemons, other tenants, non-Kubernetes work).

## The annotation grammar

`sim.kubesched.io/usage-cpu` / `usage-memory` (Pods, workloads, pod templates) and
`sim.kubesched.io/background-cpu` / `background-memory` (Nodes) take one value::

    usage   := MODEL ":" AMOUNT ("," OPTION "=" VALUE)*
    MODEL   := steady | diurnal | bursty
    AMOUNT  := QUANTITY | PERCENT | "uniform(" AMOUNT "," AMOUNT ")"
    QUANTITY:= a Kubernetes quantity: 800m, 1.5 (cores), 2Gi (bytes)
    PERCENT := a number and "%": of the pod's request for that resource (usage-*), of the
               node's allocatable (background-*)

- `steady:800m` - a constant.
- `diurnal:500m,amplitude=0.5,period=24h,phase=0s` - level x (1 + amplitude x sin(2 pi (t +
  phase) / period)); amplitude 0..1 (default 0.5), period > 0 (default 24h), phase (default 0).
- `bursty:300m,peak=1500m,duty=0.2,mean=1m` - on/off bursts: `peak` (required) during a
  burst, the level in between. `duty` (0 < duty <= 1, default 0.2) is the long-run share of
  time in bursts and `mean` (default 1m, at least 1s) the mean burst length; burst and pause lengths are
  exponential, drawn from the run seed and the pod's uid, so a run is reproducible.
- `uniform(a,b)` anywhere an amount goes is drawn once per object (per pod, per node copy of
  `sim.kubesched.io/count`) from the seed: `steady:uniform(5%,60%)` gives uneven nodes.

Durations are seconds ("90") or Go-style ("30s", "5m", "1h30m"); fractions (amplitude, duty)
are numbers ("0.3") or percents ("30%").

Without an annotation a pod uses exactly its running requests (app containers, sidecars and
overhead; regular init containers have exited) and a node has no background load.

## What is measured

`UsageModel` keeps per node the real utilization (a fraction of allocatable, clipped to 0..1:
a node cannot be more than fully busy) at every scrape, as node-exporter would show it: CPU is
the busy share of the interval since the previous scrape (a pod bound mid-interval counts for
the part it ran), memory the amount in use at the scrape. It samples on the virtual clock's
own timers, which are not cluster changes: a simulation with only scrapes left still ends.

Scrapes in a span where no pod starts or stops and all running usage is steady repeat the last
sample exactly; the simulator takes them at once (`catch_up`) and stores them as references to
that sample, so a year of quiet costs a few vector operations and 12 bytes a scrape. The figures
and the simulated Prometheus's answers are the same as scrape-by-scrape sampling gives (the busy
counter inside such a span is computed from its rate, equal up to float rounding).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kubesched.api.durations import parse_duration_or_seconds
from kubesched.api.objects import Container, Node, Pod
from kubesched.api.quantity import QuantityError, parse_quantity, resource_value
from kubesched.backends.sim.limits import MAX_SAMPLE_CELLS, MAX_SCRAPES, MIN_BURST_MEAN, LimitError, span_text
from kubesched.infra.clock import Timer, VirtualClock

log = logging.getLogger(__name__)

MODELS = ("steady", "diurnal", "bursty")
RESOURCES = ("cpu", "memory")
DEFAULT_SCRAPE_INTERVAL = 15.0
HOTSPOT_THRESHOLD = 0.8
EXAMPLES = "e.g. steady:800m, steady:60%, diurnal:500m,amplitude=0.5,period=1h or bursty:300m,peak=1500m,duty=0.2,mean=5m"

_OPTIONS: dict[str, tuple[str, ...]] = {
    "steady": (),
    "diurnal": ("amplitude", "period", "phase"),
    "bursty": ("peak", "duty", "mean"),
}
_UNIFORM = re.compile(r"^uniform\s*\((?P<args>.*)\)$", re.S)
_STEADY, _DIURNAL, _BURSTY = 0, 1, 2
_KIND_CODE = {"steady": _STEADY, "diurnal": _DIURNAL, "bursty": _BURSTY}


class UsageError(ValueError):
    """A usage annotation value that does not follow the grammar; the message says why."""


# --- the grammar -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Amount:
    """An amount of a resource (millicores for cpu, bytes for memory) or a fraction of a
    reference (percent forms), possibly drawn uniformly from [low, high] per object."""

    low: float
    high: float
    relative: bool  # a fraction of the pod's request / the node's allocatable

    def resolve(self, reference: float, u: float) -> float:
        value = self.low + (self.high - self.low) * u
        return value * reference if self.relative else value


@dataclass(frozen=True, slots=True)
class UsageSpec:
    """One parsed usage annotation."""

    model: str
    level: Amount
    amplitude: float = 0.5
    period: float = 86400.0
    phase: float = 0.0
    peak: Amount | None = None
    duty: float = 0.2
    mean: float = 60.0
    text: str = ""


DEFAULT_POD_USAGE = UsageSpec("steady", Amount(1.0, 1.0, True), text="steady:100%")


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses (uniform(a,b) keeps its comma)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise UsageError("unbalanced ')'")
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if depth:
        raise UsageError("unbalanced '('")
    parts.append("".join(current).strip())
    return parts


def _single(text: str, resource: str, what: str) -> tuple[float, bool]:
    t = text.strip()
    if not t:
        raise UsageError(f"{what}: empty amount")
    if t.endswith("%"):
        try:
            value = float(t[:-1])
        except ValueError:
            raise UsageError(f"{what}: {t!r} is not a percentage such as 60%") from None
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{what}: {t!r} must be a non-negative percentage")
        return value / 100.0, True
    try:
        quantity = parse_quantity(t)
    except QuantityError:
        unit = "cores such as 800m or 1.5" if resource == "cpu" else "bytes such as 512Mi or 2Gi"
        raise UsageError(f"{what}: {t!r} is not a quantity ({unit}) or a percentage") from None
    if quantity < 0:
        raise UsageError(f"{what}: {t!r} must not be negative")
    value = float(quantity * 1000) if resource == "cpu" else float(quantity)
    return value, False


def parse_amount(text: str, resource: str, what: str = "level") -> Amount:
    """A QUANTITY, PERCENT or uniform(a,b) of them; UsageError if it is none of these."""
    t = text.strip()
    m = _UNIFORM.match(t)
    if m is None:
        if t.startswith("uniform"):
            raise UsageError(f"{what}: {t!r}: write uniform(LOW,HIGH)")
        value, relative = _single(t, resource, what)
        return Amount(value, value, relative)
    args = _split_top(m["args"])
    if len(args) != 2:
        raise UsageError(f"{what}: {t!r}: uniform takes two amounts, uniform(LOW,HIGH)")
    low, low_rel = _single(args[0], resource, what)
    high, high_rel = _single(args[1], resource, what)
    if low_rel != high_rel:
        raise UsageError(f"{what}: {t!r}: both bounds must be percentages, or both quantities")
    if low > high:
        raise UsageError(f"{what}: {t!r}: the lower bound is above the upper bound")
    return Amount(low, high, low_rel)


def _fraction(text: str, what: str, *, allow_zero: bool) -> float:
    t = text.strip()
    try:
        value = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise UsageError(f"{what}: {t!r} is not a number such as 0.3 or 30%") from None
    if not math.isfinite(value) or value > 1 or value < 0 or (value == 0 and not allow_zero):
        bounds = "between 0 and 1" if allow_zero else "above 0 and at most 1"
        raise UsageError(f"{what}: {t!r} must be {bounds}")
    return value


def _duration(text: str, what: str, *, positive: bool) -> float:
    t = text.strip()
    try:
        seconds = float(t)
    except ValueError:
        try:
            seconds = parse_duration_or_seconds(t)
        except ValueError:
            raise UsageError(f"{what}: {t!r} is not a duration such as 90, 30s, 5m or 1h") from None
    if not math.isfinite(seconds) or seconds < 0 or (positive and seconds == 0):
        raise UsageError(f"{what}: {t!r} must be {'above 0' if positive else 'non-negative'}")
    return seconds


def parse_usage(text: str, resource: str) -> UsageSpec:
    """Parse one usage value for `resource` ("cpu" or "memory"); UsageError saying what is wrong."""
    if not isinstance(text, str):
        raise UsageError(f"expected a string ({EXAMPLES})")
    raw = text.strip()
    model, sep, rest = raw.partition(":")
    model = model.strip()
    if not sep or not rest.strip():
        raise UsageError(f"expected MODEL:AMOUNT[,OPTION=VALUE...] ({EXAMPLES})")
    if model not in MODELS:
        raise UsageError(f"unknown model {model!r}: use steady, diurnal or bursty ({EXAMPLES})")
    parts = _split_top(rest)
    level = parse_amount(parts[0], resource, "level")
    options: dict[str, str] = {}
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"{part!r}: options are written NAME=VALUE")
        allowed = _OPTIONS[model]
        if key not in allowed:
            known = ", ".join(allowed) if allowed else "none"
            raise UsageError(f"unknown option {key!r} for {model} (options: {known})")
        if key in options:
            raise UsageError(f"option {key!r} given twice")
        options[key] = value
    spec = UsageSpec(model, level, text=raw)
    if model == "diurnal":
        spec = UsageSpec(
            model,
            level,
            amplitude=_fraction(options["amplitude"], "amplitude", allow_zero=True) if "amplitude" in options else 0.5,
            period=_duration(options["period"], "period", positive=True) if "period" in options else 86400.0,
            phase=_duration(options["phase"], "phase", positive=False) if "phase" in options else 0.0,
            text=raw,
        )
    elif model == "bursty":
        if "peak" not in options:
            raise UsageError("bursty needs peak=AMOUNT, the usage during a burst")
        spec = UsageSpec(
            model,
            level,
            peak=parse_amount(options["peak"], resource, "peak"),
            duty=_fraction(options["duty"], "duty", allow_zero=False) if "duty" in options else 0.2,
            mean=_duration(options["mean"], "mean", positive=True) if "mean" in options else 60.0,
            text=raw,
        )
        if spec.mean < MIN_BURST_MEAN:
            raise UsageError(
                f"mean: {options['mean'].strip()!r} is under the simulator's minimum burst length of {MIN_BURST_MEAN:g}s"
            )
    return spec


# --- deterministic randomness --------------------------------------------------------------------

_M64 = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def stable_key(seed: int, *parts: str) -> int:
    """A 64-bit key from the seed and names, the same in every run and process."""
    digest = hashlib.blake2b("\x1f".join((str(seed), *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _M64


def stable_unit(seed: int, *parts: str) -> float:
    """A number in [0, 1) from the seed and names."""
    return (stable_key(seed, *parts) >> 11) * 2.0**-53


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


def draw_units(keys: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """Independent uniforms in [0, 1), one per (key, counter): the n-th draw of a stream."""
    z = _mix(keys ^ _mix(counters))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


# --- requests -------------------------------------------------------------------------------------


def _container_sum(containers: Iterable[Container]) -> dict[str, int]:
    out = {"cpu": 0, "memory": 0}
    for c in containers:
        merged = dict(c.resources.limits)  # a limit without a request defaults the request
        merged.update(c.resources.requests)
        for name in RESOURCES:
            if name in merged:
                with contextlib.suppress(QuantityError):  # the loader has already refused such pods
                    out[name] += resource_value(name, merged[name])
    return out


def running_requests(pod: Pod) -> dict[str, int]:
    """cpu (millicores) and memory (bytes) requested by what runs once the pod has started:
    app containers, sidecars (restartable init containers) and pod overhead."""
    spec = pod.spec
    out = _container_sum([*spec.containers, *(c for c in spec.init_containers if c.restart_policy == "Always")])
    for name in RESOURCES:
        if name in spec.overhead:
            with contextlib.suppress(QuantityError):
                out[name] += resource_value(name, spec.overhead[name])
    return out


class _UsagePod(Protocol):
    @property
    def usage_cpu(self) -> UsageSpec | None: ...

    @property
    def usage_memory(self) -> UsageSpec | None: ...


class UsageInput(Protocol):
    """What varying_usage reads of the loaded input (manifests.ClusterInput), declared here
    because manifests.py imports this module to parse the usage annotations."""

    @property
    def pods(self) -> Sequence[_UsagePod]: ...

    @property
    def background(self) -> Mapping[str, tuple[UsageSpec | None, UsageSpec | None]]: ...


def varying_usage(cluster: UsageInput) -> bool:
    """Whether some pod's or node's usage model varies with time (diurnal, bursty): then every
    scrape is sampled anew, where steady usage repeats samples through quiet spans."""
    specs = [spec for sp in cluster.pods for spec in (sp.usage_cpu, sp.usage_memory)]
    specs.extend(spec for pair in cluster.background.values() for spec in pair)
    return any(spec is not None and spec.model != "steady" for spec in specs)


# --- the model ------------------------------------------------------------------------------------

class _Channel:
    """Model parameters and burst state of one resource, one row per usage source."""

    def __init__(self, capacity: int) -> None:
        self.kind = np.zeros(capacity, np.int8)
        self.level = np.zeros(capacity)
        self.peak = np.zeros(capacity)
        self.amp = np.zeros(capacity)
        self.omega = np.zeros(capacity)
        self.phase = np.zeros(capacity)
        self.on_mean = np.zeros(capacity)
        self.off_mean = np.zeros(capacity)
        self.next = np.full(capacity, np.inf)
        self.key = np.zeros(capacity, np.uint64)
        self.count = np.zeros(capacity, np.uint64)
        self.on = np.zeros(capacity, bool)

    _ARRAYS = ("kind", "level", "peak", "amp", "omega", "phase", "on_mean", "off_mean", "next", "key", "count", "on")

    def resize(self, capacity: int, keep: int) -> None:
        for name in self._ARRAYS:
            old = getattr(self, name)
            new = np.full(capacity, np.inf) if name == "next" else np.zeros(capacity, old.dtype)
            new[:keep] = old[:keep]
            setattr(self, name, new)

    def take(self, index: np.ndarray, capacity: int) -> None:
        """Keep only the rows `index`, in order, at the front."""
        n = len(index)
        for name in self._ARRAYS:
            old = getattr(self, name)
            new = np.full(capacity, np.inf) if name == "next" else np.zeros(capacity, old.dtype)
            new[:n] = old[index]
            setattr(self, name, new)

    def set(self, row: int, spec: UsageSpec, reference: float, seed: int, ident: str, resource: str) -> None:
        self.kind[row] = _KIND_CODE[spec.model]
        self.level[row] = spec.level.resolve(reference, stable_unit(seed, ident, resource, "level"))
        if spec.model == "diurnal":
            self.amp[row] = spec.amplitude
            self.omega[row] = 2 * math.pi / spec.period
            self.phase[row] = spec.phase
        elif spec.model == "bursty":
            assert spec.peak is not None
            self.peak[row] = spec.peak.resolve(reference, stable_unit(seed, ident, resource, "peak"))
            self.on_mean[row] = spec.mean
            self.off_mean[row] = spec.mean * (1 - spec.duty) / spec.duty
            key = stable_key(seed, ident, resource, "bursts")
            self.key[row] = key
            # The process runs from time 0 in its stationary state (exponential lengths are
            # memoryless), so a pod's bursts depend on the clock, not on when it was bound.
            first = draw_units(np.array([key], np.uint64), np.array([0, 1], np.uint64))
            on = bool(first[0] < spec.duty)
            self.on[row] = on
            self.count[row] = 1
            mean = spec.mean if on else self.off_mean[row]
            self.next[row] = -mean * math.log1p(-float(first[1]))

    def advance(self, n: int, t: float) -> None:
        """Moves every burst process forward to time `t` (never backwards)."""
        idx = np.flatnonzero(self.next[:n] <= t)
        while idx.size:
            on = ~self.on[idx]
            self.on[idx] = on
            counts = self.count[idx] + np.uint64(1)
            self.count[idx] = counts
            u = draw_units(self.key[idx], counts)
            mean = np.where(on, self.on_mean[idx], self.off_mean[idx])
            self.next[idx] = self.next[idx] - mean * np.log1p(-u)
            idx = idx[self.next[idx] <= t]

    def values(self, n: int, t: float) -> np.ndarray:
        """Each row's usage at time `t` (after `advance`)."""
        kind = self.kind[:n]
        out = self.level[:n].copy()
        diurnal = kind == _DIURNAL
        if diurnal.any():
            out[diurnal] *= 1 + self.amp[:n][diurnal] * np.sin(self.omega[:n][diurnal] * (t + self.phase[:n][diurnal]))
        bursting = (kind == _BURSTY) & self.on[:n]
        if bursting.any():
            out[bursting] = self.peak[:n][bursting]
        return out


@dataclass(frozen=True, slots=True)
class UsageSummary:
    hotspot_node_seconds: float  # node-seconds with real cpu utilization above 80%
    node_cpu_util_p99: float  # percent, over all node x scrape values
    node_cpu_util_stddev: float  # percent: spread across nodes at a scrape, averaged over scrapes
    samples: int


class UsageModel:
    """Per-node real cpu and memory utilization, sampled every scrape interval of virtual time.

    Usage sources are rows of numpy arrays (node background rows first, then one row per pod
    that ran), so a scrape costs a few vector operations whatever the number of pods. The
    simulated cluster reports pods starting and stopping; `history` is what the simulated
    Prometheus reads.
    """

    def __init__(
        self,
        clock: VirtualClock,
        nodes: list[Node],
        *,
        seed: int = 0,
        interval: float = DEFAULT_SCRAPE_INTERVAL,
        background: dict[str, tuple[UsageSpec | None, UsageSpec | None]] | None = None,
        pod_usage: dict[str, tuple[UsageSpec | None, UsageSpec | None]] | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"scrape interval must be above 0, got {interval}")
        self.clock = clock
        self.seed = seed
        self.interval = float(interval)
        self.pod_usage = pod_usage or {}
        self.node_names = [n.metadata.name for n in nodes]
        self.node_index = {name: i for i, name in enumerate(self.node_names)}
        nn = len(nodes)
        self.alloc = np.zeros((2, nn))
        for i, node in enumerate(nodes):
            for r, name in enumerate(RESOURCES):
                raw = node.status.allocatable.get(name)
                self.alloc[r, i] = resource_value(name, raw) if raw is not None else 0.0
        capacity = max(64, 2 * nn)
        self._n = 0
        self._node = np.zeros(capacity, np.int64)
        self._start = np.zeros(capacity)
        self._end = np.full(capacity, np.inf)
        self._channels = (_Channel(capacity), _Channel(capacity))
        self._uids: list[str | None] = []
        self._row_of: dict[str, int] = {}
        self._dead = 0
        background = background or {}
        for i, name in enumerate(self.node_names):
            specs = background.get(name, (None, None))
            ident = f"node/{nodes[i].metadata.uid or name}"
            row = self._add_row(i, -np.inf, None)
            for r, resource in enumerate(RESOURCES):
                spec = specs[r]
                if spec is not None:
                    self._channels[r].set(row, spec, self.alloc[r, i], seed, ident, resource)
        # History. Each scrape has a time and a sample row (`_rid`); a row holds the utilization
        # per node and the busy counter at `_base_t`. A scrape in a span where nothing changes
        # and all usage is steady repeats the previous row (its counter grows linearly from the
        # row's base), so a long quiet span costs 12 bytes a scrape, not a row of every node.
        self._times = np.zeros(256)
        self._rid = np.zeros(256, np.int32)
        self.samples = 0
        self._rows = 0
        self._cpu = np.zeros((64, nn))
        self._memory = np.zeros((64, nn))
        self._base = np.zeros((64, nn))
        self._base_t = np.zeros(64)
        self._timer: Timer | None = None
        self._next_at = 0.0
        self._last: float | None = None
        self._prev: float = -np.inf  # the start of the interval the last scrape covered
        self._changed_at = -np.inf  # the last time a pod started or stopped
        self._counter_last: np.ndarray | float = 0.0  # the busy counter at the last scrape
        # Guard against a run sampling more than the limits allow (the up-front checks in the
        # engine estimate; this is the hard stop).
        self.max_scrapes = MAX_SCRAPES
        self.max_cells = MAX_SAMPLE_CELLS
        # Where the sampling started (a sample covers the interval before it; the first, taken
        # at the start, covers time before the run and is left out of the summary).
        self.started_at = 0.0

    # --- usage sources -----------------------------------------------------------------------------

    def _add_row(self, node: int, start: float, uid: str | None) -> int:
        if self._n == len(self._node):
            capacity = 2 * len(self._node)
            for name in ("_node", "_start", "_end"):
                old = getattr(self, name)
                new = np.full(capacity, np.inf) if name == "_end" else np.zeros(capacity, old.dtype)
                new[: self._n] = old[: self._n]
                setattr(self, name, new)
            for ch in self._channels:
                ch.resize(capacity, self._n)
        row = self._n
        self._n += 1
        self._node[row] = node
        self._start[row] = start
        self._end[row] = np.inf
        self._uids.append(uid)
        if uid is not None:
            self._row_of[uid] = row
        return row

    def pod_started(self, pod: Pod, node: str, requests: dict[str, int] | None = None) -> None:
        """A pod began running on `node` now (bound, or created already bound)."""
        uid = pod.metadata.uid or pod.key
        index = self.node_index.get(node)
        if index is None or uid in self._row_of:
            if index is None:
                log.debug("usage: pod %s started on unknown node %s; not counted", pod.key, node)
            return
        if requests is None:
            requests = running_requests(pod)
        row = self._add_row(index, self.clock.now(), uid)
        self._changed_at = self.clock.now()
        specs = self.pod_usage.get(uid, (None, None))
        ident = f"pod/{uid}"
        for r, resource in enumerate(RESOURCES):
            spec = specs[r] or DEFAULT_POD_USAGE
            reference = float(requests.get(resource, 0))
            ch = self._channels[r]
            if spec is DEFAULT_POD_USAGE:
                ch.level[row] = reference  # the common case, without hashing
            else:
                ch.set(row, spec, reference, self.seed, ident, resource)

    def pod_stopped(self, uid: str) -> None:
        """A pod stopped running now (succeeded, or deleted)."""
        row = self._row_of.pop(uid, None)
        if row is not None:
            self._end[row] = self.clock.now()
            self._changed_at = self.clock.now()
            self._dead += 1

    def running(self) -> int:
        return len(self._row_of)

    def usage_at(self, t: float) -> np.ndarray:
        """Instantaneous usage per node at time `t` (monotonic calls), shape (2, nodes): cpu in
        millicores and memory in bytes, before clipping."""
        n = self._n
        alive = (self._start[:n] <= t) & (self._end[:n] > t)
        out = np.zeros((2, len(self.node_names)))
        for r, ch in enumerate(self._channels):
            ch.advance(n, t)
            out[r] = np.bincount(self._node[:n][alive], ch.values(n, t)[alive], minlength=len(self.node_names))
        return out

    # --- sampling ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Samples now and then every interval, on clock timers that are not cluster changes."""
        self.started_at = self.clock.now()
        self._schedule(self.started_at)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    @property
    def timer(self) -> Timer | None:
        """The pending scrape's timer (the simulator jumps over it in quiet spans)."""
        return self._timer

    def _schedule(self, when: float) -> None:
        self._next_at = when
        self._timer = self.clock.call_at(when, self._tick)

    def _tick(self) -> None:
        now = self.clock.now()
        # Scrapes at start + k * interval, computed without accumulating rounding.
        k = round((now - self.started_at) / self.interval)
        if self._repeats():
            self._repeat(k, 1)  # e.g. a scrape at the same instant as a retry, in a quiet span
        else:
            self.sample(now)
        self._schedule(self.started_at + (k + 1) * self.interval)

    def catch_up(
        self, until: float | None, settle: tuple[float, float] | None = None, *, budget: int | None = None
    ) -> float | None:
        """Takes at once every scrape due before `until` (None: no bound), as the timers would
        one by one; with `settle` = (origin, span), only those at most `span` after `origin`.
        The caller knows nothing else happens meanwhile. Returns the time of the last scrape
        taken, or None; the scrape timer is then set for the next one.

        While nothing changes and all running usage is steady, the scrapes repeat the last
        sample: they are added in one step, whatever their number. Otherwise each is sampled,
        at most `budget` of them in one call (the caller calls again, and stays responsive)."""
        if self._timer is None or (until is None and settle is None):
            return None
        k = round((self._next_at - self.started_at) / self.interval)
        taken: float | None = None
        while True:
            t = self.started_at + k * self.interval
            if not _within(t, until, settle):
                break
            if self._repeats():
                count = _count_within(self.started_at, self.interval, k, until, settle)
                self._repeat(k, count)
                k += count
                taken = self._last
                break
            self.sample(t)
            taken = t
            k += 1
            if budget is not None:
                budget -= 1
                if budget <= 0:
                    break
        if taken is not None:
            self._timer.cancel()
            self._schedule(self.started_at + k * self.interval)
        return taken

    def _repeats(self) -> bool:
        """Whether the next scrape repeats the last sample exactly: no pod started or stopped
        during or after the interval the last scrape covered (so every share is whole), and
        every usage source running is steady."""
        if self._last is None or self._changed_at > self._prev:
            return False
        n, t = self._n, self._last
        alive = (self._start[:n] <= t) & (self._end[:n] > t)
        return not any(ch.kind[:n][alive].any() for ch in self._channels)

    def _repeat(self, k: int, count: int) -> None:
        """Adds `count` scrapes from the k-th that repeat the last sample's row."""
        start = self.samples
        if start + count > self.max_scrapes:
            self._reserve(self.max_scrapes + 1, 0, self.started_at + (k + self.max_scrapes - start) * self.interval)
        self._reserve(start + count, 0, self.clock.now())
        times = self.started_at + np.arange(k, k + count) * self.interval
        self._times[start : start + count] = times
        self._rid[start : start + count] = self._rid[start - 1]
        self.samples = start + count
        self._prev = float(self._times[self.samples - 2])
        self._last = float(times[-1])
        self._counter_last = self._counter_rows(np.array([self.samples - 1]))[0]

    def _reserve(self, samples: int, rows: int, t: float) -> None:
        """Room for `samples` scrapes and `rows` more sample rows, within the limits (LimitError
        naming the scrape at time `t` that would go over)."""
        nn = len(self.node_names)
        if samples > self.max_scrapes:
            raise LimitError(
                "",
                f"the run reached {samples} scrapes at virtual time {span_text(t)}: over the simulator's "
                f"limit of {self.max_scrapes} scrapes in one run (scrapeInterval {self.interval:g}s); raise "
                "scrapeInterval or shorten the scenario"
            )
        if (self._rows + rows) * nn > self.max_cells:
            raise LimitError(
                "",
                f"the run sampled usage on {nn} nodes at {self._rows + rows} scrapes by virtual time "
                f"{span_text(t)}: over the simulator's limit of {self.max_cells} node-samples in one "
                f"run (scrapeInterval {self.interval:g}s); raise scrapeInterval or simulate fewer nodes or a shorter span"
            )
        if samples > len(self._times):
            size = max(samples, 2 * len(self._times))
            self._times = _grown(self._times, size, self.samples)
            self._rid = _grown(self._rid, size, self.samples)
        if self._rows + rows > len(self._base_t):
            size = max(self._rows + rows, 2 * len(self._base_t))
            for name in ("_cpu", "_memory", "_base", "_base_t"):
                setattr(self, name, _grown(getattr(self, name), size, self._rows))

    def sample(self, t: float) -> None:
        """Takes one scrape at time `t` (after the previous one)."""
        n = self._n
        prev = t - self.interval if self._last is None else self._last
        dt = max(t - prev, 1e-9)
        start, end, node = self._start[:n], self._end[:n], self._node[:n]
        nn = len(self.node_names)
        share = np.clip((np.minimum(end, t) - np.maximum(start, prev)) / dt, 0.0, 1.0)
        alive = (start <= t) & (end > t)
        cpu_ch, mem_ch = self._channels
        cpu_ch.advance(n, t)
        mem_ch.advance(n, t)
        cpu = np.bincount(node, cpu_ch.values(n, t) * share, minlength=nn)
        mem = np.bincount(node[alive], mem_ch.values(n, t)[alive], minlength=nn)
        cpu_util = _utilization(cpu, self.alloc[0])
        mem_util = _utilization(mem, self.alloc[1])
        k = self.samples
        self._reserve(k + 1, 1, t)
        previous = self._counter_last
        r = self._rows
        self._cpu[r] = cpu_util
        self._memory[r] = mem_util
        self._base[r] = previous + cpu_util * dt
        self._base_t[r] = t
        self._rows = r + 1
        self._counter_last = self._base[r]
        self._times[k] = t
        self._rid[k] = r
        self.samples = k + 1
        self._prev = prev
        self._last = t
        if self._dead > max(256, n // 2):
            self._compact(t)

    def _counter_rows(self, index: np.ndarray) -> np.ndarray:
        """The busy counter per node at the scrapes `index`: the row's base, plus its rate times
        the time since the base for scrapes that repeat an earlier row."""
        rid = self._rid[index]
        out = self._base[rid]
        since = self._times[index] - self._base_t[rid]
        later = since != 0
        if later.any():
            out[later] += self._cpu[rid[later]] * since[later][:, None]
        return out

    def _compact(self, t: float) -> None:
        """Drops rows of pods that stopped at or before the last scrape: they count no more."""
        n = self._n
        keep = np.flatnonzero(self._end[:n] > t)
        capacity = max(64, 2 * len(keep))
        for name in ("_node", "_start", "_end"):
            old = getattr(self, name)
            new = np.full(capacity, np.inf) if name == "_end" else np.zeros(capacity, old.dtype)
            new[: len(keep)] = old[keep]
            setattr(self, name, new)
        for ch in self._channels:
            ch.take(keep, capacity)
        self._uids = [self._uids[i] for i in keep.tolist()]
        self._row_of = {uid: row for row, uid in enumerate(self._uids) if uid is not None and uid in self._row_of}
        self._n = len(keep)
        self._dead = int(np.count_nonzero(np.isfinite(self._end[: self._n])))

    # --- what was measured -----------------------------------------------------------------------

    @property
    def times(self) -> np.ndarray:
        """Scrape times, ascending."""
        return self._times[: self.samples]

    @property
    def cpu(self) -> np.ndarray:
        """(scrapes, nodes): cpu busy share of allocatable over the interval ending at each scrape."""
        return self._cpu[self._rid[: self.samples]]

    @property
    def cpu_counter(self) -> np.ndarray:
        """(scrapes, nodes): cumulative busy seconds per unit of allocatable (a counter)."""
        return self.counter_at(np.arange(self.samples))

    @property
    def memory(self) -> np.ndarray:
        """(scrapes, nodes): memory in use as a share of allocatable at each scrape."""
        return self._memory[self._rid[: self.samples]]

    def counter_at(self, index: np.ndarray) -> np.ndarray:
        """(len(index), nodes): the busy counter at the given scrapes."""
        return self._counter_rows(np.asarray(index, np.int64))

    def memory_at(self, index: np.ndarray) -> np.ndarray:
        """(len(index), nodes): memory utilization at the given scrapes."""
        return self._memory[self._rid[np.asarray(index, np.int64)]]

    def summary(self) -> UsageSummary:
        """Hotspots and spread of real cpu utilization over the scrapes of the run."""
        times = self.times
        use = times > self.started_at
        if not use.any() or not self.node_names:
            return UsageSummary(0.0, 0.0, 0.0, 0)
        rid = self._rid[: self.samples][use]
        rows = self._cpu[: self._rows]
        previous = np.concatenate(([self.started_at], times[use][:-1]))
        dt = times[use] - previous
        # Per sample row, then per scrape through the row index: the same sums as over the
        # (scrapes, nodes) matrix, without making it.
        hot = float(((rows > HOTSPOT_THRESHOLD).sum(axis=1)[rid] * dt).sum())
        p99 = _percentile_of_rows(rows, np.bincount(rid, minlength=self._rows), 99) * 100
        stddev = float(rows.std(axis=1)[rid].mean()) * 100
        return UsageSummary(round(hot, 1), round(p99, 2), round(stddev, 2), int(rid.size))


def _within(t: float, until: float | None, settle: tuple[float, float] | None) -> bool:
    return (until is None or t < until) and (settle is None or not t - settle[0] > settle[1])


def _count_within(
    started: float, interval: float, k: int, until: float | None, settle: tuple[float, float] | None
) -> int:
    """How many scrapes from the k-th on are due before `until` and within `settle` (the
    caller has checked the k-th is), with the very float arithmetic the timers use."""
    bounds = []
    if until is not None:
        bounds.append(until)
    if settle is not None:
        bounds.append(settle[0] + settle[1])
    # A first guess from the division, then exact checks around it.
    guess = math.floor((min(bounds) - started) / interval) - k + 1
    count = max(1, min(guess, MAX_SCRAPES + 1))
    while count > 1 and not _within(started + (k + count - 1) * interval, until, settle):
        count -= 1
    while count <= MAX_SCRAPES and _within(started + (k + count) * interval, until, settle):
        count += 1
    return count


def _grown(old: np.ndarray, size: int, keep: int) -> np.ndarray:
    new = np.zeros((size, *old.shape[1:]), old.dtype)
    new[:keep] = old[:keep]
    return new


def _percentile_of_rows(rows: np.ndarray, weights: np.ndarray, q: float) -> float:
    """np.percentile(q) (linear interpolation) of the values of `rows`, each row counted
    `weights` times, without repeating them: the same number numpy gives on the repeated array."""
    keep = weights > 0
    values = rows[keep].ravel()
    counts = np.repeat(weights[keep], rows.shape[1])
    order = np.argsort(values, kind="stable")
    values, cumulative = values[order], np.cumsum(counts[order])
    n = int(cumulative[-1])
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        return float(values[-1])
    low = math.floor(virtual)
    a = float(values[np.searchsorted(cumulative, low, side="right")])
    b = float(values[np.searchsorted(cumulative, low + 1, side="right")])
    gamma = virtual - low
    # numpy's _lerp, step for step, so the result is bit for bit numpy's.
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def _utilization(usage: np.ndarray, alloc: np.ndarray) -> np.ndarray:
    """usage / allocatable clipped to 0..1; a node with nothing allocatable is full if used at all."""
    out = np.divide(usage, alloc, out=np.where(usage > 0, 1.0, 0.0), where=alloc > 0)
    return np.clip(out, 0.0, 1.0)
