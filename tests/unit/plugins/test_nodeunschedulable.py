from __future__ import annotations

from typing import Any

import pytest

from builders import cache_with, info, node, pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.interface import Code, CycleState
from kubesched.plugins.nodeunschedulable import ERR_REASON_UNSCHEDULABLE, NodeUnschedulable


def cordoned_cache() -> Cache:
    return cache_with([node("open"), node("cordoned", unschedulable=True), node("also-open")])


def tolerating(*tolerations: dict[str, Any]) -> PodInfo:
    return info(pod("p", spec={"tolerations": list(tolerations)}))


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
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache_with([node("a")]).table) is None
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache_with([]).table) is None


def test_uncordon_and_removal_are_seen() -> None:
    cache = cordoned_cache()
    cache.update_node(node("cordoned"))
    assert NodeUnschedulable().filter(CycleState(), tolerating(), cache.table) is None
    cache.update_node(node("open", unschedulable=True))
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
    plugin = NodeUnschedulable()
    assert plugin.name == "NodeUnschedulable"
    assert {(e.resource, e.action) for e in plugin.events_to_register()} == {
        ("Node", "Add"),
        ("Node", "UpdateNodeTaint"),
    }
