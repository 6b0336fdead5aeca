"""What `explain` says about devices, on the simulated cluster: per node, which claim and request
DynamicResources could not allocate there and why (kube's reason stays "cannot allocate all
claims"), the claim behind a missing DeviceClass, and for a placed pod the devices it got."""

from __future__ import annotations

from typing import Any

from builders import make_device_class, make_node, make_pod, make_resource_claim
from builders.dra import make_resource_slice
from unit.simkit import run

NODES = [make_node(f"n{i}").capacity(cpu="4").label(name=f"n{i}").without("ephemeral-storage").manifest()
         for i in (1, 2)]


def claimer(pod: str, claim: str, arrival: str | None = None, only: str | None = None) -> dict[str, Any]:
    """A pod using the claim; `only`: the one node it may go to."""
    builder = make_pod(pod).req(cpu="100m").resource_claim("gpu", claim=claim)
    if only:
        builder.node_selector({"name": only})
    if arrival:
        builder.arrival(arrival)
    return builder.manifest()


def gpus(node: str, *devices: dict[str, Any]) -> dict[str, Any]:
    """A slice of the node's devices, each given as its manifest's fields besides the name."""
    rs = make_resource_slice(f"{node}-gpus", node, devices=len(devices))
    for entry, more in zip(rs["spec"]["devices"], devices, strict=True):
        entry.update(more)
    return rs


def model(name: str, **more: Any) -> dict[str, Any]:
    return {"attributes": {"model": {"string": name}}, **more}


def selecting(name: str, expression: str) -> dict[str, Any]:
    device_class = make_device_class(name)
    device_class["spec"] = {"selectors": [{"cel": {"expression": expression}}]}
    return device_class


def with_request(claim: dict[str, Any], **exactly: Any) -> dict[str, Any]:
    claim["spec"]["devices"]["requests"][0]["exactly"].update(exactly)
    return claim


def explained(objects: list[dict[str, Any]], pod: str = "p") -> dict[str, Any]:
    _, sim = run(objects)
    explanation = sim.scheduler.explain("default", pod)
    assert explanation is not None
    return explanation


def details(explanation: dict[str, Any]) -> dict[str, str]:
    """Each nearest miss's DynamicResources detail, by node."""
    return {miss["node"]: failed["detail"] for miss in explanation["filter"]["nearest"]
            for failed in miss["failed"] if failed["plugin"] == "DynamicResources"}


def test_a_node_without_devices() -> None:
    e = explained([*NODES, make_device_class("gpu"), make_resource_claim("c1"), claimer("p", "c1")])
    assert e["status"] == "pending"
    assert details(e) == {node: "this node has no devices for ResourceClaim(s) default/c1: no ResourceSlice offers any here"
                          for node in ("n1", "n2")}


def test_no_device_of_the_class() -> None:
    a100 = selecting("a100", 'device.attributes["gpu.example.com"].model == "A100"')
    e = explained([*NODES, a100, gpus("n1", model("T4"), model("T4")), make_resource_claim("c1", device_class="a100"),
                   claimer("p", "c1", only="n1")])
    assert details(e)["n1"] == ('ResourceClaim default/c1, request device: none of this node\'s 2 device(s) is of '
                                'DeviceClass "a100"')


def test_a_request_selector_that_matches_none() -> None:
    claim = with_request(make_resource_claim("c1"),
                         selectors=[{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "H100"'}}])
    e = explained([*NODES, make_device_class("gpu"), gpus("n1", model("T4"), model("A100")), claim, claimer("p", "c1")])
    assert details(e)["n1"] == (
        'ResourceClaim default/c1, request device: its selector "device.attributes["gpu.example.com"].model == '
        '"H100"" matches none of this node\'s 2 device(s) of DeviceClass "gpu"')


def test_every_matching_device_in_use_names_the_claims_holding_them() -> None:
    objects = [*NODES, make_device_class("gpu"), gpus("n1", {}), make_resource_claim("c0"), make_resource_claim("c1"),
               claimer("first", "c0"), claimer("p", "c1", arrival="5s")]
    e = explained(objects)
    assert e["filter"]["rejected"][0]["reason"] == "cannot allocate all claims"
    assert details(e)["n1"] == ('ResourceClaim default/c1, request device: needs 1 device(s) of DeviceClass "gpu", 0 of the '
                                "1 matching here can be had: 1 in use by 1 claim(s) (default/c0)")
    # The node with the device comes before the one without any.
    assert [miss["node"] for miss in e["filter"]["nearest"]] == ["n1", "n2"]


def test_a_device_taint_not_tolerated() -> None:
    taint = {"taints": [{"key": "gpu.example.com/unhealthy", "value": "true", "effect": "NoSchedule"}]}
    e = explained([*NODES, make_device_class("gpu"), gpus("n1", taint), make_resource_claim("c1"), claimer("p", "c1", only="n1")])
    assert details(e)["n1"] == (
        'ResourceClaim default/c1, request device: needs 1 device(s) of DeviceClass "gpu", 0 of the 1 matching here can '
        "be had: 1 with a taint the request does not tolerate (gpu.example.com/unhealthy=true:NoSchedule)")


def test_a_match_attribute_constraint_no_free_devices_satisfy() -> None:
    claim = with_request(make_resource_claim("c1"), count=2)
    claim["spec"]["devices"]["constraints"] = [{"requests": ["device"], "matchAttribute": "gpu.example.com/island"}]
    island = [{"attributes": {"island": {"int": i}}} for i in (0, 1)]
    e = explained([*NODES, make_device_class("gpu"), gpus("n1", *island), claim, claimer("p", "c1", only="n1")])
    assert details(e)["n1"] == (
        "ResourceClaim default/c1: constraint matchAttribute gpu.example.com/island on request(s) device: no value of it "
        "is shared by enough free devices (2 needed; free devices per value: 0: 1, 1: 1)")


def test_a_distinct_attribute_constraint_no_free_devices_satisfy() -> None:
    claim = with_request(make_resource_claim("c1"), count=2)
    claim["spec"]["devices"]["constraints"] = [{"distinctAttribute": "gpu.example.com/model"}]
    e = explained([*NODES, make_device_class("gpu"), gpus("n1", model("T4"), model("T4")), claim,
                   claimer("p", "c1", only="n1")])
    assert details(e)["n1"] == (
        "ResourceClaim default/c1: constraint distinctAttribute gpu.example.com/model on request(s) device: the free "
        "devices have 1 distinct value(s) of it, 2 device(s) needed")


SHARED = {"allowMultipleAllocations": True, "capacity": {"memory": {"value": "10Gi"}}}


def share(name: str, memory: str) -> dict[str, Any]:
    return with_request(make_resource_claim(name), capacity={"requests": {"memory": memory}})


def test_capacity_exhausted_on_a_shared_device() -> None:
    objects = [*NODES, make_device_class("gpu"), gpus("n1", SHARED), share("c0", "8Gi"), share("c1", "4Gi"),
               claimer("first", "c0"), claimer("p", "c1", arrival="5s", only="n1")]
    e = explained(objects)
    assert details(e)["n1"] == (
        'ResourceClaim default/c1, request device: needs 1 device(s) of DeviceClass "gpu", 0 of the 1 matching here can '
        "be had: 1 shared with too little capacity left, shared by 1 claim(s) (memory: one share takes 4Gi, at most 2Gi "
        "left)")


def test_a_missing_class_names_the_claim() -> None:
    e = explained([*NODES, make_resource_claim("c1", device_class="tpu"), claimer("p", "c1")])
    (group,) = e["filter"]["rejected"]
    assert (group["plugin"], group["reason"]) == ("PreFilter:DynamicResources", "request device: device class tpu does not exist")
    assert group["detail"] == 'ResourceClaim default/c1, request device: DeviceClass "tpu" does not exist'


def test_an_allocated_claim_whose_node_selector_excludes_the_node() -> None:
    objects = [*NODES, make_device_class("gpu"), gpus("n1", {}), make_resource_claim("c1"), claimer("first", "c1"),
               claimer("p", "c1", arrival="5s", only="n2")]
    e = explained(objects)
    assert details(e)["n2"] == ("ResourceClaim default/c1 is allocated devices (device: gpu.example.com/n1/gpu-0) whose "
                                "node selector excludes this node")


def test_a_placed_pod_lists_its_devices() -> None:
    objects = [*NODES, make_device_class("gpu"), gpus("n2", {}, {}), make_resource_claim("c1"), claimer("p", "c1")]
    e = explained(objects)
    assert (e["status"], e["node"]) == ("scheduled", "n2")
    assert e["devices"] == [{"claim": "default/c1", "pod_claim": "gpu", "devices": [
        {"request": "device", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}]}]


def test_a_placed_pod_on_a_shared_device_lists_its_share() -> None:
    objects = [*NODES, make_device_class("gpu"), gpus("n2", SHARED), share("c1", "3Gi"), claimer("p", "c1")]
    e = explained(objects)
    (claim,) = e["devices"]
    (device,) = claim["devices"]
    assert device["share_id"] and device["consumed_capacity"] == {"memory": "3Gi"}
    assert {k: v for k, v in device.items() if k not in ("share_id", "consumed_capacity")} == {
        "request": "device", "driver": "gpu.example.com", "pool": "n2", "device": "gpu-0"}


def test_the_terminal_view_lists_the_devices_of_a_placed_pod() -> None:
    import io

    from rich.console import Console

    from kubesched.observe.explainview import render

    objects = [*NODES, make_device_class("gpu"), gpus("n2", SHARED), share("c1", "3Gi"), claimer("p", "c1")]
    e = explained(objects)
    out = io.StringIO()
    render(Console(file=out, width=200), e)
    text = out.getvalue()
    share_id = e["devices"][0]["devices"][0]["share_id"]
    assert "Devices it got, per claim and request" in text
    assert f"default/c1 │ device  │ gpu.example.com/n2/gpu-0 │ share {share_id}: memory 3Gi" in text


def test_a_prioritized_list_gives_each_alternatives_reason() -> None:
    a100 = selecting("a100", 'device.attributes["gpu.example.com"].model == "A100"')
    v100 = selecting("v100", 'device.attributes["gpu.example.com"].model == "V100"')
    claim = make_resource_claim("c1")
    claim["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "a100"}, {"name": "small", "deviceClassName": "v100", "count": 2}]}]
    e = explained([*NODES, a100, v100, gpus("n1", model("V100"), model("T4")), claim, claimer("p", "c1", only="n1")])
    assert details(e)["n1"] == (
        "ResourceClaim default/c1, request gpu: no alternative of firstAvailable can be had (big: none of this node's 2 "
        'device(s) is of DeviceClass "a100"; small: needs 2 device(s) of DeviceClass "v100", this node has 1 matching)')


def test_claims_that_fit_alone_but_not_together() -> None:
    pod = (make_pod("p").req(cpu="100m").resource_claim("a", claim="c1").resource_claim("b", claim="c2")
           .node_selector({"name": "n1"}).manifest())
    e = explained([*NODES, make_device_class("gpu"), gpus("n1", {}), make_resource_claim("c1"), make_resource_claim("c2"), pod])
    assert details(e)["n1"] == (
        "ResourceClaim(s) default/c1, default/c2: every request can be met on its own, but no set of devices meets them "
        "all together (1 free device(s) match, 2 requested; shared counters of partitionable devices or constraints "
        "across requests may also stand in the way)")
