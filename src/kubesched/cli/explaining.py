"""`kubesched explain`: why a pod is pending, or why it landed on its node."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from kubesched.cli.app import PlainFlagsCommand, app
from kubesched.cli.common import clip, console, err, fail, interruptible, pod_ref, print_error, say
from kubesched.config.errors import ConfigError
from kubesched.scheduler.configload import load_config

EXPLAIN_EXIT_CODES = (
    "Exit codes: 0 the pod was explained, whatever its state (pending, gated, binding or scheduled: `-o json` gives it as "
    "status); 2 no such pod, or bad input (a pod name, a file, a configuration or profile that does not exist); "
    "130 interrupted. `kubesched simulate --explain` uses the same codes."
)


def _saved_explanations(path: Path, key: str, profile: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The explanations of `key` in a `kubesched simulate --json` file, as (configuration, explanation),
    in the order of the simulation's configurations: those of the configuration named `profile`, or
    of those with a profile (schedulerName) of that name, or of all if None."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise fail(f"--from {path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise fail(f"--from {path}: not JSON: {exc}") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise fail(f"--from {path}: not the output of `kubesched simulate --json` (no results)")
    runs: list[tuple[str, dict[str, Any]]] = []
    for r in results:
        if isinstance(r, dict):
            saved = r.get("explanations")
            runs.append((str(r.get("profile")), saved if isinstance(saved, dict) else {}))
    if profile is not None:
        profiles = {str(x.get("profile")) for _, e in runs for x in e.values() if isinstance(x, dict)}
        if profile in {label for label, _ in runs}:
            runs = [(label, e) for label, e in runs if label == profile]
        elif profile in profiles:
            runs = [(label, {k: x for k, x in e.items() if isinstance(x, dict) and x.get("profile") == profile}) for label, e in runs]
        else:
            raise fail(f"--from {path}: no configuration or profile {profile!r} (configurations: "
                       f"{', '.join(label for label, _ in runs)}; profiles: {', '.join(sorted(profiles)) or 'none'})")
    return [(label, e[key]) for label, e in runs if isinstance(e.get(key), dict)]


def _render_each(found: list[tuple[str, dict[str, Any]]], output: str, key: str, source: str) -> None:
    """Text: every configuration's explanation under its name. JSON: one explanation object, the
    first configuration's, and which one it was on stderr when there were several."""
    from kubesched.observe.explainview import render

    if output == "json":
        label, data = found[0]
        console.print_json(json.dumps(data))
        if len(found) > 1:
            say(err, f"explained {key} with configuration {label}, the first of {', '.join(lb for lb, _ in found)} in {source} "
                "(choose with --profile)")
        return
    for label, data in found:
        if len(found) > 1:
            heading(label, key, data)
        render(console, data)


def heading(configuration: str, key: str, data: dict[str, Any] | None) -> None:
    """The line above a configuration's explanation: the configuration (what -c, --profile and the
    summary's columns call it) and the profile (the pod's schedulerName) that explained it."""
    line = Text(f"{key} in configuration ", style="bold")
    line.append(configuration, style="bold cyan")
    if data is not None and data.get("profile"):
        line.append(f" (profile {data['profile']})")
    say(console, line)


def check_named_pods(cluster: Any, refs: list[tuple[str, str]]) -> None:
    """`simulate --explain` of a pod that is not in the input fails before the run (exit 2)."""
    keys = {sp.pod.key for sp in cluster.pods}
    missing = [f"{ns}/{name}" for ns, name in refs if f"{ns}/{name}" not in keys]
    if missing:
        raise fail(f"--explain {missing[0]}: no such pod in the input (pods of workloads are named as the summary and "
                   "`--json` show them, e.g. default/web-7f9c4d8b6-x2x5k)")


def explain_simulated(sims: list[Any], results: list[Any], refs: list[tuple[str, str]]) -> list[str]:
    """`simulate --explain`: each pod in each configuration, under the configuration's name. Returns the
    pods no configuration could explain (not one of their profiles' pods): exit 2 for those."""
    from kubesched.observe.explainview import render

    unexplained = []
    for ns, name in refs:
        key = f"{ns}/{name}"
        explained = False
        for sim, result in zip(sims, results, strict=True):
            data = sim.explain(ns, name)  # the scheduler's, with what the simulated cluster shows
            heading(result.profile, key, data)
            if data is None:
                say(console, f"configuration {result.profile} does not schedule pod {key}: its schedulerName is not one of "
                    "the configuration's profiles, or it had a node in the input")
            else:
                render(console, data)
                explained = True
        if not explained:
            unexplained.append(key)
    for key in unexplained:
        print_error(f"--explain {key}: no configuration schedules this pod (see above)")
    return unexplained


@app.command(cls=PlainFlagsCommand, epilog=EXPLAIN_EXIT_CODES)
@interruptible
def explain(
    pod: Annotated[str, typer.Argument(help="The pod: namespace/name, or name with --namespace.")],
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of a pod given by name alone.")] = "default",
    kubeconfig: Annotated[
        str | None, typer.Option(help="kubeconfig file (default: in-cluster service account, else ~/.kube/config).")
    ] = None,
    config: Annotated[
        list[Path] | None,
        typer.Option("--config", "-c", help="KubeSchedulerConfiguration: the leader's Lease, and the profiles of a local dry "
                     "run; one."),
    ] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="The leader's debug endpoint (https://host:port), instead of the one its Lease publishes.")
    ] = None,
    local: Annotated[bool, typer.Option("--local", help="Do not ask the leader: read the cluster and dry-run here.")] = False,
    from_json: Annotated[
        Path | None, typer.Option("--from", help="A saved simulation (`kubesched simulate --json`) instead of a cluster.")
    ] = None,
    profile: Annotated[str | None, typer.Option(
        help="With --from: which of the simulation's configurations: a configuration's name (its -c file's name without "
        ".yaml, 'default' without -c) or a profile's schedulerName (e.g. default-scheduler). Without it, text output "
        "explains the pod in every configuration, JSON in the first.")] = None,
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
    if config is not None and len(config) > 1:
        raise fail(f"--config: one configuration, got {len(config)} ({', '.join(map(str, config))}); "
                   "to compare configurations, simulate them and explain with --from and --profile")
    ns, name = pod_ref(pod, namespace)
    key = f"{ns}/{name}"
    if from_json is not None:
        found = _saved_explanations(from_json, key, profile)
        if not found:
            raise fail(f"--from {from_json}: no explanation of pod {key}{f' with {profile}' if profile else ''} (the simulation "
                       "keeps those of the pods named with --explain, of its pending pods and of the first scheduled ones)")
        _render_each(found, output, key, str(from_json))
        return
    data = _explain_live(ns, name, kubeconfig, config[0] if config else None, endpoint, local, timeout)
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
            say(err, f"no answer from the leader ({clip(str(exc))}); reading the cluster for a dry run here")
    try:
        data = asyncio.run(explain_from_api(connection, cfg, ns, name, timeout=timeout))
    except SnapshotError as exc:
        raise fail(str(exc)) from None
    if data is None:
        profiles = ", ".join(p.scheduler_name for p in cfg.profiles)
        raise fail(f"pod {ns}/{name}: not found, or not scheduled by one of the profiles {profiles}")
    return data

