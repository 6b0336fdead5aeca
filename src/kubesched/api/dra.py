"""Dynamic Resource Allocation's objects (resource.k8s.io/v1): DeviceClasses, ResourceClaims,
ResourceClaimTemplates and ResourceSlices, in objects.py's style, and the extended-resource names
that DRA may stand behind.

kubesched does not allocate devices yet (the DynamicResources plugin is not implemented; see
scheduler/draguard.py for how such pods are kept pending). What is read today is what that guard
needs: a DeviceClass's name and `spec.extendedResourceName`. The other kinds are read so that a
manifest holding them is recognised and validated, not skipped; their device specs are kept as
plain data until the allocator reads them.

A DeviceClass makes two resource names DRA's (DRAExtendedResource, GA and locked on in v1.37.2):
its `spec.extendedResourceName`, if set, and the implicit `deviceclass.resource.kubernetes.io/<its
name>`. A pod requesting one of them in its containers is served through DRA on every node that
has no allocatable for that name (kube's shouldDelegateResourceToDRA); a node that has some (a
device plugin's) serves it as any extended resource.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.objects import ObjectMeta

API_VERSION = "resource.k8s.io/v1"
# The resource name every DeviceClass maps, whatever its spec says (resourceapi.ResourceDeviceClassPrefix).
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


# --- DeviceClass ----------------------------------------------------------------------------------


class DeviceClassSpec(_Obj):
    extended_resource_name: str | None = None
    # CEL selectors and driver configuration: counted by validation, read by the allocator later.
    selectors: list[Any] = msgspec.field(default_factory=list)
    config: list[Any] = msgspec.field(default_factory=list)


class DeviceClass(_Obj):
    api_version: str = API_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


def mapped_resource_names(dc: DeviceClass) -> tuple[str, ...]:
    """The resource names a pod may request to be served by this class: the implicit one, and
    spec.extendedResourceName when set."""
    implicit = DEVICE_CLASS_PREFIX + dc.metadata.name
    explicit = dc.spec.extended_resource_name
    return (implicit, explicit) if explicit else (implicit,)


# --- ResourceClaim and ResourceClaimTemplate ------------------------------------------------------------


class ResourceClaimSpec(_Obj):
    # DeviceClaim (requests, constraints, config), as written: the allocator's input, later.
    devices: dict[str, Any] | None = None


class ResourceClaimStatus(_Obj):
    allocation: dict[str, Any] | None = None
    reserved_for: list[dict[str, Any]] = msgspec.field(default_factory=list)


class ResourceClaim(_Obj):
    api_version: str = API_VERSION
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(_Obj):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Obj):
    api_version: str = API_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# --- ResourceSlice --------------------------------------------------------------------------------------


class ResourceSliceSpec(_Obj):
    driver: str = ""
    pool: dict[str, Any] | None = None
    node_name: str | None = None
    all_nodes: bool | None = None
    node_selector: dict[str, Any] | None = None
    devices: list[Any] = msgspec.field(default_factory=list)


class ResourceSlice(_Obj):
    api_version: str = API_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


# --- the event resources, as kube-scheduler names them (fwk.EventResource) ------------------------------

DEVICE_CLASS = "resource.k8s.io/DeviceClass"
RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
RESOURCE_CLAIM_TEMPLATE = "resource.k8s.io/ResourceClaimTemplate"  # no scheduler event: the controller's
RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"

# Event resource -> the type its objects decode to.
DRA_TYPES: dict[str, type[Any]] = {
    DEVICE_CLASS: DeviceClass,
    RESOURCE_CLAIM: ResourceClaim,
    RESOURCE_CLAIM_TEMPLATE: ResourceClaimTemplate,
    RESOURCE_SLICE: ResourceSlice,
}
# Manifest kind -> event resource.
DRA_KINDS: dict[str, str] = {cls.__name__: resource for resource, cls in DRA_TYPES.items()}
NAMESPACED_DRA_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate"})
