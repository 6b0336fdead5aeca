"""The harness itself, against the real binaries: what later integration tests rely on."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

from integration.harness import binaries as binaries_mod
from integration.harness.binaries import Binaries, BinariesMissing, pinned_kube_version
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, ApiError, Kube
from integration.harness.sockets import listening_addresses
from kubesched.tools.devcluster.procs import ProcessDied

T = TypeVar("T")


def test_apiserver_ready_and_reports_pinned_version(control_plane: ControlPlane, kube: Kube) -> None:
    status, body = kube.request_raw("GET", "/readyz")
    assert (status, body) == (200, b"ok")
    version = kube.get("/version")
    expected = control_plane.binaries.kube_version()
    assert version["gitVersion"] == expected
    if not os.environ.get("KUBEBUILDER_ASSETS"):
        assert expected == pinned_kube_version() == "v1.37.2"
    assert control_plane.server.startswith("https://127.0.0.1:")


def test_admin_identity_and_kubeconfigs(control_plane: ControlPlane, kube: Kube) -> None:
    who = kube.whoami()
    assert who["username"] == "kubesched-admin"
    assert "system:masters" in who["groups"]

    embedded = yaml.safe_load(control_plane.admin_kubeconfig.read_text())
    assert embedded["clusters"][0]["cluster"]["server"] == control_plane.server
    assert embedded["users"][0]["user"].keys() == {"client-certificate-data", "client-key-data"}
    by_path = yaml.safe_load(control_plane.admin_kubeconfig_files.read_text())
    assert Path(by_path["clusters"][0]["cluster"]["certificate-authority"]) == control_plane.ca_file
    user = by_path["users"][0]["user"]
    assert Path(user["client-certificate"]).is_file() and Path(user["client-key"]).is_file()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_listens_only_on_loopback(control_plane: ControlPlane) -> None:
    procs = [p for p in (control_plane.etcd, control_plane.apiserver) if p is not None]
    addresses = listening_addresses([p.pid for p in procs if p.pid])
    assert addresses, "found no listening socket of etcd / kube-apiserver"
    assert all(a.startswith("127.0.0.1:") for a in addresses), addresses
    assert f"127.0.0.1:{control_plane.apiserver_port}" in addresses
    assert f"127.0.0.1:{control_plane.etcd_port}" in addresses


def test_real_kube_scheduler_binds_a_pod(control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON]) -> None:
    node = make_node(cpu="4", memory="32Gi", pods=110)
    node_name = node["metadata"]["name"]
    assert node["status"]["allocatable"]["cpu"] == "4"
    assert not node["spec"].get("taints")  # the admission plugin's not-ready taint is cleared
    with run_kube_scheduler(control_plane) as sched:
        assert sched.get("/healthz") == (200, "ok")
        create_pod(kube, "p1", namespace, cpu="500m", memory="1Gi")
        assert wait_bound(kube, namespace, "p1", timeout=30) == node_name
        pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/p1")
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
        assert conditions.get("PodScheduled") == "True"

        def scheduled_event() -> JSON:
            events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
            return next(e for e in events if e["regarding"]["name"] == "p1" and e["reason"] == "Scheduled")

        event = _eventually(scheduled_event, timeout=15)
        assert node_name in event["note"]


def test_kube_scheduler_reports_unschedulable(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON]
) -> None:
    make_node(cpu="1", memory="2Gi")
    with run_kube_scheduler(control_plane, qps=50, burst=100):
        create_pod(kube, "too-big", namespace, cpu="64", memory="1Gi")
        pod = kube.wait_for(
            f"/api/v1/namespaces/{namespace}/pods/too-big",
            lambda p: any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in p["status"].get("conditions", [])),
            timeout=30,
        )
    message = next(c["message"] for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert "Insufficient cpu" in message
    assert not pod["spec"].get("nodeName")


def test_kube_scheduler_leader_election_takes_a_lease(control_plane: ControlPlane, kube: Kube, namespace: str) -> None:
    with run_kube_scheduler(control_plane, leader_elect=True, lease_name="harness-sched", lease_namespace=namespace):
        lease = kube.wait_for(
            f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/harness-sched",
            lambda lease: bool(lease["spec"].get("holderIdentity")),
            timeout=30,
        )
        assert lease["spec"]["leaseDurationSeconds"] == 15


def test_restart_apiserver_keeps_data(control_plane: ControlPlane, kube: Kube, namespace: str) -> None:
    server = control_plane.server
    cm = kube.apply_manifest(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep", "namespace": namespace}, "data": {"k": "v"}}
    )
    old_pid = control_plane.apiserver.pid if control_plane.apiserver else None
    control_plane.restart_apiserver()
    assert control_plane.server == server
    assert control_plane.apiserver is not None and control_plane.apiserver.pid != old_pid
    # The same client keeps working: its kept-alive connection is re-opened.
    again = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/keep")
    assert again["metadata"]["uid"] == cm["metadata"]["uid"]
    assert again["data"] == {"k": "v"}


def test_compaction_then_restart_makes_old_watch_gone(control_plane: ControlPlane, kube: Kube, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    first = kube.create(path, {"metadata": {"name": "c0"}, "data": {"i": "0"}})
    old_rv = first["metadata"]["resourceVersion"]
    for i in range(1, 4):
        kube.create(path, {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}})
    before = control_plane.etcd_revision()
    compacted = control_plane.compact_etcd()
    assert compacted >= before > int(old_rv)
    control_plane.restart_apiserver()

    try:
        events = list(kube.watch(path, {"resourceVersion": old_rv}, timeout=10))
    except ApiError as e:
        assert e.status == 410, e
    else:
        assert events, "the watch ended without an event"
        assert events[0]["type"] == "ERROR", events[0]
        assert events[0]["object"]["code"] == 410, events[0]

    # A watch from a current resourceVersion still works after all this.
    rv = kube.get(path)["metadata"]["resourceVersion"]
    kube.create(path, {"metadata": {"name": "after"}})
    stream = kube.watch(path, {"resourceVersion": rv, "timeoutSeconds": 5}, timeout=10)
    event = next(stream)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")


def test_token_request_token_authenticates(kube: Kube, namespace: str, tmp_path: Path) -> None:
    kube.apply_manifest({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", "namespace": namespace}})
    token = kube.token_for(namespace, "robot", seconds=3600)
    robot = kube.with_token(token)
    who = robot.whoami()
    assert who["username"] == f"system:serviceaccount:{namespace}:robot"
    assert f"system:serviceaccounts:{namespace}" in who["groups"]

    with pytest.raises(ApiError) as denied:
        robot.get("/api/v1/nodes")
    assert denied.value.status == 403
    assert f"system:serviceaccount:{namespace}:robot" in denied.value.message

    # RBAC applied through the helper lets it in, and a kubeconfig carries the token.
    kube.apply_manifests(
        f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: cm-reader, namespace: {namespace}}}
rules: [{{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: robot-reads, namespace: {namespace}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}}
subjects: [{{kind: ServiceAccount, name: robot, namespace: {namespace}}}]
"""
    )
    _eventually(lambda: robot.list(f"/api/v1/namespaces/{namespace}/configmaps") is not None, timeout=10)
    config = yaml.safe_load(kube.kubeconfig_for_token(token, tmp_path / "robot.kubeconfig").read_text())
    assert config["users"][0]["user"] == {"token": token}
    assert config["clusters"][0]["cluster"]["server"] == kube.server


def test_stop_kills_every_process(fresh_control_plane: ControlPlane) -> None:
    cp = fresh_control_plane
    assert cp.startup_seconds is not None and cp.startup_seconds < 60
    pids = [p.pid for p in (cp.etcd, cp.apiserver) if p is not None and p.pid]
    assert len(pids) == 2
    with run_kube_scheduler(cp) as sched:
        assert sched.running()
        pids.append(sched.process.pid or 0)
    cp.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_dying_process_is_reported_with_its_log(tmp_path: Path) -> None:
    fake = tmp_path / "etcd"
    fake.write_text("#!/bin/sh\necho 'etcd: cannot start: simulated failure' >&2\nexit 3\n")
    fake.chmod(0o755)
    cp = ControlPlane(Binaries(fake, fake, None, "test"), workdir=tmp_path / "cp", start_timeout=10)
    with pytest.raises(ProcessDied, match=r"(?s)exited with code 3.*simulated failure"):
        cp.start()
    assert cp.etcd is not None and not cp.etcd.running()


def test_missing_binaries_skip_locally_and_fail_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("KUBESCHED_K8S_CACHE", str(tmp_path))
    with pytest.raises(BinariesMissing, match="make k8s-bin"):
        binaries_mod.find_binaries()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="make k8s-bin"):
        binaries_mod.require_binaries()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        binaries_mod.require_binaries()

    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    with pytest.raises(BinariesMissing, match="KUBEBUILDER_ASSETS"):
        binaries_mod.find_binaries()
    assert binaries_mod.cache_dir() == tmp_path / f"k8s-{pinned_kube_version()}"


def _eventually(fn: Callable[[], T], *, timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = fn()
            if result:
                return result
        except (StopIteration, ApiError):
            if time.monotonic() >= deadline:
                raise
        if time.monotonic() >= deadline:
            raise AssertionError(f"not true within {timeout} s")
        time.sleep(0.1)
