"""NodeResourcesFit: args validation, the Filter's reasons and status codes, each scoring strategy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.dra import DEVICE_CLASS
from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, UNSCHEDULED_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult
from kubesched.plugins.noderesourcesfit import (
    NodeResourcesFit,
    NodeResourcesFitArgs,
    accounted_requests,
    fits_empty_node,
    node_allocatable,
    requested_resources_increased,
)
from unit.plugins.pluginkit import check_coverage


def make(cache: Cache, args: dict[str, Any] | None = None) -> NodeResourcesFit:
    parsed = NodeResourcesFitArgs.model_validate(args) if args is not None else None
    return NodeResourcesFit(parsed, UnitHandle(cache))


def run_filter(plugin: NodeResourcesFit, cache: Cache, pi: PodInfo) -> FilterResult | None:
    state = CycleState()
    _, status = plugin.pre_filter(state, pi)
    assert status is None
    return plugin.filter(state, pi, cache.table)


def verdicts(result: FilterResult | None, cache: Cache) -> dict[str, tuple[Code, tuple[str, ...]] | None]:
    """Node name -> (code, reasons), or None where the node passes."""
    out: dict[str, tuple[Code, tuple[str, ...]] | None] = {}
    for name, row in cache.table.index.items():
        code = 0 if result is None else int(result.codes[row])
        out[name] = None if code == 0 else result.describe(code)  # type: ignore[union-attr]
    return out


def run_score(plugin: NodeResourcesFit, cache: Cache, pi: PodInfo, names: list[str] | None = None) -> list[int]:
    table = cache.table
    rows = np.array([table.row_of(n) for n in (names or list(table.index))], dtype=np.intp)
    state = CycleState()
    assert plugin.pre_score(state, pi, table, rows) is None
    return [int(s) for s in plugin.score(state, pi, table, rows)]


# --- args -------------------------------------------------------------------------------------


def test_default_args_are_least_allocated_on_cpu_and_memory() -> None:
    args = NodeResourcesFitArgs()
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("memory", 1)]
    assert args.ignored_resources == [] and args.ignored_resource_groups == []


def test_args_read_camel_case_and_default_weights() -> None:
    args = NodeResourcesFitArgs.model_validate(
        {
            "ignoredResources": ["example.com/foo"],
            "ignoredResourceGroups": ["example.org"],
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu", "weight": 0}],
                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
            },
        }
    )
    assert args.ignored_resources == ["example.com/foo"]
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [("cpu", 1), ("nvidia.com/gpu", 1)]


def test_empty_resources_get_the_default_set() -> None:
    args = NodeResourcesFitArgs.model_validate({"scoringStrategy": {"type": "MostAllocated", "resources": []}})
    assert [r.name for r in args.scoring_strategy.resources] == ["cpu", "memory"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}}, "(0, 100]"),
        ({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": -1}]}}, "(0, 100]"),
        ({"scoringStrategy": {"type": "Spread"}}, "Unsupported value"),
        ({"scoringStrategy": {"resources": [{"name": "cpu"}]}}, "Unsupported value"),
        ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, "must be specified"),
        ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
         "at least one point"),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}}},
            "increasing order",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                "shape": [{"utilization": 101, "score": 1}]}}},
            "[0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
                "shape": [{"utilization": 10, "score": 11}]}}},
            "[0, 10]",
        ),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {
                "shape": [{"utilization": 10, "score": 1}]}}},
            "must be nil",
        ),
        ({"ignoredResourceGroups": ["example.com/gpu"]}, "can't contain '/'"),
        ({"ignoredResources": ["not a name"]}, "name part"),
        ({"ignoredResources": ["/gpu"]}, "prefix part"),
        ({"ignoredResource": ["typo"]}, "Extra inputs"),
    ],
)
def test_invalid_args_are_refused(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        NodeResourcesFitArgs.model_validate(args)


# --- filter -------------------------------------------------------------------------------------


def test_pod_that_fits_everywhere_passes() -> None:
    cache = cache_with([make_node("n1").obj(), make_node("n2").obj()])
    assert run_filter(make(cache), cache, make_pod("p").req(cpu="1", memory="1Gi").info()) is None


def test_insufficient_cpu_counts_pods_already_on_the_node() -> None:
    cache = cache_with(
        [make_node("busy").capacity(cpu="4").obj(), make_node("idle").capacity(cpu="4").obj()],
        [make_pod("old").req(cpu="3").node("busy").obj()],
    )
    result = run_filter(make(cache), cache, make_pod("p").req(cpu="2").info())
    assert verdicts(result, cache) == {"busy": (Code.UNSCHEDULABLE, ("Insufficient cpu",)), "idle": None}


def test_a_node_short_of_cpu_and_memory_reports_both() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="4Gi").obj()], [make_pod("old").req(cpu="3", memory="3Gi").node("n").obj()])
    result = run_filter(make(cache), cache, make_pod("p").req(cpu="2", memory="2Gi").info())
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"))}


def test_exact_fit_passes() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="4Gi").obj()], [make_pod("old").req(cpu="3", memory="3Gi").node("n").obj()])
    assert run_filter(make(cache), cache, make_pod("p").req(cpu="1", memory="1Gi").info()) is None


def test_too_many_pods_even_for_a_pod_without_requests() -> None:
    cache = cache_with([make_node("full").capacity(pods=2).obj(), make_node("room").capacity(pods=3).obj()],
                       [make_pod("a").node("full").obj(), make_pod("b").node("full").obj(),
                        make_pod("c").node("room").obj(), make_pod("d").node("room").obj()])
    result = run_filter(make(cache), cache, make_pod("p").info())
    # Pod count is freed by preemption, so it is never unresolvable.
    assert verdicts(result, cache) == {"full": (Code.UNSCHEDULABLE, ("Too many pods",)), "room": None}


def test_insufficient_ephemeral_storage() -> None:
    cache = cache_with([make_node("n").obj()], [make_pod("old").req({"ephemeral-storage": "60Gi"}).node("n").obj()])
    result = run_filter(make(cache), cache, make_pod("p").req({"ephemeral-storage": "50Gi"}).info())
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE, ("Insufficient ephemeral-storage",))}


def test_request_larger_than_the_whole_node_is_unresolvable() -> None:
    cache = cache_with(
        [make_node("small").capacity(cpu="2").obj(), make_node("busy").capacity(cpu="8").obj(), make_node("big").capacity(cpu="8").obj()],
        [make_pod("old").req(cpu="7").node("busy").obj()],
    )
    result = run_filter(make(cache), cache, make_pod("p").req(cpu="4").info())
    assert verdicts(result, cache) == {
        "small": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",)),
        "busy": (Code.UNSCHEDULABLE, ("Insufficient cpu",)),
        "big": None,
    }


def test_unresolvable_resource_makes_the_whole_verdict_unresolvable() -> None:
    cache = cache_with([make_node("n").capacity(cpu="2", pods=1).obj()], [make_pod("old").node("n").obj()])
    result = run_filter(make(cache), cache, make_pod("p").req(cpu="4").info())
    assert verdicts(result, cache) == {
        "n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Too many pods", "Insufficient cpu"))
    }


def test_extended_resource_gpu() -> None:
    cache = cache_with(
        [
            make_node("cpu-only").obj(),
            make_node("gpu2").capacity({"nvidia.com/gpu": 2}).obj(),
            make_node("gpu4").capacity({"nvidia.com/gpu": 4}).obj(),
        ],
        [make_pod("old").req({"nvidia.com/gpu": 1}).node("gpu2").obj()],
    )
    result = run_filter(make(cache), cache, make_pod("p").req({"nvidia.com/gpu": 2}).info())
    assert verdicts(result, cache) == {
        "cpu-only": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient nvidia.com/gpu",)),
        "gpu2": (Code.UNSCHEDULABLE, ("Insufficient nvidia.com/gpu",)),
        "gpu4": None,
    }


def test_extended_resource_new_to_the_table_fails_everywhere() -> None:
    cache = cache_with([make_node("n1").obj(), make_node("n2").obj()])
    assert "example.com/fpga" not in cache.table.resource_index
    result = run_filter(make(cache), cache, make_pod("p").req({"example.com/fpga": 1}).info())
    assert set(verdicts(result, cache).values()) == {
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/fpga",))
    }


@pytest.mark.parametrize(
    "args",
    [{"ignoredResources": ["nvidia.com/gpu"]}, {"ignoredResourceGroups": ["nvidia.com"]}],
)
def test_ignored_extended_resources_are_not_checked(args: dict[str, Any]) -> None:
    cache = cache_with([make_node("n").obj()])
    pi = make_pod("p").req({"nvidia.com/gpu": 1}, cpu="1").info()
    assert run_filter(make(cache, args), cache, pi) is None
    # The same pod is rejected by a plugin that does not ignore the resource.
    assert run_filter(make(cache), cache, make_pod("q").req({"nvidia.com/gpu": 1}, cpu="1").info()) is not None


def test_ignored_group_only_matches_the_prefix() -> None:
    cache = cache_with([make_node("n").obj()])
    plugin = make(cache, {"ignoredResourceGroups": ["nvidia.com"]})
    result = run_filter(plugin, cache, make_pod("p").req({"nvidia.com/gpu": 1, "example.com/foo": 1}).info())
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient example.com/foo",))}


def test_only_extended_resources_can_be_ignored() -> None:
    cache = cache_with([make_node("n").capacity(cpu="1").capacity({"hugepages-2Mi": "10Mi"}).obj()])
    plugin = make(cache, {"ignoredResources": ["cpu", "hugepages-2Mi"]})
    result = run_filter(plugin, cache, make_pod("p").req({"hugepages-2Mi": "20Mi"}, cpu="2").info())
    assert verdicts(result, cache) == {
        "n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu", "Insufficient hugepages-2Mi"))
    }


def test_init_container_larger_than_app_containers_sets_the_request() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4").obj()], [make_pod("old").req(cpu="2").node("n").obj()])
    p = make_pod("p").req(cpu="1").spec(initContainers=[{"name": "init", "resources": {"requests": {"cpu": "3"}}}]).obj()
    result = run_filter(make(cache), cache, make_pod_info(p))
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE, ("Insufficient cpu",))}
    small_init = make_pod("q").req(cpu="1").spec(initContainers=[{"name": "init", "resources": {"requests": {"cpu": "2"}}}]).obj()
    assert run_filter(make(cache), cache, make_pod_info(small_init)) is None


def test_sidecar_requests_add_to_the_app_containers() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4").obj()], [make_pod("old").req(cpu="2").node("n").obj()])
    sidecar = {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
    with_sidecar = make_pod("p").req(cpu="1600m").spec(initContainers=[sidecar]).obj()
    assert verdicts(run_filter(make(cache), cache, make_pod_info(with_sidecar)), cache) == {
        "n": (Code.UNSCHEDULABLE, ("Insufficient cpu",))
    }
    assert run_filter(make(cache), cache, make_pod("q").req(cpu="1600m").info()) is None


def test_pod_overhead_is_counted() -> None:
    cache = cache_with([make_node("n").capacity(memory="4Gi").obj()], [make_pod("old").req(memory="2Gi").node("n").obj()])
    p = make_pod("p").req(memory="1800Mi").spec(overhead={"memory": "300Mi"}).obj()
    assert verdicts(run_filter(make(cache), cache, make_pod_info(p)), cache) == {
        "n": (Code.UNSCHEDULABLE, ("Insufficient memory",))
    }
    assert run_filter(make(cache), cache, make_pod("q").req(memory="1800Mi").info()) is None


def test_removed_node_rows_are_ignored() -> None:
    cache = cache_with([make_node("gone").capacity(cpu="1").obj(), make_node("n").capacity(cpu="8").obj()])
    cache.remove_node("gone")
    result = run_filter(make(cache), cache, make_pod("p").req(cpu="2").info())
    assert result is None


def test_no_nodes() -> None:
    cache = Cache()
    assert run_filter(make(cache), cache, make_pod("p").req(cpu="1").info()) is None


def test_filter_without_prefilter_state_computes_it() -> None:
    cache = cache_with([make_node("n").capacity(cpu="1").obj()])
    plugin = make(cache)
    result = plugin.filter(CycleState(), make_pod("p").req(cpu="2").info(), cache.table)
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",))}


# --- events and queueing hints ------------------------------------------------------------------------

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
GPU_A, GPU_B = "example.com/aaa", "example.com/bbb"


def test_events_are_kubes() -> None:
    plugin = make(Cache())
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (ASSIGNED_POD, A.Delete, plugin.is_schedulable_after_assigned_pod_delete),
        (NODE, A.Add | A.UpdateNodeAllocatable, plugin.is_schedulable_after_node_change),
        (ASSIGNED_POD, A.UpdatePodScaleDown, plugin.is_schedulable_after_assigned_pod_scale_down),
        (TARGET_POD, A.UpdatePodScaleDown, plugin.is_schedulable_after_target_pod_scale_down),
        (DEVICE_CLASS, A.Add | A.Update, plugin.is_schedulable_after_device_class_event),
    ]
    not_covered = [
        (UNSCHEDULED_POD, A.Delete),
        (ASSIGNED_POD, A.Add),
        (ASSIGNED_POD, A.UpdatePodScaleUp),
        (TARGET_POD, A.UpdatePodScaleUp),
        (NODE, A.UpdateNodeLabel),
        (NODE, A.UpdateNodeTaint),
        (NODE, A.Delete),
    ]
    check_coverage(events, not_covered=not_covered)


def sized(allocatable: dict[str, str] | None = None, pods: int | None = 32) -> Node:
    """A node whose allocatable is exactly the given resources (and `pods`, unless None)."""
    node = make_node("n").exactly(allocatable)
    if pods is not None:
        node.capacity(pods=pods)
    return node.obj()


def requesting(requests: dict[str, str] | None = None, name: str = "p", *, node_name: str = "") -> PodInfo:
    return make_pod(name).req(requests).node(node_name).info()


def nominated(pi: PodInfo) -> PodInfo:
    pi.pod.status.nominated_node_name = "fake"
    return pi


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        pytest.param(lambda: requesting({"cpu": "1"}, "o", node_name="fake"), Q, id="queue-on-other-pod-deleted"),
        pytest.param(lambda: requesting({"memory": "1"}, "o", node_name="fake"), Q, id="queue-whatever-it-requested"),
        pytest.param(lambda: make_pod("o").info(), SKIP, id="skip-queue-on-unscheduled-pod-deleted"),
        pytest.param(lambda: nominated(requesting({"cpu": "2"}, "o")), Q, id="queue-on-nominated-pod-deleted"),
    ],
)
def test_hint_after_assigned_pod_delete(deleted: Any, want: QueueingHint) -> None:
    assert make(Cache()).is_schedulable_after_assigned_pod_delete(requesting({"cpu": "1"}), deleted(), None) == want


def test_hint_after_target_pod_scale_down_always_queues() -> None:
    plugin = make(Cache())
    pending = requesting({"cpu": "2"})
    assert plugin.is_schedulable_after_target_pod_scale_down(pending, pending, requesting({"cpu": "1"})) == Q


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [
        pytest.param(
            requesting({"cpu": "1"}),
            requesting({"cpu": "2"}, "o"),
            requesting({"cpu": "1"}, "o"),
            SKIP,
            id="skip-queue-on-other-unscheduled-pod",
        ),
        pytest.param(
            requesting({"cpu": "1"}),
            requesting({"memory": "2"}, "o", node_name="fake"),
            requesting({"memory": "1"}, "o", node_name="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-resource-scaled-down",
        ),
        pytest.param(
            requesting({"cpu": "1"}),
            requesting({"cpu": "2"}, "o", node_name="fake"),
            requesting({"cpu": "1"}, "o", node_name="fake"),
            Q,
            id="queue-on-other-pod-some-resource-scale-down",
        ),
        pytest.param(
            requesting({"cpu": "1", GPU_A: "1"}),
            requesting({"cpu": "1", GPU_A: "2"}, "o", node_name="fake"),
            requesting({"cpu": "1", GPU_A: "1"}, "o", node_name="fake"),
            Q,
            id="queue-on-other-pod-extended-resource-scale-down",
        ),
        pytest.param(
            requesting({"cpu": "1", GPU_A: "1"}),
            requesting({"cpu": "1", GPU_A: "2"}, "o", node_name="fake"),
            requesting({"cpu": "1"}, "o", node_name="fake"),
            Q,
            id="queue-when-a-requested-resource-is-dropped",
        ),
        pytest.param(
            requesting({"cpu": "0", "memory": "1"}),
            requesting({"cpu": "2"}, "o", node_name="fake"),
            requesting({"cpu": "1"}, "o", node_name="fake"),
            SKIP,
            id="skip-when-the-pending-pod-requests-zero-of-it",
        ),
    ],
)
def test_hint_after_assigned_pod_scale_down(pending: PodInfo, old: PodInfo, new: PodInfo, want: QueueingHint) -> None:
    assert make(Cache()).is_schedulable_after_assigned_pod_scale_down(pending, old, new) == want


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [
        pytest.param(
            requesting({"memory": "2"}), None, sized({"memory": "1"}), SKIP, id="skip-queue-on-node-add-without-sufficient-resources"
        ),
        pytest.param(requesting({GPU_A: "1"}), None, sized({GPU_B: "1"}), SKIP, id="skip-queue-on-node-add-without-required-resource-type"),
        pytest.param(
            requesting({"memory": "2", GPU_A: "1"}),
            None,
            sized({"memory": "4", GPU_A: "2"}),
            Q,
            id="queue-on-node-add-with-sufficient-resources",
        ),
        pytest.param(
            requesting({"memory": "2", GPU_A: "1"}),
            sized({"memory": "2", GPU_A: "2"}),
            sized({"memory": "2", GPU_A: "1", GPU_B: "2"}),
            SKIP,
            id="skip-queue-on-node-unrelated-changes",
        ),
        pytest.param(
            requesting({"memory": "2", GPU_A: "1"}),
            sized({"memory": "2", GPU_A: "1"}),
            sized({"memory": "2", GPU_A: "2"}),
            Q,
            id="queue-on-pod-requested-resources-increase",
        ),
        pytest.param(
            requesting({"memory": "2", GPU_A: "1"}),
            sized({"memory": "4", GPU_A: "2"}),
            sized({"memory": "1", GPU_A: "2"}),
            SKIP,
            id="skip-queue-on-node-changes-from-suitable-to-unsuitable",
        ),
        pytest.param(
            requesting({"memory": "2", GPU_A: "1"}),
            sized({"memory": "1", GPU_A: "2"}),
            sized({"memory": "4", GPU_A: "2"}),
            Q,
            id="queue-on-node-changes-from-unsuitable-to-suitable",
        ),
        pytest.param(requesting(), None, sized({"cpu": "4"}, pods=0), SKIP, id="skip-node-add-with-no-room-for-a-pod"),
        pytest.param(requesting(), None, sized(pods=None), SKIP, id="skip-node-add-without-a-pod-count"),
        pytest.param(requesting(), sized({"cpu": "1"}, pods=1), sized({"cpu": "1"}, pods=2), Q, id="queue-on-pod-count-increase"),
        pytest.param(requesting(), sized({"cpu": "1"}, pods=1), sized({"cpu": "2"}, pods=1), SKIP, id="skip-requesting-nothing"),
        pytest.param(
            requesting({"cpu": "500m"}), sized({"cpu": "400m"}), sized({"cpu": "1"}), Q, id="queue-on-cpu-in-millicores"
        ),
    ],
)
def test_hint_after_node_change(pending: PodInfo, old: Node | None, new: Node, want: QueueingHint) -> None:
    assert make(Cache()).is_schedulable_after_node_change(pending, old, new) == want


def test_hint_on_nodes_checks_ignored_resources_as_kube_does() -> None:
    # kube's hint fits the pod to the node without the plugin's ignoredResources, so a node
    # lacking an ignored resource is skipped though the Filter would pass it.
    plugin = make(Cache(), {"ignoredResources": [GPU_A]})
    pending = requesting({"cpu": "1", GPU_A: "1"})
    assert plugin.is_schedulable_after_node_change(pending, None, sized({"cpu": "2"})) == SKIP
    assert plugin.is_schedulable_after_node_change(pending, None, sized({"cpu": "2", GPU_A: "1"})) == Q


def test_hint_refuses_objects_of_the_wrong_kind() -> None:
    plugin = make(Cache())
    pending = requesting({"cpu": "1"})
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_assigned_pod_delete(pending, "not-a-pod", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_assigned_pod_scale_down(pending, "not-a-pod", pending)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_assigned_pod_scale_down(pending, pending, "not-a-pod")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(pending, None, "not-a-node")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(pending, "not-a-node", sized({"cpu": "1"}))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [
        pytest.param(
            requesting(),
            sized({"cpu": "1", "memory": "1", "ephemeral-storage": "1", GPU_A: "1"}, pods=1),
            sized({"cpu": "2", "memory": "2", "ephemeral-storage": "2", GPU_A: "2"}, pods=1),
            False,
            id="no-requested-resources",
        ),
        pytest.param(
            requesting(), sized({"cpu": "1"}, pods=1), sized({"cpu": "1"}, pods=2), True, id="no-requested-resources-pods-increased"
        ),
        pytest.param(
            requesting({"cpu": "2m", "memory": "2", "ephemeral-storage": "2", GPU_A: "2"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "3"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "1"}),
            False,
            id="scalar-resources-not-in-node",
        ),
        pytest.param(
            requesting({"cpu": "2m", "memory": "2", "ephemeral-storage": "2", GPU_A: "2"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "3", GPU_A: "4"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "1", GPU_A: "1"}),
            False,
            id="requested-resources-decreased",
        ),
        pytest.param(
            requesting({"cpu": "2m", "memory": "2", "ephemeral-storage": "2", GPU_A: "2"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "3", GPU_A: "4"}),
            sized({"cpu": "3", "memory": "4", "ephemeral-storage": "3", GPU_A: "4"}),
            True,
            id="requested-resources-increased",
        ),
        pytest.param(
            requesting({"cpu": "2m", "memory": "2"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "3", GPU_A: "4"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "1", GPU_A: "1"}),
            False,
            id="non-requested-resources-decreased",
        ),
        pytest.param(
            requesting({"cpu": "2m", "memory": "2"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "3", GPU_A: "4"}),
            sized({"cpu": "1", "memory": "2", "ephemeral-storage": "5", GPU_A: "6"}),
            False,
            id="non-requested-resources-increased",
        ),
    ],
)
def test_requested_resources_increased(pending: PodInfo, old: Node, new: Node, want: bool) -> None:
    assert requested_resources_increased(accounted_requests(pending), node_allocatable(old), node_allocatable(new)) is want


def test_accounted_requests_leave_out_the_pod_count_zeros_and_untracked_names() -> None:
    pi = requesting({"cpu": "1", "memory": "0", GPU_A: "2", "hugepages-2Mi": "2Mi", "something": "3"})
    assert accounted_requests(pi) == {"cpu": 1000, GPU_A: 2, "hugepages-2Mi": 2 * 1024 * 1024}


@pytest.mark.parametrize(
    "pending",
    [
        requesting(),
        requesting({"cpu": "2"}),
        requesting({"cpu": "4", "memory": "32Gi"}),
        requesting({"cpu": "5"}),
        requesting({"memory": "33Gi"}),
        requesting({"ephemeral-storage": "200Gi"}),
        requesting({GPU_A: "1"}),
        requesting({GPU_A: "3"}),
        requesting({"cpu": "1", GPU_B: "1"}),
        requesting({"cpu": "1", "hugepages-2Mi": "2Mi"}),
    ],
)
def test_hint_fit_agrees_with_the_filter_on_an_empty_node(pending: PodInfo) -> None:
    nodes = [
        make_node("plain").obj(),
        make_node("gpus").capacity({GPU_A: 2}).obj(),
        make_node("full").capacity(pods=0).obj(),
        make_node("huge").capacity({"hugepages-2Mi": "4Mi"}).obj(),
    ]
    cache = cache_with(nodes)
    plugin = make(cache)
    filtered = verdicts(run_filter(plugin, cache, pending), cache)
    for n in nodes:
        fits = fits_empty_node(accounted_requests(pending), node_allocatable(n))
        assert fits == (filtered[n.metadata.name] is None), n.metadata.name


# --- score ----------------------------------------------------------------------------------------
# Node: 4000m cpu, 10000 bytes memory; pod: 3000m cpu, 5000 bytes. Utilization cpu 75 %, memory 50 %.


def scoring_cache() -> Cache:
    return cache_with([make_node("n").capacity(cpu="4", memory="10000").obj()])


def test_least_allocated() -> None:
    cache = scoring_cache()
    # cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50, (25+50)/2 = 37 (truncated)
    assert run_score(make(cache), cache, make_pod("p").req(cpu="3", memory="5000").info()) == [37]


def test_least_allocated_weights() -> None:
    cache = scoring_cache()
    args = {"scoringStrategy": {"type": "LeastAllocated",
                                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}
    # (25*3 + 50*1) / 4 = 31
    assert run_score(make(cache, args), cache, make_pod("p").req(cpu="3", memory="5000").info()) == [31]


def test_least_allocated_counts_existing_pods_and_defaults_for_best_effort() -> None:
    cache = cache_with(
        [make_node("empty").capacity(cpu="1", memory="1000Mi").obj(), make_node("used").capacity(cpu="1", memory="1000Mi").obj()],
        [make_pod("old").node("used").obj()],
    )
    # A best-effort pod counts as 100m / 200Mi. empty: cpu 90, memory 80 -> 85.
    # used (another best-effort pod there): cpu (1000-200)*100/1000 = 80, memory 60 -> 70.
    assert run_score(make(cache), cache, make_pod("p").info(), ["empty", "used"]) == [85, 70]


def test_least_allocated_over_capacity_scores_zero() -> None:
    cache = scoring_cache()
    assert run_score(make(cache), cache, make_pod("p").req(cpu="5", memory="20000").info()) == [0]


def test_most_allocated() -> None:
    cache = scoring_cache()
    args = {"scoringStrategy": {"type": "MostAllocated"}}
    # cpu 3000*100/4000 = 75, memory 50, (75+50)/2 = 62
    assert run_score(make(cache, args), cache, make_pod("p").req(cpu="3", memory="5000").info()) == [62]
    # Requests beyond capacity count as full.
    assert run_score(make(cache, args), cache, make_pod("q").req(cpu="8", memory="5000").info()) == [75]


def rtcr(shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        strategy["resources"] = resources
    return {"scoringStrategy": strategy}


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    cache = scoring_cache()
    # Shape 0->0, 100->10 scales to utilization itself: cpu 75, memory 50, mean 62.5 -> 63.
    assert run_score(make(cache, rtcr([(0, 0), (100, 10)])), cache, make_pod("p").req(cpu="3", memory="5000").info()) == [63]


def test_requested_to_capacity_ratio_decreasing_shape() -> None:
    cache = scoring_cache()
    # 0->100, 100->0: cpu 25, memory 50, mean 37.5 -> 38.
    assert run_score(make(cache, rtcr([(0, 10), (100, 0)])), cache, make_pod("p").req(cpu="3", memory="5000").info()) == [38]


def test_requested_to_capacity_ratio_truncates_segments_toward_zero() -> None:
    cache = scoring_cache()
    args = rtcr([(0, 10), (40, 7)], [{"name": "cpu", "weight": 1}])
    # cpu utilization 25: 100 + (70-100)*25/40 = 100 - 18.75 -> Go truncates to 100 - 18 = 82.
    assert run_score(make(cache, args), cache, make_pod("p").req(cpu="1").info()) == [82]
    # Beyond the last point the last score holds; above capacity counts as 100 %.
    assert run_score(make(cache, args), cache, make_pod("q").req(cpu="6").info()) == [70]


def test_requested_to_capacity_ratio_leaves_zero_scores_out_of_the_mean() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="1Ti").obj()])
    # memory utilization 200Mi/1Ti rounds to 0 % and scores 0: only cpu (50) counts.
    assert run_score(make(cache, rtcr([(0, 0), (100, 10)])), cache, make_pod("p").req(cpu="2").info()) == [50]


def test_extended_resource_scored_only_when_requested() -> None:
    cache = cache_with([make_node("gpu").capacity(cpu="4", memory="10000").capacity({"nvidia.com/gpu": 4}).obj(),
                        make_node("plain").capacity(cpu="4", memory="10000").obj()])
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 2}]}}
    plugin = make(cache, args)
    # With gpu: (75 + 50 + 2*75) / 4 = 68; the node without gpus is scored on cpu and memory only.
    assert run_score(plugin, cache, make_pod("p").req({"nvidia.com/gpu": 3}, cpu="3", memory="5000").info(),
                     ["gpu", "plain"]) == [68, 62]
    # A pod without gpus is scored on cpu and memory on both nodes.
    assert run_score(plugin, cache, make_pod("q").req(cpu="3", memory="5000").info(), ["gpu", "plain"]) == [62, 62]


def test_ephemeral_storage_is_scored_even_when_not_requested() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").obj()],
                       [make_pod("old").req({"ephemeral-storage": "50Gi"}, cpu="1", memory="1000").node("n").obj()])
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "ephemeral-storage", "weight": 1}]}}
    # cpu (1000+3000)*100/4000 = 100, ephemeral-storage 50Gi/100Gi = 50 -> 75.
    assert run_score(make(cache, args), cache, make_pod("p").req(cpu="3").info()) == [75]


def test_pods_resource_is_never_scored() -> None:
    cache = scoring_cache()
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "pods", "weight": 1}]}}
    assert run_score(make(cache, args), cache, make_pod("p").req(cpu="3").info()) == [75]


def test_zero_allocatable_node_scores_zero() -> None:
    cache = cache_with([make_node("n").capacity(cpu="0", memory="0").obj()])
    assert run_score(make(cache), cache, make_pod("p").req(cpu="1").info()) == [0]


def test_score_without_prescore_state_and_for_a_subset_of_rows() -> None:
    cache = cache_with([make_node("a").capacity(cpu="4", memory="10000").obj(), make_node("b").capacity(cpu="8", memory="10000").obj()])
    plugin = make(cache)
    table = cache.table
    rows = np.array([table.row_of("b")], dtype=np.intp)
    # b: cpu (8000-3000)*100/8000 = 62, memory 50 -> 56.
    assert plugin.score(CycleState(), make_pod("p").req(cpu="3", memory="5000").info(), table, rows).tolist() == [56]
    assert plugin.score(CycleState(), make_pod("q").req(cpu="3").info(), table, np.array([], dtype=np.intp)).tolist() == []


def test_null_args_mean_defaults() -> None:
    args = NodeResourcesFitArgs.model_validate(
        {"ignoredResources": None, "scoringStrategy": {"type": "MostAllocated", "resources": None}}
    )
    assert args.ignored_resources == []
    assert [r.name for r in args.scoring_strategy.resources] == ["cpu", "memory"]
    assert NodeResourcesFitArgs.model_validate({"scoringStrategy": None}).scoring_strategy.type == "LeastAllocated"


def test_scoring_a_few_rows_of_a_large_table_matches_scoring_all() -> None:
    cache = cache_with([make_node(f"n{i}").capacity(cpu=str(2 + i), memory=f"{4 + i}Gi").obj() for i in range(12)],
                       [make_pod(f"old{i}").req(cpu="1", memory="1Gi").node(f"n{i}").obj() for i in range(0, 12, 3)])
    for strategy in ({"type": "LeastAllocated"}, {"type": "MostAllocated"}):
        plugin = make(cache, {"scoringStrategy": strategy})
        pi = make_pod("p").req(cpu="1500m", memory="2Gi").info()
        everything = dict(zip(cache.table.index, run_score(plugin, cache, pi), strict=True))
        picked = ["n3", "n10"]
        assert run_score(plugin, cache, pi, picked) == [everything[n] for n in picked]
        # n3: cpu 5000m with 1000m used; least: cpu (5000-2500)*100/5000 = 50, memory (7-3)/7 -> 57; mean 53
        if strategy["type"] == "LeastAllocated":
            assert everything["n3"] == 53
