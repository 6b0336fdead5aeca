"""`kubesched simulate`: the scheduler on a simulated cluster, once per configuration."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kubesched.cli.app import PlainFlagsCommand, app
from kubesched.cli.common import (
    EXIT_USAGE,
    check_writable,
    console,
    err,
    fail,
    interruptible,
    load_configs,
    pod_ref,
    print_error,
    say,
    set_feature_gates,
    tracing_config,
    warn,
    write_json,
)
from kubesched.cli.explaining import check_named_pods, explain_simulated
from kubesched.cli.simfacts import kept_explanations, report_run, usage_gap
from kubesched.cli.summary import print_results
from kubesched.config.errors import ConfigError
from kubesched.config.types import SchedulerConfig


def run_simulations(
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


SIMULATE_EXIT_CODES = (
    "Exit codes: 0 the simulation ran; 2 bad input: a configuration, manifest or output path refused (nothing ran), objects "
    "the API server would refuse (the rest ran), no Nodes in the input (the run shows every pod pending), or a pod named "
    "with --explain that no configuration knows (the others are explained); 130 interrupted. Pods left pending are a "
    "result, not an error: they do not change the exit code."
)


@app.command(cls=PlainFlagsCommand, epilog=SIMULATE_EXIT_CODES)
@interruptible
def simulate(
    scenario: Annotated[list[str] | None, typer.Argument(
        help="Built-in scenario name (web-batch, the default; basic, preemption, flink-jobs, flink-burst, gpu-cluster), or manifest "
        "files/directories: Nodes and the pods or workloads to place.")] = None,
    config: Annotated[list[Path] | None, typer.Option(
        "--config", "-c", help="KubeSchedulerConfiguration; repeat to compare. Each is named by its file name without "
        ".yaml ('default' without -c).")] = None,
    seed: Annotated[int, typer.Option(
        min=0, help="Seed for breaking ties between equal nodes, and for the names of objects given a generateName.")] = 0,
    json_out: Annotated[Path | None, typer.Option(
        "--json", help="Write the results as JSON, with the explanations of the pods named with --explain, of pending pods "
        "and of the first scheduled ones (`kubesched explain --from` reads them).")] = None,
    explain_pods: Annotated[list[str] | None, typer.Option(
        "--explain", help="Explain this pod (namespace/name) after the run, in each configuration; repeatable.")] = None,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write a self-contained HTML report (requests, utilization, pending times, decisions).")
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
    check_writable(json_out, "--json")
    check_writable(report, "--report")
    explain_refs = [pod_ref(ref, "default") for ref in explain_pods or []]
    tracing = tracing_config(tracing_config_file)
    set_feature_gates(feature_gates)
    try:
        cluster = load_refs(scenario or [DEFAULT_SCENARIO], keep_going=True, seed=seed)
        if cluster.settings.feature_gates:  # the scenario's own, over the command line's
            set_feature_gates(cluster.settings.feature_gates, over=True)
        configs = load_configs(config)
    except (ConfigError, ManifestError, LimitError) as exc:
        raise fail(str(exc)) from None
    for warning in cluster.warnings:
        warn(warning)
    for refused in cluster.errors:
        print_error(refused)
    if cluster.errors and not cluster.nodes and not cluster.pods:
        raise fail("nothing left to simulate: every node and pod was refused (see above)")
    check_named_pods(cluster, explain_refs)
    sims: list[Any] = []
    # Reloads of the scenario's configuration changes are reported with the results, not logged.
    logging.getLogger("kubesched.scheduler.reload").addHandler(logging.NullHandler())
    logging.getLogger("kubesched.scheduler.reload").propagate = False
    try:
        results = run_simulations(cluster, configs, seed, quiet, keep=sims, tracing=tracing)
    except LimitError as exc:
        raise fail(str(exc)) from None
    print_results(cluster, results, [usage_gap(sim, r) for sim, r in zip(sims, results, strict=True)])
    unexplained = explain_simulated(sims, results, explain_refs)
    named = [f"{ns}/{name}" for ns, name in explain_refs]
    kept = [kept_explanations(sim, r, named) for sim, r in zip(sims, results, strict=True)] if report or json_out else []
    if report is not None:
        _write_report(report, cluster, sims, results, kept)
    if json_out is not None:
        data = {"scenario": cluster.name, "seed": seed,
                "results": [r.as_dict() | {"explanations": e} for r, e in zip(results, kept, strict=True)],
                "refused": list(cluster.errors)}
        write_json(json_out, data, "--json")
        say(console, f"wrote {json_out}")
    if cluster.errors:
        n = len(cluster.errors)
        say(err, f"{n} object{'s' if n != 1 else ''} refused (see above); the simulation ran without {'them' if n != 1 else 'it'}")
    if not cluster.nodes:
        print_error(no_nodes_hint())
    if cluster.errors or not cluster.nodes or unexplained:
        raise typer.Exit(EXIT_USAGE)


def no_nodes_hint() -> str:
    """What to do about an input without Nodes: said once, after kube's own message for each pod."""
    from kubesched.backends.sim.scenarios import builtin_scenarios

    names = ", ".join(builtin_scenarios())
    return ("the input has no Nodes, so every pod stays pending (kube's message: no nodes available to schedule pods). "
            "Give the simulator a cluster: add a file of Node manifests (`kubectl get nodes -o yaml > nodes.yaml`, or write "
            "them: a Node needs a name and status.allocatable; see docs/simulator.md, Input) and run e.g. "
            "`kubesched simulate nodes.yaml <your manifests>`; or start from a built-in scenario: "
            f"`kubesched simulate web-batch` (built-in: {names}).")


def _write_report(path: Path, cluster: Any, sims: list[Any], results: list[Any], kept: list[dict[str, Any]]) -> None:
    from kubesched.observe import report as html_report

    runs = [report_run(cluster, sim, r, e) for sim, r, e in zip(sims, results, kept, strict=True)]
    page = html_report.render(cluster.name, [html_report.config_report(run) for run in runs])
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise fail(f"--report {path}: cannot write: {exc.strerror}") from None
    say(console, f"wrote {path}")
