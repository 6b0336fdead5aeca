from __future__ import annotations

from builders import cache_with, make_node, make_pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ClusterEvent
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.plugins.nodename import ERR_REASON, NodeName

FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match the requested node name",))


def test_pod_without_node_name_fits_every_node() -> None:
    cache = cache_with([make_node("a").obj(), make_node("b").obj()])
    assert NodeName().filter(CycleState(), make_pod("p").info(), cache.table) is None


def test_other_nodes_are_rejected_with_kube_reason() -> None:
    assert ERR_REASON == "node(s) didn't match the requested node name"
    cache = cache_with([make_node("a").obj(), make_node("b").obj(), make_node("c").obj()])
    table = cache.table
    result = NodeName().filter(CycleState(), make_pod("p").node("b").info(), table)
    assert result is not None
    failed = {table.name_of(r) for r in table.rows() if result.codes[r]}
    assert failed == {"a", "c"}
    assert result.describe(int(result.codes[table.row_of("a")])) == FAIL


def test_unknown_node_name_fits_nowhere() -> None:
    cache = cache_with([make_node("a").obj(), make_node("b").obj()])
    table = cache.table
    result = NodeName().filter(CycleState(), make_pod("p").node("zz").info(), table)
    assert result is not None
    assert all(result.codes[r] for r in table.rows())


def test_no_nodes() -> None:
    result = NodeName().filter(CycleState(), make_pod("p").node("a").info(), cache_with([]).table)
    assert result is None or result.codes.size == 0


def test_plugin_metadata() -> None:
    plugin = NodeName()
    assert plugin.name == "NodeName"
    events = plugin.events_to_register()
    # kube's: a node added, with no hint (always worth a retry).
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [(NODE, A.Add, None)]
    assert not events[0].event.covers(ClusterEvent(NODE, A.UpdateNodeLabel))
