"""`kubesched bench --scheduler-perf`: which workloads to run, where, and the rows of the report."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubesched.perf import source, workloads
from kubesched.perf.report import Row
from kubesched.perf.run import Plan, plan, run_on_simulator
from kubesched.perf.workloads import WorkloadError

SIMULATOR = "kubesched (simulator)"


@dataclass(frozen=True)
class Selection:
    spec: str  # a config file, a scheduler_perf directory name, or "all"
    workloads: tuple[str, ...] = ()  # NAME/CASE; none: every workload with `label`
    label: str = "performance"


def plans(sel: Selection) -> list[Plan]:
    """The workloads selected, in file and test case order; WorkloadError or SourceError naming what is wrong."""
    files = source.config_files(source.perf_root()) if sel.spec == "all" else [source.resolve_config(sel.spec)]
    cases = [case for f in files for case in workloads.load(f)]
    if sel.workloads:
        return [plan(*workloads.find(cases, w)) for w in sel.workloads]
    out = []
    for case in cases:
        for w in case.workloads:
            if sel.label in w.labels:
                try:
                    out.append(plan(case, w))
                except WorkloadError as exc:  # upstream's own file can name an undefined parameter
                    out.append(Plan(case, w, "", str(exc)))
    if not out:
        raise WorkloadError(f"no workload labelled {sel.label!r} in {sel.spec}")
    return out


def on_simulator(plans_: list[Plan], *, config: Path | None = None, wait_seconds: float = 600.0,
                 progress: Callable[[str], None] | None = None) -> list[Row]:
    """Each workload on the simulator in turn, one row each (refused and failed ones too)."""
    rows = []
    say: Callable[[str], None] = progress or (lambda _: None)
    for p in plans_:
        row = Row(p.name, SIMULATOR, p.workload.threshold)
        if p.refused:
            row.refused = p.refused
        else:
            say(f"{p.name}: running on the simulator")
            try:
                row.result = asyncio.run(run_on_simulator(p, config=config, wait_seconds=wait_seconds,
                                                          progress=_prefixed(say, p.name)))
            except WorkloadError as exc:
                row.failed = str(exc)
        rows.append(row)
    return rows


def _prefixed(say: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: say(f"{name}: {line}")
