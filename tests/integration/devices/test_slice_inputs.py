"""Typed ResourceSlices' devices through kubesched's CEL inputs (devices/sliceinputs.py) and
through the real k8s.io/dynamic-resource-allocation/cel v0.37.2 (tools/k8s/dracel), which fills its
Device from the same slice fields: every device's result or error must agree, on the columns
(batch evaluation) and device by device."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from integration.harness.dracel import Oracle
from kubesched.api.dra import ResourceSlice
from kubesched.devices.cel import compile_selector
from kubesched.devices.celvector import evaluate_batch
from kubesched.devices.sliceinputs import DeviceColumns


def _slice(name: str, driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "pool": {"name": name, "resourceSliceCount": 1}, "nodeName": name, "devices": devices}}


SLICES = [
    _slice("node-1", "gpu.example.com", [
        {"name": f"gpu-{i}", "allowMultipleAllocations": i == 3,
         "attributes": {"model": {"string": ["a100", "h100"][i % 2]}, "index": {"int": i}, "mig": {"bool": i % 3 == 0},
                        "driverVersion": {"version": ["1.2.3", "1.10.0-rc.1", "2.0.0+build.7"][i % 3]},
                        "gpu.example.com/uuid": {"string": f"GPU-{i}"}, "topology.example.io/numa": {"int": i // 2}},
         "capacity": {"memory": {"value": ["40Gi", "80Gi", "81920Mi", "1500m"][i]}, "sms": {"value": 108}}}
        for i in range(4)]),
    _slice("node-2", "nic.example.org", [
        {"name": "eth0", "attributes": {"speed": {"int": 100}, "gpu.example.com/model": {"string": "a100"}},
         "capacity": {"bandwidth": {"value": "10G"}}},
        {"name": "eth1"},
    ]),
]
EXPRESSIONS = [
    'device.driver == "gpu.example.com"',
    'device.attributes["gpu.example.com"].model == "a100"',
    'device.attributes["gpu.example.com"].index >= 2 && !device.allowMultipleAllocations',
    'device.attributes["gpu.example.com"].mig || device.attributes["nic.example.org"].speed > 10',
    'has(device.attributes["topology.example.io"].numa) && device.attributes["topology.example.io"].numa == 1',
    'device.attributes["gpu.example.com"].uuid.startsWith("GPU-")',
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.9.0"))',
    'device.attributes["gpu.example.com"].driverVersion == semver("2.0.0")',
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) == 0',
    'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("1"))',
    'device.capacity["nic.example.org"].bandwidth.asApproximateFloat() > 1e9',
    'device.attributes["gpu.example.com"].index > 1',
    'cel.bind(g, device.attributes["gpu.example.com"], g.?model.orValue("none") != "none")',
    '"topology.example.io" in device.attributes',
    "device.allowMultipleAllocations",
]


def _as_oracle_device(driver: str, device: dict[str, Any]) -> dict[str, Any]:
    """The same device as the oracle's input: the slice's fields, capacities by value."""
    out: dict[str, Any] = {"driver": driver, "attributes": device.get("attributes", {}),
                           "capacity": {name: str(c["value"]) for name, c in device.get("capacity", {}).items()}}
    if "allowMultipleAllocations" in device:
        out["allowMultipleAllocations"] = device["allowMultipleAllocations"]
    return out


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_devices_from_typed_slices_evaluate_as_in_kube(oracle: Oracle, expression: str) -> None:
    typed = [msgspec.convert(s, ResourceSlice) for s in SLICES]
    batch = DeviceColumns.of_slices(typed)
    raw_devices = [_as_oracle_device(s["spec"]["driver"], d) for s in SLICES for d in s["spec"]["devices"]]
    answer = oracle.ask(expression, raw_devices)
    assert not answer["scheduler"].get("error"), answer
    theirs = [(r.get("matches", False), r.get("error", "")) for r in answer["results"]]
    selector = compile_selector(expression)
    on_columns = evaluate_batch(selector, batch)
    assert [(bool(m), on_columns.errors.get(i, "")) for i, m in enumerate(on_columns.matches)] == theirs
    one_by_one = selector.matches_each(batch.devices)
    assert [(bool(m), one_by_one.errors.get(i, "")) for i, m in enumerate(one_by_one.matches)] == theirs
