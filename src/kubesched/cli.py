"""Command line: kubesched run | simulate | bench | explain | config validate."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import platform
import re
import signal
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kubesched.config.errors import ConfigError
from kubesched.config.types import SchedulerConfig
from kubesched.scheduler.configload import load_config

app = typer.Typer(add_completion=False, no_args_is_help=True, help="kubesched: a Kubernetes pod scheduler in Python.")
config_app = typer.Typer(no_args_is_help=True, help="Work with KubeSchedulerConfiguration files.")
app.add_typer(config_app, name="config")
console = Console()
err = Console(stderr=True)


# Longest run of non-blank characters echoed in a message, and longest message: a 10 MB scalar in
# a manifest must not come back whole on the terminal.
MAX_TOKEN_CHARS = 200
MAX_MESSAGE_CHARS = 4000
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

_LONG_TOKEN = re.compile(rf"\S{{{MAX_TOKEN_CHARS + 1},}}")


def clip(message: str) -> str:
    """The message with overlong words and an overlong whole cut, saying how much was left out."""

    def cut(match: re.Match[str]) -> str:
        text = match.group(0)
        return f"{text[:MAX_TOKEN_CHARS // 2]}...({len(text) - MAX_TOKEN_CHARS // 2} more characters)"

    message = _LONG_TOKEN.sub(cut, message)
    if len(message) > MAX_MESSAGE_CHARS:
        message = f"{message[:MAX_MESSAGE_CHARS]}...({len(message) - MAX_MESSAGE_CHARS} more characters)"
    return message


def print_error(message: str) -> None:
    """`error: <message>` on stderr, cut by `clip`, the message never read as markup."""
    err.print("[bold red]error:[/] ", end="")
    err.print(clip(message), highlight=False, markup=False, soft_wrap=True)


def fail(message: str) -> typer.Exit:
    """User mistakes end with one line and exit code 2, never a traceback."""
    print_error(message)
    return typer.Exit(EXIT_USAGE)


P = ParamSpec("P")
R = TypeVar("R")


def interruptible(command: Callable[P, R]) -> Callable[P, R]:
    """Ctrl-C ends the command with one short line and exit code 130, whatever it was doing."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            err.print("interrupted", highlight=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _check_writable(path: Path | None, option: str) -> None:
    """Refuse an output path that cannot be written before the run, not after it."""
    if path is None:
        return
    if path.is_dir():
        raise fail(f"{option} {path}: is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise fail(f"{option} {path}: no such directory {parent}")
    if (path.exists() and not os.access(path, os.W_OK)) or (not path.exists() and not os.access(parent, os.W_OK)):
        raise fail(f"{option} {path}: permission denied")


def _write_json(path: Path, data: Any, option: str) -> None:
    try:
        path.write_text(json.dumps(data, indent=2))
    except OSError as exc:
        raise fail(f"{option} {path}: cannot write: {exc.strerror}") from None


def _set_feature_gates(spec: str, *, over: bool = False) -> None:
    """--feature-gates (or a scenario's featureGates over them): process-wide, as kube's are."""
    from kubesched.infra import features

    try:
        features.set_gates(features.parse(spec, features.current() if over else None))
    except features.FeatureGateError as exc:
        raise fail(f"--feature-gates: {exc}") from None


def _load_configs(paths: list[Path] | None) -> list[tuple[str, SchedulerConfig]]:
    if not paths:
        return [("default", load_config(None))]
    return [(p.stem, load_config(p)) for p in paths]


def _run_simulations(
    cluster: Any, configs: list[tuple[str, SchedulerConfig]], seed: int, quiet: bool, keep: list[Any] | None = None,
    tracing: Any = None,
) -> list[Any]:
    """Runs one simulation per configuration; the Simulations themselves go to `keep` if given
    (their schedulers can still explain their decisions)."""
    from kubesched.backends.sim.engine import Simulation
    from kubesched.observe.tracing import Tracer

    results = []
    owned_hint = sum(1 for p in cluster.pods if not p.pod.spec.node_name)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=quiet,
    ) as progress:
        for label, cfg in configs:
            task = progress.add_task(f"{label}: binding pods", total=owned_hint or None)

            def update(done: int, total: int, task: Any = task) -> None:
                progress.update(task, completed=done, total=total or None)

            tracer = Tracer(tracing, service=f"kubesched-simulate-{label}") if tracing is not None else None
            sim = Simulation(cluster, cfg, seed=seed, progress=update, label=label, tracer=tracer)
            results.append(asyncio.run(sim.run()))
            if keep is not None:
                keep.append(sim)
    return results


@app.command()
@interruptible
def simulate(
    scenario: Annotated[list[str] | None, typer.Argument(help="Built-in scenario name, or manifest files/directories.")] = None,
    config: Annotated[list[Path] | None, typer.Option("--config", "-c", help="KubeSchedulerConfiguration; repeat to compare.")] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed for breaking ties between equal nodes.")] = 0,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", help="Write the results as JSON, with the explanations of pending pods and the first scheduled ones."),
    ] = None,
    explain_pods: Annotated[
        list[str] | None, typer.Option("--explain", help="Explain this pod (namespace/name) after the run; repeatable.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a self-contained HTML report (utilization, pending times, decisions).")
    ] = None,
    tracing_config_file: Annotated[
        Path | None, typer.Option(help="TracingConfiguration (endpoint, samplingRatePerMillion): export cycles as OTLP spans.")
    ] = None,
    feature_gates: Annotated[
        str, typer.Option(help="kube's feature gates, e.g. GenericWorkload=true (pod groups); as kube-scheduler takes them.")
    ] = "",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Run the scheduler on a simulated cluster, once per --config, and compare.

    Objects the Kubernetes API server would refuse are reported and left out; the rest runs,
    and the exit code is then 2.
    """
    from kubesched.backends.sim.clusterinput import ManifestError
    from kubesched.backends.sim.limits import LimitError
    from kubesched.backends.sim.scenarios import DEFAULT_SCENARIO, load_refs
    from kubesched.infra import gcpolicy

    gcpolicy.for_scheduling()
    _check_writable(json_out, "--json")
    _check_writable(report, "--report")
    explain_refs = [_pod_ref(ref, "default") for ref in explain_pods or []]
    tracing = _tracing(tracing_config_file)
    _set_feature_gates(feature_gates)
    try:
        cluster = load_refs(scenario or [DEFAULT_SCENARIO], keep_going=True)
        if cluster.settings.feature_gates:  # the scenario's own, over the command line's
            _set_feature_gates(cluster.settings.feature_gates, over=True)
        configs = _load_configs(config)
    except (ConfigError, ManifestError, LimitError) as exc:
        raise fail(str(exc)) from None
    for warning in cluster.warnings:
        err.print(f"[yellow]warning:[/] {clip(warning)}", highlight=False)
    for refused in cluster.errors:
        print_error(refused)
    if cluster.errors and not cluster.nodes and not cluster.pods:
        raise fail("nothing left to simulate: every node and pod was refused (see above)")
    sims: list[Any] = []
    # Reloads of the scenario's configuration changes are reported with the results, not logged.
    logging.getLogger("kubesched.scheduler.reload").addHandler(logging.NullHandler())
    logging.getLogger("kubesched.scheduler.reload").propagate = False
    try:
        results = _run_simulations(cluster, configs, seed, quiet, keep=sims, tracing=tracing)
    except LimitError as exc:
        raise fail(str(exc)) from None
    _print_results(cluster, results)
    _explain_simulated(sims, results, explain_refs)
    if report is not None:
        from kubesched.observe import report as html_report

        configs_data = [html_report.config_report(r.profile, sim, r) for sim, r in zip(sims, results, strict=True)]
        page = html_report.render(cluster.name, configs_data)
        try:
            report.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise fail(f"--report {report}: cannot write: {exc.strerror}") from None
        console.print(f"wrote {report}")
    if json_out is not None:
        data = {"scenario": cluster.name, "seed": seed,
                "results": [r.as_dict() | {"explanations": _saved_explanations(sim, r)} for sim, r in zip(sims, results, strict=True)],
                "refused": list(cluster.errors)}
        _write_json(json_out, data, "--json")
        console.print(f"wrote {json_out}")
    if cluster.errors:
        n = len(cluster.errors)
        err.print(f"{n} object{'s' if n != 1 else ''} refused (see above); the simulation ran without {'them' if n != 1 else 'it'}",
                  highlight=False)
        raise typer.Exit(EXIT_USAGE)


# Explanations kept in `simulate --json` per configuration: every pending pod's first, then the
# scheduled pods' in the order of the input, up to this many (about 2 kB each).
SAVED_EXPLANATIONS = 2000


def _tracing(path: Path | None) -> Any:
    from kubesched.observe.tracing import TracingConfigError, load_tracing_config

    if path is None:
        return None
    try:
        return load_tracing_config(path)
    except TracingConfigError as exc:
        raise fail(f"--tracing-config-file {exc}") from None


def _saved_explanations(sim: Any, result: Any) -> dict[str, Any]:
    from kubesched.scheduler.explain import explain_many

    pending = list(result.unschedulable)
    placed = [key for key, node in result.placements.items() if node]
    return explain_many(sim.scheduler, pending + placed, SAVED_EXPLANATIONS)


def _explain_simulated(sims: list[Any], results: list[Any], refs: list[tuple[str, str]]) -> None:
    from kubesched.observe.explainview import render

    for ns, name in refs:
        for sim, result in zip(sims, results, strict=True):
            console.rule(f"{ns}/{name} with {result.profile}")
            data = sim.scheduler.explain(ns, name)
            if data is None:
                console.print(f"no pod {ns}/{name} in this simulation", highlight=False, markup=False)
            else:
                render(console, data)


def _print_results(cluster: Any, results: list[Any]) -> None:
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


@app.command()
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """scheduler_perf on the simulator: its SchedulingBasic shape (--nodes, --pods), or its own workloads
    read from the pinned kubernetes release (--scheduler-perf): pods/s, latency, CPU per 1,000 pods, RSS."""
    from kubesched.backends.sim.limits import LimitError
    from kubesched.infra import gcpolicy
    from kubesched.tools.bench import explain_latency, reload_latency, scheduling_basic

    _check_writable(json_out, "--json")
    gcpolicy.for_scheduling()
    if vs is not None and vs != "kube-scheduler":
        raise fail(f"--vs {vs!r}: only kube-scheduler can be compared with")
    if (kube or vs) and scheduler_perf is None:
        raise fail("--kube and --vs run scheduler_perf workloads: give --scheduler-perf")
    if scheduler_perf is not None:
        where = _KubeOptions(kube or vs is not None, vs is not None, rounds, k8s_bin, workdir)
        _bench_scheduler_perf(scheduler_perf, workload or [], label, config, timeout, json_out, quiet, where)
        return
    tracing = _tracing(tracing_config_file)
    _set_feature_gates(feature_gates)
    try:
        configs = _load_configs([config] if config else None)
        cluster = scheduling_basic(nodes, pods)
    except (ConfigError, LimitError) as exc:
        raise fail(str(exc)) from None
    sims: list[Any] = []
    result = _run_simulations(cluster, configs, seed, quiet, keep=sims, tracing=tracing)[0]
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
    table = Table(title=f"SchedulingBasic {nodes} nodes / {pods} pods", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in figures.items():
        if key not in ("workload", "nodes", "pods", "machine"):
            table.add_row(key, str(value))
    console.print(table)
    if json_out is not None:
        _write_json(json_out, figures, "--json")


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
        _write_json(json_out, report.as_json(rows), "--json")
    if any(r.failed for r in rows):
        raise typer.Exit(1)


def _log_levels(spec: str) -> tuple[int, dict[str, int]]:
    """`info` or `info,kubesched.decisions=debug`: the root level, then levels of named loggers."""
    import logging

    def level_of(text: str) -> int:
        level = getattr(logging, text.upper(), None)
        if not isinstance(level, int):
            raise ValueError(f"unknown level {text!r} (debug, info, warning, error)")
        return level

    root, *rest = [part.strip() for part in spec.split(",")]
    per_logger = {}
    for part in rest:
        name, sep, text = part.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{part!r} is not LOGGER=LEVEL")
        per_logger[name.strip()] = level_of(text.strip())
    return level_of(root), per_logger


@app.command()
def run(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="KubeSchedulerConfiguration (default profile if omitted).")] = None,
    kubeconfig: Annotated[
        str | None, typer.Option(help="kubeconfig file (default: in-cluster service account, else ~/.kube/config).")
    ] = None,
    bind_address: Annotated[str, typer.Option(help="Address of the secure port (/healthz /livez /readyz /metrics /debug).")] = "0.0.0.0",
    secure_port: Annotated[int, typer.Option(min=0, max=65535, help="HTTPS port, as kube-scheduler's (0: serve nothing).")] = 10259,
    tls_cert_file: Annotated[
        str | None, typer.Option(help="Serving certificate (PEM); without one, a self-signed certificate is made at start.")
    ] = None,
    tls_private_key_file: Annotated[str | None, typer.Option(help="The serving certificate's key (PEM).")] = None,
    client_ca_file: Annotated[
        str | None,
        typer.Option(help="CA of client certificates (default: the API server's, from kube-system/extension-apiserver-authentication)."),
    ] = None,
    authorization_always_allow_paths: Annotated[
        str, typer.Option(help="Comma-separated paths served without authorization.")
    ] = "/healthz,/readyz,/livez",
    advertise_address: Annotated[
        str | None, typer.Option(help="Address the leader publishes on its Lease for `kubesched explain` (default: $POD_IP).")
    ] = None,
    tracing_config_file: Annotated[
        Path | None, typer.Option(help="TracingConfiguration (endpoint, samplingRatePerMillion): export cycles as OTLP spans.")
    ] = None,
    log_level: Annotated[
        str,
        typer.Option(
            help="debug, info, warning or error; then, comma-separated, LOGGER=LEVEL for one logger, "
            "e.g. info,kubesched.decisions=debug (each scored cycle's feasible nodes and final scores)."
        ),
    ] = "info",
    feature_gates: Annotated[
        str, typer.Option(help="kube's feature gates, e.g. GenericWorkload=true (pod groups); as kube-scheduler takes them.")
    ] = "",
) -> None:
    """Schedule the pods of a real cluster whose schedulerName names one of the profiles."""
    import logging
    import signal

    from kubesched.backends.kube.runner import KubeScheduler, RunError, RunOptions
    from kubesched.client import KubeConfigError

    try:
        level, per_logger = _log_levels(log_level)
    except ValueError as exc:
        raise fail(f"--log-level: {exc}") from None
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _set_feature_gates(feature_gates)
    for name, logger_level in per_logger.items():
        logging.getLogger(name).setLevel(logger_level)
    from kubesched.config.parse import read_config_text
    from kubesched.scheduler.configload import load_config_text

    try:
        # Read once: the text is what later changes of the file are compared with.
        text = read_config_text(config) if config is not None else ""
        cfg = load_config_text(text, str(config)) if config is not None else load_config(None)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    tracing = _tracing(tracing_config_file)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            options = RunOptions(
                cfg, kubeconfig, bind_address, secure_port, tls_cert_file=tls_cert_file, tls_private_key_file=tls_private_key_file,
                client_ca_file=client_ca_file, advertise_address=advertise_address, tracing=tracing,
                always_allow_paths=tuple(p.strip() for p in authorization_always_allow_paths.split(",") if p.strip()),
                config_path=config, config_text=text,
            )
            sched = KubeScheduler(options)
        except KubeConfigError as exc:
            raise fail(str(exc)) from None
        # SIGHUP: evaluate the configuration file now, changed or not.
        loop.add_signal_handler(signal.SIGHUP, sched.reload.request)
        try:
            return await sched.run(stop)
        except RunError as exc:
            raise fail(str(exc)) from None

    code = asyncio.run(main())
    if code:
        raise typer.Exit(code)


def _pod_ref(ref: str, namespace: str) -> tuple[str, str]:
    """`namespace/name`, or `name` in --namespace; refused unless both are DNS names."""
    from kubesched.api.validation.meta import dns1123_label, dns1123_subdomain

    ns, sep, name = ref.partition("/")
    if not sep:
        ns, name = namespace, ref
    for problems, what in ((dns1123_label(ns), f"namespace {ns!r}"), (dns1123_subdomain(name), f"name {name!r}")):
        if problems:
            raise fail(f"pod {ref!r}: {what}: {problems[0]}")
    return ns, name


def _explanation_from_saved(path: Path, key: str, profile: str | None) -> dict[str, Any] | None:
    """The explanation of `key` in a `kubesched simulate --json` file: the configuration named
    --profile, else the first that explains the pod."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise fail(f"--from {path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise fail(f"--from {path}: not JSON: {exc}") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise fail(f"--from {path}: not the output of `kubesched simulate --json` (no results)")
    labels = [str(r.get("profile")) for r in results if isinstance(r, dict)]
    if profile is not None and profile not in labels:
        raise fail(f"--from {path}: no configuration {profile!r} (there are: {', '.join(labels)})")
    for r in results:
        if not isinstance(r, dict) or (profile is not None and r.get("profile") != profile):
            continue
        explanations = r.get("explanations")
        if isinstance(explanations, dict) and isinstance(explanations.get(key), dict):
            found: dict[str, Any] = explanations[key]
            return found
    return None


@app.command()
@interruptible
def explain(
    pod: Annotated[str, typer.Argument(help="The pod: namespace/name, or name with --namespace.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of a pod given by name alone.")] = "default",
    kubeconfig: Annotated[
        str | None, typer.Option(help="kubeconfig file (default: in-cluster service account, else ~/.kube/config).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="KubeSchedulerConfiguration: the leader's Lease, and the profiles of a local dry run."),
    ] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="The leader's debug endpoint (https://host:port), instead of the one its Lease publishes.")
    ] = None,
    local: Annotated[bool, typer.Option("--local", help="Do not ask the leader: read the cluster and dry-run here.")] = False,
    from_json: Annotated[
        Path | None, typer.Option("--from", help="A saved simulation (`kubesched simulate --json`) instead of a cluster.")
    ] = None,
    profile: Annotated[str | None, typer.Option(help="With --from: which configuration of the simulation.")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="text or json.")] = "text",
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds to wait for the leader, or for the cluster's lists.")] = 30.0,
) -> None:
    """Why a pod is pending, or why it landed on its node.

    On a cluster, asks the running kubesched leader (its debug endpoint, found through its Lease),
    or, when none answers, reads the cluster and runs a dry-run scheduling cycle here with
    --config's profiles. Nothing is written to the cluster either way.
    """
    from kubesched.observe.explainview import render

    if output not in ("text", "json"):
        raise fail(f"--output {output!r}: must be text or json")
    ns, name = _pod_ref(pod, namespace)
    key = f"{ns}/{name}"
    if from_json is not None:
        data = _explanation_from_saved(from_json, key, profile)
        if data is None:
            raise fail(f"--from {from_json}: no explanation of pod {key} (the simulation keeps those of its pending pods and "
                       "of the first scheduled ones)")
    else:
        data = _explain_live(ns, name, kubeconfig, config, endpoint, local, timeout)
    if output == "json":
        console.print_json(json.dumps(data))
    else:
        render(console, data)


def _explain_live(
    ns: str, name: str, kubeconfig: str | None, config: Path | None, endpoint: str | None, local: bool, timeout: float
) -> dict[str, Any]:
    from kubesched.backends.kube.snapshot import SnapshotError, explain_from_api
    from kubesched.client import KubeConfigError, load_connection

    try:
        cfg = load_config(config)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    try:
        connection = load_connection(kubeconfig or cfg.client_connection.kubeconfig or None)
    except KubeConfigError as exc:
        raise fail(str(exc)) from None
    le = cfg.leader_election
    data: dict[str, Any] | None = None
    if not local:
        from kubesched.client.debug import DebugDenied, LeaderUnreachable, ask_leader

        try:
            data = asyncio.run(ask_leader(connection, le.resource_namespace, le.resource_name, ns, name,
                                          endpoint=endpoint, timeout=timeout))
            if data is None:
                raise fail(f"pod {ns}/{name}: the leader knows no such pod")
            return data
        except DebugDenied as exc:
            raise fail(f"the leader refused the request ({exc}): your credentials need get on the non-resource URL "
                       "/debug/* (see deploy/rbac.yaml, ClusterRole kubesched-debugger)") from None
        except LeaderUnreachable as exc:
            if endpoint is not None:
                raise fail(f"--endpoint {endpoint}: {exc}") from None
            err.print(f"no answer from the leader ({clip(str(exc))}); reading the cluster for a dry run here", highlight=False)
    try:
        data = asyncio.run(explain_from_api(connection, cfg, ns, name, timeout=timeout))
    except SnapshotError as exc:
        raise fail(str(exc)) from None
    if data is None:
        profiles = ", ".join(p.scheduler_name for p in cfg.profiles)
        raise fail(f"pod {ns}/{name}: not found, or not scheduled by one of the profiles {profiles}")
    return data


@config_app.command("validate")
@interruptible
def config_validate(
    path: Annotated[Path, typer.Argument(help="KubeSchedulerConfiguration YAML file.")],
    feature_gates: Annotated[
        str, typer.Option(help="kube's feature gates, e.g. GenericWorkload=true (pod groups); as kube-scheduler takes them.")
    ] = "",
) -> None:
    """Check a configuration as the scheduler would read it; exit 2 with the reason if it is wrong."""
    _set_feature_gates(feature_gates)
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for profile in cfg.profiles:
        shadow = cfg.kubesched.shadow(profile.scheduler_name)
        note = f" (shadow of {shadow.shadow_of}, {shadow.sampling_percentage:g}% of its cycles)" if shadow else ""
        console.print(f"[green]ok[/] profile [bold]{profile.scheduler_name}[/]{note}", highlight=False)
        for point, refs in profile.plugins.items():
            if refs:
                names = ", ".join(f"{r.name}({r.weight})" if point == "score" else r.name for r in refs)
                console.print(f"  {point}: {names}", highlight=False)


def main() -> None:
    # asyncio.run replaces Python's default SIGINT handler with one that first only cancels the
    # main task, which a busy simulation may not notice for a long time; a handler of our own is
    # left alone, so Ctrl-C raises KeyboardInterrupt wherever the run is (see `interruptible`).
    signal.signal(signal.SIGINT, _raise_keyboard_interrupt)
    # numpy's floating-point warnings are not for users; the fuzz tests turn them into errors.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"numpy(\..*)?$")
    app()


if __name__ == "__main__":
    main()
