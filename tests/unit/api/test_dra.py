"""Dynamic resource allocation in the API layer: the Pod's claims validated as kube-apiserver v1.37.2
validates them (every expected message below is the API server's, from a server-side dry run, less
its `Pod "p" is invalid: ` head), the DRA kinds' validation, and what PodInfo says of DRA."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_pod
from kubesched.api.dra import DeviceClass, DeviceClassSpec, mapped_resource_names
from kubesched.api.objects import ObjectMeta
from kubesched.api.podinfo import make_pod_info
from kubesched.api.validation import aggregate, validate_manifest
from unit.api.test_validation import LABEL_MSG, SUBDOMAIN_MSG, VALUE_MSG

C0 = "spec.containers[0].resources.claims"
GPU_CLAIM = [{"name": "gpu", "resourceClaimName": "a"}]


def pod(claims: list[dict[str, Any]] | None = None, container: dict[str, Any] | None = None,
        **spec: Any) -> dict[str, Any]:
    c = {"name": "c", "image": "x", **(container or {})}
    body: dict[str, Any] = {"containers": [c], **spec}
    if claims is not None:
        body["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": body}


POD_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("a claim", pod(GPU_CLAIM, {"resources": {"claims": [{"name": "gpu"}]}}), ""),
    ("a template", pod([{"name": "gpu", "resourceClaimTemplateName": "t"}]), ""),
    ("one request of a claim, then another", pod(GPU_CLAIM, {"resources": {"claims": [
        {"name": "gpu", "request": "a"}, {"name": "gpu", "request": "b"}]}}), ""),
    ("neither source", pod([{"name": "gpu"}]),
     'spec.resourceClaims[0]: Invalid value: {"Name":"gpu","ResourceClaimName":null,"ResourceClaimTemplateName":null}: '
     "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"),
    ("both sources", pod([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]),
     'spec.resourceClaims[0]: Invalid value: {"Name":"gpu","ResourceClaimName":"a","ResourceClaimTemplateName":"b"}: '
     "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"),
    ("bad names", pod([{"name": "Gpu", "resourceClaimName": "A_b"}]),
     f'[spec.resourceClaims[0].name: Invalid value: "Gpu": {LABEL_MSG}, '
     f'spec.resourceClaims[0].resourceClaimName: Invalid value: "A_b": {SUBDOMAIN_MSG}]'),
    ("bad template name", pod([{"name": "gpu", "resourceClaimTemplateName": "t-"}]),
     f'spec.resourceClaims[0].resourceClaimTemplateName: Invalid value: "t-": {SUBDOMAIN_MSG}'),
    ("a name twice", pod([*GPU_CLAIM, {"name": "gpu", "resourceClaimName": "b"}]),
     'spec.resourceClaims[1].name: Duplicate value: "gpu"'),
    ("no name", pod([{"resourceClaimName": "a"}]), "spec.resourceClaims[0].name: Required value"),
    ("a claim used twice", pod(GPU_CLAIM, {"resources": {"claims": [{"name": "gpu"}, {"name": "gpu"}]}}),
     f'{C0}[1]: Duplicate value: "gpu"'),
    ("a claim after one of its requests", pod(GPU_CLAIM, {"resources": {"claims": [
        {"name": "gpu", "request": "r"}, {"name": "gpu"}]}}), f'{C0}[1]: Duplicate value: "gpu"'),
    ("a request twice, badly named", pod(GPU_CLAIM, {"resources": {"claims": [
        {"name": "gpu", "request": "R"}, {"name": "gpu", "request": "R"}]}}),
     f'[{C0}[0].request: Invalid value: "R": {LABEL_MSG}, {C0}[1].request: Invalid value: "R": {LABEL_MSG}, '
     f'{C0}[1]: Duplicate value: "gpu/R"]'),
    ("unknown and empty references", pod([*GPU_CLAIM, {"name": "nic", "resourceClaimName": "b"}],
                                         {"resources": {"claims": [{"name": "nope"}, {"name": ""}]}}),
     f'[{C0}[0]: Not found: "nope": must be one of the names in pod.spec.resourceClaims: gpu, nic, {C0}[1]: Required value]'),
    ("a reference without claims", pod(None, {"resources": {"claims": [{"name": "nope"}]}}),
     f'{C0}[0]: Not found: "nope": must be one of the names in pod.spec.resourceClaims which is empty'),
    ("pod-level claims", pod(GPU_CLAIM, resources={"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}),
     "spec.resources.claims: Forbidden: claims may not be set for Resources at pod-level"),
    ("an implicit DeviceClass resource", pod(None, {"resources": {"requests": {"deviceclass.resource.kubernetes.io/gpu": "1"}}}),
     ""),
]


@pytest.mark.parametrize(("manifest", "expected"), [(m, e) for _, m, e in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_pod_claims_are_validated_as_the_api_server_does(manifest: dict[str, Any], expected: str) -> None:
    issues = validate_manifest(manifest)
    assert (aggregate(issues) if issues else "") == expected


def test_a_static_pods_mirror_may_have_no_claims() -> None:
    manifest = pod([*GPU_CLAIM, {"name": "nic", "resourceClaimName": "b"}], nodeName="n1")
    manifest["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    assert aggregate(validate_manifest(manifest)) == "[]: Forbidden: static pods do not support resource claims"


def test_a_workloads_template_claims_are_validated_too() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
                  "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"}},
                      "spec": {"resourceClaims": [{"name": "gpu"}], "containers": [{"name": "c", "image": "x"}]}}}}
    (issue,) = validate_manifest(deployment)
    assert issue.path == "spec.template.spec.resourceClaims[0]"


def dra(kind: str, name: str = "x", namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    meta = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec}


DRA_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("a class", dra("DeviceClass", "gpu", extendedResourceName="example.com/gpu"), ""),
    ("a class without a domain", dra("DeviceClass", "gpu", extendedResourceName="gpu"),
     "spec.extendedResourceName: Invalid value: \"gpu\": a name must be a domain-prefixed path, such as 'example.com/my-prop'"),
    ("a class in kubernetes.io", dra("DeviceClass", "gpu", extendedResourceName="deviceclass.resource.kubernetes.io/x"),
     'spec.extendedResourceName: Invalid value: "deviceclass.resource.kubernetes.io/x": must not have "kubernetes.io/" domain'),
    ("a quota name", dra("DeviceClass", "gpu", extendedResourceName="requests.example.com/x"),
     'spec.extendedResourceName: Invalid value: "requests.example.com/x": must not have "requests." prefix'),
    ("a class badly named", dra("DeviceClass", "Gpu"), f'metadata.name: Invalid value: "Gpu": {SUBDOMAIN_MSG}'),
    ("too many selectors", dra("DeviceClass", "gpu", selectors=[{"cel": {"expression": "true"}}] * 33),
     "spec.selectors: Too many: 33: must have at most 32 items"),
    ("a claim", dra("ResourceClaim", "c", "default", devices={"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}),
     ""),
    ("a claim badly named", dra("ResourceClaim", "C_", "default"), f'metadata.name: Invalid value: "C_": {SUBDOMAIN_MSG}'),
    ("a template", dra("ResourceClaimTemplate", "t", "default", metadata={"labels": {"a": "b"}}, spec={}), ""),
    ("a template's bad label", dra("ResourceClaimTemplate", "t", "default", metadata={"labels": {"a": "b_"}}, spec={}),
     f'spec.metadata.labels: Invalid value: "b_": {VALUE_MSG}'),
    ("a slice", dra("ResourceSlice", "s", driver="d.example.com", nodeName="n1",
                    pool={"name": "p", "generation": 1, "resourceSliceCount": 1}), ""),
]


@pytest.mark.parametrize(("manifest", "expected"), [(m, e) for _, m, e in DRA_CASES], ids=[c[0] for c in DRA_CASES])
def test_dra_objects_are_validated(manifest: dict[str, Any], expected: str) -> None:
    issues = validate_manifest(manifest)
    assert (aggregate(issues) if issues else "") == expected


def test_a_device_class_maps_its_implicit_name_and_its_extended_resource() -> None:
    plain = DeviceClass(metadata=ObjectMeta(name="gpu"))
    assert mapped_resource_names(plain) == ("deviceclass.resource.kubernetes.io/gpu",)
    named = DeviceClass(metadata=ObjectMeta(name="gpu"), spec=DeviceClassSpec(extended_resource_name="example.com/gpu"))
    assert mapped_resource_names(named) == ("deviceclass.resource.kubernetes.io/gpu", "example.com/gpu")


def test_pod_info_says_whether_the_pod_may_use_dra() -> None:
    plain = make_pod_info(make_pod("plain").req(cpu="1", memory="1Gi").obj())
    assert (plain.may_use_dra, plain.resource_claims, plain.dra_resources) == (False, (), ())
    claims = make_pod_info(make_pod("c").resource_claim("gpu", claim="a").resource_claim("nic", template="t").obj())
    assert (claims.may_use_dra, claims.resource_claims) == (True, ("gpu", "nic"))
    extended = make_pod_info(make_pod("e").req({"cpu": "1", "example.com/gpu": "2", "deviceclass.resource.kubernetes.io/x": "1",
                                                "hugepages-2Mi": "2Mi"}).obj())
    assert extended.may_use_dra
    assert extended.dra_resources == ("deviceclass.resource.kubernetes.io/x", "example.com/gpu")
    zero = make_pod_info(make_pod("z").req({"cpu": "1", "example.com/gpu": "0"}).obj())
    assert not zero.may_use_dra  # a zero request asks nothing of DRA (kube skips it too)
    init = make_pod_info(make_pod("i").req(cpu="1").spec(initContainers=[
        {"name": "init", "image": "x", "resources": {"requests": {"example.com/gpu": "1"}}}]).obj())
    assert init.dra_resources == ("example.com/gpu",)
