"""`kubesched bench --scheduler-perf`: which workloads to run, where, and the rows of the report."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubesched.tools.perf import source, workloads
from kubesched.tools.perf.report import Row
from kubesched.tools.perf.run import Plan, RunFailed, compare, plan, run_on_kube, run_on_simulator
from kubesched.tools.perf.workloads import WorkloadError

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
                say(f"{p.name}: {row.result.pods_per_second:,.0f} pods/s (threshold {p.workload.threshold:,.0f})")
            except WorkloadError as exc:
                row.failed = str(exc)
                say(f"{p.name}: FAILED: {exc}")
        rows.append(row)
    return rows


def on_kube(plans_: list[Plan], *, vs: bool, rounds: int, k8s_bin: Path | None = None, workdir: Path | None = None,
            config: Path | None = None, wait_seconds: float = 600.0, progress: Callable[[str], None] | None = None) -> list[Row]:
    """Each workload on a fresh real apiserver: through kubesched, or (vs) through kubesched and the
    real kube-scheduler in alternating order, `rounds` times. BinariesMissing without the binaries."""
    rows = []
    say: Callable[[str], None] = progress or (lambda _: None)
    for p in plans_:
        targets = ["kubesched (apiserver)", "kube-scheduler (apiserver)"] if vs else ["kubesched (apiserver)"]
        if p.refused or p.kube_refused:
            rows += [Row(p.name, t, p.workload.threshold, refused=p.kube_refused or p.refused) for t in targets]
            continue
        where = workdir / p.name.replace("/", "_") if workdir is not None else None
        try:
            if vs:
                results = asyncio.run(compare(p, rounds, k8s_bin=k8s_bin, workdir=where, config=config, wait_seconds=wait_seconds,
                                              progress=_prefixed(say, p.name)))
            else:
                results = [asyncio.run(run_on_kube(p, k8s_bin=k8s_bin, workdir=where and where / f"round{r}", config=config,
                                                   wait_seconds=wait_seconds, progress=_prefixed(say, p.name)))
                           for r in range(1, rounds + 1)]
        except WorkloadError as exc:
            rows.append(Row(p.name, targets[0], p.workload.threshold, failed=str(exc)))
            continue
        rows += [Row(p.name, r.target, p.workload.threshold, failed=r.error) if isinstance(r, RunFailed)
                 else Row(p.name, r.target, p.workload.threshold, result=r) for r in results]
    return rows


def _prefixed(say: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: say(f"{name}: {line}")
