"""Dynamic resource allocation on a real API server, `kubesched run` under the deploy
ServiceAccount's RBAC: a pod's named claim is allocated and reserved for it by DynamicResources
(the claim's status written, no 403); a pod whose extended resource only DRA would serve is left
pending with the PodScheduled condition and the FailedScheduling event naming the missing part,
and nothing else of it is written."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from builders import make_device_class, make_pod, make_resource_claim, make_resource_slice
from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import PAUSE_IMAGE, create_pod, wait_bound
from integration.harness.rest import JSON, Kube

SCHEDULER = "kubesched"
DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
GPU = "example.com/gpu"
NEEDS_DRA = "which needs the DynamicResources plugin: kubesched does not implement it yet"
DRA = "/apis/resource.k8s.io/v1"


@pytest.fixture
def device_class(kube: Kube) -> Iterator[str]:
    """A DeviceClass (cluster-scoped, so removed here) that maps example.com/gpu to DRA."""
    name = f"kubesched-test-gpu-{secrets.token_hex(3)}"
    kube.create(f"{DRA}/deviceclasses", make_device_class(name, GPU))
    try:
        yield name
    finally:
        kube.delete(f"{DRA}/deviceclasses/{name}", missing_ok=True)


def as_deploy_service_account(kube: Kube, tmp_path: Path) -> Path:
    """The deploy manifests' namespace and RBAC applied; a kubeconfig with its ServiceAccount's token."""
    for f in ("namespace.yaml", "rbac.yaml"):
        for doc in yaml.safe_load_all((DEPLOY / f).read_text()):
            if doc:
                kube.apply_manifest(doc)
    token = kube.token_for("kubesched-system", "kubesched")
    return kube.kubeconfig_for_token(token, tmp_path / "sa.kubeconfig")


def scheduled_condition(pod: JSON) -> JSON | None:
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)


def without_condition(pod: JSON) -> JSON:
    """The pod as kubesched must leave it apart from its PodScheduled condition."""
    meta = {k: v for k, v in pod["metadata"].items() if k not in ("resourceVersion", "managedFields")}
    status = {k: v for k, v in pod["status"].items() if k != "conditions"}
    return {"metadata": meta, "spec": pod["spec"], "status": status}


def changes(kube: Kube, path: str, name: str, since: str, seconds: float) -> list[JSON]:
    """The watch events of one object after resourceVersion `since`, for `seconds`."""
    events: list[JSON] = []
    deadline = time.monotonic() + seconds
    for event in kube.watch(path, {"fieldSelector": f"metadata.name={name}", "resourceVersion": since,
                                   "allowWatchBookmarks": "false"}, timeout=seconds):
        events.append(event)
        if time.monotonic() >= deadline:
            break
    return events


def test_a_pod_with_a_named_claim_gets_its_device_allocated_and_reserved(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], device_class: str,
    tmp_path: Path,
) -> None:
    kubeconfig = as_deploy_service_account(kube, tmp_path)
    node = make_node(cpu="4")["metadata"]["name"]
    slice_name = f"{node}-gpus"
    kube.create(f"{DRA}/resourceslices", make_resource_slice(slice_name, node, devices=1))
    kube.create(f"{DRA}/namespaces/{namespace}/resourceclaims", make_resource_claim("gpu", device_class, namespace))
    kube.create(f"{DRA}/namespaces/{namespace}/resourceclaims", make_resource_claim("second", device_class, namespace))
    config = kubesched_config(kubeconfig, leader_elect=True, lease_namespace="kubesched-system")
    admin = (control_plane.admin_cert.cert_file, control_plane.admin_cert.key_file)
    try:
        with run_kubesched(tmp_path, config, reader_cert=admin) as ks:
            trainer = kube.create(f"/api/v1/namespaces/{namespace}/pods", (
                make_pod("trainer").ns(namespace).container("main", PAUSE_IMAGE).req(cpu="100m")
                .resource_claim("gpu", claim="gpu").scheduler(SCHEDULER).spec(terminationGracePeriodSeconds=0).manifest()))
            assert wait_bound(kube, namespace, "trainer") == node
            claim = kube.get(f"{DRA}/namespaces/{namespace}/resourceclaims/gpu")
            assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
            allocation = claim["status"]["allocation"]
            assert [(r["request"], r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]] == [
                ("device", "gpu.example.com", node, "gpu-0")]
            assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node]
            assert claim["status"]["reservedFor"] == [
                {"resource": "pods", "name": "trainer", "uid": trainer["metadata"]["uid"]}]
            # The only device is taken: a second pod's claim cannot be allocated, with kube's message.
            kube.create(f"/api/v1/namespaces/{namespace}/pods", (
                make_pod("second").ns(namespace).container("main", PAUSE_IMAGE).req(cpu="100m")
                .resource_claim("gpu", claim="second").scheduler(SCHEDULER).spec(terminationGracePeriodSeconds=0).manifest()))
            pod = kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/second", lambda p: scheduled_condition(p) is not None)
            cond = scheduled_condition(pod)
            nodes = len(kube.list("/api/v1/nodes"))
            assert cond is not None and cond["message"].startswith(
                f"0/{nodes} nodes are available: {nodes} cannot allocate all claims. preemption: "), cond
            for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                assert ks.metric("rest_client_requests_total", code="403", method=method) == 0, (method, ks.log())
    finally:
        for pod in ("trainer", "second"):
            kube.delete(f"/api/v1/namespaces/{namespace}/pods/{pod}", grace_period_seconds=0, missing_ok=True)
        kube.delete(f"{DRA}/resourceslices/{slice_name}", missing_ok=True)


def test_a_pod_whose_extended_resource_only_dra_serves_is_left_pending_and_untouched(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], device_class: str,
    tmp_path: Path,
) -> None:
    kubeconfig = as_deploy_service_account(kube, tmp_path)
    make_node(cpu="4")
    config = kubesched_config(kubeconfig, leader_elect=True, lease_namespace="kubesched-system")
    admin = (control_plane.admin_cert.cert_file, control_plane.admin_cert.key_file)
    try:
        with run_kubesched(tmp_path, config, reader_cert=admin) as ks:
            cuda = kube.create(f"/api/v1/namespaces/{namespace}/pods", (
                make_pod("cuda").ns(namespace).container("main", PAUSE_IMAGE).req({"cpu": "100m", GPU: "1"}).limits({GPU: "1"})
                .scheduler(SCHEDULER).spec(terminationGracePeriodSeconds=0).manifest()))
            # A pod without DRA is bound as ever (and its bind is an event the pending ones ignore).
            create_pod(kube, "plain", namespace, scheduler_name=SCHEDULER)
            wait_bound(kube, namespace, "plain")
            nodes = len(kube.list("/api/v1/nodes"))
            expected = {
                "cuda": f'0/{nodes} nodes are available: pod uses dynamic resource allocation (extended resource "{GPU}" of '
                        f'DeviceClass "{device_class}"), {NEEDS_DRA}.',
            }
            for name, created in (("cuda", cuda),):
                pod = kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/{name}", lambda p: scheduled_condition(p) is not None)
                cond = scheduled_condition(pod)
                assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")
                assert cond["message"].startswith(expected[name] + " preemption: "), cond["message"]
                assert not pod["spec"].get("nodeName") and not pod["status"].get("nominatedNodeName")
                # One write to the pod, its condition: nothing else of it changed, then or since.
                assert without_condition(pod) == without_condition(created)
                seen = changes(kube, f"/api/v1/namespaces/{namespace}/pods", name, created["metadata"]["resourceVersion"], 3.0)
                assert [e["type"] for e in seen] == ["MODIFIED"], seen
                assert seen[0]["object"]["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
                failed = [e for e in kube.list(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
                          if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == name]
                # Attempted once: no cluster event (the bind above included) retries it.
                assert len(failed) == 1 and not failed[0].get("series"), failed
                assert failed[0]["note"] == cond["message"] and failed[0]["reportingController"] == SCHEDULER
            for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                assert ks.metric("rest_client_requests_total", code="403", method=method) == 0, (method, ks.log())
    finally:
        for pod in ("cuda", "plain"):
            kube.delete(f"/api/v1/namespaces/{namespace}/pods/{pod}", grace_period_seconds=0, missing_ok=True)
