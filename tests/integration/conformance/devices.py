"""Dynamic Resource Allocation in the conformance scenarios, from an RNG of its own (seeds that get
no devices stay as they were).

In about a third of the scenarios: DeviceClasses (selecting on the driver, on attributes, or
nothing), ResourceSlices written directly as a driver would (no driver runs): node-local pools of
one or two slices with GPUs (int, string, bool and version attributes, a memory capacity, now and
then a NoSchedule or None taint) and NICs, partitionable GPUs whose partitions draw on shared
counters, shareable GPUs (allowMultipleAllocations, a memory capacity with a request policy), and
now and then a pool for every node or for the nodes a selector picks. Pending pods then reference
ResourceClaims by name (some claims shared by several pods) and, when `templates` is on,
ResourceClaimTemplates: one or two requests each, ExactCount or All, selectors, firstAvailable
lists, matchAttribute / distinctAttribute constraints, tolerations of the taints, capacity requests
on the shareable GPUs, admin access now and then; and cases no node can serve (a selector no device
matches, a class that does not exist, more devices than a node has).

Everything is written unprefixed, for the simulator; runner.dra_manifests prefixes what the real
runs share between scenarios (slice and pool names, node names).
"""

from __future__ import annotations

import os
import random
from typing import Any

JSON = dict[str, Any]

DRA_SHARE = 0.35  # of the scenarios
# ResourceClaimTemplates need the resourceclaim controller: kube-controller-manager runs it for
# the real schedulers, the simulator has its own (backends/sim/resourceclaims.py).
TEMPLATES = os.environ.get("CONFORMANCE_DRA_TEMPLATES", "1") == "1"  # "0": named claims only

GPU, NIC, FPGA = "gpu.example.com", "nic.example.com", "fpga.example.com"
NUMA = "example.com/numa"  # on GPUs and NICs alike: matchAttribute across them
MODELS = ("a100", "h100", "l4")
VERSIONS = ("1.2.0", "1.10.3", "2.0.0-rc.1", "2.1.0")
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"

# DeviceClasses by name: their CEL selectors (none for "any").
CLASSES: dict[str, list[str]] = {
    "gpu": [f'device.driver == "{GPU}"'],
    "gpu-big": [f'device.driver == "{GPU}"', f'device.attributes["{GPU}"].?memory.orValue(0) >= 40'],
    "gpu-new": [f'device.driver == "{GPU}"',
                f'device.attributes["{GPU}"].?driverVersion.orValue(semver("0.0.0")).isGreaterThan(semver("1.9.0"))'],
    "gpu-shared": [f'device.driver == "{GPU}" && device.allowMultipleAllocations'],
    "nic": [f'device.driver == "{NIC}"'],
    "fpga": [f'device.driver == "{FPGA}"'],
    "any": [],
}
MISSING_CLASS = "gpu-missing"
# Request selectors, by the classes they go with.
SELECTORS: dict[str, list[str]] = {
    "gpu": [f'device.attributes["{GPU}"].model == "h100"', f'device.attributes["{GPU}"].model != "l4"',
            f'device.attributes["{GPU}"].?ecc.orValue(false)', f'device.attributes["{GPU}"].model == "b200"',  # no such model
            f'device.capacity["{GPU}"].?memory.orValue(quantity("0")).compareTo(quantity("40Gi")) >= 0',
            f'device.attributes["{GPU}"].index % 2 == 0'],
    "gpu-big": [f'device.attributes["{GPU}"].?ecc.orValue(false)', f'device.attributes["{GPU}"].model == "a100"'],
    "gpu-new": [f'device.attributes["{GPU}"].model != "a100"'],
    "gpu-shared": [f'device.attributes["{GPU}"].model == "l4"'],
    "nic": [f'device.attributes["{NIC}"].speed >= 100'],
    "any": [f'device.driver == "{NIC}"', f'device.attributes["{GPU}"].?model.orValue("") == "a100"'],
    "fpga": [],
}
MEMORY_ASKS = ("5Gi", "10Gi", "12Gi", "25Gi", "40Gi")


def add_devices(seed: int, scenario: JSON, *, templates: bool = TEMPLATES) -> None:
    """Devices and claims into `scenario` (scenario["dra"], and resourceClaims in some pending pods)."""
    rng = random.Random(f"devices-{seed}")
    if rng.random() >= DRA_SHARE:
        return
    slices: list[JSON] = []
    shareable = partitionable = fpga = False
    for node in scenario["nodes"]:
        name = node["name"]
        if rng.random() < 0.75:
            slices += _gpu_pool(rng, name)
        if rng.random() < 0.35:
            slices.append(_slice(f"{name}-nic", NIC, f"{name}-nic", {"nodeName": name},
                                 [_nic(rng, i) for i in range(rng.randint(1, 2))]))
        if rng.random() < 0.2:
            slices += _partitionable_pool(rng, name)
            partitionable = True
        if rng.random() < 0.2:
            slices.append(_shareable_slice(rng, name))
            shareable = True
    if rng.random() < 0.15:
        where = rng.choice(({"allNodes": True}, {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "disk", "operator": "In", "values": [rng.choice(("ssd", "hdd"))]}]}]}}))
        devices = [{"name": f"fpga-{i}", "attributes": {"slots": {"int": rng.choice((1, 2))}}} for i in range(rng.randint(1, 2))]
        slices.append(_slice("fleet-fpga", FPGA, "fleet-fpga", where, devices))
        fpga = True
    names = ["gpu", *(c for c in ("gpu-big", "gpu-new", "nic", "any") if rng.random() < 0.5)]
    if shareable:
        names.append("gpu-shared")
    if fpga:
        names.append("fpga")
    classes = [{"name": c, "selectors": CLASSES[c]} for c in names]
    claims: list[JSON] = []
    made: list[JSON] = []  # templates
    shared: list[str] = []  # named claims more than one pod may reference
    for pod in scenario["pending"]:
        if rng.random() >= 0.6:
            continue
        entries = []
        for e in range(rng.choice((1, 1, 1, 2))):
            entry = f"c{e}"
            r = rng.random()
            if shared and r < 0.25:
                ref = {"resourceClaimName": rng.choice(shared)}
            elif templates and r < 0.55:
                made.append({"name": f"template-{len(made)}", "spec": _claim_spec(rng, names, partitionable)})
                ref = {"resourceClaimTemplateName": made[-1]["name"]}
            else:
                claims.append({"name": f"claim-{len(claims)}", "spec": _claim_spec(rng, names, partitionable)})
                ref = {"resourceClaimName": claims[-1]["name"]}
                if rng.random() < 0.3:
                    shared.append(claims[-1]["name"])
            if any(ref == {k: v for k, v in x.items() if k != "name"} for x in entries):
                continue  # the same claim twice in one pod: the API server refuses none, but kube counts it once
            entries.append({"name": entry, **ref})
        if entries:
            pod["spec"]["resourceClaims"] = entries
    scenario["dra"] = {"classes": classes, "slices": slices, "claims": claims, "templates": made}


def _slice(name: str, driver: str, pool: str, where: JSON, devices: list[JSON], count: int = 1) -> JSON:
    return {"name": name, "driver": driver, "pool": pool, "count": count, "where": where, "devices": devices}


def _gpu(rng: random.Random, index: int) -> JSON:
    attributes: JSON = {"model": {"string": rng.choice(MODELS)}, "memory": {"int": rng.choice((16, 40, 80))},
                        "index": {"int": index}, "driverVersion": {"version": rng.choice(VERSIONS)}}
    if rng.random() < 0.7:
        attributes["ecc"] = {"bool": rng.random() < 0.6}
    if rng.random() < 0.5:
        attributes[NUMA] = {"int": rng.randrange(2)}
    device: JSON = {"name": f"gpu-{index}", "attributes": attributes,
                    "capacity": {"memory": {"value": f"{attributes['memory']['int']}Gi"}}}
    if rng.random() < 0.12:
        device["taints"] = [{"key": rng.choice(("maintenance", "degraded")), "value": "true",
                             "effect": "NoSchedule" if rng.random() < 0.8 else "None"}]
    return device


def _gpu_pool(rng: random.Random, node: str) -> list[JSON]:
    """One or two slices of one pool (the second with devices numbered on)."""
    count = rng.choice((1, 1, 2))
    index = 0
    out = []
    for s in range(count):
        devices = []
        for _ in range(rng.randint(1, 3)):
            devices.append(_gpu(rng, index))
            index += 1
        out.append(_slice(f"{node}-gpu-{s}", GPU, f"{node}-gpu", {"nodeName": node}, devices, count))
    return out


def _nic(rng: random.Random, index: int) -> JSON:
    attributes: JSON = {"speed": {"int": rng.choice((25, 100, 400))}, NUMA: {"int": rng.randrange(2)}}
    return {"name": f"nic-{index}", "attributes": attributes}


def _partitionable_pool(rng: random.Random, node: str) -> list[JSON]:
    """A GPU cut three ways (whole, two halves, four quarters) over shared counters: the counters in
    a slice of their own, the partitions in another of the same pool."""
    slots = rng.choice((4, 4, 3))
    counters = _slice(f"{node}-part-counters", GPU, f"{node}-part", {"nodeName": node}, [], 2)
    counters["sharedCounters"] = [{"name": "gpu-0-slots", "counters": {"slots": {"value": str(slots)}}}]
    devices = []
    for name, amount, model in (("whole", 4, "a100"), *((f"half-{i}", 2, "a100-half") for i in range(2)),
                                *((f"quarter-{i}", 1, "a100-quarter") for i in range(4))):
        devices.append({"name": f"part-{name}", "attributes": {"model": {"string": model}, "index": {"int": len(devices)},
                                                               "memory": {"int": 10 * amount}},
                        "consumesCounters": [{"counterSet": "gpu-0-slots", "counters": {"slots": {"value": str(amount)}}}]})
    return [counters, _slice(f"{node}-part-devices", GPU, f"{node}-part", {"nodeName": node}, devices, 2)]


def _shareable_slice(rng: random.Random, node: str) -> JSON:
    policy = rng.choice(({"default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi"}},
                         {"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]},
                         {"default": "8Gi"}))
    device = {"name": "shared-gpu-0", "allowMultipleAllocations": True,
              "attributes": {"model": {"string": rng.choice(("l4", "a100"))}, "index": {"int": 0}},
              "capacity": {"memory": {"value": rng.choice(("40Gi", "80Gi")), "requestPolicy": policy}}}
    return _slice(f"{node}-shared", GPU, f"{node}-shared", {"nodeName": node}, [device])


def _exact(rng: random.Random, classes: list[str], partitionable: bool) -> JSON:
    name = MISSING_CLASS if rng.random() < 0.04 else rng.choice(classes)
    spec: JSON = {"deviceClassName": name}
    if rng.random() < 0.1:
        spec["allocationMode"] = "All"
    elif rng.random() < 0.3:
        spec["count"] = rng.choice((2, 2, 3))
    if rng.random() < 0.3 and SELECTORS.get(name):
        spec["selectors"] = [{"cel": {"expression": rng.choice(SELECTORS[name])}}]
    elif partitionable and name in ("gpu", "any") and rng.random() < 0.3:
        spec["selectors"] = [{"cel": {"expression": f'device.attributes["{GPU}"].model.startsWith("a100")'}}]
    if rng.random() < 0.2:
        spec["tolerations"] = [rng.choice(({"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"},
                                           {"operator": "Exists"}, {"key": "degraded", "operator": "Equal", "value": "true"}))]
    if name == "gpu-shared" and rng.random() < 0.7:
        spec["capacity"] = {"requests": {"memory": rng.choice(MEMORY_ASKS)}}
    if rng.random() < 0.03:
        spec["adminAccess"] = True
    return spec


def _claim_spec(rng: random.Random, classes: list[str], partitionable: bool) -> JSON:
    requests = []
    for r in range(rng.choice((1, 1, 1, 2))):
        if rng.random() < 0.2:
            subs = []
            for s in range(rng.choice((2, 3))):
                sub = _exact(rng, classes, partitionable)
                sub.pop("adminAccess", None)  # not in a subrequest
                subs.append({"name": f"s{s}", **sub})
            requests.append({"name": f"r{r}", "firstAvailable": subs})
        else:
            requests.append({"name": f"r{r}", "exactly": _exact(rng, classes, partitionable)})
    devices: JSON = {"requests": requests}
    if rng.random() < 0.25:
        if len(requests) == 2 and rng.random() < 0.6:
            devices["constraints"] = [{"requests": [r["name"] for r in requests], "matchAttribute": NUMA}]
        else:
            kind = rng.choice(("matchAttribute", "distinctAttribute"))
            devices["constraints"] = [{kind: rng.choice((f"{GPU}/model", f"{GPU}/index", NUMA))}]
    return {"devices": devices}
