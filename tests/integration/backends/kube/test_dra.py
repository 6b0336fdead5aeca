"""Dynamic resource allocation on a real API server, `kubesched run` under the deploy
ServiceAccount's RBAC: a pod's named claim is allocated and reserved for it by DynamicResources
(the claim's status written, no 403), and `explain` on the debug port says why a second pod's claim
cannot be had and which device the first got; a pod whose extended resource DRA serves gets the claim
DynamicResources creates for it, allocated, reserved and named in the pod's status."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

from builders import make_pod, make_resource_claim, make_resource_slice
from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import PAUSE_IMAGE, wait_bound
from integration.harness.rest import JSON, Kube

SCHEDULER = "kubesched"
DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
GPU = "example.com/gpu"
DRA = "/apis/resource.k8s.io/v1"


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
            # explain, through the leader's debug port: why the claim cannot be had on the node, and
            # which device the placed pod got.
            code, body = ks.get(f"/debug/explain/{namespace}/second")
            assert code == 200, body
            miss = json.loads(body)["filter"]["nearest"][0]
            assert miss == {"node": node, "failed": [{
                "plugin": "DynamicResources", "reason": "cannot allocate all claims",
                "detail": f'ResourceClaim {namespace}/second, request device: needs 1 device(s) of DeviceClass '
                          f'"{device_class}", 0 of the 1 matching here can be had: 1 in use by 1 claim(s) ({namespace}/gpu)'}]}
            code, body = ks.get(f"/debug/explain/{namespace}/trainer")
            assert code == 200, body
            assert json.loads(body)["devices"] == [{"claim": f"{namespace}/gpu", "pod_claim": "gpu", "devices": [
                {"request": "device", "driver": "gpu.example.com", "pool": node, "device": "gpu-0"}]}]
            for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                assert ks.metric("rest_client_requests_total", code="403", method=method) == 0, (method, ks.log())
    finally:
        for pod in ("trainer", "second"):
            kube.delete(f"/api/v1/namespaces/{namespace}/pods/{pod}", grace_period_seconds=0, missing_ok=True)
        kube.delete(f"{DRA}/resourceslices/{slice_name}", missing_ok=True)


def test_a_pod_whose_extended_resource_dra_serves_gets_a_claim_created_allocated_and_named_in_its_status(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], device_class: str,
    tmp_path: Path,
) -> None:
    kubeconfig = as_deploy_service_account(kube, tmp_path)
    node = make_node(cpu="4")["metadata"]["name"]
    slice_name = f"{node}-gpus"
    kube.create(f"{DRA}/resourceslices", make_resource_slice(slice_name, node, devices=1))
    config = kubesched_config(kubeconfig, leader_elect=True, lease_namespace="kubesched-system")
    admin = (control_plane.admin_cert.cert_file, control_plane.admin_cert.key_file)
    try:
        with run_kubesched(tmp_path, config, reader_cert=admin) as ks:
            cuda = kube.create(f"/api/v1/namespaces/{namespace}/pods", (
                make_pod("cuda").ns(namespace).container("main", PAUSE_IMAGE).req({"cpu": "100m", GPU: "1"}).limits({GPU: "1"})
                .scheduler(SCHEDULER).spec(terminationGracePeriodSeconds=0).manifest()))
            assert wait_bound(kube, namespace, "cuda") == node
            pod = kube.get(f"/api/v1/namespaces/{namespace}/pods/cuda")
            status = pod["status"]["extendedResourceClaimStatus"]
            assert status["requestMappings"] == [
                {"containerName": "main", "resourceName": GPU, "requestName": "container-0-request-1"}]
            claim = kube.get(f"{DRA}/namespaces/{namespace}/resourceclaims/{status['resourceClaimName']}")
            meta = claim["metadata"]
            assert meta["generateName"] == "cuda-extended-resources-"
            assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
            assert [(o["kind"], o["name"], o["uid"], o["controller"]) for o in meta["ownerReferences"]] == [
                ("Pod", "cuda", cuda["metadata"]["uid"], True)]
            assert "resource.kubernetes.io/delete-protection" in meta["finalizers"]
            results = claim["status"]["allocation"]["devices"]["results"]
            assert [(r["request"], r["pool"], r["device"]) for r in results] == [("container-0-request-1", node, "gpu-0")]
            assert [r["name"] for r in claim["status"]["reservedFor"]] == ["cuda"]
            for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                assert ks.metric("rest_client_requests_total", code="403", method=method) == 0, (method, ks.log())
    finally:
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/cuda", grace_period_seconds=0, missing_ok=True)
        kube.delete(f"{DRA}/resourceslices/{slice_name}", missing_ok=True)
