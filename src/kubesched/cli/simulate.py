"""`kubesched simulate`: the scheduler on a simulated cluster, once per configuration."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kubesched.cli.app import app
from kubesched.cli.common import (
    EXIT_USAGE,
    check_writable,
    clip,
    console,
    err,
    fail,
    interruptible,
    load_configs,
    pod_ref,
    print_error,
    set_feature_gates,
    tracing_config,
    write_json,
)
from kubesched.cli.summary import print_results
from kubesched.config.parse import ConfigError, SchedulerConfig


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
    from kubesched.backends.sim.limits import LimitError
    from kubesched.backends.sim.manifests import ManifestError
    from kubesched.backends.sim.scenarios import DEFAULT_SCENARIO, load_refs
    from kubesched.infra import gcpolicy

    gcpolicy.for_scheduling()
    check_writable(json_out, "--json")
    check_writable(report, "--report")
    explain_refs = [pod_ref(ref, "default") for ref in explain_pods or []]
    tracing = tracing_config(tracing_config_file)
    set_feature_gates(feature_gates)
    try:
        cluster = load_refs(scenario or [DEFAULT_SCENARIO], keep_going=True)
        if cluster.settings.feature_gates:  # the scenario's own, over the command line's
            set_feature_gates(cluster.settings.feature_gates, over=True)
        configs = load_configs(config)
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
        results = run_simulations(cluster, configs, seed, quiet, keep=sims, tracing=tracing)
    except LimitError as exc:
        raise fail(str(exc)) from None
    print_results(cluster, results)
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
        write_json(json_out, data, "--json")
        console.print(f"wrote {json_out}")
    if cluster.errors:
        n = len(cluster.errors)
        err.print(f"{n} object{'s' if n != 1 else ''} refused (see above); the simulation ran without {'them' if n != 1 else 'it'}",
                  highlight=False)
        raise typer.Exit(EXIT_USAGE)


# Explanations kept in `simulate --json` per configuration: every pending pod's first, then the
# scheduled pods' in the order of the input, up to this many (about 2 kB each).
SAVED_EXPLANATIONS = 2000



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

