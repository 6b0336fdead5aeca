"""The figures of scheduler_perf workloads, as a table and as JSON: one row per workload and target."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from kubesched.tools.perf.executor import WorkloadResult


@dataclass
class Row:
    """One workload on one target: its result, or why it was not run (refused) or failed."""

    workload: str  # NAME/CASE
    target: str
    threshold: float
    result: WorkloadResult | None = None
    refused: str | None = None
    failed: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "target": self.target, "threshold": self.threshold}
        if self.result is not None:
            out |= self.result.as_dict()
        if self.refused:
            out["refused"] = self.refused
        if self.failed:
            out["failed"] = self.failed
        return out


def machine() -> str:
    """What the figures were measured on: CPU model, cores, Python."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import os

    return f"{model or platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _fmt(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def table(rows: Sequence[Row], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for name, justify in (("workload", "left"), ("target", "left"), ("threshold", "right"), ("pods/s", "right"),
                          ("p50 ms", "right"), ("p99 ms", "right"), ("attempts", "right"), ("cpu s/1000 pods", "right"),
                          ("peak RSS MiB", "right"), ("", "left")):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        if row.result is None:
            t.add_row(row.workload, row.target, _fmt(row.threshold), "", "", "", "", "", "", "not run" if row.refused else "FAILED")
            continue
        r = row.result
        verdict = "" if not row.threshold else ("above threshold" if r.pods_per_second >= row.threshold else "BELOW threshold")
        if r.skipped:
            verdict = "; ".join([verdict, *(f"skipped {s}" for s in r.skipped)]).strip("; ")
        t.add_row(row.workload, row.target, _fmt(row.threshold), _fmt(r.pods_per_second), _fmt(r.attempt_ms.get("p50", 0.0), 3),
                  _fmt(r.attempt_ms.get("p99", 0.0), 3), _fmt(r.attempts), _fmt(r.cpu_per_1000_pods, 2), _fmt(r.rss_peak_mib), verdict)
    return t


def as_json(rows: Sequence[Row]) -> dict[str, Any]:
    return {"machine": machine(), "rows": [r.as_dict() for r in rows]}
