"""Dynamic Resource Allocation's objects (resource.k8s.io/v1): DeviceClasses, ResourceClaims,
ResourceClaimTemplates and ResourceSlices, complete as kube-apiserver v1.37.2 serves them with its
default feature gates (claims.py, slices.py, the shared pieces in common.py), the API server's
defaulting (defaults.py), and the extended-resource names that DRA may stand behind.

The DynamicResources plugin (plugins/dynamicresources/) allocates devices. The objects are read whole and validated
as the API server validates them on create (api/validation/dra*.py); CEL selectors stay strings
here, for the device CEL environment (devices/) to compile.

A DeviceClass makes two resource names DRA's (DRAExtendedResource, GA and locked on in v1.37.2):
its `spec.extendedResourceName`, if set, and the implicit `deviceclass.resource.kubernetes.io/<its
name>`. A pod requesting one of them in its containers is served through DRA on every node that
has no allocatable for that name (kube's shouldDelegateResourceToDRA); a node that has some (a
device plugin's) serves it as any extended resource.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.dra.claims import (
    FINALIZER,
    AllocatedDeviceStatus,
    AllocationResult,
    CapacityRequirements,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourceClaimWriteError,
)
from kubesched.api.dra.common import (
    API_VERSION,
    CELDeviceSelector,
    DeviceConfiguration,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
    OpaqueDeviceConfiguration,
)
from kubesched.api.dra.slices import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

# The resource name every DeviceClass maps, whatever its spec says (resourceapi.ResourceDeviceClassPrefix).
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def mapped_resource_names(dc: DeviceClass) -> tuple[str, ...]:
    """The resource names a pod may request to be served by this class: the implicit one, and
    spec.extendedResourceName when set."""
    implicit = DEVICE_CLASS_PREFIX + dc.metadata.name
    explicit = dc.spec.extended_resource_name
    return (implicit, explicit) if explicit else (implicit,)


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

__all__ = [
    "API_VERSION",
    "DEVICE_CLASS",
    "DEVICE_CLASS_PREFIX",
    "DRA_KINDS",
    "DRA_TYPES",
    "FINALIZER",
    "NAMESPACED_DRA_KINDS",
    "RESOURCE_CLAIM",
    "RESOURCE_CLAIM_TEMPLATE",
    "RESOURCE_SLICE",
    "AllocatedDeviceStatus",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClass",
    "DeviceClassConfiguration",
    "DeviceClassSpec",
    "DeviceConfiguration",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceToleration",
    "ExactDeviceRequest",
    "OpaqueDeviceConfiguration",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourceClaimWriteError",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
    "mapped_resource_names",
]
