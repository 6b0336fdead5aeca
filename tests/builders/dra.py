"""Builders for Dynamic Resource Allocation's objects (resource.k8s.io/v1): DeviceClasses,
ResourceClaims and ResourceClaimTemplates, as the manifest dicts the simulator and the API server
read. Pods use them through PodBuilder.resource_claim."""

from __future__ import annotations

from typing import Any

DRA_API = "resource.k8s.io/v1"


def make_device_class(name: str, extended_resource_name: str | None = None, **meta: Any) -> dict[str, Any]:
    """A DeviceClass; with `extended_resource_name`, pods requesting that resource are served by DRA."""
    spec: dict[str, Any] = {}
    if extended_resource_name is not None:
        spec["extendedResourceName"] = extended_resource_name
    return {"apiVersion": DRA_API, "kind": "DeviceClass", "metadata": {"name": name, **meta}, "spec": spec}


def _devices(device_class: str) -> dict[str, Any]:
    return {"requests": [{"name": "device", "exactly": {"deviceClassName": device_class}}]}


def make_resource_claim(name: str, device_class: str = "gpu", namespace: str = "default") -> dict[str, Any]:
    """A ResourceClaim asking for one device of the class."""
    return {"apiVersion": DRA_API, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": _devices(device_class)}}


def make_claim_template(name: str, device_class: str = "gpu", namespace: str = "default") -> dict[str, Any]:
    """A ResourceClaimTemplate whose claims ask for one device of the class."""
    return {"apiVersion": DRA_API, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": _devices(device_class)}}}


def make_resource_slice(name: str, node: str, devices: int = 2, driver: str = "gpu.example.com",
                        pool: str | None = None) -> dict[str, Any]:
    """A ResourceSlice of one node's devices (a pool of one slice, named after the node by default)."""
    return {"apiVersion": DRA_API, "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": pool or node, "generation": 0, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}}
