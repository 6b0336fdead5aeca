"""`kubesched explain` on a real kube-apiserver.

A pod is pending for three different reasons on three nodes (cpu on one, a taint on another, its
node selector on the third); `kubesched explain --local` reads the cluster, dry-runs the cycle and
names each node's reason and the nearest miss with what it lacks. Nothing is written to the
cluster by the explanation.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, Kube

SCHEDULER = "kubesched"
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def explain_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubesched.cli", "explain", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def three_reason_cluster(make_node: Callable[..., JSON], kube: Kube, namespace: str, tag: str) -> dict[str, str]:
    """Nodes `cpu`, `taint`, `label` (the pod's selector is disk=<tag>); returns role -> node name."""
    nodes = {
        "cpu": make_node(f"cpu-{tag}", cpu="1", labels={"disk": tag}),
        "taint": make_node(f"taint-{tag}", cpu="8", labels={"disk": tag}, taints=[GPU_TAINT]),
        "label": make_node(f"label-{tag}", cpu="8"),
    }
    names = {role: n["metadata"]["name"] for role, n in nodes.items()}
    create_pod(kube, "filler", namespace, cpu="700m", node_name=names["cpu"])
    return names


def test_explain_a_pod_pending_for_three_reasons(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    tag = secrets.token_hex(3)
    names = three_reason_cluster(make_node, kube, namespace, tag)
    config = kubesched_config(control_plane.admin_kubeconfig)
    config_file = tmp_path / "kubesched.yaml"
    config_file.write_text(yaml.safe_dump(config))
    with run_kubesched(tmp_path, config):
        create_pod(kube, "web", namespace, cpu="1", scheduler_name=SCHEDULER, extra_spec={"nodeSelector": {"disk": tag}})
        kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/web",
                      lambda p: any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions", [])))
        before = kube.get(f"/api/v1/namespaces/{namespace}/pods/web")
        done = explain_cli(f"{namespace}/web", "--local", "--config", str(config_file), "-o", "json")
        assert done.returncode == 0, done.stderr
        e: dict[str, Any] = json.loads(done.stdout)
        after = kube.get(f"/api/v1/namespaces/{namespace}/pods/web")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "explain wrote to the pod"
    assert e["status"] == "pending"
    first = {}
    for group in e["filter"]["rejected"]:
        for node in group["nodes"]:
            first[node] = (group["plugin"], group["reason"])
    assert first[names["cpu"]] == ("NodeResourcesFit", "Insufficient cpu")
    assert first[names["taint"]] == ("TaintToleration", "node(s) had untolerated taint(s)")
    assert first[names["label"]] == ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
    nearest = e["filter"]["nearest"][0]
    assert nearest["node"] == names["cpu"]
    assert nearest["failed"] == [{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "detail": "needs 700m more cpu"}]
    taint = next(m for m in e["filter"]["nearest"] if m["node"] == names["taint"])
    assert taint["failed"][0]["detail"] == "taint dedicated=gpu:NoSchedule"
    assert e["preemption"]["possible"] is False  # the filler has the same priority

    text = explain_cli(f"{namespace}/web", "--local", "--config", str(config_file))
    assert text.returncode == 0, text.stderr
    for expected in ("Nodes rejected", "Nearest misses", "needs 700m more cpu", names["cpu"], names["taint"], names["label"]):
        assert expected in text.stdout


def test_explain_refuses_a_missing_pod_in_one_line(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    config_file = tmp_path / "kubesched.yaml"
    config_file.write_text(yaml.safe_dump(kubesched_config(control_plane.admin_kubeconfig)))
    started = time.monotonic()
    done = explain_cli(f"{namespace}/ghost", "--local", "--config", str(config_file))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"pod {namespace}/ghost: not found" in done.stderr
    assert time.monotonic() - started < 30
    _ = wait_bound  # used by the leader tests below
