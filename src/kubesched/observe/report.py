"""`kubesched simulate --report out.html`: one self-contained HTML page per run.

Per configuration, side by side: what the pods request per node at the end of the run (and, when
the cluster has DRA devices, each DeviceClass's devices allocated and shared capacity used), node cpu
and memory utilization over time (the usage model's scrapes: quantiles across nodes as lines,
and a node x time heatmap with its axes and colour scale), hotspots, the pending-time
distribution, the pods left pending grouped by message, and a decision explorer holding the
explanations (scheduler.explain) its caller kept. Every chart over time shares one time axis, the
longest run's, so runs of different lengths compare. A run without measured usage says why
instead of drawing empty charts.

The page takes plain data (`Run`): the caller reads the simulation and the scheduler; this
module, low in the layers, imports neither. Everything is bounded, whatever the size of the run:
at most TIME_POINTS columns of time, HEATMAP_NODES rows of nodes (the hottest, said so on the
page), REQUEST_POINTS points per request curve, the explanations the caller kept. The data goes
into the page as JSON inside a <script type="application/json"> element, escaped so that nothing
from a manifest can end that element; the page's own script draws it with SVG and inserts every
string as text, never as markup. No network access is needed to view it.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from kubesched.api.quantity import canonical_nanos
from kubesched.devices.classuse import ClassUse

TIME_POINTS = 240
HEATMAP_NODES = 200
REQUEST_POINTS = 400
FULLEST_NODES = 5
PENDING_BUCKETS = (0, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
HOT = 0.8
SUMMARY_FIGURES = ("pods_total", "pods_scheduled", "pods_unschedulable", "pods_gated", "cycles", "virtual_seconds",
                   "pending_seconds_p99", "hotspot_node_seconds", "node_cpu_util_p99", "node_cpu_util_stddev")

JSON = dict[str, Any]


@dataclass(frozen=True)
class UsageSamples:
    """What the usage model measured: per scrape (after the start of the run) and node, the share
    of the node's allocatable in use, 0..1."""

    times: np.ndarray  # (scrapes,) virtual seconds
    started_at: float
    nodes: Sequence[str]
    cpu: np.ndarray  # (scrapes, nodes)
    memory: np.ndarray  # (scrapes, nodes)
    declared: bool  # some pod or node declares its usage; else pods use exactly their requests


@dataclass(frozen=True)
class NodeRequests:
    """Per node at the end of the run, what its pods request as a share of its allocatable."""

    nodes: Sequence[str]
    cpu: np.ndarray
    memory: np.ndarray


@dataclass(frozen=True)
class Run:
    """One configuration's run, as its caller read it from the simulation."""

    label: str
    figures: Mapping[str, Any]  # the simulation's result figures (SimResult.as_dict())
    pending_waits: Sequence[float]  # our pods' waits, created to bound or to the end, virtual seconds
    explanations: Mapping[str, JSON]  # namespace/name -> explanation (scheduler.explain's JSON)
    explained_cap: int  # how many explanations the caller keeps besides the pods it was asked about
    usage: UsageSamples | None
    usage_gap: str | None  # why there is no usage to show, if there is none
    requests: NodeRequests
    devices: Sequence[ClassUse] = ()  # per DeviceClass at the end of the run; empty without devices


def _downsample(times: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most TIME_POINTS scrapes: consecutive scrapes are averaged together."""
    n = times.size
    if n <= TIME_POINTS:
        return times, values
    spans = list(itertools.pairwise(np.linspace(0, n, TIME_POINTS + 1).astype(int).tolist()))
    t = np.array([times[a:b].mean() for a, b in spans])
    v = np.stack([values[a:b].mean(axis=0) for a, b in spans])
    return t, v


def utilization(usage: UsageSamples) -> JSON:
    """Quantiles across nodes over time for cpu and memory, a cpu heatmap, and the hottest nodes."""
    times = usage.times
    out: JSON = {"nodes": len(usage.nodes), "t0": usage.started_at, "declared": usage.declared}
    for name, matrix in (("cpu", usage.cpu), ("memory", usage.memory)):
        t, m = _downsample(times, matrix)
        q = np.percentile(m, [50, 90, 100], axis=1)
        out[name] = {"t": np.round(t, 1).tolist(), "p50": np.round(q[0] * 100, 1).tolist(),
                     "p90": np.round(q[1] * 100, 1).tolist(), "max": np.round(q[2] * 100, 1).tolist()}
    dt = np.diff(np.concatenate(([usage.started_at], times)))
    hot_seconds = ((usage.cpu > HOT) * dt[:, None]).sum(axis=0)
    mean = usage.cpu.mean(axis=0)
    order = np.argsort(-mean, kind="stable")[:HEATMAP_NODES]
    order = order[np.argsort(np.asarray(usage.nodes, dtype=object)[order], kind="stable")]
    t, m = _downsample(times, usage.cpu[:, order])
    out["heatmap"] = {
        "t": np.round(t, 1).tolist(),
        "nodes": [usage.nodes[i] for i in order.tolist()],
        "values": np.round(m.T * 100).astype(int).tolist(),  # node rows x time columns, percent
        "shown": int(order.size),
    }
    hottest = np.argsort(-hot_seconds, kind="stable")[:10]
    out["hotspots"] = [
        {"node": usage.nodes[i], "seconds": round(float(hot_seconds[i]), 1), "mean": round(float(mean[i]) * 100, 1)}
        for i in hottest.tolist() if hot_seconds[i] > 0
    ]
    return out


def requested(requests: NodeRequests) -> JSON:
    """Each resource's requested share per node, fullest first (at most REQUEST_POINTS points, the
    ranks they stand for beside them), and the fullest nodes by cpu."""
    n = len(requests.nodes)
    ranks = np.unique(np.linspace(0, n - 1, min(n, REQUEST_POINTS)).round().astype(int)) if n else np.zeros(0, dtype=int)
    out: JSON = {"nodes": n, "rank": ranks.tolist()}
    for name, shares in (("cpu", requests.cpu), ("memory", requests.memory)):
        ordered = np.sort(np.asarray(shares, dtype=float))[::-1]
        out[name] = np.round(ordered[ranks] * 100, 1).tolist()
        out[f"{name}_mean"] = round(float(ordered.mean()) * 100, 1) if n else 0.0
    cpu = np.asarray(requests.cpu, dtype=float)
    out["in_use"] = int(((cpu > 0) | (np.asarray(requests.memory, dtype=float) > 0)).sum())
    out["cpu_over_80"] = int((cpu > HOT).sum())
    fullest = np.argsort(-cpu, kind="stable")[:FULLEST_NODES]
    out["fullest"] = [{"node": requests.nodes[i], "cpu": round(float(cpu[i]) * 100, 1),
                       "memory": round(float(requests.memory[i]) * 100, 1)} for i in fullest.tolist() if cpu[i] > 0]
    return out


def device_use(uses: Sequence[ClassUse]) -> list[JSON]:
    """Per DeviceClass with devices: allocated of total (and in %), and for its shared devices each
    capacity's consumed share."""
    out: list[JSON] = []
    for use in uses:
        if not use.devices:
            continue
        entry: JSON = {"class": use.name, "devices": use.devices, "allocated": use.allocated,
                       "percent": round(100 * use.allocated / use.devices, 1), "shared": use.shared, "capacity": []}
        for cap in use.capacity:
            entry["capacity"].append({"name": cap.name, "used": canonical_nanos(cap.used, cap.format),
                                      "total": canonical_nanos(cap.total, cap.format),
                                      "percent": round(100 * cap.used / cap.total, 1) if cap.total else 0.0})
        out.append(entry)
    return out


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def pending_times(waits: Sequence[float]) -> JSON:
    """The distribution of our pods' pending times over PENDING_BUCKETS, with short labels."""
    edges = [*PENDING_BUCKETS, float("inf")]
    counts, _ = np.histogram(np.asarray(waits, dtype=float), bins=edges) if waits else (np.zeros(len(edges) - 1), None)
    labels = [f"{_duration(a)}-{_duration(b)}" if b != float("inf") else f">{_duration(a)}" for a, b in itertools.pairwise(edges)]
    return {"buckets": labels, "counts": [int(c) for c in counts], "pods": len(waits),
            "p50": round(float(np.percentile(waits, 50)), 1) if waits else 0.0,
            "p99": round(float(np.percentile(waits, 99)), 1) if waits else 0.0}


def config_report(run: Run) -> JSON:
    """One configuration's part of the page."""
    figures = run.figures
    unschedulable: Mapping[str, str] = figures.get("unschedulable") or {}
    return {
        "label": run.label,
        "summary": {k: figures.get(k) for k in SUMMARY_FIGURES},
        "preempted": len(figures.get("preempted") or ()),
        "utilization": utilization(run.usage) if run.usage is not None else None,
        "usage_gap": run.usage_gap,
        "requests": requested(run.requests),
        "devices": device_use(run.devices),
        "pending": pending_times(run.pending_waits),
        "unschedulable": [{"message": m, "pods": n} for m, n in Counter(unschedulable.values()).most_common(50)],
        "explanations": dict(run.explanations),
        "explained_cap": run.explained_cap,
    }


def _script_json(data: Any) -> str:
    """JSON that can sit inside <script type="application/json">: `<`, `>`, `&` and the line
    separators escaped, so no string can close the element or open a comment."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def render(scenario: str, configs: list[JSON]) -> str:
    """The page. Charts over time run from 0 to the end of the longest run, in every configuration."""
    template = resources.files("kubesched.observe").joinpath("report.html").read_text(encoding="utf-8")
    time_end = max((float((c.get("summary") or {}).get("virtual_seconds") or 0.0) for c in configs), default=0.0)
    for c in configs:
        u = c.get("utilization")
        if u:
            time_end = max(time_end, *(u[k]["t"][-1] for k in ("cpu", "memory") if u[k]["t"]))
    fills = {"{{TITLE}}": html.escape(f"kubesched simulation: {scenario}"),
             "{{DATA}}": _script_json({"scenario": scenario, "time_end": time_end, "configs": configs})}
    # One pass, so that text from a manifest that reads like a placeholder is never filled in.
    return re.sub(r"\{\{(?:TITLE|DATA)\}\}", lambda m: fills[m.group(0)], template)
