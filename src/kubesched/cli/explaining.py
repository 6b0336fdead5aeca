"""`kubesched explain`: why a pod is pending, or why it landed on its node."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from kubesched.cli.app import app
from kubesched.cli.common import clip, console, err, fail, interruptible, pod_ref
from kubesched.config.parse import ConfigError
from kubesched.scheduler.load import load_config


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
    ns, name = pod_ref(pod, namespace)
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

