"""The claim behind a pod's DRA-served extended resources (devices.extendedclaim): the cases of
kube's extendeddynamicresources_test.go (createRequestsAndMappings' requests and mappings), the
claim found or made at PreFilter, the object PreBind creates and the pod's status."""

from __future__ import annotations

import msgspec
import pytest

from kubesched.api.dra import ResourceClaim
from kubesched.api.objects import (
    Container,
    ContainerExtendedResourceRequest,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodSpec,
    ResourceRequirements,
)
from kubesched.devices.claimtracker import SPECIAL_CLAIM_NAME
from kubesched.devices.extendedclaim import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ExtendedClaimError,
    claim_to_create,
    extended_claim_status,
    find_extended_resource_claim,
    has_mapped_extended_resource,
    in_memory_claim,
    is_special_claim_name,
    node_extended_resources,
    requests_and_mappings,
    with_requests,
)

EXT = "extended.resource.dra.io/something"  # kube's test extendedResourceName
INIT = EXT + "init"
IMPLICIT = "deviceclass.resource.kubernetes.io/classInit"


class Resolver:
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def class_for(self, resource: str) -> str | None:
        return self.mapping.get(resource)


DEV_MAP = Resolver({EXT: "class", EXT + "1": "class1"})
DEV_MAP_ONE = Resolver({EXT: "class"})
DEV_MAP_INIT = Resolver({EXT: "class", INIT: "classInit", IMPLICIT: "classInit"})


class PodMaker:
    """kube's st.MakePod: Res adds con<n>, InitReq init-con<n>, SidecarReq sidecar-con<n> (n
    counting init containers)."""

    def __init__(self) -> None:
        self.containers: list[Container] = []
        self.init: list[Container] = []

    def res(self, requests: dict[str, str]) -> PodMaker:
        self.containers.append(Container(name=f"con{len(self.containers)}", resources=ResourceRequirements(requests=requests)))
        return self

    def init_req(self, requests: dict[str, str]) -> PodMaker:
        self.init.append(Container(name=f"init-con{len(self.init)}", resources=ResourceRequirements(requests=requests)))
        return self

    def sidecar_req(self, requests: dict[str, str]) -> PodMaker:
        self.init.append(Container(name=f"sidecar-con{len(self.init)}", restart_policy="Always",
                                   resources=ResourceRequirements(requests=requests)))
        return self

    def obj(self) -> Pod:
        return Pod(metadata=ObjectMeta(name="pod", namespace="ns", uid="pod-uid"),
                   spec=PodSpec(containers=self.containers, init_containers=self.init))


POD1 = PodMaker().res({EXT: "1", EXT + "1": "2"}).obj()
POD2 = PodMaker().res({EXT: "1"}).res({EXT + "1": "2"}).obj()
POD_INIT = PodMaker().res({EXT: "1"}).init_req({INIT: "2"}).obj()
POD_INIT2 = PodMaker().res({EXT: "1"}).init_req({INIT: "1"}).init_req({INIT: "2"}).obj()
POD_INIT3 = PodMaker().res({EXT: "1"}).init_req({INIT: "1"}).sidecar_req({INIT: "1"}).init_req({INIT: "2"}).obj()
POD_INIT_IMPLICIT = PodMaker().res({EXT: "1"}).init_req({INIT: "1"}).init_req({IMPLICIT: "2"}).obj()
POD1_INIT_IMPLICIT = PodMaker().init_req({INIT: "1", IMPLICIT: "2"}).obj()

RES = {EXT: 1}
RES2 = {EXT: 1, EXT + "1": 2}
RES_INIT = {EXT: 1, INIT: 2}
RES_INIT_IMPLICIT = {EXT: 1, INIT: 2, IMPLICIT: 2}


def req(name: str, class_name: str, count: int) -> tuple[str, str, str, int]:
    return name, class_name, "ExactCount", count


@pytest.mark.parametrize(("pod", "extended", "resolver", "want"), [
    pytest.param(POD1, {}, DEV_MAP, [], id="nil"),
    pytest.param(POD1, RES, DEV_MAP_ONE, [req("container-0-request-0", "class", 1)], id="one resource match"),
    pytest.param(POD1, RES2, DEV_MAP_ONE, [req("container-0-request-0", "class", 1)],
                 id="one resource match, one resource not match"),
    pytest.param(POD1, RES2, DEV_MAP, [req("container-0-request-0", "class", 1), req("container-0-request-1", "class1", 2)],
                 id="two resources match"),
    pytest.param(POD2, RES2, DEV_MAP, [req("container-0-request-0", "class", 1), req("container-1-request-0", "class1", 2)],
                 id="two containers match"),
    pytest.param(POD_INIT, RES_INIT, DEV_MAP_INIT,
                 [req("container-0-request-0", "classInit", 2), req("container-1-request-0", "class", 1)],
                 id="one init container, one regular container"),
    pytest.param(POD_INIT2, RES_INIT, DEV_MAP_INIT,
                 [req("container-1-request-0", "classInit", 2), req("container-2-request-0", "class", 1)],
                 id="two init containers, one regular container"),
    pytest.param(POD_INIT3, RES_INIT, DEV_MAP_INIT,
                 [req("container-1-request-0", "classInit", 1), req("container-2-request-0", "classInit", 2),
                  req("container-3-request-0", "class", 1)],
                 id="three init containers, one sidecar, one regular container"),
])
def test_requests_as_kubes(pod: Pod, extended: dict[str, int], resolver: Resolver, want: list[tuple[str, str, str, int]]) -> None:
    requests, _ = requests_and_mappings(pod, extended, resolver)
    got = []
    for r in requests:
        assert r.exactly is not None
        got.append((r.name, r.exactly.device_class_name, r.exactly.allocation_mode, r.exactly.count))
    assert got == want


def cer(container: str, resource: str, request: str) -> tuple[str, str, str]:
    return request, container, resource


@pytest.mark.parametrize(("pod", "extended", "resolver", "want"), [
    pytest.param(POD1, RES2, DEV_MAP, [cer("con0", EXT, "container-0-request-0"), cer("con0", EXT + "1", "container-0-request-1")],
                 id="one container, two requests"),
    pytest.param(POD1_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
                 [cer("init-con0", IMPLICIT, "container-0-request-0"), cer("init-con0", INIT, "container-0-request-1")],
                 id="one container, one explicit and one implicit request"),
    pytest.param(POD2, RES2, DEV_MAP, [cer("con0", EXT, "container-0-request-0"), cer("con1", EXT + "1", "container-1-request-0")],
                 id="two containers, two requests"),
    pytest.param(POD_INIT, RES_INIT, DEV_MAP_INIT,
                 [cer("init-con0", INIT, "container-0-request-0"), cer("con0", EXT, "container-1-request-0")],
                 id="one init container, one regular container, one request"),
    pytest.param(POD_INIT2, RES_INIT, DEV_MAP_INIT,
                 [cer("init-con0", INIT, "container-1-request-0"), cer("init-con1", INIT, "container-1-request-0"),
                  cer("con0", EXT, "container-2-request-0")],
                 id="three containers (two are init container), two requests"),
    pytest.param(POD_INIT_IMPLICIT, RES_INIT_IMPLICIT, DEV_MAP_INIT,
                 [cer("init-con0", INIT, "container-0-request-0"), cer("init-con1", IMPLICIT, "container-1-request-0"),
                  cer("con0", EXT, "container-2-request-0")],
                 id="three containers (two are init container), both explicit and implicit resources"),
    pytest.param(POD_INIT3, RES_INIT, DEV_MAP_INIT,
                 [cer("init-con0", INIT, "container-1-request-0"), cer("sidecar-con1", INIT, "container-1-request-0"),
                  cer("init-con2", INIT, "container-2-request-0"), cer("con0", EXT, "container-3-request-0")],
                 id="four containers (two are init container, one sidecar), three requests"),
])
def test_mappings_as_kubes(pod: Pod, extended: dict[str, int], resolver: Resolver, want: list[tuple[str, str, str]]) -> None:
    _, mappings = requests_and_mappings(pod, extended, resolver)
    # kube's test sorts by request name, then container name.
    assert sorted((m.request_name, m.container_name, m.resource_name) for m in mappings) == want


def test_an_init_container_reusing_a_later_sidecar_is_mapped_to_it_without_a_request() -> None:
    pod = PodMaker().res({EXT: "1"}).init_req({INIT: "1"}).sidecar_req({INIT: "3"}).obj()
    requests, mappings = requests_and_mappings(pod, RES_INIT, DEV_MAP_INIT)
    assert [r.name for r in requests] == ["container-1-request-0", "container-2-request-0"]
    assert [(m.container_name, m.request_name) for m in mappings if m.resource_name == INIT] == [
        ("sidecar-con1", "container-1-request-0"), ("init-con0", "container-1-request-0")]


def test_fractional_or_zero_requests_ask_for_no_device() -> None:
    pod = PodMaker().res({EXT: "500m"}).res({EXT: "0"}).res({EXT: "1k"}).obj()
    requests, mappings = requests_and_mappings(pod, {EXT: 1000}, DEV_MAP_ONE)
    assert [(r.name, r.exactly.count if r.exactly else None) for r in requests] == [("container-2-request-0", 1000)]
    assert [m.container_name for m in mappings] == ["con2"]


# --- PreFilter: the claim found or made -----------------------------------------------------------------


def test_a_pod_takes_part_when_a_class_maps_a_requested_resource() -> None:
    assert has_mapped_extended_resource({"cpu": 100, EXT: 1}, DEV_MAP_ONE)
    assert not has_mapped_extended_resource({"cpu": 100, EXT: 0}, DEV_MAP_ONE)
    assert not has_mapped_extended_resource({"cpu": 100, "example.com/other": 1}, DEV_MAP_ONE)
    # Only names a class could map are asked about (cpu is never an extended resource).
    assert not has_mapped_extended_resource({"cpu": 1}, Resolver({"cpu": "odd"}))


def test_the_in_memory_claim_is_owned_by_the_pod() -> None:
    claim = in_memory_claim(POD1, uid="tmp-uid")
    assert is_special_claim_name(claim.metadata.name) and claim.metadata.name == SPECIAL_CLAIM_NAME
    assert msgspec.to_builtins(claim) == {
        "metadata": {"name": "<extended-resources>", "generateName": "pod-extended-resources-", "namespace": "ns",
                     "uid": "tmp-uid", "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pod", "uid": "pod-uid",
                                          "controller": True}]},
        "spec": {"devices": {}}, "status": {},
    }
    # A fresh temporary uid each attempt by default.
    assert in_memory_claim(POD1).metadata.uid != in_memory_claim(POD1).metadata.uid


def made_claim(name: str, *, annotated: bool = True, owner_uid: str = "pod-uid", controller: bool | None = True) -> ResourceClaim:
    meta = ObjectMeta(name=name, namespace="ns", annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"} if annotated else {},
                      owner_references=[OwnerReference(api_version="v1", kind="Pod", name="pod", uid=owner_uid,
                                                       controller=controller)])
    return ResourceClaim(metadata=meta)


def test_the_claim_of_an_earlier_attempt_is_found_by_annotation_and_controlling_owner() -> None:
    mine = made_claim("pod-extended-resources-abcde")
    others = [made_claim("plain", annotated=False), made_claim("other-pod", owner_uid="other"),
              made_claim("not-controller", controller=None)]
    assert find_extended_resource_claim(POD1, [*others, mine]) is mine
    assert find_extended_resource_claim(POD1, others) is None


# --- Filter: per node ------------------------------------------------------------------------------------


def test_a_node_gets_the_mapped_resources_it_has_no_allocatable_for() -> None:
    requests = {"cpu": 100, EXT: 1, EXT + "1": 2, "example.com/plugin": 1}
    # The device plugin's resource is listed; EXT1 has allocatable there, EXT has none.
    assert node_extended_resources(requests, DEV_MAP, {"cpu": 1000, EXT + "1": 4, "example.com/plugin": 2}) == {EXT: 1}
    # Listed with 0 still goes to DRA when mapped.
    assert node_extended_resources(requests, DEV_MAP, {EXT: 0, EXT + "1": 0, "example.com/plugin": 0}) == {EXT: 1, EXT + "1": 2}
    # A requested resource neither mapped nor listed: the pod cannot fit the node.
    assert node_extended_resources(requests, DEV_MAP, {"cpu": 1000}) is None


def test_the_nodes_claim_carries_the_requests() -> None:
    base = in_memory_claim(POD1, uid="u")
    requests, _ = requests_and_mappings(POD1, RES2, DEV_MAP)
    node_claim = with_requests(base, requests)
    assert [r.name for r in node_claim.spec.devices.requests] == ["container-0-request-0", "container-0-request-1"]
    assert base.spec.devices.requests == []  # each node gets its own variant


# --- PreBind -----------------------------------------------------------------------------------------------


def test_the_created_object_has_no_name_uid_or_allocation() -> None:
    requests, _ = requests_and_mappings(POD1, RES, DEV_MAP)
    node_claim = with_requests(in_memory_claim(POD1, uid="u"), requests)
    allocated = msgspec.convert({**msgspec.to_builtins(node_claim), "status": {"allocation": {"devices": {"results": [
        {"request": "container-0-request-0", "driver": "d", "pool": "p", "device": "gpu-0"}]}}}}, ResourceClaim)
    created = msgspec.to_builtins(claim_to_create(allocated))
    assert created["metadata"] == {
        "generateName": "pod-extended-resources-", "namespace": "ns",
        "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pod", "uid": "pod-uid", "controller": True}]}
    assert created["status"] == {}
    assert created["spec"] == {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "class", "allocationMode": "ExactCount", "count": 1}}]}}


def test_the_pod_status_names_the_claim_and_the_mappings() -> None:
    _, mappings = requests_and_mappings(POD2, RES2, DEV_MAP)
    status = extended_claim_status(POD2, mappings, "pod-extended-resources-x7k2q")
    assert msgspec.to_builtins(status) == {
        "requestMappings": [
            {"containerName": "con0", "resourceName": EXT, "requestName": "container-0-request-0"},
            {"containerName": "con1", "resourceName": EXT + "1", "requestName": "container-1-request-0"},
        ],
        "resourceClaimName": "pod-extended-resources-x7k2q",
    }
    with pytest.raises(ExtendedClaimError, match=r"^nil or empty request mappings, no update of pod ns/pod "
                                                 r"ExtendedResourceClaimStatus$"):
        extended_claim_status(POD2, [], "c")
    assert isinstance(status.request_mappings[0], ContainerExtendedResourceRequest)
