"""Random small DRA inventories for the device allocator's tests: one node, a few pools of slices
(node-local, by node selector, for all nodes, per device; generations and incomplete pools;
shared counters), device classes with CEL selectors, devices already allocated, taints, and one to
three claims with ExactCount / All requests, firstAvailable, admin access, tolerations and
matchAttribute / distinctAttribute constraints. Consumable capacity: pools of devices with
allowMultipleAllocations and capacities under every kind of request policy (none, a default,
valid values, a range with or without max and step, in binary and decimal units), some already
shared by allocated claims (shareIDs and the capacity they consume), and requests asking for
capacity (within the policy, off its grid to be rounded up, beyond what is left, naming a capacity
the device lacks). Objects are written as the API server serves
them (JSON, defaulted), for kube's allocator (the Go oracle) and ours alike.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Node
from kubesched.devices.allocatedstate import AllocatedState
from kubesched.devices.allocator import Allocator
from kubesched.devices.capacity import add_consumed, nanos

DRIVERS = ["gpu.example.com", "nic.example.org"]
MODELS = ["a100", "h100", "l4"]
NODE = "node-1"

CLASS_SELECTORS = [
    'device.driver == "gpu.example.com"',
    'device.attributes["gpu.example.com"].model != "l4"',
    'has(device.attributes["gpu.example.com"].model)',
    'device.attributes["gpu.example.com"].memory >= 40',
    'device.attributes["gpu.example.com"].?memory.orValue(0) >= 40',
    'device.driver == "nic.example.org" || device.attributes["gpu.example.com"].?model.orValue("") == "h100"',
    "device.allowMultipleAllocations",
]
REQUEST_SELECTORS = [
    'device.attributes["gpu.example.com"].model == "a100"',
    'device.attributes["gpu.example.com"].?model.orValue("") != "l4"',
    'has(device.attributes["gpu.example.com"].memory) && device.attributes["gpu.example.com"].memory > 16',
    'device.attributes["gpu.example.com"].memory > 16',
    'device.attributes["gpu.example.com"].index % 2 == 0',
    'device.driver == "nic.example.org"',
    '!device.allowMultipleAllocations',
    'device.capacity["gpu.example.com"].?memory.orValue(quantity("0")).compareTo(quantity("40Gi")) >= 0',
]

# (capacity, policy) of a shareable device's "memory" and "cores"; each policy valid for the API server.
MEMORY = [
    ("80Gi", None),
    ("40Gi", {"default": "10Gi"}),
    ("80Gi", {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi", "80Gi"]}),
    ("64Gi", {"default": "8Gi", "validRange": {"min": "8Gi", "max": "32Gi", "step": "8Gi"}}),
    ("48Gi", {"default": "4Gi", "validRange": {"min": "4Gi", "step": "4Gi"}}),
    ("40Gi", {"default": "16Gi", "validRange": {"min": "16Gi"}}),
    ("100G", {"default": "2G", "validRange": {"min": "2G", "max": "50G", "step": "1G"}}),
]
CORES = [
    ("8", None),
    ("8", {"default": "1", "validRange": {"min": "1", "step": "1"}}),
    ("16", {"default": "2", "validValues": ["1", "2", "4", "8"]}),
]
MEMORY_ASKS = ["1Gi", "5Gi", "8Gi", "10Gi", "16Gi", "20Gi", "30Gi", "33Gi", "41Gi", "70Gi", "2500M", "1500Mi"]
CORE_ASKS = ["500m", "1", "1500m", "2", "3", "8"]



@dataclass
class Case:
    node: dict[str, Any]
    classes: list[dict[str, Any]]
    slices: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    allocated: list[str] = field(default_factory=list)
    # "driver/pool/device/shareID" of allocated shares, and what they consume by device.
    shared: list[str] = field(default_factory=list)
    aggregated: dict[str, dict[str, str]] = field(default_factory=dict)

    def oracle_request(self) -> dict[str, Any]:
        return {"node": self.node, "classes": self.classes, "slices": self.slices, "claims": self.claims,
                "allocatedDevices": self.allocated, "allocatedSharedDevices": self.shared,
                "aggregatedCapacity": self.aggregated}

    def allocated_state(self) -> AllocatedState:
        capacity: dict[tuple[str, str, str], dict[str, int]] = {}
        for device, amounts in self.aggregated.items():
            add_consumed(capacity, _device_id(device), {name: nanos(q) for name, q in amounts.items()})
        shares = frozenset((*_device_id(s.rsplit("/", 1)[0]), s.rsplit("/", 1)[1]) for s in self.shared)
        return AllocatedState(frozenset(_device_id(d) for d in self.allocated), shares, capacity)

    def allocator(self, new_share_id: Any = None) -> Allocator:
        classes = {c["metadata"]["name"]: msgspec.convert(c, DeviceClass) for c in self.classes}
        slices = [msgspec.convert(s, ResourceSlice) for s in self.slices]
        return Allocator(classes, slices, self.allocated_state(), new_share_id=new_share_id)

    def typed_node(self) -> Node:
        return msgspec.convert(self.node, Node)

    def typed_claims(self) -> list[ResourceClaim]:
        return [msgspec.convert(c, ResourceClaim) for c in self.claims]


def _device_id(text: str) -> tuple[str, str, str]:
    driver, pool, device = text.split("/")
    return driver, pool, device


def _capacity(rng: random.Random, shareable: bool) -> dict[str, Any]:
    """A shareable device's capacities with their policies, or a plain device's fixed ones."""
    if not shareable:
        return {"memory": {"value": rng.choice(["16Gi", "40Gi", "80Gi"])}} if rng.random() < 0.5 else {}
    out: dict[str, Any] = {}
    for name, choices, chance in (("memory", MEMORY, 0.9), ("cores", CORES, 0.4)):
        if rng.random() < chance:
            value, policy = rng.choice(choices)
            out[name] = {"value": value, **({"requestPolicy": policy} if policy else {})}
    return out


def _device(rng: random.Random, driver: str, index: int, counters: list[str], shareable: float = 0.0) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if rng.random() < 0.9:
        attributes["model"] = {"string": rng.choice(MODELS)}
    if rng.random() < 0.85:
        attributes["memory"] = {"int": rng.choice([16, 40, 80])}
    attributes["index"] = {"int": index}
    if rng.random() < 0.3:
        attributes[f"{driver}/numa"] = {"int": rng.randrange(2)}
    if rng.random() < 0.2:
        attributes["other.io/zone"] = {"string": rng.choice(["a", "b"])}
    device: dict[str, Any] = {"name": f"dev-{index}", "attributes": attributes}
    if rng.random() < 0.15:
        device["taints"] = [{"key": rng.choice(["broken", "maint"]), "value": rng.choice(["", "yes"]),
                             "effect": rng.choice(["NoSchedule", "NoExecute", "None"])}]
    if counters and rng.random() < 0.6:
        device["consumesCounters"] = [{"counterSet": "set-0", "counters": {c: {"value": str(rng.choice([1, 2]))} for c in counters}}]
    multiple = rng.random() < shareable
    if multiple:
        device["allowMultipleAllocations"] = True
    capacity = _capacity(rng, multiple)
    if capacity:
        device["capacity"] = capacity
    return device


def _slices(rng: random.Random, driver: str, pool: str) -> list[dict[str, Any]]:
    count = rng.choice([1, 1, 1, 2])
    generation = 1
    out: list[dict[str, Any]] = []
    counters = ["mem"] if rng.random() < 0.25 else []
    shareable = rng.choice([0.0, 0.0, 0.5, 0.9])
    where: dict[str, Any] = rng.choice([
        {"nodeName": NODE}, {"nodeName": NODE}, {"nodeName": NODE}, {"nodeName": "node-2"}, {"allNodes": True},
        {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [rng.choice(["a", "b"])]}]}]}},
        {"perDeviceNodeSelection": True},
    ])
    next_index = 0
    declared = count + (1 if counters else 0) - (1 if rng.random() < 0.1 else 0)
    for i in range(count):
        devices = []
        for _ in range(rng.randrange(1, 4)):
            d = _device(rng, driver, next_index, counters, shareable)
            next_index += 1
            if where.get("perDeviceNodeSelection"):
                d.update(rng.choice([{"nodeName": NODE}, {"nodeName": "node-2"}, {"allNodes": True}]))
            devices.append(d)
        spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": declared},
                                "devices": devices, **where}
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{pool}-{rng.choice('xyz')}{i}"}, "spec": spec})
    if counters:
        spec = {"driver": driver, "pool": {"name": pool, "generation": generation, "resourceSliceCount": declared},
                "sharedCounters": [{"name": "set-0", "counters": {"mem": {"value": str(rng.choice([2, 3, 4]))}}}],
                **({"nodeName": NODE} if "perDeviceNodeSelection" in where else where)}
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{pool}-counters"}, "spec": spec})
    if rng.random() < 0.1:  # an outdated generation, to be ignored
        old = {**out[0], "metadata": {"name": f"{pool}-old"}}
        old["spec"] = {**out[0]["spec"], "pool": {"name": pool, "generation": 0, "resourceSliceCount": 1}}
        out.append(old)
    return out


def _selectors(rng: random.Random, chance: float) -> list[dict[str, Any]]:
    return [{"cel": {"expression": rng.choice(REQUEST_SELECTORS)}}] if rng.random() < chance else []


def _class_selector(rng: random.Random) -> str | None:
    return rng.choice(CLASS_SELECTORS) if rng.random() < 0.6 else None


def _tolerations(rng: random.Random) -> list[dict[str, Any]]:
    if rng.random() < 0.7:
        return []
    return [rng.choice([{"operator": "Exists"}, {"key": "broken", "operator": "Exists"},
                        {"key": "maint", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}])]


def _exact(rng: random.Random, classes: list[str]) -> dict[str, Any]:
    mode = "All" if rng.random() < 0.15 else "ExactCount"
    spec: dict[str, Any] = {"deviceClassName": rng.choice(classes), "allocationMode": mode}
    if mode == "ExactCount":
        spec["count"] = rng.choice([1, 1, 1, 2, 3])
    spec["selectors"] = _selectors(rng, 0.3)
    spec["tolerations"] = _tolerations(rng)
    if rng.random() < 0.3:
        requests = {}
        if rng.random() < 0.85:
            requests["memory"] = rng.choice(MEMORY_ASKS)
        if rng.random() < 0.3:
            requests["cores"] = rng.choice(CORE_ASKS)
        if rng.random() < 0.05:
            requests["bandwidth"] = "1"
        spec["capacity"] = {"requests": requests}
    if rng.random() < 0.1:
        spec["adminAccess"] = True
    return spec


def _claim(rng: random.Random, index: int, classes: list[str]) -> dict[str, Any]:
    requests = []
    for r in range(rng.choice([1, 1, 1, 2, 2, 3])):
        if rng.random() < 0.3:
            subs = []
            for s in range(rng.choice([2, 3])):
                sub = _exact(rng, classes)
                sub.pop("adminAccess", None)
                subs.append({"name": f"s{s}", **sub})
            requests.append({"name": f"r{r}", "firstAvailable": subs})
        else:
            requests.append({"name": f"r{r}", "exactly": _exact(rng, classes)})
    constraints = []
    if rng.random() < 0.3:
        kind = rng.choice(["matchAttribute", "distinctAttribute"])
        attribute = rng.choice(["gpu.example.com/model", "gpu.example.com/memory", "gpu.example.com/numa", "other.io/zone"])
        constraint: dict[str, Any] = {kind: attribute}
        if rng.random() < 0.4:
            constraint["requests"] = [requests[0]["name"]]
        constraints.append(constraint)
    config = []
    if rng.random() < 0.2:
        config.append({"requests": [requests[0]["name"]] if rng.random() < 0.5 else [],
                       "opaque": {"driver": "gpu.example.com", "parameters": {"claim": index}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"claim-{index}", "namespace": "default", "uid": f"uid-{index}"},
            "spec": {"devices": {"requests": requests, "constraints": constraints, "config": config}}}


def generate(rng: random.Random) -> Case:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {"zone": "a"}}}
    classes = []
    for i in range(rng.choice([1, 2, 3])):
        selector = _class_selector(rng)
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": selector}}] if selector else []}
        if rng.random() < 0.2:
            spec["config"] = [{"opaque": {"driver": "gpu.example.com", "parameters": {"class": i}}}]
        classes.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": f"class-{i}"}, "spec": spec})
    slices = []
    for p in range(rng.choice([1, 2, 3])):
        slices += _slices(rng, rng.choice(DRIVERS), f"pool-{p}")
    names = [c["metadata"]["name"] for c in classes]
    claims = [_claim(rng, i, names) for i in range(rng.choice([1, 1, 1, 2, 3]))]
    devices = [(f"{s['spec']['driver']}/{s['spec']['pool']['name']}/{d['name']}", d) for s in slices for d in s["spec"].get("devices", [])]
    allocated: list[str] = []
    shared: list[str] = []
    aggregated: dict[str, dict[str, str]] = {}
    for text, device in devices:
        if not device.get("allowMultipleAllocations"):
            if rng.random() < 0.15:
                allocated.append(text)
            continue
        if rng.random() < 0.02:
            allocated.append(text)  # no scheduler records a shareable device whole; kube's allocator still reads it
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            shared.append(f"{text}/{_share_id(rng)}")
            consumed = _consumed(rng, device.get("capacity", {}))
            if consumed:
                total = aggregated.setdefault(text, {})
                for name, q in consumed.items():
                    total[name] = _sum_quantity(total.get(name), q)
    return Case(node, classes, slices, claims, allocated, shared, aggregated)


def _share_id(rng: random.Random) -> str:
    hexa = f"{rng.getrandbits(128):032x}"
    return f"{hexa[:8]}-{hexa[8:12]}-4{hexa[13:16]}-a{hexa[17:20]}-{hexa[20:]}"


def _consumed(rng: random.Random, capacity: dict[str, Any]) -> dict[str, str]:
    """What an allocated share consumes: a default or a value on its policy's grid."""
    out = {}
    for name, entry in capacity.items():
        policy = entry.get("requestPolicy") or {}
        options = [policy["default"]] if "default" in policy else [entry["value"]]
        options += policy.get("validValues", [])
        if name == "memory" and "validRange" not in policy and "validValues" not in policy:
            options += ["10Gi", "20Gi"]
        out[name] = rng.choice(options)
    return out


def _sum_quantity(total: str | None, added: str) -> str:
    """The sum of two quantities as a plain decimal count of units (exact for whole units)."""
    amount = nanos(added) + (nanos(total) if total is not None else 0)
    return f"{amount // 10**9}" if amount % 10**9 == 0 else f"{amount}n"
