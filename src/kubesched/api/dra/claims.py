"""DeviceClass, ResourceClaim and ResourceClaimTemplate (resource.k8s.io/v1), complete as of
v1.37.2 for the features on by default: requests with `exactly` or `firstAvailable`, selectors,
allocation mode and count, admin access, tolerations, capacity requests; constraints; opaque
configuration; and a claim's status (allocation, reservedFor, device status).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.dra.common import (
    API_VERSION,
    DeviceConfiguration,
    DeviceSelector,
    DeviceToleration,
    RawQuantity,
    _Obj,
)
from kubesched.api.objects import Int64, NodeSelector, ObjectMeta
from kubesched.api.podgroups import Condition  # metav1.Condition, as drivers report it per device

# The finalizer the scheduler adds before it writes an allocation (resourceapi.Finalizer): the
# claim is not deleted while its devices may be in use.
FINALIZER = "resource.kubernetes.io/delete-protection"


class ResourceClaimWriteError(RuntimeError):
    """A ResourceClaim write the API server refused, with its message. `conflict`: the claim's
    resourceVersion was not the stored one (409), which a retry with the latest object may fix."""

    def __init__(self, message: str, *, conflict: bool = False, not_found: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict
        self.not_found = not_found


# --- DeviceClass ------------------------------------------------------------------------------------


class DeviceClassConfiguration(DeviceConfiguration):
    pass


class DeviceClassSpec(_Obj):
    selectors: list[DeviceSelector] = msgspec.field(default_factory=list)
    config: list[DeviceClassConfiguration] = msgspec.field(default_factory=list)
    extended_resource_name: str | None = None


class DeviceClass(_Obj):
    api_version: str = API_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# --- ResourceClaim spec --------------------------------------------------------------------------------


class CapacityRequirements(_Obj):
    requests: dict[str, RawQuantity] = msgspec.field(default_factory=dict)


class ExactDeviceRequest(_Obj):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = msgspec.field(default_factory=list)
    # Defaulted on create (api.dra.defaults): ExactCount, and then a count of 1.
    allocation_mode: str = ""
    count: Int64 = 0
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = msgspec.field(default_factory=list)
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(_Obj):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = msgspec.field(default_factory=list)
    allocation_mode: str = ""
    count: Int64 = 0
    tolerations: list[DeviceToleration] = msgspec.field(default_factory=list)
    capacity: CapacityRequirements | None = None


class DeviceRequest(_Obj):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = msgspec.field(default_factory=list)


class DeviceConstraint(_Obj):
    requests: list[str] = msgspec.field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(DeviceConfiguration):
    requests: list[str] = msgspec.field(default_factory=list)


class DeviceClaim(_Obj):
    requests: list[DeviceRequest] = msgspec.field(default_factory=list)
    constraints: list[DeviceConstraint] = msgspec.field(default_factory=list)
    config: list[DeviceClaimConfiguration] = msgspec.field(default_factory=list)


class ResourceClaimSpec(_Obj):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


# --- ResourceClaim status ------------------------------------------------------------------------------


class DeviceRequestAllocationResult(_Obj):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = msgspec.field(default_factory=list)
    binding_conditions: list[str] = msgspec.field(default_factory=list)
    binding_failure_conditions: list[str] = msgspec.field(default_factory=list)
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, RawQuantity] = msgspec.field(default_factory=dict)


class DeviceAllocationConfiguration(DeviceConfiguration):
    source: str = ""
    requests: list[str] = msgspec.field(default_factory=list)


class DeviceAllocationResult(_Obj):
    results: list[DeviceRequestAllocationResult] = msgspec.field(default_factory=list)
    config: list[DeviceAllocationConfiguration] = msgspec.field(default_factory=list)


class AllocationResult(_Obj):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(_Obj):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class NetworkDeviceData(_Obj):
    interface_name: str = ""
    ips: list[str] = msgspec.field(default_factory=list)
    hardware_address: str = ""


class AllocatedDeviceStatus(_Obj):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[Condition] = msgspec.field(default_factory=list)
    data: Any = None
    network_data: NetworkDeviceData | None = None


class ResourceClaimStatus(_Obj):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = msgspec.field(default_factory=list)
    devices: list[AllocatedDeviceStatus] = msgspec.field(default_factory=list)


class ResourceClaim(_Obj):
    api_version: str = API_VERSION
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


# --- ResourceClaimTemplate -----------------------------------------------------------------------------


class ResourceClaimTemplateSpec(_Obj):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Obj):
    api_version: str = API_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)
