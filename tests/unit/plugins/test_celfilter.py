"""CELFilter: node requirements as CEL rules, on the table and in the real scheduler."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, ClusterEvent, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.plugins.celfilter import CELFilter, CELFilterArgs
from kubesched.usage.service import USAGE_UPDATE

from ..simkit import profile_config, run
from .usagekit import UsageHandle

GPU_ONLY = {"name": "gpu-only", "expression": 'node.allocatable["nvidia.com/gpu"] > 0', "message": "node(s) had no GPU"}
ZONE_A = {"name": "zone-a", "expression": '"zone" in node.labels && node.labels["zone"] == "a"'}


def cluster() -> Cache:
    return cache_with([
        make_node("cpu-a").label(zone="a").obj(),
        make_node("gpu-a").capacity({"nvidia.com/gpu": 1}).label(zone="a").obj(),
        make_node("gpu-b").capacity({"nvidia.com/gpu": 2}).label(zone="b").obj(),
        make_node("bare").obj(),
    ])


def plugin(cache: Cache, *rules: dict[str, Any], **args: Any) -> CELFilter:
    return CELFilter(CELFilterArgs.model_validate({"rules": list(rules), **args}), UnitHandle(cache))


def verdicts(p: CELFilter, cache: Cache, pi: Any = None) -> dict[str, tuple[Code, tuple[str, ...]]]:
    pi = pi or make_pod("p").req(cpu="100m").info()
    result = p.filter(CycleState(), pi, cache.table)
    if result is None:
        return {}
    return {n: result.describe(int(result.codes[r])) for n, r in cache.table.index.items() if result.codes[r]}


@pytest.mark.parametrize("vectorize", [True, False])
def test_first_false_rule_rejects_with_its_message(vectorize: bool) -> None:
    cache = cluster()
    got = verdicts(plugin(cache, GPU_ONLY, ZONE_A, vectorize=vectorize), cache)
    unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert got == {
        "cpu-a": (unresolvable, ("node(s) had no GPU",)),
        "bare": (unresolvable, ("node(s) had no GPU",)),
        "gpu-b": (unresolvable, ('node(s) didn\'t satisfy rule "zone-a"',)),
    }


def test_every_rule_true_passes_every_node() -> None:
    cache = cluster()
    p = plugin(cache, {"name": "any", "expression": "node.allocatable.pods > 0"})
    assert p.filter(CycleState(), make_pod("p").info(), cache.table) is None


def test_an_earlier_rule_guards_a_later_one() -> None:
    """A node rejected by the first rule is not evaluated by the second: no missing-key error."""
    cache = cluster()
    guard = {"name": "has-zone", "expression": '"zone" in node.labels'}
    read = {"name": "zone-a", "expression": 'node.labels["zone"] == "a"'}
    got = verdicts(plugin(cache, guard, read), cache)
    assert set(got) == {"gpu-b", "bare"} and got["bare"][1] == ('node(s) didn\'t satisfy rule "has-zone"',)


@pytest.mark.parametrize("vectorize", [True, False])
def test_an_evaluation_error_fails_the_cycle_naming_rule_and_node(vectorize: bool) -> None:
    cache = cluster()
    got = verdicts(plugin(cache, {"name": "zone-a", "expression": 'node.labels["zone"] == "a"'}, vectorize=vectorize), cache)
    code, (message,) = got["bare"]
    assert code == Code.ERROR
    assert message.startswith("rule 'zone-a' on node 'bare': ") and '"zone"' in message


def test_rules_on_free_amounts_leave_room_for_preemption() -> None:
    """A rule on what pods use is Unschedulable (evicting may help); one on the node alone is not."""
    cache = cache_with([make_node("n").capacity(cpu="2").obj()], [make_pod("x").req(cpu="1500m").node("n").obj()])
    p = plugin(cache, {"name": "room", "expression": 'node.free["cpu"] >= pod.requests["cpu"]'})
    assert verdicts(p, cache, make_pod("p").req(cpu="1").info())["n"][0] == Code.UNSCHEDULABLE


def test_pod_and_namespace_variables() -> None:
    cache = cluster()
    cache.set_namespace("team-a", {"gpu-quota": "yes"})
    p = plugin(cache, {"name": "quota", "expression": (
        '!(namespaceObject.name == "team-a" && pod.priority >= 100) || '
        '("gpu-quota" in namespaceObject.labels && node.allocatable["nvidia.com/gpu"] > 0)')})
    assert verdicts(p, cache, make_pod("p").ns("team-a").priority(50).info()) == {}
    assert set(verdicts(p, cache, make_pod("p").ns("team-a").priority(100).info())) == {"cpu-a", "bare"}
    assert verdicts(p, cache, make_pod("p").ns("team-b").priority(100).info()) == {}


def test_runtime_cost_limit_fails_the_node_without_evaluating() -> None:
    """A rule within the limit for nodes with 100 labels is refused on a node with 2,000: the
    cycle fails with kube's kind of error, at once (the evaluation is never started)."""
    crowded = {f"k{i}": "v" for i in range(2000)}
    cache = cache_with([make_node("small").label(a="1").obj(), make_node("crowded").label(crowded).obj()])
    rule = {"name": "pairs", "expression": "node.labels.all(a, node.labels.exists(b, a == b))"}
    p = plugin(cache, rule, costLimit=100_000)
    got = verdicts(p, cache)
    assert set(got) == {"crowded"}
    code, (message,) = got["crowded"]
    assert code == Code.ERROR and "cost limit exceeded" in message and "costLimit is 100000" in message


def test_compile_time_checks_name_the_rule() -> None:
    bad = [
        ({"name": "r", "expression": 'node.lables["zone"] == "a"'}, "undeclared reference to 'node.lables'"),
        ({"name": "r", "expression": "node.allocatable.cpu"}, "must give bool, it gives int"),
        ({"name": "r", "expression": "node.allocatable.cpu > 1.5"}, "no matching overload"),
        ({"name": "r", "expression": 'quantity("12Q") > 0'}, 'quantity("12Q")'),
        ({"name": "r", "expression": "usage.gpu > 0.5"}, "no query for 'gpu'"),
        ({"name": "r", "expression": "node.labels.all(a, node.labels.all(b, node.labels.all(c, a != b + c)))"},
         "estimated cost"),
        ({"name": "-r", "expression": "true"}, "letters, digits"),
    ]
    for rule, words in bad:
        with pytest.raises(ValidationError) as err:
            CELFilterArgs.model_validate({"rules": [{"name": "ok", "expression": "true"}, rule]})
        assert words in str(err.value), (rule, str(err.value))
    with pytest.raises(ValidationError, match="Duplicate value: 'ok'"):
        CELFilterArgs.model_validate({"rules": [{"name": "ok", "expression": "true"}, {"name": "ok", "expression": "true"}]})
    with pytest.raises(ValidationError):
        CELFilterArgs.model_validate({"rules": []})


def test_events_follow_what_the_rules_read() -> None:
    cache = cluster()
    labels_only = plugin(cache, ZONE_A).events_to_register()
    events = [e.event if hasattr(e, "event") else e for e in labels_only]
    assert events == [ClusterEvent(NODE, A.Add), ClusterEvent(NODE, A.UpdateNodeLabel)]
    everything = CELFilter(CELFilterArgs.model_validate({"rules": [{"name": "x", "expression": (
        'node.free.cpu > 0 && !has(usage.cpu) && pod.labels.size() >= 0 && size(node.taints) == 0')}]}), UsageHandle(cache))
    events = [e.event if hasattr(e, "event") else e for e in everything.events_to_register()]
    assert ClusterEvent(NODE, A.UpdateNodeAllocatable | A.UpdateNodeTaint) in events
    assert ClusterEvent(ASSIGNED_POD, A.Add | A.Delete | A.UpdatePodScaleDown | A.UpdatePodScaleUp) in events
    assert USAGE_UPDATE in events and ClusterEvent(TARGET_POD, A.UpdatePodLabel) in events


def test_hint_queues_only_when_what_the_rules_read_changed() -> None:
    p = plugin(cluster(), ZONE_A)
    pi = make_pod("p").info()
    old = make_node("n").label(zone="b").obj()
    assert p.is_schedulable_after_node_change(pi, old, make_node("n").label(zone="a").obj()) == QueueingHint.Queue
    changed = make_node("n").label(zone="b").annotation(x="y").obj()
    assert p.is_schedulable_after_node_change(pi, old, changed) == QueueingHint.QueueSkip


def test_nearest_misses_name_the_rules() -> None:
    cache = cluster()
    p = plugin(cache, GPU_ONLY, ZONE_A)
    pi = make_pod("p").info()
    rows = np.array([cache.table.row_of(n) for n in ("cpu-a", "gpu-b", "bare")])
    distance = p.miss_distance(CycleState(), pi, cache.table, rows)
    assert distance.tolist() == [1.0, 1.0, 2.0]
    detail = p.miss_detail(CycleState(), pi, cache.table, cache.table.row_of("bare"))
    assert detail.startswith("rule 'gpu-only' is false: node.allocatable") and "rule 'zone-a' is false" in detail


def test_usage_rules_read_fresh_usage_and_see_missing_values() -> None:
    import asyncio

    cache = cache_with([make_node("hot").obj(), make_node("cold").obj(), make_node("unknown").obj()])
    handle = UsageHandle(cache)
    handle.prom.set("cpu", {"hot": 0.9, "cold": 0.1}, aggregation="latest")
    p = CELFilter(CELFilterArgs.model_validate({
        "rules": [{"name": "not-hot", "expression": "!has(usage.cpu) || usage.cpu < 0.8"}],
        "usage": {"aggregation": "latest"},
    }), handle)
    asyncio.run(handle.refresh(at=10.0))
    result = p.filter(CycleState(), make_pod("p").info(), cache.table)
    assert result is not None
    rejected = {n for n, r in cache.table.index.items() if result.codes[r]}
    assert rejected == {"hot"}
    assert result.describe(int(result.codes[cache.table.row_of("hot")]))[0] == Code.UNSCHEDULABLE


def test_scheduler_reports_the_rules_message() -> None:
    """The real scheduler on a simulated cluster: the rule's message in FailedScheduling."""
    config = profile_config({
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "CELFilter"}]}},
        "pluginConfig": [{"name": "CELFilter", "args": {"rules": [
            {"name": "training-needs-gpu", "message": "node(s) had no GPU for an ml-training pod", "expression": (
                '!("workload" in pod.labels && pod.labels["workload"] == "ml-training") '
                '|| node.allocatable["nvidia.com/gpu"] > 0')},
        ]}}],
    })
    objects = [
        make_node("cpu-1").without("ephemeral-storage").manifest(),
        make_node("cpu-2").without("ephemeral-storage").manifest(),
        make_node("gpu-1").capacity(cpu="2").without("ephemeral-storage").capacity({"nvidia.com/gpu": "1"}).manifest(),
        make_pod("train").req(cpu="100m", memory="100Mi").label(workload="ml-training").manifest(),
        make_pod("web").req(cpu="100m", memory="100Mi").manifest(),
        make_pod("train-big").req(cpu="3", memory="100Mi").label(workload="ml-training").manifest(),
    ]
    result, _ = run(objects, config)
    assert result.placements["default/train"] == "gpu-1"
    assert result.placements["default/web"] is not None
    assert result.unschedulable["default/train-big"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had no GPU for an ml-training pod. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_scheduler_fails_the_cycle_on_a_rule_error() -> None:
    config = profile_config({
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "CELFilter"}]}},
        "pluginConfig": [{"name": "CELFilter", "args": {"rules": [
            {"name": "zone", "expression": 'node.labels["zone"] == "a"'}]}}],
    })
    result, _ = run(
        [
            make_node("a").without("ephemeral-storage").label(zone="a").manifest(),
            make_node("b").without("ephemeral-storage").manifest(),
            make_pod("p").req(cpu="100m", memory="100Mi").manifest(),
        ],
        config,
    )
    assert result.placements["default/p"] is None
    message = result.unschedulable["default/p"]
    assert "CELFilter" in message and "rule 'zone' on node 'b'" in message


def test_closing_lets_go_of_the_usage_provider() -> None:
    """A reload that drops the plugin closes it: its readers (one per resource) release the
    provider, which stops once nobody reads it; a plugin whose rules read no usage holds none."""
    handle = UsageHandle(cluster())
    args = {"rules": [{"name": "cool", "expression": "!has(usage.cpu) || usage.cpu < 0.8"}]}
    p = CELFilter(CELFilterArgs.model_validate(args), handle)
    assert len(handle.usage.providers) == 1
    p.close()
    assert handle.usage.providers == {}
    plugin(cluster(), ZONE_A).close()  # nothing to let go of
