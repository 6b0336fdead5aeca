from __future__ import annotations

from typing import Any

import pytest

from builders import cache_with, make_node, make_pod
from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, TARGET_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable
from unit.plugins.pluginkit import check_coverage


def cordoned_cache() -> Cache:
    return cache_with([make_node("open").obj(), make_node("cordoned").unschedulable().obj(), make_node("also-open").obj()])


def tolerating(*tolerations: dict[str, Any]) -> PodInfo:
    return make_pod("p").spec(tolerations=list(tolerations)).info()


def rejected(pi: PodInfo, cache: Cache) -> set[str]:
    table = cache.table
    result = NodeUnschedulable().filter(CycleState(), pi, table)
    if result is None:
        return set()
    out = set()
    for row in table.rows():
        code = int(result.codes[row])
        if code:
            assert result.describe(code) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))
            out.add(table.name_of(row))
    return out


def test_cordoned_node_is_rejected_with_kube_reason() -> None:
    assert ERR_REASON_UNSCHEDULABLE == "node(s) were unschedulable"
    assert rejected(tolerating(), cordoned_cache()) == {"cordoned"}


@pytest.mark.parametrize(
    ("toleration", "allowed"),
    [
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}, True),  # any effect
        ({"operator": "Exists"}, True),  # tolerates everything
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": ""}, True),
        ({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, True),  # Equal, empty value
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": "x"}, False),
        ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Exists", "effect": "PreferNoSchedule"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_tolerating_the_unschedulable_taint_admits(toleration: dict[str, Any], allowed: bool) -> None:
    assert rejected(tolerating(toleration), cordoned_cache()) == (set() if allowed else {"cordoned"})


def test_nothing_to_say_without_cordoned_nodes() -> None:
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache_with([make_node("a").obj()]).table) is None
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache_with([]).table) is None


def test_uncordon_and_removal_are_seen() -> None:
    cache = cordoned_cache()
    cache.update_node(make_node("cordoned").obj())
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache.table) is None
    cache.update_node(make_node("open").unschedulable().obj())
    assert rejected(tolerating(), cache) == {"open"}
    cache.remove_node("open")
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache.table) is None


def test_result_does_not_alias_the_table_column() -> None:
    cache = cordoned_cache()
    result = NodeUnschedulable().filter(CycleState(), tolerating(), cache.table)
    assert result is not None
    result.codes[:] = 0
    assert cache.table.unschedulable[cache.table.row_of("cordoned")]


def test_plugin_metadata() -> None:
    assert NodeUnschedulable().name == "NodeUnschedulable"


# --- events and queueing hints ------------------------------------------------------------------------

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip


def test_events_are_kubes() -> None:
    plugin = NodeUnschedulable()
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (NODE, A.Add | A.UpdateNodeTaint, plugin.is_schedulable_after_node_change),
        (TARGET_POD, A.UpdatePodToleration, plugin.is_schedulable_after_target_pod_toleration_change),
    ]
    check_coverage(events, not_covered=[(NODE, A.UpdateNodeLabel), (NODE, A.Delete), (TARGET_POD, A.UpdatePodLabel)])


NOT_READY = [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, make_node("n").unschedulable().obj(), SKIP, id="skip-queue-on-unschedulable-node-added"),
        pytest.param(None, make_node("n").obj(), Q, id="queue-on-schedulable-node-added"),
        pytest.param(
            make_node("n").unschedulable().obj(),
            make_node("n").taints(NOT_READY).unschedulable().obj(),
            SKIP,
            id="skip-unrelated-change-unschedulable-true",
        ),
        pytest.param(make_node("n").obj(), make_node("n").taints(NOT_READY).obj(), SKIP, id="skip-unrelated-change-unschedulable-false"),
        pytest.param(make_node("n").unschedulable().obj(), make_node("n").obj(), Q, id="queue-on-unschedulable-field-change"),
        pytest.param(make_node("n").obj(), make_node("n").unschedulable().obj(), SKIP, id="skip-on-cordon"),
    ],
)
def test_hint_after_node_change(old: Node | None, new: Node, want: QueueingHint) -> None:
    assert NodeUnschedulable().is_schedulable_after_node_change(tolerating(), old, new) == want


@pytest.mark.parametrize(
    ("toleration", "want"),
    [
        pytest.param({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}, Q, id="queue-when-the-pod-gets-the-toleration"),
        pytest.param({"operator": "Exists"}, Q, id="queue-on-tolerate-everything"),
        pytest.param({"key": "unrelated-key", "operator": "Exists"}, SKIP, id="skip-on-unrelated-toleration"),
        pytest.param(
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}, SKIP, id="skip-on-other-effect"
        ),
    ],
)
def test_hint_after_target_pod_toleration_change(toleration: dict[str, Any], want: QueueingHint) -> None:
    plugin = NodeUnschedulable()
    pending = tolerating()
    assert plugin.is_schedulable_after_target_pod_toleration_change(pending, pending, tolerating(toleration)) == want


def test_hints_refuse_objects_of_the_wrong_kind() -> None:
    plugin = NodeUnschedulable()
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(tolerating(), None, "not-a-node")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(tolerating(), "not-a-node", make_node("n").obj())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_target_pod_toleration_change(tolerating(), None, "not-a-pod")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_target_pod_toleration_change(tolerating(), "not-a-pod", tolerating())  # type: ignore[arg-type]
