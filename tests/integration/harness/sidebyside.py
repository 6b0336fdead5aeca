"""The same pods through the real kube-scheduler and `kubesched run` on one real kube-apiserver, each
side in a namespace of its own: both schedulers started together, and a pod's outcome read as a
user reads it (its node, or its PodScheduled=False message)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from builders import make_namespace
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import delete_namespace
from integration.harness.rest import Kube

KUBESCHED = "kubesched"
SIDES = {"kube": "default-scheduler", "ours": KUBESCHED}  # side -> schedulerName
SETTLE = 30.0  # seconds a pod is given to be bound or refused
Outcome = tuple[str | None, str | None]


@contextmanager
def both_schedulers(control_plane: ControlPlane, workdir: Path) -> Iterator[None]:
    """kube-scheduler (default-scheduler) and kubesched (KUBESCHED), both running."""
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name=KUBESCHED)
    with run_kube_scheduler(control_plane), run_kubesched(workdir, config):
        yield


@contextmanager
def side_namespaces(kube: Kube, prefix: str) -> Iterator[dict[str, str]]:
    """A fresh namespace per side, deleted afterwards."""
    token = secrets.token_hex(3)
    made = {side: f"{prefix}-{side}-{token}" for side in SIDES}
    for ns in made.values():
        kube.create("/api/v1/namespaces", make_namespace(ns))
    try:
        yield made
    finally:
        for ns in made.values():
            delete_namespace(kube, ns)


def outcome(kube: Kube, ns: str, name: str) -> Outcome:
    """(node, None) once bound, (None, PodScheduled=False message) once refused; (None, None) before."""
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"], None
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return None, c.get("message", "")
    return None, None


def settled(kube: Kube, ns: str, name: str) -> Outcome:
    """The pod's outcome once it has one, or (None, None) after SETTLE seconds."""
    deadline = time.monotonic() + SETTLE
    while (got := outcome(kube, ns, name)) == (None, None) and time.monotonic() < deadline:
        time.sleep(0.1)
    return got
