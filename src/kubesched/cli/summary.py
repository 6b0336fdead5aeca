"""The summary `kubesched simulate` prints: a table with one column per configuration, and a legend."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text

from kubesched.cli.common import console, say
from kubesched.cli.simfacts import USAGE_DOC, usage_declared

# Pods bound to a missing node named in the summary; --json has them all.
MISSING_LISTED = 8


def print_results(cluster: Any, results: list[Any], usage_gaps: list[str | None]) -> None:
    """The table of figures, a legend for the ones a name cannot say, then per configuration its
    shadows, reloads and the messages of its pending pods. `usage_gaps`: per result, why no node
    usage was measured (its usage figures then read n/a), or None."""
    say(console, Text(f"{cluster.name}: {len(cluster.nodes)} nodes, {len(cluster.pods)} pods", style="bold"))
    table = Table()
    table.add_column("metric")
    for r in results:
        table.add_column(r.profile, justify="right")

    def measured(attr: str) -> Callable[[Any], Any]:
        gaps = {id(r): gap for r, gap in zip(results, usage_gaps, strict=True)}
        return lambda r: "n/a" if gaps[id(r)] else getattr(r, attr)

    rows: list[tuple[str, Any]] = [
        ("pods to place", "pods_total"),
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
        ("hot node-seconds (cpu > 80%)", measured("hotspot_node_seconds")),
        ("node cpu use p99 (%)", measured("node_cpu_util_p99")),
        ("node cpu use stddev (%)", measured("node_cpu_util_stddev")),
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
    _legend(results, usage_gaps, declared=usage_declared(cluster))
    _bound_to_missing_nodes(results)
    for r in results:
        for shadow, outcomes in r.shadows.items():
            total = sum(outcomes.values())
            parts = ", ".join(f"{n} {outcome.replace('_', ' ')}" for outcome, n in sorted(outcomes.items(), key=lambda kv: -kv[1]))
            line = Text(r.profile, style="bold")
            line.append(f": shadow profile {shadow} decided {total} of the cycles: {parts}")
            say(console, line)
        for change in r.reloads:
            line = Text(r.profile, style="bold")
            line.append(f": at {change['time']:g}s configuration {change['result'].replace('_', ' ')}: {change['message']}")
            say(console, line)
        if not r.unschedulable:
            continue
        why = Counter(r.unschedulable.values())
        line = Text(r.profile, style="bold")
        line.append(": pods left pending, by message")
        say(console, line)
        for message, count in why.most_common(8):
            say(console, f"  {count} x {message}")


def _bound_to_missing_nodes(results: list[Any]) -> None:
    """Pods of the input bound by spec.nodeName to a node that does not exist: no configuration
    places them (the same in every run), and none of them runs; said once, with the pods."""
    missing: dict[str, str] = {}
    for r in results:
        missing.update(r.bound_to_missing_nodes)
    if not missing:
        return
    shown = [f"{pod} (node {node})" for pod, node in list(missing.items())[:MISSING_LISTED]]
    more = f" and {len(missing) - MISSING_LISTED} more (--json lists them)" if len(missing) > MISSING_LISTED else ""
    one = len(missing) == 1
    say(console, f"{len(missing)} {'pod is' if one else 'pods are'} bound by spec.nodeName to a node that does not exist: "
                 f"{'it stays Pending and never runs' if one else 'they stay Pending and never run'} (on a cluster, "
                 f"kube-controller-manager's pod garbage collector deletes {'it' if one else 'them'} once the node has been "
                 f"missing for 40s): {', '.join(shown)}{more}")


def _legend(results: list[Any], usage_gaps: list[str | None], *, declared: bool) -> None:
    """What the figures whose names cannot say it all mean, under the table."""
    lines = [
        "pods to place: pods with no node whose schedulerName is one of the configuration's profiles (the rest of the "
        "input's pods had a node already, or are another scheduler's)",
        "hot node-seconds: over all nodes, the virtual seconds a node's measured cpu use stayed above 80% of its allocatable",
        "node cpu use: as the usage model measured it at each scrape, % of allocatable: p99 over nodes and scrapes, and the "
        "spread across nodes (stddev, averaged over scrapes)",
    ]
    if not declared and not all(usage_gaps):
        lines.append("  no pod or node declares its usage (sim.kubesched.io/usage-*, background-*): running pods use exactly "
                     f"their requests ({USAGE_DOC})")
    for r, gap in zip(results, usage_gaps, strict=True):
        if gap:
            lines.append(f"n/a{f' in {r.profile}' if len(results) > 1 else ''}: {gap}")
    for line in lines:
        say(console, Text(line, style="dim"))

