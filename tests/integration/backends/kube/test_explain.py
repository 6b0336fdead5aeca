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


# --- the leader's debug endpoint ------------------------------------------------------------------------


def debugger_role(kube: Kube, namespace: str, sa: str) -> str:
    """A ClusterRole allowing GET on /debug/* and /metrics, bound to the ServiceAccount, and a Role
    to read the Lease where the leader says where it serves (deploy/rbac.yaml's kubesched-debugger);
    returns the ClusterRole's name."""
    kube.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "lease-reader"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["kubesched"], "verbs": ["get"]}]})
    kube.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "lease-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]})
    name = f"kubesched-debugger-{namespace}"
    kube.create("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": [{"nonResourceURLs": ["/debug/*", "/metrics"], "verbs": ["get"]}]})
    kube.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]})
    return name


def test_the_leader_explains_over_its_secure_port(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    import asyncio

    from kubesched.client.config import load_connection
    from kubesched.client.debug import DEBUG_CERT_ANNOTATION, DEBUG_ENDPOINT_ANNOTATION, LeaderUnreachable, get

    tag = secrets.token_hex(3)
    names = three_reason_cluster(make_node, kube, namespace, tag)
    config = kubesched_config(control_plane.admin_kubeconfig, leader_elect=True, lease_namespace=namespace)
    config_file = tmp_path / "explain.yaml"
    config_file.write_text(yaml.safe_dump(config))
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "viewer"}})
    token = kube.token_for(namespace, "viewer", 600)
    role = None
    try:
        with run_kubesched(tmp_path, config) as ks:
            create_pod(kube, "web", namespace, cpu="1", scheduler_name=SCHEDULER, extra_spec={"nodeSelector": {"disk": tag}})
            create_pod(kube, "api", namespace, cpu="100m", scheduler_name=SCHEDULER)
            node = wait_bound(kube, namespace, "api")
            kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/web",
                          lambda p: any(c.get("reason") == "Unschedulable" for c in p.get("status", {}).get("conditions", [])))
            lease = kube.wait_for(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/kubesched",
                                  lambda lease: DEBUG_ENDPOINT_ANNOTATION in (lease["metadata"].get("annotations") or {}))
            annotations = lease["metadata"]["annotations"]
            assert annotations[DEBUG_ENDPOINT_ANNOTATION].endswith(f":{ks.port}")

            # Authentication and authorization, as kube components do on their secure port.
            path = f"/debug/explain/{namespace}/web"
            assert ks.get("/healthz", anonymous=True)[0] == 200
            code, body = ks.get(path, anonymous=True)
            assert code == 403 and json.loads(body)["message"] == f'forbidden: User "system:anonymous" cannot get path "{path}"'
            assert ks.get(path, token="not-a-token")[0] == 401
            code, body = ks.get(path, token=token)
            assert code == 403, body
            assert json.loads(body)["reason"] == "Forbidden"
            assert "viewer" in json.loads(body)["message"]
            assert ks.get("/metrics", token=token)[0] == 403
            role = debugger_role(kube, namespace, "viewer")
            # Denials are cached for 10 s, as kube's delegating authorizer caches them.
            deadline = time.monotonic() + 30
            while (code := ks.get(path, token=token)[0]) != 200 and time.monotonic() < deadline:
                time.sleep(1)
            assert code == 200
            assert ks.get("/metrics", token=token)[0] == 200
            code, body = ks.get("/debug/decisions?limit=5", token=token)
            assert code == 200 and 1 <= len(json.loads(body)) <= 5
            assert ks.get("/debug/decisions?limit=0", token=token)[0] == 400
            assert ks.get(f"/debug/explain/{namespace}/ghost", token=token)[0] == 404

            # `kubesched explain` finds the leader through its Lease (the admin kubeconfig: a client certificate).
            done = explain_cli(f"{namespace}/web", "--config", str(config_file), "-o", "json")
            assert done.returncode == 0, done.stderr
            assert "no answer from the leader" not in done.stderr
            pending = json.loads(done.stdout)
            assert pending["record"] is not None and pending["record"]["result"] == "unschedulable"
            first = {n: g["plugin"] for g in pending["filter"]["rejected"] for n in g["nodes"]}
            assert first[names["cpu"]] == "NodeResourcesFit" and first[names["taint"]] == "TaintToleration"
            assert first[names["label"]] == "NodeAffinity"
            assert pending["filter"]["nearest"][0]["failed"][0]["detail"] == "needs 700m more cpu"

            # A token with the role, through a kubeconfig of its own.
            token_kubeconfig = kube.kubeconfig_for_token(token, tmp_path / "viewer.kubeconfig")
            done = explain_cli(f"{namespace}/api", "--config", str(config_file), "--kubeconfig", str(token_kubeconfig), "-o", "json")
            assert done.returncode == 0, done.stderr
            scheduled = json.loads(done.stdout)
            scores = scheduled["scores"]
            assert scheduled["status"] == "scheduled" and scheduled["node"] == node
            assert scores["source"] == "record" and scores["chosen"] == node
            for entry in scores["nodes"]:
                assert sum(p["weighted"] for p in entry["plugins"].values()) == entry["total"]
            assert scores["nodes"][0]["node"] == node
            assert scores["nodes"][0]["total"] == max(n["total"] for n in scores["nodes"])

            # A wrong fingerprint: nothing is sent.
            connection = load_connection(str(control_plane.admin_kubeconfig))
            wrong = "0" * 64
            try:
                asyncio.run(get(connection, annotations[DEBUG_ENDPOINT_ANNOTATION], path, pin=wrong, timeout=5))
                raise AssertionError("a wrong fingerprint was accepted")
            except LeaderUnreachable as exc:
                assert "not the one the leader published" in str(exc)
            assert annotations[DEBUG_CERT_ANNOTATION] != wrong
    finally:
        if role is not None:
            kube.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{role}", missing_ok=True)
            kube.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{role}", missing_ok=True)


def test_simulator_result_annotations_land_on_the_pod(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    prefix = "kube-scheduler-simulator.sigs.k8s.io/"
    tag = secrets.token_hex(3)
    names = three_reason_cluster(make_node, kube, namespace, tag)
    profile = {"plugins": {"postBind": {"enabled": [{"name": "SimulatorResultAnnotations"}]}}}
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig, extra_profile=profile)):
        create_pod(kube, "web", namespace, cpu="1", scheduler_name=SCHEDULER, extra_spec={"nodeSelector": {"disk": tag}})
        create_pod(kube, "api", namespace, cpu="100m", scheduler_name=SCHEDULER, extra_spec={"nodeSelector": {"disk": tag}})
        node = wait_bound(kube, namespace, "api")
        api = kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/api",
                            lambda p: prefix + "bind-result" in (p["metadata"].get("annotations") or {}))
        web = kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/web",
                            lambda p: prefix + "filter-result" in (p["metadata"].get("annotations") or {}))
    ann = api["metadata"]["annotations"]
    assert ann[prefix + "selected-node"] == node == names["cpu"]  # the only node with room and the label
    assert json.loads(ann[prefix + "bind-result"]) == {"DefaultBinder": "success"}
    filters = json.loads(ann[prefix + "filter-result"])
    assert filters[names["taint"]]["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert filters[names["label"]]["NodeAffinity"] == "node(s) didn't match Pod's node affinity/selector"
    verdicts = json.loads(web["metadata"]["annotations"][prefix + "filter-result"])
    assert verdicts[names["cpu"]]["NodeResourcesFit"] == "Insufficient cpu"
    assert web["metadata"]["annotations"][prefix + "selected-node"] == ""
