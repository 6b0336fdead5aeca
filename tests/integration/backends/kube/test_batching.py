"""OpportunisticBatching (kube v1.37, on by default) against the real kube-scheduler v1.37.2, on one
apiserver: identical pods created together go through batches in both schedulers and land on the
same nodes.

The profile drops PodTopologySpread's default constraints (as scheduler_perf's batching workloads
do), so pods can be signed. Each node has a CPU capacity of its own, so no two score alike, and the
bigger ones hold two of the pods, and a batch's later pods test both ways of the hint: the node the last pod
took is filtered and scored again and competes with the kept nodes, or (full) is passed over.
There are fewer than 100 nodes: kube-scheduler then scores every feasible node, so its choice does
not depend on which nodes its parallel filtering happened to find first."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from builders import make_namespace
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, delete_namespace
from integration.harness.rest import JSON, Kube

NODES = 60
PODS = 30
NO_DEFAULT_SPREAD = [{"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}]
METRICS_OPEN = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"


def _placements(kube: Kube, ns: str, timeout: float = 60.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        nodes = [p["spec"].get("nodeName", "") for p in kube.list(f"/api/v1/namespaces/{ns}/pods")]
        if all(nodes) or time.monotonic() > deadline:
            return nodes
        time.sleep(0.2)


def _batch(kube: Kube, scheduler: str) -> str:
    ns = f"batch-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", make_namespace(ns))
    for i in range(PODS):
        create_pod(kube, f"p{i:02d}", ns, cpu="10", memory="64Mi", scheduler_name=scheduler)
    return ns


def _hints_used(metrics_text: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(metrics_text) for s in f.samples
               if s.name == "scheduler_batch_attempts_total" and s.labels.get("result") == "hint_used")


def _observe(kube: Kube, ns: str, get: Callable[[str], tuple[int, str]]) -> tuple[list[str], float]:
    """Where the scheduler put the batch's pods, and how many of its attempts used a batching hint."""
    placements = _placements(kube, ns)
    code, text = get("/metrics")
    assert code == 200, text[:300]
    return placements, _hints_used(text)


def test_identical_pods_are_batched_and_land_where_kube_scheduler_puts_them(
    control_plane: ControlPlane, kube: Kube, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    tag = secrets.token_hex(2)
    for i in range(NODES):
        # NodeResourcesFit's LeastAllocated score for the first pod is 30 + i: no two nodes tie.
        make_node(f"bt{tag}-{i:03d}", cpu=f"{int(1e6 / (100 - (30 + i) - 0.5)) + 1}m", memory="64Gi")
    outcome: dict[str, list[str]] = {}
    hints: dict[str, float] = {}
    ns = _batch(kube, "default-scheduler")
    try:
        with run_kube_scheduler(control_plane, profiles=[{"schedulerName": "default-scheduler", "pluginConfig": NO_DEFAULT_SPREAD}],
                                extra_args=[METRICS_OPEN]) as ks:
            outcome["kube-scheduler"], hints["kube-scheduler"] = _observe(kube, ns, ks.get)
    finally:
        delete_namespace(kube, ns)
    ns = _batch(kube, "kubesched")
    config = kubesched_config(control_plane.admin_kubeconfig, extra_profile={"pluginConfig": NO_DEFAULT_SPREAD})
    try:
        with run_kubesched(tmp_path, config) as ours:
            outcome["kubesched"], hints["kubesched"] = _observe(kube, ns, ours.get)
    finally:
        delete_namespace(kube, ns)
    kube_side, ours_side = sorted(outcome["kube-scheduler"]), sorted(outcome["kubesched"])
    assert all(kube_side) and all(ours_side), outcome
    assert ours_side == kube_side, f"kube-scheduler: {kube_side}\nkubesched:      {ours_side}"
    assert hints["kube-scheduler"] > PODS / 2 and hints["kubesched"] > PODS / 2, hints
