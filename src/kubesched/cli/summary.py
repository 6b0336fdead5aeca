"""The table `kubesched simulate` prints: one column per configuration."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.table import Table
from rich.text import Text

from kubesched.cli.common import console


def print_results(cluster: Any, results: list[Any]) -> None:
    table = Table(title=f"{cluster.name}: {len(cluster.nodes)} nodes, {len(cluster.pods)} pods", title_justify="left")
    table.add_column("metric")
    for r in results:
        table.add_column(r.profile, justify="right")
    rows: list[tuple[str, Any]] = [
        ("pods (ours)", "pods_total"),
        ("scheduled", "pods_scheduled"),
        ("unschedulable", "pods_unschedulable"),
        ("gated", "pods_gated"),
        ("preempted", lambda r: len(r.preempted)),
        ("scheduling cycles", "cycles"),
        ("virtual time (s)", "virtual_seconds"),
        ("wall time (s)", "wall_seconds"),
        ("pods/s (wall)", "pods_per_second"),
        ("cycle p50 (ms)", "cycle_ms_p50"),
        ("cycle p99 (ms)", "cycle_ms_p99"),
        ("pending p99 (s)", "pending_seconds_p99"),
        ("cpu hotspots >80% (node-s)", "hotspot_node_seconds"),
        ("node cpu util p99 (%)", "node_cpu_util_p99"),
        ("node cpu util stddev (%)", "node_cpu_util_stddev"),
    ]
    if any(r.groups for r in results):
        rows += [
            ("pod groups (started)", lambda r: f"{r.groups.get('groups', 0)} ({r.groups.get('started', 0)})"),
            ("partial-gang pod-s", lambda r: r.groups.get("partial_gang_pod_seconds", 0.0)),
            ("group wait p50 / p99 (s)", lambda r: f"{r.groups.get('group_wait_p50', 0.0)} / {r.groups.get('group_wait_p99', 0.0)}"),
        ]
    if any(r.quota for r in results):
        rows += [
            ("quota: borrowing pods (pod-s)",
             lambda r: f"{r.quota.get('borrowing_pods', 0)} ({r.quota.get('borrowed_pod_seconds', 0.0):g})"),
            ("quota: reclaims", lambda r: r.quota.get("reclaims", 0)),
        ]
    for label, attr in rows:
        table.add_row(label, *[str(attr(r) if callable(attr) else getattr(r, attr)) for r in results])
    console.print(table)
    for r in results:
        for shadow, outcomes in r.shadows.items():
            total = sum(outcomes.values())
            parts = ", ".join(f"{n} {outcome.replace('_', ' ')}" for outcome, n in sorted(outcomes.items(), key=lambda kv: -kv[1]))
            line = Text(r.profile, style="bold")
            line.append(f": shadow profile {shadow} decided {total} of the cycles: {parts}")
            console.print(line, highlight=False)
        for change in r.reloads:
            line = Text(r.profile, style="bold")
            line.append(f": at {change['time']:g}s configuration {change['result'].replace('_', ' ')}: {change['message']}")
            console.print(line, highlight=False)
        if not r.unschedulable:
            continue
        why = Counter(r.unschedulable.values())
        console.print(f"[bold]{r.profile}[/]: pods left pending, by message")
        for message, count in why.most_common(8):
            console.print(f"  {count} x {message}", highlight=False, markup=False)

