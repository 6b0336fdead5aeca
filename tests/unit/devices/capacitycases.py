"""Hand-made consumable-capacity inventories: builders for the unit tests of consumable capacity
(test_allocator_capacity.py) and the edge cases the differential test also puts to kube's own
allocator (policies at their bounds, rounding in decimal units, requests beyond MaxInt64, negative
capacities, admin access, counters of shared devices, All mode on partly used devices).
"""

from __future__ import annotations

from typing import Any

from unit.devices.allocgen import NODE, Case

GPU = "gpu.example.com"


def shareable(name: str, memory: str = "80Gi", policy: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    capacity = {"memory": {"value": memory, **({"requestPolicy": policy} if policy else {})}}
    return {"name": name, "allowMultipleAllocations": True, "capacity": capacity, **extra}


def node_slice(devices: list[dict[str, Any]], name: str = "s", count: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"driver": GPU, "nodeName": NODE,
                                                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": count},
                                                 "devices": devices}}


def request(name: str = "r", memory: str | None = None, mode: str = "ExactCount", count: int = 1,
             **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"deviceClassName": "gpu", "allocationMode": mode, "count": count, **extra}
    if memory is not None:
        spec["capacity"] = {"requests": {"memory": memory}}
    return {"name": name, "exactly": spec}


def claim(index: int, *requests: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": f"c{index}", "namespace": "ns", "uid": f"u{index}"},
            "spec": {"devices": {"requests": list(requests)}}}


def case(slices: list[dict[str, Any]], claims: list[dict[str, Any]], **state: Any) -> Case:
    return Case({"metadata": {"name": NODE}}, [{"metadata": {"name": "gpu"}, "spec": {}}], slices, claims, **state)


def edge_cases() -> list[Case]:
    range_8gi = {"default": "8Gi", "validRange": {"min": "8Gi", "max": "32Gi", "step": "8Gi"}}
    values = {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}
    decimal = {"default": "2G", "validRange": {"min": "2G", "step": "1G"}}
    used = {"shared": [f"{GPU}/p/g0/11111111-1111-4111-8111-111111111111"], "aggregated": {f"{GPU}/p/g0": {"memory": "60Gi"}}}
    counters = [{"counterSet": "set", "counters": {"mem": {"value": "1"}}}]
    counter_slice = {"metadata": {"name": "t"}, "spec": {"driver": GPU, "nodeName": NODE,
                                                         "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                                                         "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "1"}}}]}}
    asks = ("1", "8Gi", "9Gi", "32Gi", "33Gi", "2500M", "1e19", "9223372036854775807")
    out = [case([node_slice([shareable("g0", "80Gi", policy)])], [claim(0, request(memory=asked))])
           for policy in (range_8gi, values, decimal) for asked in asks]
    out += [
        case([node_slice([shareable("g0"), shareable("g1")])],
             [claim(0, request(memory="20Gi")), claim(1, request(memory="41Gi"))], **used),
        case([node_slice([shareable("g0"), shareable("g1")])], [claim(0, request(memory="20Gi", mode="All", count=0))], **used),
        case([node_slice([shareable("g0", "-1Gi")])], [claim(0, request())]),
        case([node_slice([shareable("g0", "-1Gi")])], [claim(0, request(mode="All", count=0))]),
        case([node_slice([shareable("g0")])], [claim(0, request(memory="80Gi")), claim(1, request(adminAccess=True, memory="1Gi"))]),
        case([node_slice([shareable("g0")])], [claim(0, request("a", memory="40Gi"), request("b", adminAccess=True, memory="40Gi"))]),
        case([node_slice([shareable("g0", consumesCounters=counters), shareable("g1", consumesCounters=counters)], count=2), counter_slice],
             [claim(i, request(memory="30Gi")) for i in range(3)]),
        case([node_slice([shareable("g0", "40Gi", {"default": "10Gi"})])], [claim(i, request()) for i in range(5)]),
        case([node_slice([{"name": "plain", "capacity": {"memory": {"value": "40Gi"}}}, shareable("g0")])],
             [claim(0, request(memory="41Gi")), claim(1, request(memory="40Gi"))]),
    ]
    return out
