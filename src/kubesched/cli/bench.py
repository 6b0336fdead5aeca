"""`kubesched bench`: scheduler_perf on the simulator or a throwaway real API server."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kubesched.cli.app import PlainFlagsCommand, app
from kubesched.cli.common import (
    check_writable,
    console,
    err,
    fail,
    interruptible,
    load_configs,
    say,
    set_feature_gates,
    tracing_config,
    write_json,
)
from kubesched.cli.simulate import run_simulations
from kubesched.config.errors import ConfigError
from kubesched.scheduler.configload import load_config


@app.command(cls=PlainFlagsCommand)
@interruptible
def bench(
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (4 CPU, 32Gi, 110 pods each).")] = 5000,
    pods: Annotated[int, typer.Option(min=1, help="Pause pods (100m, 500Mi each).")] = 10000,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="KubeSchedulerConfiguration (default profile if omitted).")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Tie-break seed.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON.")] = None,
    tracing_config_file: Annotated[
        Path | None, typer.Option(help="TracingConfiguration: measure with cycles exported as OTLP spans.")
    ] = None,
    reload: Annotated[
        bool, typer.Option("--reload", help="Also measure a configuration reload at this scale, with --pods pods pending.")
    ] = False,
    feature_gates: Annotated[
        str, typer.Option(help="kube's feature gates, e.g. GenericWorkload=true (pod groups); as kube-scheduler takes them.")
    ] = "",
    scheduler_perf: Annotated[str | None, typer.Option(
        "--scheduler-perf", help="kube-scheduler's scheduler_perf config: a performance-config.yaml, a directory of the pinned "
        "release's scheduler_perf (misc, affinity, ...), or 'all'.")] = None,
    workload: Annotated[list[str] | None, typer.Option(
        "--workload", help="NAME/CASE of a workload in --scheduler-perf (repeat for more); default: every one with --label.")] = None,
    label: Annotated[str, typer.Option(help="With --scheduler-perf and no --workload: the workloads with this label.")] = "performance",
    timeout: Annotated[float, typer.Option(min=1, help="With --scheduler-perf: seconds an op may wait for its pods.")] = 600.0,
    kube: Annotated[bool, typer.Option("--kube", help="With --scheduler-perf: on a throwaway real kube-apiserver (etcd and "
                                       "kube-apiserver of the pinned release, started for each run), kubesched as a process.")] = False,
    vs: Annotated[str | None, typer.Option("--vs", help="With --kube: 'kube-scheduler', the same workload through the real "
                                           "kube-scheduler too, in alternating order.")] = None,
    rounds: Annotated[int, typer.Option(min=1, help="With --kube: runs of each scheduler.")] = 1,
    k8s_bin: Annotated[Path | None, typer.Option("--k8s-bin", help="With --kube: the directory of etcd, kube-apiserver and "
                                                  "kube-scheduler (default: what `make k8s-bin` builds).")] = None,
    workdir: Annotated[Path | None, typer.Option("--workdir", help="With --kube: keep each run's logs and configuration here.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or per-op progress lines on stderr.")] = False,
) -> None:
    """scheduler_perf on the simulator: its SchedulingBasic shape (--nodes, --pods), or its own workloads
    read from the pinned kubernetes release (--scheduler-perf): pods/s, latency, CPU per 1,000 pods, RSS."""
    from kubesched.backends.sim.limits import LimitError
    from kubesched.infra import gcpolicy
    from kubesched.tools.bench import explain_latency, reload_latency, scheduling_basic

    check_writable(json_out, "--json")
    gcpolicy.for_scheduling()
    if vs is not None and vs != "kube-scheduler":
        raise fail(f"--vs {vs!r}: only kube-scheduler can be compared with")
    if (kube or vs) and scheduler_perf is None:
        raise fail("--kube and --vs run scheduler_perf workloads: give --scheduler-perf")
    if scheduler_perf is not None:
        where = _KubeOptions(kube or vs is not None, vs is not None, rounds, k8s_bin, workdir)
        _bench_scheduler_perf(scheduler_perf, workload or [], label, config, timeout, json_out, quiet, where)
        return
    tracing = tracing_config(tracing_config_file)
    set_feature_gates(feature_gates)
    try:
        configs = load_configs([config] if config else None)
        cluster = scheduling_basic(nodes, pods)
    except (ConfigError, LimitError) as exc:
        raise fail(str(exc)) from None
    sims: list[Any] = []
    result = run_simulations(cluster, configs, seed, quiet, keep=sims, tracing=tracing)[0]
    figures = {
        "workload": "SchedulingBasic",
        "nodes": nodes,
        "pods": pods,
        "pods_scheduled": result.pods_scheduled,
        "wall_seconds": result.wall_seconds,
        "pods_per_second": result.pods_per_second,
        "cycle_ms_p50": result.cycle_ms_p50,
        "cycle_ms_p99": result.cycle_ms_p99,
        "machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}".strip(),
        **explain_latency(sims[0].scheduler),
    }
    for shadow, outcomes in result.shadows.items():
        figures[f"shadow_{shadow}_decisions"] = sum(outcomes.values())
        figures[f"shadow_{shadow}_same_node"] = outcomes.get("same_node", 0)
    if reload:
        figures.update(reload_latency(sims[0].scheduler, pending=pods))
    say(console, f"SchedulingBasic {nodes} nodes / {pods} pods")  # a line of its own: a table title wraps to the table
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in figures.items():
        if key not in ("workload", "nodes", "pods", "machine"):
            table.add_row(key, str(value))
    console.print(table)
    if json_out is not None:
        write_json(json_out, figures, "--json")


@dataclass(frozen=True)
class _KubeOptions:
    on: bool
    vs: bool
    rounds: int
    k8s_bin: Path | None
    workdir: Path | None


def _bench_scheduler_perf(spec: str, workloads: list[str], label: str, config: Path | None, timeout: float,
                          json_out: Path | None, quiet: bool, kube: _KubeOptions) -> None:
    from kubesched.tools.devcluster.binaries import BinariesMissing
    from kubesched.tools.perf import command, report
    from kubesched.tools.perf.source import SourceError
    from kubesched.tools.perf.workloads import WorkloadError

    try:
        plans = command.plans(command.Selection(spec, tuple(workloads), label))
        if config is not None:
            load_config(config)  # refused here, before anything runs
    except (SourceError, WorkloadError, ConfigError) as exc:
        raise fail(str(exc)) from None
    progress = None if quiet else (lambda line: err.print(line, highlight=False, markup=False))
    if kube.on:
        try:
            rows = command.on_kube(plans, vs=kube.vs, rounds=kube.rounds, k8s_bin=kube.k8s_bin, workdir=kube.workdir, config=config,
                                   wait_seconds=timeout, progress=progress)
        except BinariesMissing as exc:
            raise fail(str(exc)) from None
    else:
        rows = command.on_simulator(plans, config=config, wait_seconds=timeout, progress=progress)
    wide = Console(width=max(console.width, 160))  # a narrow (or piped) terminal would cut the names
    wide.print(report.table(rows, f"scheduler_perf on {report.machine()}"))
    for row in rows:
        if row.refused or row.failed:
            console.print(f"{row.workload}: {'not run' if row.refused else 'FAILED'}: {row.refused or row.failed}",
                          highlight=False, markup=False)
    if json_out is not None:
        write_json(json_out, report.as_json(rows), "--json")
    if any(r.failed for r in rows):
        raise typer.Exit(1)

