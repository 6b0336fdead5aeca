"""The kube backend's writes for the claim behind a pod's extended resources served by DRA, on a
real kube-apiserver under the deploy ServiceAccount's RBAC: the claim created under a generated
name (owned by the pod, annotated), the pod's status.extendedResourceClaimStatus patched, and the
claim deleted on its uid (refused for another uid, no error once gone)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from builders import make_pod
from integration.backends.kube.test_dra import DRA, as_deploy_service_account
from integration.harness.objects import PAUSE_IMAGE
from integration.harness.rest import Kube
from kubesched.api.dra import ResourceClaimWriteError
from kubesched.api.objects import Pod
from kubesched.api.podinfo import make_pod_info
from kubesched.backends.kube.backend import KubeBackend
from kubesched.backends.kube.events import EventRecorder
from kubesched.client import ApiClient, load_kubeconfig
from kubesched.devices.extendedclaim import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    claim_to_create,
    extended_claim_status,
    in_memory_claim,
    requests_and_mappings,
    with_requests,
)

GPU = "example.com/gpu"


class OneClass:
    def class_for(self, resource: str) -> str | None:
        return "gpu" if resource == GPU else None


async def test_claim_created_pod_status_patched_claim_deleted(kube: Kube, namespace: str, tmp_path: Path) -> None:
    kubeconfig = as_deploy_service_account(kube, tmp_path)
    manifest = (make_pod("cuda").ns(namespace).container("main", PAUSE_IMAGE)
                .req({"cpu": "100m", GPU: "1"}).limits({GPU: "1"}).manifest())
    manifest["spec"]["schedulerName"] = "nobody"  # left alone by any scheduler running
    stored_pod = kube.create(f"/api/v1/namespaces/{namespace}/pods", manifest)
    pod = msgspec.convert(stored_pod, Pod, strict=False)
    requests, mappings = requests_and_mappings(pod, {GPU: 1}, OneClass())
    wanted = claim_to_create(with_requests(in_memory_claim(pod), requests))
    async with ApiClient(load_kubeconfig(str(kubeconfig))) as client:
        backend = KubeBackend(client, EventRecorder(client, "kubesched", "test"))
        created = await backend.create_resource_claim(wanted)
        name = created.metadata.name
        assert name.startswith("cuda-extended-resources-") and created.metadata.uid
        raw = kube.get(f"{DRA}/namespaces/{namespace}/resourceclaims/{name}")
        assert raw["metadata"]["annotations"] == {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"}
        assert raw["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "cuda", "uid": pod.metadata.uid, "controller": True}]
        assert raw["spec"]["devices"]["requests"] == [{"name": "container-0-request-1", "exactly": {
            "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]

        await backend.set_extended_resource_claim_status(make_pod_info(pod), extended_claim_status(pod, mappings, name))
        status = kube.get(f"/api/v1/namespaces/{namespace}/pods/cuda")["status"]
        assert status["extendedResourceClaimStatus"] == {
            "requestMappings": [{"containerName": "main", "resourceName": GPU, "requestName": "container-0-request-1"}],
            "resourceClaimName": name}

        refused = r"the UID in the precondition \(0{8}-0{4}-0{4}-0{4}-0{12}\) does not match the UID in record"
        with pytest.raises(ResourceClaimWriteError, match=refused) as err:
            await backend.delete_resource_claim(namespace, name, "00000000-0000-0000-0000-000000000000")
        assert err.value.conflict
        assert kube.get_or_none(f"{DRA}/namespaces/{namespace}/resourceclaims/{name}") is not None
        await backend.delete_resource_claim(namespace, name, created.metadata.uid)
        assert kube.get_or_none(f"{DRA}/namespaces/{namespace}/resourceclaims/{name}") is None
        await backend.delete_resource_claim(namespace, name, created.metadata.uid)  # gone: no error
