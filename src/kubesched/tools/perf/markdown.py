"""The benchmark table of docs/benchmarks.md, from `kubesched bench --scheduler-perf ... --json` files.

    python -m kubesched.tools.perf.markdown bench-sim.json [bench-kube.json] > table.md

One row per workload: its upstream threshold, kubesched on the simulator, and, when the real-apiserver
comparison is given, each scheduler's median over its rounds (pods/s, CPU seconds per 1,000 pods,
peak RSS). Workloads kubesched does not run are listed after the table with the reason."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

KUBESCHED_KUBE = "kubesched (apiserver)"
KUBE_SCHEDULER = "kube-scheduler (apiserver)"


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if key in r]
    return statistics.median(values) if values else None


def _num(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _name(row: dict[str, Any]) -> str:
    """A row's test case and workload, as scheduler_perf names them (SchedulingBasic/5000Nodes)."""
    return f"{row['case']}/{row['workload']}" if row.get("case") else str(row["workload"])


def _throughput(rows: list[dict[str, Any]]) -> str:
    """The median pods/s of a scheduler's rounds; "failed" when every round it ran failed, "not
    runnable" when the control plane cannot run the workload."""
    if rows and all(r.get("refused") for r in rows):
        return "not runnable"
    if rows and all(r.get("failed") for r in rows):
        return "failed"
    value = _median(rows, "pods_per_second")
    return _num(value, 1 if value is not None and value < 10 else 0)  # 0.5 pods/s is not 0


def table(sim: dict[str, Any], kube: dict[str, Any] | None = None) -> str:
    by_workload: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    order: list[str] = []
    for source in (sim, kube or {"rows": []}):
        for row in source["rows"]:
            name = _name(row)
            if name not in by_workload:
                order.append(name)
            by_workload[name][row["target"]].append(row)
    head = ["workload", "threshold", "simulator pods/s", "simulator p99 ms"]
    if kube is not None:
        head += ["kubesched pods/s", "kube-scheduler pods/s", "kubesched CPU s/1000", "kube-scheduler CPU s/1000",
                 "kubesched RSS MiB", "kube-scheduler RSS MiB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    refused: list[str] = []
    not_on_kube: list[str] = []
    for name in order:
        targets = by_workload[name]
        simulated = targets.get("kubesched (simulator)", [])
        why = next((r.get("refused") or r.get("failed") for r in simulated if r.get("refused") or r.get("failed")), None)
        if why:
            refused.append(f"- {name}: {why}")
            continue
        threshold = next((r["threshold"] for rows in targets.values() for r in rows), 0)
        p99 = [r["attempt_ms"].get("p99") for r in simulated if r.get("attempt_ms")]
        cells = [name, _num(threshold) if threshold else "", _num(_median(simulated, "pods_per_second")),
                 _num(statistics.median(p99), 2) if p99 else ""]
        if kube is not None:
            ours, theirs = targets.get(KUBESCHED_KUBE, []), targets.get(KUBE_SCHEDULER, [])
            why_not = next((r["refused"] for r in ours + theirs if r.get("refused")), None)
            if why_not:
                not_on_kube.append(f"- {name}: {why_not}")
            cells += [_throughput(ours), _throughput(theirs),
                      _num(_median(ours, "cpu_seconds_per_1000_pods"), 2), _num(_median(theirs, "cpu_seconds_per_1000_pods"), 2),
                      _num(_median(ours, "rss_peak_mib")), _num(_median(theirs, "rss_peak_mib"))]
        lines.append("| " + " | ".join(cells) + " |")
    out = "\n".join(lines) + "\n"
    if refused:
        out += "\nNot run by kubesched:\n\n" + "\n".join(refused) + "\n"
    if not_on_kube:
        out += "\nNot runnable on the real apiserver:\n\n" + "\n".join(not_on_kube) + "\n"
    return out


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print("usage: python -m kubesched.tools.perf.markdown bench-sim.json [bench-kube.json]", file=sys.stderr)
        return 2
    try:
        sim = json.loads(Path(argv[0]).read_text())
        kube = json.loads(Path(argv[1]).read_text()) if len(argv) > 1 else None
    except (OSError, ValueError) as exc:
        print(f"cannot read the figures: {exc}", file=sys.stderr)
        return 2
    print(f"Measured on {sim.get('machine', 'an unnamed machine')}.\n")
    print(table(sim, kube))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
