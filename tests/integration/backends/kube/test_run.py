"""`kubesched run` against a real etcd + kube-apiserver (and the real kube-scheduler as a peer).

Every assertion reads the API server: bindings, events, pod conditions, the Lease. Each test
starts kubesched as its own process, as a Deployment would run it.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builders import make_namespace, make_pdb, make_priority_class
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, create_ready_node, wait_bound
from integration.harness.rest import JSON, Kube
from kubesched.api.quantity import parse_quantity
from kubesched.tools.devcluster.procs import wait_until

SCHEDULER = "kubesched"


def pods_in(kube: Kube, namespace: str) -> list[JSON]:
    return kube.list(f"/api/v1/namespaces/{namespace}/pods")


def events_in(kube: Kube, namespace: str) -> list[JSON]:
    return kube.list(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")


def all_bound(kube: Kube, namespace: str, count: int) -> bool:
    pods = pods_in(kube, namespace)
    return len(pods) == count and all(p["spec"].get("nodeName") for p in pods)


def assert_no_node_overcommitted(kube: Kube) -> None:
    """Sum of requests of the pods bound to each node never exceeds its allocatable."""
    nodes = {n["metadata"]["name"]: n["status"]["allocatable"] for n in kube.list("/api/v1/nodes")}
    used: dict[str, Counter[str]] = {name: Counter() for name in nodes}
    for pod in kube.list("/api/v1/pods"):
        node = pod["spec"].get("nodeName")
        if not node or node not in used or pod["status"].get("phase") in ("Succeeded", "Failed"):
            continue
        used[node]["pods"] += 1
        for c in pod["spec"]["containers"]:
            for resource, q in c.get("resources", {}).get("requests", {}).items():
                used[node][resource] += float(parse_quantity(q))
    for name, alloc in nodes.items():
        for resource, amount in used[name].items():
            assert amount <= float(parse_quantity(alloc.get(resource, "0"))) + 1e-9, (name, resource, amount, alloc)


def scheduled_events(kube: Kube, namespace: str) -> Counter[str]:
    return Counter(e["regarding"]["name"] for e in events_in(kube, namespace) if e.get("reason") == "Scheduled")


# --- binding, events and conditions ------------------------------------------------------------


def test_binds_pods_and_explains_an_unschedulable_one(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    small = make_node(cpu="2", memory="4Gi")["metadata"]["name"]
    tainted = make_node(cpu="8", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])["metadata"]["name"]
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)) as ks:
        for i in range(5):
            create_pod(kube, f"web-{i}", namespace, cpu="200m", scheduler_name=SCHEDULER)
        create_pod(kube, "huge", namespace, cpu="6", scheduler_name=SCHEDULER)
        for i in range(5):
            assert wait_bound(kube, namespace, f"web-{i}") == small  # the tainted node is not tolerated
        pod = kube.wait_for(
            f"/api/v1/namespaces/{namespace}/pods/huge",
            lambda p: any(c["type"] == "PodScheduled" and c["status"] == "False" for c in p["status"].get("conditions", [])),
        )
        cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert not pod["spec"].get("nodeName")
        assert cond["reason"] == "Unschedulable"
        nodes_total = len(kube.list("/api/v1/nodes"))
        assert cond["message"].startswith(f"0/{nodes_total} nodes are available: ")
        assert "Insufficient cpu" in cond["message"]
        assert "node(s) had untolerated taint(s)" in cond["message"]
        events = events_in(kube, namespace)
        failed = [e for e in events if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == "huge"]
        assert failed and failed[0]["note"] == cond["message"]
        assert failed[0]["type"] == "Warning" and failed[0]["reportingController"] == SCHEDULER
        scheduled = [e for e in events if e["reason"] == "Scheduled"]
        assert {e["note"] for e in scheduled} == {f"Successfully assigned {namespace}/web-{i} to {small}" for i in range(5)}
        assert ks.metric("scheduler_schedule_attempts_total", result="scheduled", profile=SCHEDULER) == 5
        assert ks.metric("scheduler_schedule_attempts_total", result="unschedulable", profile=SCHEDULER) >= 1
    del tainted


def test_readyz_and_metrics(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    make_node()
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)) as ks:
        status, body = ks.get("/readyz?verbose")
        assert status == 200
        assert "[+]sched-handler-sync ok" in body and "[+]leaderElection-known ok" in body
        assert ks.get("/livez") == (200, "ok")
        assert ks.get("/healthz") == (200, "ok")
        create_pod(kube, "p", namespace, scheduler_name=SCHEDULER)
        wait_bound(kube, namespace, "p")
        _, text = ks.get("/metrics")
        for name in (
            "scheduler_schedule_attempts_total",
            "scheduler_scheduling_attempt_duration_seconds_bucket",
            "scheduler_pending_pods",
            "scheduler_framework_extension_point_duration_seconds_bucket",
            "scheduler_plugin_execution_duration_seconds_bucket",
            "scheduler_preemption_attempts_total",
            "rest_client_requests_total",
            "leader_election_master_status",
        ):
            assert name in text, name
        wait_until(lambda: ks.metric("scheduler_pending_pods", queue="active") == 0, timeout=10, what="empty activeQ")


# --- coexistence with kube-scheduler ----------------------------------------------------------------


def test_side_by_side_with_kube_scheduler(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    for _ in range(3):
        make_node()
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)):
        for i in range(10):
            create_pod(kube, f"theirs-{i}", namespace)  # schedulerName defaults to default-scheduler
            create_pod(kube, f"ours-{i}", namespace, scheduler_name=SCHEDULER)
        for i in range(10):
            wait_bound(kube, namespace, f"ours-{i}")
        time.sleep(1.0)
        assert not any(p["spec"].get("nodeName") for p in pods_in(kube, namespace) if p["metadata"]["name"].startswith("theirs"))
        with run_kube_scheduler(control_plane, qps=5000, burst=5000):
            for i in range(10):
                wait_bound(kube, namespace, f"theirs-{i}")
    by_controller: dict[str, set[str]] = {}
    for e in events_in(kube, namespace):
        if e["reason"] == "Scheduled":
            by_controller.setdefault(e["reportingController"], set()).add(e["regarding"]["name"])
    assert by_controller[SCHEDULER] == {f"ours-{i}" for i in range(10)}
    assert by_controller["default-scheduler"] == {f"theirs-{i}" for i in range(10)}


# --- surviving the control plane ------------------------------------------------------------------------


def test_watch_survives_compaction_and_apiserver_restart(fresh_control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = fresh_control_plane
    kube = cp.kube()
    # Tight on purpose: the second batch fits only if kubesched learned of every deletion and
    # of the new node, which it can only have done through the re-list.
    for i in range(4):
        create_ready_node(kube, f"node-{i}", cpu="1", memory="8Gi")
    ns = "survive"
    kube.create("/api/v1/namespaces", make_namespace(ns))
    with run_kubesched(tmp_path, kubesched_config(cp.admin_kubeconfig)) as ks:
        for i in range(20):
            create_pod(kube, f"a-{i}", ns, cpu="150m", scheduler_name=SCHEDULER)
        wait_until(lambda: all_bound(kube, ns, 20), timeout=60, what="first batch bound", watch=[ks.process])
        # Changes kubesched cannot see while the API server is down, after a compaction that
        # makes its last resourceVersion too old: the watch must answer 410 and re-list.
        cp.kill_apiserver()
        cp.compact_etcd()
        cp.start_apiserver_again()
        for i in range(0, 20, 2):
            kube.delete(f"/api/v1/namespaces/{ns}/pods/a-{i}", grace_period_seconds=0)
        create_ready_node(kube, "node-late", cpu="1", memory="8Gi")
        cp.restart_apiserver()
        for i in range(20):  # 10 left + 20 = 30 pods of 150m = exactly 6 per node on 5 nodes
            create_pod(kube, f"b-{i}", ns, cpu="150m", scheduler_name=SCHEDULER)
        wait_until(lambda: all_bound(kube, ns, 30), timeout=90, what="second batch bound", watch=[ks.process])
        relists = ks.metric("kubesched_watch_events_total", resource="pods", kind="relist")
        assert relists >= 1, ks.log()
    counts = scheduled_events(kube, ns)
    assert all(n == 1 for n in counts.values()), counts
    assert_no_node_overcommitted(kube)
    per_node = Counter(p["spec"]["nodeName"] for p in pods_in(kube, ns))
    assert sorted(per_node.values()) == [6] * 5, per_node


# --- high availability -----------------------------------------------------------------------------------


def lease_holder(kube: Kube, namespace: str = "kube-system") -> str | None:
    lease = kube.get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/kubesched")
    return (lease or {}).get("spec", {}).get("holderIdentity") or None


def test_two_replicas_one_leads_and_a_crash_hands_over(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    for _ in range(3):
        make_node()
    config = kubesched_config(control_plane.admin_kubeconfig, leader_elect=True, lease_duration="6s", renew_deadline="4s",
                              retry_period="1s")
    with run_kubesched(tmp_path / "a", config, wait_ready=False) as a, run_kubesched(tmp_path / "b", config, wait_ready=False) as b:
        a.wait_ready()
        b.wait_ready()
        holder = wait_until(lambda: lease_holder(kube), timeout=30, what="a lease holder")
        leaders = [ks for ks in (a, b) if ks.metric("leader_election_master_status", name="kubesched") == 1]
        assert len(leaders) == 1
        leader, standby = leaders[0], (b if leaders[0] is a else a)
        for i in range(10):
            create_pod(kube, f"first-{i}", namespace, scheduler_name=SCHEDULER)
        wait_until(lambda: all_bound(kube, namespace, 10), timeout=30, what="first pods bound")
        instances = {e["reportingInstance"] for e in events_in(kube, namespace) if e["reason"] == "Scheduled"}
        assert instances == {f"{SCHEDULER}-{holder}"}
        assert standby.metric("scheduler_schedule_attempts_total", result="scheduled", profile=SCHEDULER) == 0

        leader.process.kill()  # a crash: the Lease is not released
        killed_at = time.monotonic()
        for i in range(10):
            create_pod(kube, f"second-{i}", namespace, scheduler_name=SCHEDULER)
        wait_until(lambda: all_bound(kube, namespace, 20), timeout=30, what="second pods bound", watch=[standby.process])
        handover = time.monotonic() - killed_at
        new_holder = lease_holder(kube)
        assert new_holder and new_holder != holder
        assert handover < 6 + 4, f"handover took {handover:.1f}s"  # lease duration, plus a retry and the binds
    counts = scheduled_events(kube, namespace)
    assert len(counts) == 20 and all(n == 1 for n in counts.values()), counts


def test_graceful_stop_releases_the_lease_at_once(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    make_node()
    config = kubesched_config(control_plane.admin_kubeconfig, leader_elect=True, retry_period="1s")
    with run_kubesched(tmp_path / "a", config) as a, run_kubesched(tmp_path / "b", config) as b:
        wait_until(lambda: lease_holder(kube), timeout=30, what="a lease holder")
        leader = a if a.metric("leader_election_master_status", name="kubesched") == 1 else b
        standby = b if leader is a else a
        leader.process.stop()  # SIGTERM, as a rolling update does
        stopped = time.monotonic()
        wait_until(lambda: standby.metric("leader_election_master_status", name="kubesched") == 1,
                   timeout=10, what="the standby leading")
        assert time.monotonic() - stopped < 5, "a released lease is taken at the next retry, not after 15 s"
        create_pod(kube, "after", namespace, scheduler_name=SCHEDULER)
        wait_bound(kube, namespace, "after")


# --- least privilege --------------------------------------------------------------------------------------

DEPLOY = Path(__file__).resolve().parents[4] / "deploy"


def test_runs_with_only_the_deploy_rbac(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    import yaml

    docs = [d for f in ("namespace.yaml", "rbac.yaml") for d in yaml.safe_load_all((DEPLOY / f).read_text()) if d]
    for doc in docs:
        kube.apply_manifest(doc)
    role = kube.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/kubesched")
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule
        assert "secrets" not in rule["resources"]
    token = kube.token_for("kubesched-system", "kubesched")
    kubeconfig = kube.kubeconfig_for_token(token, tmp_path / "sa.kubeconfig")
    as_sa = kube.with_token(token)
    assert as_sa.whoami()["username"] == "system:serviceaccount:kubesched-system:kubesched"
    node = make_node(cpu="1")["metadata"]["name"]
    config = kubesched_config(kubeconfig, leader_elect=True, lease_namespace="kubesched-system")
    admin = (control_plane.admin_cert.cert_file, control_plane.admin_cert.key_file)
    # A budget over the victim: kubesched lists and watches budgets, and weighs this one (it allows
    # no disruption: no controller computes its status here) without being able to spare the pod.
    kube.create(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
                make_pdb("low", namespace=namespace, min_available=1, match_labels={"app": "low"}))
    with run_kubesched(tmp_path, config, reader_cert=admin) as ks:
        create_pod(kube, "low", namespace, cpu="600m", scheduler_name=SCHEDULER, priority_class=_priority(kube, "low", 10),
                   labels={"app": "low"})
        wait_bound(kube, namespace, "low")
        create_pod(kube, "too-big", namespace, cpu="4", scheduler_name=SCHEDULER)
        create_pod(kube, "high", namespace, cpu="600m", scheduler_name=SCHEDULER, priority_class=_priority(kube, "high", 1000))
        # Preemption: the victim gets deleted, the preemptor nominated then bound.
        assert wait_bound(kube, namespace, "high", timeout=60) == node
        kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/too-big",
                      lambda p: any(c["type"] == "PodScheduled" for c in p["status"].get("conditions", [])))
        assert kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/low") is None
        assert lease_holder(kube, "kubesched-system")
        assert ks.metric("rest_client_requests_total", code="403", method="POST") == 0
        for method in ("GET", "PATCH", "DELETE", "PUT"):
            assert ks.metric("rest_client_requests_total", code="403", method=method) == 0, (method, ks.log())
        assert ks.metric("scheduler_preemption_pdb_violations_total", preemptor="pod") == 1
    reasons = {e["reason"] for e in events_in(kube, namespace)}
    assert {"Scheduled", "FailedScheduling", "Preempted"} <= reasons


def _priority(kube: Kube, name: str, value: int) -> str:
    full = f"kubesched-test-{name}-{secrets.token_hex(2)}"
    kube.create("/apis/scheduling.k8s.io/v1/priorityclasses",
                make_priority_class(full, value))
    return full


@pytest.fixture(autouse=True)
def _no_leftover_lease(kube: Kube) -> Any:
    """Each test elects afresh: a previous test's holder must not look alive."""
    for ns in ("kube-system", "kubesched-system"):
        kube.delete(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/kubesched", missing_ok=True)
    yield
