"""The pieces of resource.k8s.io/v1 that classes, claims and slices share: CEL selectors, opaque
driver configuration, taints and tolerations, and the limits types.go sets on them.

Field names and order follow k8s.io/api/resource/v1/types.go (the order matters: the API server
prints a struct in a message as json.Marshal does, field by field). Quantities stay as written
(`str | int | float`); validation parses them. Fields whose feature gate is off in v1.37.2
(derivedAttributes, list-valued attributes, compatibilityGroups, nodeAllocatableResources,
partitionTypeAttribute, skipNodeOperations) are not modelled: the API server drops them on create,
and so does decoding here.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.objects import Int64
from kubesched.api.objects import Quantity as RawQuantity

API_VERSION = "resource.k8s.io/v1"

# --- limits (k8s.io/api/resource/v1/types.go) ---------------------------------------------------------
DRIVER_NAME_MAX_LENGTH = 63
POOL_NAME_MAX_LENGTH = 253
RESOURCE_SLICE_MAX_DEVICES = 128
# With taints or counters on any device (ResourceSliceMaxDevicesWithAdvancedFeatures).
RESOURCE_SLICE_MAX_DEVICES_ADVANCED = 64
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_SET = 32
RESOURCE_SLICE_MAX_CONSUMPTIONS_PER_DEVICE = 2
RESOURCE_SLICE_MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DEVICE_TAINTS_MAX_LENGTH = 16
BINDING_CONDITIONS_MAX_SIZE = 4
BINDING_FAILURE_CONDITIONS_MAX_SIZE = 4
CAPACITY_REQUEST_POLICY_MAX_OPTIONS = 10
DEVICE_REQUESTS_MAX_SIZE = 32
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
DEVICE_SELECTORS_MAX_SIZE = 32
FIRST_AVAILABLE_MAX_SIZE = 8
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
CEL_EXPRESSION_MAX_COST = 1_000_000
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
RESERVED_FOR_MAX_SIZE = 256
ALLOCATION_RESULTS_MAX_SIZE = 32
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS = 8
ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH = 10 * 1024
NETWORK_INTERFACE_NAME_MAX_LENGTH = 256
NETWORK_HARDWARE_ADDRESS_MAX_LENGTH = 128
NETWORK_MAX_IPS = 16

# The namespace label that allows adminAccess requests (resource.DRAAdminNamespaceLabelKey).
ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OP_EXISTS = "Exists"
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")  # sorted, as kube lists them


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class CELDeviceSelector(_Obj):
    # Compiled and evaluated by the device CEL environment (devices/), not here.
    expression: str = ""


class DeviceSelector(_Obj):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(_Obj):
    driver: str = ""
    # runtime.RawExtension: any JSON; validation wants an object of at most 10 KiB.
    parameters: Any = None


class DeviceConfiguration(_Obj):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceToleration(_Obj):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class DeviceTaint(_Obj):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: str | None = None


__all__ = [
    "API_VERSION",
    "CELDeviceSelector",
    "DeviceConfiguration",
    "DeviceSelector",
    "DeviceTaint",
    "DeviceToleration",
    "OpaqueDeviceConfiguration",
    "RawQuantity",
]
