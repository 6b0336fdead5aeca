"""NodeResourcesFit and NodeResourcesBalancedAllocation with extended resources backed by DRA
(kube v1.37.2's DRAExtendedResource, GA): the cases of kube's fit_test.go and
balanced_allocation_test.go that involve DeviceClasses, and the table-wide forms of them."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from builders import UnitHandle, cache_with, make_device_class, make_node, make_pod, make_resource_slice
from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.devices.manager import DraManager
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, QueueingHint
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult
from kubesched.plugins.noderesourcesbalancedallocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from kubesched.plugins.noderesourcesfit import NodeResourcesFit, NodeResourcesFitArgs

DRA_RESOURCE = "extended.resource.dra.io/something"  # kube's fit_test extendedResourceName
CLASS = "device-class-name"
IMPLICIT = f"deviceclass.resource.kubernetes.io/{CLASS}"
Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip


class DraHandle(UnitHandle):
    """UnitHandle with the scheduler's DRA manager over the cache's classes."""

    def __init__(self, cache: Cache) -> None:
        super().__init__(cache)
        self.dra = DraManager(classes=cache.device_classes.classes)


def device_class(name: str = CLASS, extended: str | None = DRA_RESOURCE, selector: str | None = None) -> DeviceClass:
    manifest = make_device_class(name, extended)
    if selector is not None:
        manifest["spec"]["selectors"] = [{"cel": {"expression": selector}}]
    return msgspec.convert(manifest, DeviceClass)


def resource_slice(node: str, devices: int, **spec: Any) -> ResourceSlice:
    manifest = make_resource_slice(f"{node}-slice", node, devices, driver="test-driver")
    manifest["spec"].update(spec)
    return msgspec.convert(manifest, ResourceSlice)


def setup(nodes: list[Node], *objects: DeviceClass | ResourceSlice, pods: list[Any] = ()) -> tuple[Cache, DraHandle]:  # type: ignore[assignment]
    cache = cache_with(nodes, pods)
    handle = DraHandle(cache)
    for obj in objects:
        if isinstance(obj, DeviceClass):
            cache.device_classes.set(obj)
        else:
            handle.dra.on_slice(obj)
    return cache, handle


def fit(handle: DraHandle, args: dict[str, Any] | None = None) -> NodeResourcesFit:
    parsed = NodeResourcesFitArgs.model_validate(args) if args is not None else None
    return NodeResourcesFit(parsed, handle)  # type: ignore[arg-type]


def run_filter(plugin: NodeResourcesFit, cache: Cache, pi: PodInfo) -> FilterResult | None:
    state = CycleState()
    _, status = plugin.pre_filter(state, pi)
    assert status is None
    return plugin.filter(state, pi, cache.table)


def verdicts(result: FilterResult | None, cache: Cache) -> dict[str, tuple[Code, tuple[str, ...]] | None]:
    out: dict[str, tuple[Code, tuple[str, ...]] | None] = {}
    for name, row in cache.table.index.items():
        code = 0 if result is None else int(result.codes[row])
        out[name] = None if code == 0 else result.describe(code)  # type: ignore[union-attr]
    return out


def node(name: str, **allocatable: str) -> Node:
    return make_node(name).exactly({"cpu": "10m", "memory": "20", "pods": "32", **allocatable}).obj()


def pod(requests: dict[str, str], name: str = "p") -> PodInfo:
    return make_pod(name).req(requests).info()


# --- Filter -------------------------------------------------------------------------------------------


def test_a_resource_a_class_maps_is_left_to_dra_on_a_node_without_it() -> None:
    # fit_test "extended resource backed by DRA": the node has none of it allocatable.
    cache, handle = setup([node("n")], device_class())
    assert run_filter(fit(handle), cache, pod({"cpu": "1m", "memory": "1", DRA_RESOURCE: "1"})) is None


def test_without_a_class_the_resource_is_insufficient() -> None:
    # fit_test "extended resource NOT backed by DRA" (and the gate off, which kube's test also shows).
    cache, handle = setup([node("n")], device_class())
    result = run_filter(fit(handle), cache, pod({"cpu": "1m", "memory": "1", "example.com/bbb": "1"}))
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/bbb",))}
    cache, handle = setup([node("n")])
    result = run_filter(fit(handle), cache, pod({"cpu": "1m", DRA_RESOURCE: "1"}))
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"Insufficient {DRA_RESOURCE}",))}


def test_the_implicit_name_of_a_class_is_left_to_dra_too() -> None:
    cache, handle = setup([node("n")], device_class(extended=None))
    assert run_filter(fit(handle), cache, pod({IMPLICIT: "2"})) is None
    result = run_filter(fit(handle), cache, pod({DRA_RESOURCE: "2"}))
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"Insufficient {DRA_RESOURCE}",))}


def test_a_node_with_the_resource_allocatable_is_checked_as_before() -> None:
    # A device plugin's allocatable wins over DRA on that node; the nodes without any go to DRA.
    nodes = [node("plugin-1", **{DRA_RESOURCE: "1"}), node("plugin-4", **{DRA_RESOURCE: "4"}), node("dra")]
    cache, handle = setup(nodes, device_class())
    plugin = fit(handle)
    pi = pod({"cpu": "1m", DRA_RESOURCE: "2"})
    result = run_filter(plugin, cache, pi)
    assert verdicts(result, cache) == {
        "plugin-1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"Insufficient {DRA_RESOURCE}",)),
        "plugin-4": None,
        "dra": None,
    }
    # The one-row form (kept verdicts redone for a few rows) and the rows form say the same.
    state = CycleState()
    plugin.pre_filter(state, pi)
    checks = state.read(plugin._state_key)
    rows = np.arange(cache.table.size)
    assert [plugin._row_code(checks, cache.table, r) for r in rows.tolist()] == list(plugin._codes(checks, cache.table, rows))
    by_rows = plugin.filter_rows(state, pi, cache.table, rows)
    assert verdicts(by_rows, cache) == verdicts(result, cache)


def test_other_resources_still_fail_where_dra_serves_one() -> None:
    cache, handle = setup([node("n")], device_class())
    result = run_filter(fit(handle), cache, pod({"cpu": "20m", DRA_RESOURCE: "1"}))
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",))}


def test_a_class_added_later_changes_the_verdict_kept_for_the_node() -> None:
    cache, handle = setup([node("n")])
    plugin = fit(handle)
    pi = pod({DRA_RESOURCE: "1"})
    assert run_filter(plugin, cache, pi) is not None
    cache.device_classes.set(device_class())
    assert run_filter(plugin, cache, pi) is None
    cache.device_classes.remove(CLASS)
    assert run_filter(plugin, cache, pi) is not None


def test_explanations_do_not_count_what_dra_serves() -> None:
    cache, handle = setup([node("n")], device_class())
    plugin = fit(handle)
    pi = pod({"cpu": "20m", DRA_RESOURCE: "5"})
    state = CycleState()
    plugin.pre_filter(state, pi)
    assert plugin.miss_detail(state, pi, cache.table, 0) == "requests 20m cpu, allocatable only 10m"


def test_a_pod_using_a_dra_resource_is_not_signed() -> None:
    # kube's SignPod: "signature disabled when dra extended resources are used in the cluster".
    _, handle = setup([node("n")], device_class())
    plain, gpu = pod({"cpu": "1m"}), pod({"cpu": "1m", DRA_RESOURCE: "1"})
    for plugin in (fit(handle), NodeResourcesBalancedAllocation(None, handle)):  # type: ignore[arg-type]
        assert plugin.sign_pod(plain) is not None
        assert plugin.sign_pod(gpu) is None
        assert plugin.sign_pod(pod({"cpu": "1m", "example.com/other": "1"})) is not None


# --- queueing hints -------------------------------------------------------------------------------------


def test_device_class_events_are_registered() -> None:
    _, handle = setup([])
    plugin = fit(handle)
    (registered,) = [e for e in plugin.events_to_register() if e.event.resource == "resource.k8s.io/DeviceClass"]
    assert registered.hint == plugin.is_schedulable_after_device_class_event
    assert registered.event.action == ActionType.Add | ActionType.Update


def test_device_class_hint_as_kubes() -> None:
    # fit_test Test_isSchedulableAfterDeviceClassChange.
    _, handle = setup([])
    hint = fit(handle).is_schedulable_after_device_class_event
    gpu_pod = pod({"example.com/gpu": "1"})
    plain = device_class("c", extended=None)
    gpu = device_class("c", extended="example.com/gpu")
    gpu1 = device_class("c", extended="example.com/gpu1")
    assert hint(gpu_pod, None, plain) == SKIP  # added, names nothing the pod requests
    assert hint(gpu_pod, plain, plain) == SKIP  # updated, same (no) name
    assert hint(gpu_pod, gpu, gpu) == SKIP  # updated, same name
    assert hint(gpu_pod, None, gpu) == Q  # added with the name
    assert hint(gpu_pod, plain, gpu) == Q  # updated to the name
    assert hint(gpu_pod, gpu1, gpu) == Q
    assert hint(gpu_pod, gpu, gpu1) == SKIP  # updated to a name the pod does not request
    assert hint(pod({"example.com/other": "1"}), None, gpu) == SKIP
    # Added: its implicit name counts; updated, the name of a class never changes.
    implicit = pod({"deviceclass.resource.kubernetes.io/c": "1"})
    assert hint(implicit, None, plain) == Q
    assert hint(implicit, plain, gpu) == SKIP


def test_node_hints_leave_dra_resources_to_dra() -> None:
    cache, handle = setup([], device_class())
    plugin = fit(handle)
    pi = pod({"cpu": "1m", DRA_RESOURCE: "1"})
    # Added: fits once DRA serves the resource the node has none of.
    assert plugin.is_schedulable_after_node_change(pi, None, node("n")) == Q
    assert plugin.is_schedulable_after_node_change(pi, None, node("small", **{DRA_RESOURCE: "0"})) == Q
    # Updated: nothing grew, but the node leaves the resource to DRA (kube queues).
    assert plugin.is_schedulable_after_node_change(pi, node("n"), node("n")) == Q
    # Without the class, the node lacks it.
    cache.device_classes.remove(CLASS)
    assert plugin.is_schedulable_after_node_change(pi, None, node("n")) == SKIP


# --- scoring --------------------------------------------------------------------------------------------


def scores(plugin: Any, cache: Cache, pi: PodInfo, *, pre_score: bool = True) -> list[int]:
    table = cache.table
    rows = np.array([table.row_of(n) for n in table.index], dtype=np.intp)
    state = CycleState()
    if pre_score:
        assert plugin.pre_score(state, pi, table, rows) is None
    return [int(s) for s in plugin.score(state, pi, table, rows)]


EXTENDED_ONLY = {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": DRA_RESOURCE, "weight": 1}]}}


def test_least_allocated_counts_the_devices_of_the_class() -> None:
    # fit_test "test case for ScoringStrategy LeastAllocated with Extended resources" (with and
    # without PreScore): 3 devices on node1, 2 on node2.
    nodes = [make_node("node1").exactly({}).obj(), make_node("node2").exactly({}).obj()]
    cache, handle = setup(nodes, device_class(), resource_slice("node1", 3), resource_slice("node2", 2))
    pi = pod({DRA_RESOURCE: "1"})
    assert scores(fit(handle, EXTENDED_ONLY), cache, pi) == [66, 50]
    assert scores(fit(handle, EXTENDED_ONLY), cache, pi, pre_score=False) == [66, 50]


def test_allocated_devices_count_as_requested() -> None:
    nodes = [make_node("node1").exactly({}).obj(), make_node("node2").exactly({}).obj()]
    cache, handle = setup(nodes, device_class(), resource_slice("node1", 3), resource_slice("node2", 2))
    plugin = fit(handle, EXTENDED_ONLY)
    pi = pod({DRA_RESOURCE: "1"})
    assert scores(plugin, cache, pi) == [66, 50]
    claim = msgspec.convert({
        "metadata": {"name": "c", "namespace": "default", "uid": "u1"},
        "status": {"allocation": {"devices": {"results": [
            {"request": "r", "driver": "test-driver", "pool": "node1", "device": "gpu-0"}]}}},
    }, ResourceClaim)
    handle.dra.on_claim(claim)
    assert scores(plugin, cache, pi) == [33, 50]


def test_class_selectors_and_node_selection_decide_which_devices_count() -> None:
    nodes = [make_node("node1").exactly({}).obj(), make_node("node2").exactly({}).obj(),
             make_node("node3").exactly({}).obj()]
    # node1: 4 devices, of which the class selects those of driver "test-driver" (all); a slice for
    # every node adds 1 device each; node3's own slice has a driver the class refuses.
    network = msgspec.convert({"metadata": {"name": "shared"}, "spec": {
        "driver": "test-driver", "allNodes": True, "pool": {"name": "shared", "generation": 0, "resourceSliceCount": 1},
        "devices": [{"name": "net-0"}]}}, ResourceSlice)
    other = msgspec.convert(make_resource_slice("node3-slice", "node3", 4, driver="other-driver"), ResourceSlice)
    cache, handle = setup(nodes, device_class(selector='device.driver == "test-driver"'),
                          resource_slice("node1", 4), network, other)
    pi = pod({DRA_RESOURCE: "1"})
    # node1: (5-1)*100/5 = 80; node2 and node3: 1 device, (1-1)*100/1 = 0.
    assert scores(fit(handle, EXTENDED_ONLY), cache, pi) == [80, 0, 0]


def test_a_node_with_allocatable_keeps_its_own_numbers() -> None:
    nodes = [make_node("node1").exactly({DRA_RESOURCE: "4"}).obj(), make_node("node2").exactly({}).obj()]
    cache, handle = setup(nodes, device_class(), resource_slice("node1", 2), resource_slice("node2", 2))
    # node1: its allocatable 4, (4-1)*100/4 = 75; node2: 2 devices, 50.
    assert scores(fit(handle, EXTENDED_ONLY), cache, pod({DRA_RESOURCE: "1"})) == [75, 50]


def test_balanced_allocation_includes_the_devices_of_the_class() -> None:
    # balanced_allocation_test "include DRA resource on a node for balanced resource allocation"
    # (with and without PreScore).
    nodes = [make_node("node1").exactly({"cpu": "3500m", "memory": "40000", "pods": "32"}).obj(),
             make_node("node2").exactly({"cpu": "3500m", "memory": "40000", "pods": "32"}).obj()]
    existing = [make_pod("a").node("node1").req({"cpu": "1000m"}).obj(),
                make_pod("b").node("node1").req({"cpu": "2000m"}).obj(),
                make_pod("c").node("node2").req({"cpu": "1000m", "memory": "2000"}).obj(),
                make_pod("d").node("node2").req({"cpu": "2000m", "memory": "3000"}).obj()]
    cache, handle = setup(nodes, device_class(), resource_slice("node1", 8), pods=existing)
    args = NodeResourcesBalancedAllocationArgs.model_validate(
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": DRA_RESOURCE}]})
    plugin = NodeResourcesBalancedAllocation(args, handle)  # type: ignore[arg-type]
    pi = pod({DRA_RESOURCE: "1"})
    assert scores(plugin, cache, pi) == [76, 75]
    assert scores(plugin, cache, pi, pre_score=False) == [76, 75]
