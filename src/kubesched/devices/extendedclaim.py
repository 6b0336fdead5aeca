"""The claim behind a pod's extended resources served by DRA (kube v1.37.2's DRAExtendedResource,
GA: extendeddynamicresources.go): pure logic, no cluster access, no plugin state.

A pod that requests an extended resource a DeviceClass maps (its spec.extendedResourceName, or the
implicit `deviceclass.resource.kubernetes.io/<class>`) gets one ResourceClaim for all of them,
made by the scheduler: in memory while the pod is scheduled (named SPECIAL_CLAIM_NAME, which is no
valid object name), created in the API server at PreBind with a generated name, owned by the pod.

Where DynamicResources calls each function (the seam; the plugin keeps the cycle state):
- PreFilter: `has_mapped_extended_resource` decides whether the pod takes part at all; then
  `find_extended_resource_claim` over the cluster's claims finds one a previous attempt created
  (the plugin then keeps it, and Filter refuses every node while it has requests, so PostFilter
  deletes it), else `in_memory_claim` is the claim of this attempt;
- Filter, per node: `node_extended_resources` says which requested resources DRA must serve on
  the node (those the node has no allocatable for) or that one fits nowhere on it
  (CANNOT_FIT_RESOURCE); `requests_and_mappings` turns them into the claim's device requests and
  the container mappings, and `with_requests` into the node's variant of the claim, which the
  allocator then allocates like any other claim;
- PreBind: `claim_to_create` is the object the plugin creates (ClusterWrites.create_resource_claim);
  after the claim's status is written, `extended_claim_status` is what the plugin sets as the
  pod's status.extendedResourceClaimStatus (ClusterWrites.set_extended_resource_claim_status);
- Unreserve, and PostFilter for a stale claim: a claim that is no longer the in-memory one
  (`is_special_claim_name` false) is deleted (ClusterWrites.delete_resource_claim).

Until the plugin calls these, scheduler/draguard.py keeps such pods to nodes that serve the
resources themselves.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import msgspec

from kubesched.api.dra import DEVICE_CLASS_PREFIX, FINALIZER, ResourceClaim
from kubesched.api.dra.claims import DeviceRequest, ExactDeviceRequest, ResourceClaimSpec
from kubesched.api.objects import (
    Container,
    ContainerExtendedResourceRequest,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodExtendedResourceClaimStatus,
)
from kubesched.api.quantity import QuantityError, parse
from kubesched.api.validation.resources import is_extended
from kubesched.devices.claimtracker import SPECIAL_CLAIM_NAME

# resourceapi.ExtendedResourceClaimAnnotation: marks the claim the scheduler made for a pod.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
EXACT_COUNT = "ExactCount"
# Filter's reason for a node with neither allocatable for a requested resource nor a class for it.
CANNOT_FIT_RESOURCE = "cannot fit resource"
# Filter's reason while the pod's claim from an earlier attempt still has requests.
CANNOT_SCHEDULE_CLAIM = "cannot schedule extended resource claim"
_NANO = 10**9
_INT64_MAX = 2**63 - 1


class DeviceClassResolver(Protocol):
    """Which DeviceClass maps a resource name to DRA (the cache's DeviceClassIndex)."""

    def class_for(self, resource: str) -> str | None: ...


class ExtendedClaimError(Exception):
    """A step that cannot go on, with kube's message."""


def is_dra_resource_name(name: str) -> bool:
    """kube's IsDRAExtendedResourceName: an extended resource, or an implicit class name."""
    return name.startswith(DEVICE_CLASS_PREFIX) or is_extended(name)


def is_special_claim_name(name: str) -> bool:
    return name == SPECIAL_CLAIM_NAME


def has_mapped_extended_resource(requests: Mapping[str, int], resolver: DeviceClassResolver) -> bool:
    """Whether the pod requests (non-zero) an extended resource some DeviceClass maps."""
    return any(value and is_dra_resource_name(name) and resolver.class_for(name) is not None
               for name, value in requests.items())


def find_extended_resource_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """The claim made for the pod's extended resources by an earlier attempt: annotated as such,
    with the pod as its controlling owner (same name and uid)."""
    meta = pod.metadata
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for owner in claim.metadata.owner_references:
            if owner.name == meta.name and owner.controller and owner.uid == meta.uid:
                return claim
    return None


def in_memory_claim(pod: Pod, uid: str | None = None) -> ResourceClaim:
    """The attempt's claim before it exists: SPECIAL_CLAIM_NAME, a temporary uid (for the claim
    tracker's in-flight allocations), no requests yet; generateName `<pod>-extended-resources-`,
    owned by the pod (controller), annotated."""
    meta = pod.metadata
    return ResourceClaim(
        metadata=ObjectMeta(
            name=SPECIAL_CLAIM_NAME,
            generate_name=f"{meta.name}-extended-resources-",
            namespace=meta.namespace,
            uid=uid if uid is not None else str(uuid.uuid4()),
            owner_references=[OwnerReference(api_version="v1", kind="Pod", name=meta.name, uid=meta.uid, controller=True)],
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        ),
        spec=ResourceClaimSpec(),
    )


def node_extended_resources(requests: Mapping[str, int], resolver: DeviceClassResolver,
                            allocatable: Mapping[str, int]) -> dict[str, int] | None:
    """The requested resources DRA must serve on a node (a class maps them and the node's
    allocatable has none), by name; None when the pod cannot fit the node (a requested resource
    that is neither mapped nor listed in the node's allocatable: CANNOT_FIT_RESOURCE)."""
    out: dict[str, int] = {}
    for name, value in requests.items():
        if not value or not is_dra_resource_name(name):
            continue
        listed = name in allocatable
        if resolver.class_for(name) is not None and allocatable.get(name, 0) == 0:
            out[name] = value
        elif not listed:
            return None
    return out


def requests_and_mappings(pod: Pod, extended: Mapping[str, int], resolver: DeviceClassResolver
                          ) -> tuple[list[DeviceRequest], list[ContainerExtendedResourceRequest]]:
    """The claim's device requests and the containers' mappings to them (createRequestsAndMappings):
    per resource (in name order) and container (init containers first), a request
    `container-<index>-request-<position of the resource among the container's sorted requests>`
    for ExactCount devices of the mapping class. Sidecars and regular containers run together:
    each gets its own. Regular init containers run one at a time before: each first reuses the
    requests of the sidecars and containers after it, asks for what is still missing, and only
    the largest of their own requests is kept, which all of them are mapped to. Requests come out
    sorted by name."""
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    init_count = len(pod.spec.init_containers)
    long_lived = [i for i, c in enumerate(containers) if i >= init_count or c.restart_policy == "Always"]
    short_lived = [i for i, c in enumerate(containers) if i < init_count and c.restart_policy != "Always"]
    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(extended):
        class_name = resolver.class_for(resource)
        if class_name is None:
            continue
        own: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], resource, class_name, ())
            own[i] = request
            long_mappings.extend(found)
        largest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            request, found = _container_request(i, containers[i], resource, class_name, own[i:])
            if request is not None:
                short_names.add(request.name)
                if largest is None or _count(largest) < _count(request):
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            short_mappings = [msgspec.structs.replace(m, request_name=largest.name) if m.request_name in short_names else m
                              for m in short_mappings]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in own if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: r.name)
    return requests, mappings


def _count(request: DeviceRequest) -> int:
    assert request.exactly is not None
    return request.exactly.count


def _container_request(index: int, container: Container, resource: str, class_name: str,
                       reusable: Sequence[DeviceRequest | None]
                       ) -> tuple[DeviceRequest | None, list[ContainerExtendedResourceRequest]]:
    """createResourceRequestAndMappings: the container's request for the resource (None when it
    asks for none, or `reusable` requests cover it) and its mappings."""
    requested = container.resources.requests
    if resource not in requested:
        return None, []
    count = _as_int64(requested[resource])
    if not count:
        return None, []
    mappings: list[ContainerExtendedResourceRequest] = []
    covered = 0
    for other in reusable:
        if other is None:
            continue
        covered += _count(other)
        mappings.append(ContainerExtendedResourceRequest(container_name=container.name, resource_name=resource,
                                                         request_name=other.name))
        if covered >= count:
            return None, mappings
    position = sorted(requested).index(resource)
    name = f"container-{index}-request-{position}"
    request = DeviceRequest(name=name, exactly=ExactDeviceRequest(device_class_name=class_name, allocation_mode=EXACT_COUNT,
                                                                  count=count - covered))
    mappings.append(ContainerExtendedResourceRequest(container_name=container.name, resource_name=resource, request_name=name))
    return request, mappings


def _as_int64(raw: str | int | float) -> int | None:
    """Quantity.AsInt64: the whole number, None when it has a fraction or does not fit."""
    try:
        quantity = parse(raw)
    except QuantityError:
        return None
    if quantity.nanos is None or quantity.nanos % _NANO:
        return None
    value = quantity.nanos // _NANO
    if value > _INT64_MAX:
        return None
    return -value if quantity.negative else value


def with_requests(claim: ResourceClaim, requests: Sequence[DeviceRequest]) -> ResourceClaim:
    """The node's variant of the in-memory claim: the same object with these device requests."""
    devices = msgspec.structs.replace(claim.spec.devices, requests=list(requests))
    return msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, devices=devices))


def claim_to_create(node_claim: ResourceClaim) -> ResourceClaim:
    """The object PreBind creates: the node's claim without the fields a create must not or cannot
    set (allocation, name, uid); generateName, namespace, owner and annotation stay."""
    meta = msgspec.structs.replace(node_claim.metadata, name="", uid="")
    return msgspec.structs.replace(node_claim, metadata=meta,
                                   status=msgspec.structs.replace(node_claim.status, allocation=None))


def extended_claim_status(pod: Pod, mappings: Sequence[ContainerExtendedResourceRequest],
                          claim_name: str) -> PodExtendedResourceClaimStatus:
    """The pod's status.extendedResourceClaimStatus naming the created claim; kube refuses to write
    one without mappings."""
    if not mappings:
        meta = pod.metadata
        raise ExtendedClaimError(f"nil or empty request mappings, no update of pod {meta.namespace}/{meta.name} "
                                 "ExtendedResourceClaimStatus")
    return PodExtendedResourceClaimStatus(request_mappings=list(mappings), resource_claim_name=claim_name)


def without_delete_protection(finalizers: Sequence[str]) -> list[str]:
    """A claim's finalizers with the scheduler's delete protection removed (kube's deleteClaim
    removes it, and only it, before it deletes the claim)."""
    return [f for f in finalizers if f != FINALIZER]
