"""Valid resource.k8s.io/v1 objects using every field the API server keeps with its default
feature gates: seeds for the differential test against kube-apiserver (integration/api) and for
the unit tests of DRA validation."""

from __future__ import annotations

from typing import Any

V1 = "resource.k8s.io/v1"

DEVICE_CLASS = {
    "apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "gpu.example.com", "labels": {"tier": "gpu"}},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
        "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "timeSliced"}}}],
        "extendedResourceName": "example.com/gpu",
    },
}

_TOLERATION = {"key": "example.com/unhealthy", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}
_DEVICE_CLAIM: dict[str, Any] = {
    "requests": [
        {"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com",
            "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].model == 'a100'"}}],
            "allocationMode": "ExactCount", "count": 2,
            "tolerations": [_TOLERATION, {"key": "example.com/zone", "operator": "Equal", "value": "a"}],
            "capacity": {"requests": {"memory": "10Gi"}},
        }},
        {"name": "nic", "firstAvailable": [
            {"name": "fast", "deviceClassName": "nic.example.com", "allocationMode": "ExactCount", "count": 1,
             "selectors": [{"cel": {"expression": "device.attributes['nic.example.com'].speed >= 100"}}]},
            {"name": "any", "deviceClassName": "nic.example.com", "allocationMode": "All"},
        ]},
        {"name": "all", "exactly": {"deviceClassName": "fpga.example.com", "allocationMode": "All", "adminAccess": False}},
    ],
    "constraints": [
        {"requests": ["gpu", "nic/fast"], "matchAttribute": "gpu.example.com/numa"},
        {"requests": ["gpu"], "distinctAttribute": "gpu.example.com/uuid"},
    ],
    "config": [{"requests": ["gpu", "nic/any"], "opaque": {"driver": "gpu.example.com", "parameters": {"mode": "mig"}}}],
}

RESOURCE_CLAIM = {
    "apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": "shared-gpu", "namespace": "apps"},
    "spec": {"devices": _DEVICE_CLAIM},
}

RESOURCE_CLAIM_TEMPLATE = {
    "apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "one-nic", "namespace": "apps"},
    "spec": {"metadata": {"labels": {"app": "train"}, "annotations": {"example.com/note": "x"}},
             "spec": {"devices": {"requests": [{"name": "port", "exactly": {"deviceClassName": "nic.example.com"}}]}}},
}

# A node-local slice: typed attributes, consumable capacity, taints, binding conditions.
RESOURCE_SLICE = {
    "apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "node-1-gpu"},
    "spec": {
        "driver": "gpu.example.com", "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [
            {"name": "gpu-0",
             "attributes": {"model": {"string": "a100"}, "numa": {"int": 0}, "mig": {"bool": True},
                            "driverVersion": {"version": "1.2.3-rc.1+build.5"}, "gpu.example.com/uuid": {"string": "GPU-0"}},
             "capacity": {"memory": {"value": "80Gi"}},
             "taints": [{"key": "example.com/unhealthy", "value": "ecc", "effect": "NoSchedule"}]},
            {"name": "gpu-1", "allowMultipleAllocations": True,
             "attributes": {"model": {"string": "a100"}},
             "capacity": {"memory": {"value": "80Gi",
                                     "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}},
                          "cores": {"value": 8, "requestPolicy": {"default": 2, "validValues": [1, 2, 4, 8]}}},
             "bindingConditions": ["example.com/attached"], "bindingFailureConditions": ["example.com/failed"], "bindsToNode": True},
        ],
    },
}

# Partitionable devices: the counters in one slice, the devices consuming them in another.
COUNTER_SLICE = {
    "apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "node-2-counters"},
    "spec": {"driver": "gpu.example.com", "pool": {"name": "node-2", "resourceSliceCount": 2}, "nodeName": "node-2",
             "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}, "sms": {"value": 108}}}]},
}
PARTITION_SLICE = {
    "apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "node-2-partitions"},
    "spec": {"driver": "gpu.example.com", "pool": {"name": "node-2", "resourceSliceCount": 2}, "nodeName": "node-2",
             "devices": [{"name": "mig-1g", "attributes": {"profile": {"string": "1g.10gb"}},
                          "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "10Gi"}, "sms": {"value": 14}}}]}]},
}
# Devices reachable from several nodes, chosen per device.
PER_DEVICE_SLICE = {
    "apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "fabric"},
    "spec": {"driver": "fabric.example.com", "pool": {"name": "rack-a/fabric", "resourceSliceCount": 1}, "perDeviceNodeSelection": True,
             "devices": [
                 {"name": "link-0", "nodeName": "node-1"},
                 {"name": "link-1",
                  "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}]}},
                 {"name": "link-2", "allNodes": True},
             ]},
}
NETWORK_SLICE = {
    "apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "nics"},
    "spec": {"driver": "nic.example.com", "pool": {"name": "nics", "resourceSliceCount": 1},
             "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "nic", "operator": "Exists"}]}]},
             "devices": [{"name": "eth1", "attributes": {"speed": {"int": 100}}}]},
}

DRA_SEEDS: tuple[dict[str, Any], ...] = (
    DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, RESOURCE_SLICE, COUNTER_SLICE, PARTITION_SLICE, PER_DEVICE_SLICE, NETWORK_SLICE,
)
