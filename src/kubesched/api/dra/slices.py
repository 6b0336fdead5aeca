"""ResourceSlice (resource.k8s.io/v1), complete as of v1.37.2 for the features on by default: a
driver's pool, where its devices are (nodeName, nodeSelector, allNodes or per device), the devices
with typed attributes, capacity (consumable, with request policies), counter consumption, taints
and binding conditions, and the shared counters of partitionable devices.

A cluster of 1,000 GPU nodes holds 1,000 of these; they are decoded once, with msgspec, into these
structs (no per-field Python work beyond the decoder's).
"""

from __future__ import annotations

import msgspec

from kubesched.api.dra.common import API_VERSION, DeviceTaint, RawQuantity, _Obj
from kubesched.api.objects import Int64, NodeSelector, ObjectMeta


class DeviceAttribute(_Obj):
    """One typed value: exactly one of int, bool, string, version (a semver string)."""

    int_value: Int64 | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")

    def value(self) -> int | bool | str | None:
        """The value that is set (the first, if several are)."""
        for v in (self.int_value, self.bool_value, self.string_value, self.version_value):
            if v is not None:
                return v
        return None


class CapacityRequestPolicyRange(_Obj):
    min: RawQuantity | None = None
    max: RawQuantity | None = None
    step: RawQuantity | None = None


class CapacityRequestPolicy(_Obj):
    default: RawQuantity | None = None
    valid_values: list[RawQuantity] = msgspec.field(default_factory=list)
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(_Obj):
    value: RawQuantity = "0"
    # Only with allowMultipleAllocations (consumable capacity).
    request_policy: CapacityRequestPolicy | None = None


class Counter(_Obj):
    value: RawQuantity = "0"


class DeviceCounterConsumption(_Obj):
    counter_set: str = ""
    counters: dict[str, Counter] = msgspec.field(default_factory=dict)


class Device(_Obj):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = msgspec.field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = msgspec.field(default_factory=dict)
    consumes_counters: list[DeviceCounterConsumption] = msgspec.field(default_factory=list)
    # With the slice's perDeviceNodeSelection: exactly one of these per device.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = msgspec.field(default_factory=list)
    binds_to_node: bool | None = None
    binding_conditions: list[str] = msgspec.field(default_factory=list)
    binding_failure_conditions: list[str] = msgspec.field(default_factory=list)
    allow_multiple_allocations: bool | None = None


class CounterSet(_Obj):
    name: str = ""
    counters: dict[str, Counter] = msgspec.field(default_factory=dict)


class ResourcePool(_Obj):
    name: str = ""
    generation: Int64 = 0
    resource_slice_count: Int64 = 0


class ResourceSliceSpec(_Obj):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    # None (absent) and [] differ: the API server refuses a slice with both sharedCounters and
    # devices set, where an empty list is "set" for JSON and Go alike only when non-nil.
    devices: list[Device] | None = None
    per_device_node_selection: bool | None = None
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(_Obj):
    api_version: str = API_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)
