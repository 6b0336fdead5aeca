"""`kubesched simulate --report out.html`: one self-contained HTML page per run.

Per configuration, side by side: node cpu and memory utilization over time (the usage model's
scrapes: quantiles across nodes as lines, and a node x time heatmap), hotspots, the pending-time
distribution, the pods left pending grouped by message, and a decision explorer holding the
explanations (observe.explain) of the pending pods and of the first scheduled ones.

Everything is bounded, whatever the size of the run: at most TIME_POINTS columns of time,
HEATMAP_NODES rows of nodes (the hottest, said so on the page), EXPLAINED pods per configuration.
The data goes into the page as JSON inside a <script type="application/json"> element, escaped
so that nothing from a manifest can end that element; the page's own script draws it with SVG
and inserts every string as text, never as markup. No network access is needed to view it.
"""

from __future__ import annotations

import html
import itertools
import json
from collections import Counter
from importlib import resources
from typing import Any

import numpy as np

from kubesched.scheduler.explain import explain_many

TIME_POINTS = 240
HEATMAP_NODES = 200
EXPLAINED = 2000
PENDING_BUCKETS = (0, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
HOT = 0.8

JSON = dict[str, Any]


def _downsample(times: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most TIME_POINTS scrapes: consecutive scrapes are averaged together."""
    n = times.size
    if n <= TIME_POINTS:
        return times, values
    spans = list(itertools.pairwise(np.linspace(0, n, TIME_POINTS + 1).astype(int).tolist()))
    t = np.array([times[a:b].mean() for a, b in spans])
    v = np.stack([values[a:b].mean(axis=0) for a, b in spans])
    return t, v


def utilization(sim: Any) -> JSON | None:
    """Quantiles across nodes over time for cpu and memory, a cpu heatmap, and the hottest nodes."""
    usage = getattr(sim, "usage", None)
    if usage is None or usage.samples == 0 or not usage.node_names:
        return None
    times = usage.times
    out: JSON = {"nodes": len(usage.node_names)}
    cpu_full = usage.cpu
    for name, matrix in (("cpu", cpu_full), ("memory", usage.memory)):
        t, m = _downsample(times, matrix)
        q = np.percentile(m, [50, 90, 100], axis=1)
        out[name] = {"t": np.round(t, 1).tolist(), "p50": np.round(q[0] * 100, 1).tolist(),
                     "p90": np.round(q[1] * 100, 1).tolist(), "max": np.round(q[2] * 100, 1).tolist()}
    dt = np.diff(np.concatenate(([usage.started_at], times)))
    hot_seconds = ((cpu_full > HOT) * dt[:, None]).sum(axis=0)
    mean = cpu_full.mean(axis=0)
    order = np.argsort(-mean, kind="stable")[:HEATMAP_NODES]
    order = order[np.argsort(np.asarray(usage.node_names, dtype=object)[order], kind="stable")]
    t, m = _downsample(times, cpu_full[:, order])
    out["heatmap"] = {
        "t": np.round(t, 1).tolist(),
        "nodes": [usage.node_names[i] for i in order.tolist()],
        "values": np.round(m.T * 100).astype(int).tolist(),  # node rows x time columns, percent
        "shown": int(order.size),
    }
    hottest = np.argsort(-hot_seconds, kind="stable")[:10]
    out["hotspots"] = [
        {"node": usage.node_names[i], "seconds": round(float(hot_seconds[i]), 1), "mean": round(float(mean[i]) * 100, 1)}
        for i in hottest.tolist() if hot_seconds[i] > 0
    ]
    out["hot_over_time"] = _downsample(times, (cpu_full > HOT).sum(axis=1, keepdims=True).astype(float))[1][:, 0].tolist()
    return out


def pending_times(sim: Any, result: Any) -> JSON:
    """How long our pods waited, created to bound (or to the end of the run), in virtual seconds."""
    cluster = sim.cluster
    end = result.virtual_seconds
    waits = []
    for sp in sim.input.pods:
        uid = sp.pod.metadata.uid
        if sp.pod.key in result.placements and uid in cluster.created_at:
            waits.append(cluster.bound_at.get(uid, end) - cluster.created_at[uid])
    edges = [*PENDING_BUCKETS, float("inf")]
    counts, _ = np.histogram(np.asarray(waits, dtype=float), bins=edges) if waits else (np.zeros(len(edges) - 1), None)
    labels = [f"{a:g}-{b:g}s" if b != float("inf") else f">{a:g}s" for a, b in itertools.pairwise(edges)]
    return {"buckets": labels, "counts": [int(c) for c in counts], "pods": len(waits),
            "p50": round(float(np.percentile(waits, 50)), 1) if waits else 0.0,
            "p99": round(float(np.percentile(waits, 99)), 1) if waits else 0.0}


def config_report(label: str, sim: Any, result: Any) -> JSON:
    pending = list(result.unschedulable)
    placed = [key for key, node in result.placements.items() if node]
    explanations = explain_many(sim.scheduler, pending + placed, EXPLAINED)
    return {
        "label": label,
        "summary": {k: getattr(result, k) for k in (
            "pods_total", "pods_scheduled", "pods_unschedulable", "pods_gated", "cycles", "virtual_seconds",
            "pending_seconds_p99", "hotspot_node_seconds", "node_cpu_util_p99", "node_cpu_util_stddev")},
        "preempted": len(result.preempted),
        "utilization": utilization(sim),
        "pending": pending_times(sim, result),
        "unschedulable": [{"message": m, "pods": n} for m, n in Counter(result.unschedulable.values()).most_common(50)],
        "explanations": explanations,
        "explained_cap": EXPLAINED,
    }


def _script_json(data: Any) -> str:
    """JSON that can sit inside <script type="application/json">: `<`, `>`, `&` and the line
    separators escaped, so no string can close the element or open a comment."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def render(scenario: str, configs: list[JSON]) -> str:
    template = resources.files("kubesched.observe").joinpath("report.html").read_text(encoding="utf-8")
    page = template.replace("{{TITLE}}", html.escape(f"kubesched simulation: {scenario}"))
    return page.replace("{{DATA}}", _script_json({"scenario": scenario, "configs": configs}))
