from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_with, make_node, make_pod
from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, TARGET_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.plugins.tainttoleration import (
    ERR_REASON_UNTOLERATED,
    TaintToleration,
    has_untolerated_taint,
    untolerated_taint,
)
from unit.plugins.pluginkit import check_coverage, score_all

FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNTOLERATED,))


def taint(key: str, effect: str, value: str = "") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> dict[str, str]:
    out = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {k: v for k, v in out.items() if v}


def tolerating(*tolerations: dict[str, Any]) -> PodInfo:
    return make_pod("p").spec(tolerations=list(tolerations)).info()


def filter_view(pi: PodInfo, cache: Cache) -> dict[str, tuple[str, str, str] | None]:
    """Node name -> the untolerated taint it was rejected for (None: passes), checking the
    reason of every rejected row on the way."""
    table = cache.table
    result = TaintToleration().filter(CycleState(), pi, table)
    out: dict[str, tuple[str, str, str] | None] = {}
    for row in table.rows():
        code = 0 if result is None else int(result.codes[row])
        if code == 0:
            out[table.name_of(row)] = None
        else:
            assert result is not None
            assert result.describe(code) == FAIL
            out[table.name_of(row)] = untolerated_taint(table, code)
    return out


def tainted_cache() -> Cache:
    return cache_with(
        [
            make_node("plain").obj(),
            make_node("gpu").taints([taint("gpu", "NoSchedule", "nvidia")]).obj(),
            make_node("evict").taints([taint("maint", "NoExecute")]).obj(),
            make_node("soft").taints([taint("spot", "PreferNoSchedule", "yes")]).obj(),
        ]
    )


def test_untolerated_noschedule_and_noexecute_reject_with_kube_reason() -> None:
    out = filter_view(tolerating(), tainted_cache())
    assert out == {
        "plain": None,
        "gpu": ("gpu", "nvidia", "NoSchedule"),
        "evict": ("maint", "", "NoExecute"),
        "soft": None,  # PreferNoSchedule never filters
    }


def test_reason_is_generic_whatever_the_taint_value() -> None:
    # kube no longer prints the taint's key or value, empty or not.
    cache = tainted_cache()
    result = TaintToleration().filter(CycleState(), tolerating(), cache.table)
    assert result is not None
    for name in ("gpu", "evict"):
        code, reasons = result.describe(int(result.codes[cache.table.row_of(name)]))
        assert code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert reasons == ("node(s) had untolerated taint(s)",)


@pytest.mark.parametrize(
    ("toleration", "gpu_ok", "evict_ok"),
    [
        (tol(operator="Exists"), True, True),  # empty key + Exists tolerates every taint
        (tol(operator="Exists", effect="NoSchedule"), True, False),  # ... of that effect only
        (tol(operator="Exists", effect="NoExecute"), False, True),
        (tol("gpu", "Equal", "nvidia", "NoSchedule"), True, False),
        (tol("gpu", "Equal", "amd", "NoSchedule"), False, False),  # value must match
        (tol("gpu", "", "nvidia", "NoSchedule"), True, False),  # no operator means Equal
        (tol("gpu", "Equal", "nvidia"), True, False),  # empty effect matches any effect
        (tol("gpu", "Exists"), True, False),  # Exists ignores the value
        (tol("gpu", "Exists", effect="NoExecute"), False, False),  # wrong effect
        (tol("maint", "Equal", "", "NoExecute"), False, True),  # empty taint value matches empty
        (tol("maint", "Equal", "x", "NoExecute"), False, False),
        (tol("maint", "Exists", effect="NoExecute") | {"tolerationSeconds": 30}, False, True),
    ],
)
def test_toleration_forms(toleration: dict[str, Any], gpu_ok: bool, evict_ok: bool) -> None:
    out = filter_view(tolerating(toleration), tainted_cache())
    assert (out["gpu"] is None) == gpu_ok
    assert (out["evict"] is None) == evict_ok
    assert out["plain"] is None and out["soft"] is None


def test_reports_the_first_untolerated_taint_in_node_order() -> None:
    cache = cache_with(
        [
            make_node("n1").taints([taint("b", "NoExecute"), taint("a", "NoSchedule")]).obj(),
            make_node("n2").taints([taint("a", "NoSchedule"), taint("b", "NoExecute")]).obj(),
        ]
    )
    out = filter_view(tolerating(), cache)
    assert out == {"n1": ("b", "", "NoExecute"), "n2": ("a", "", "NoSchedule")}
    out = filter_view(tolerating(tol("b", "Exists")), cache)
    assert out == {"n1": ("a", "", "NoSchedule"), "n2": ("a", "", "NoSchedule")}


def test_filter_says_nothing_when_every_taint_is_tolerated_or_absent() -> None:
    assert TaintToleration().filter(CycleState(), tolerating(), cache_with([make_node("x").obj(), make_node("y").obj()]).table) is None
    cache = tainted_cache()
    pi = tolerating(tol(operator="Exists"))
    assert TaintToleration().filter(CycleState(), pi, cache.table) is None
    assert TaintToleration().filter(CycleState(), tolerating(), cache_with([]).table) is None


def test_taints_that_appear_later_are_seen_by_a_cached_pod() -> None:
    cache = cache_with([make_node("x").obj()])
    pi = tolerating(tol("known", "Exists"))
    plugin = TaintToleration()
    assert plugin.filter(CycleState(), pi, cache.table) is None
    cache.add_node(make_node("y").taints([taint("known", "NoSchedule"), taint("new", "NoSchedule")]).obj())
    cache.update_node(make_node("x").taints([taint("known", "NoSchedule")]).obj())
    out = filter_view(pi, cache)
    assert out == {"x": None, "y": ("new", "", "NoSchedule")}


def test_removed_tainted_node_is_not_reported() -> None:
    cache = cache_with([make_node("x").obj(), make_node("y").taints([taint("t", "NoSchedule")]).obj()])
    cache.remove_node("y")
    assert TaintToleration().filter(CycleState(), tolerating(), cache.table) is None


# --- scoring -----------------------------------------------------------------------------------


def scores(pi: PodInfo, cache: Cache) -> tuple[dict[str, int], dict[str, int]]:
    return score_all(TaintToleration(), pi, cache.table)


def soft_cache() -> Cache:
    return cache_with(
        [
            make_node("three").taints([taint("a", "PreferNoSchedule"), taint("b", "PreferNoSchedule", "1"),
                                  taint("c", "PreferNoSchedule"), taint("hard", "NoSchedule")]).obj(),
            make_node("one").taints([taint("a", "PreferNoSchedule")]).obj(),
            make_node("none").taints([taint("hard", "NoSchedule")]).obj(),
        ]
    )


def test_score_counts_untolerated_prefer_no_schedule_taints_reversed() -> None:
    raw, norm = scores(tolerating(), soft_cache())
    assert raw == {"three": 3, "one": 1, "none": 0}
    # reverse normalization: 100 - count * 100 // max; 1 * 100 // 3 = 33
    assert norm == {"three": 0, "one": 67, "none": 100}


def test_score_considers_tolerations_with_prefer_effect_or_no_effect() -> None:
    cache = soft_cache()
    raw, norm = scores(tolerating(tol("a", "Exists", effect="PreferNoSchedule")), cache)
    assert raw == {"three": 2, "one": 0, "none": 0}
    assert norm == {"three": 0, "one": 100, "none": 100}
    raw, _ = scores(tolerating(tol("b", "Equal", "1")), cache)  # empty effect tolerates PreferNoSchedule
    assert raw == {"three": 2, "one": 1, "none": 0}
    raw, _ = scores(tolerating(tol("b", "Equal", "2")), cache)  # value mismatch
    assert raw == {"three": 3, "one": 1, "none": 0}
    # A NoSchedule toleration never tolerates a PreferNoSchedule taint.
    raw, _ = scores(tolerating(tol(operator="Exists", effect="NoSchedule")), cache)
    assert raw == {"three": 3, "one": 1, "none": 0}
    raw, norm = scores(tolerating(tol(operator="Exists")), cache)
    assert raw == {"three": 0, "one": 0, "none": 0}
    assert norm == {"three": 100, "one": 100, "none": 100}


def test_score_hand_computed_halves() -> None:
    cache = cache_with(
        [
            make_node("two").taints([taint("a", "PreferNoSchedule"), taint("b", "PreferNoSchedule")]).obj(),
            make_node("one").taints([taint("b", "PreferNoSchedule")]).obj(),
            make_node("zero").obj(),
        ]
    )
    raw, norm = scores(tolerating(), cache)
    assert raw == {"two": 2, "one": 1, "zero": 0}
    assert norm == {"two": 0, "one": 50, "zero": 100}


def test_score_only_scores_the_given_rows_and_handles_none() -> None:
    cache = soft_cache()
    table = cache.table
    plugin = TaintToleration()
    rows = np.array([table.row_of("one"), table.row_of("three")])
    assert plugin.score(CycleState(), tolerating(), table, rows).tolist() == [1, 3]
    empty = np.zeros(0, dtype=np.int64)
    assert plugin.score(CycleState(), tolerating(), table, empty).shape == (0,)
    assert plugin.normalize_score(CycleState(), tolerating(), empty).shape == (0,)


def test_plugin_metadata() -> None:
    plugin = TaintToleration()
    assert plugin.name == "TaintToleration"
    assert plugin.has_normalize
    with pytest.raises(ValueError, match="takes no args"):
        TaintToleration({"unexpected": 1})


def test_a_cached_pod_stays_right_when_the_table_renumbers_its_taints() -> None:
    cache = cache_with([make_node("keep").taints([taint("gpu", "NoSchedule")]).obj()])
    pi = tolerating(tol("gpu", "Exists"))
    assert filter_view(pi, cache) == {"keep": None}
    before = cache.table.taint_list
    for i in range(200):  # churned taints, then gone: the table compacts its columns
        cache.add_node(make_node(f"t{i}").taints([taint("churn", "NoSchedule", str(i))]).obj())
        cache.remove_node(f"t{i}")
    cache.add_node(make_node("new").taints([taint("other", "NoSchedule")]).obj())
    assert cache.table.taint_list is not before
    assert filter_view(pi, cache) == {"keep": None, "new": ("other", "", "NoSchedule")}


# --- events and queueing hints ------------------------------------------------------------------------

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip


def test_events_are_kubes() -> None:
    plugin = TaintToleration()
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (NODE, A.Add | A.UpdateNodeTaint, plugin.is_schedulable_after_node_change),
        (TARGET_POD, A.UpdatePodToleration, plugin.is_schedulable_after_target_pod_toleration_change),
    ]
    check_coverage(events, not_covered=[(NODE, A.UpdateNodeLabel), (NODE, A.Delete), (TARGET_POD, A.UpdatePodLabel)])


def tainted(*taints: dict[str, str]) -> Node:
    return make_node("nodeA").taints(list(taints)).obj()


USER2 = tolerating(tol("dedicated", "Equal", "user2", "NoSchedule"))


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(None, tainted(taint("dedicated", "NoSchedule", "user1")), SKIP, id="skip-queue-on-untoleratedtaint-node-added"),
        pytest.param(None, tainted(taint("dedicated", "NoSchedule", "user2")), Q, id="queue-on-toleratedtaint-node-added"),
        pytest.param(None, tainted(), Q, id="queue-on-untainted-node-added"),
        pytest.param(
            tainted(taint("dedicated", "NoSchedule", "user1")),
            tainted(taint("dedicated", "NoSchedule", "user1"), taint("dedicated", "NoSchedule", "user3")),
            SKIP,
            id="skip-unrelated-change",
        ),
        pytest.param(
            tainted(taint("dedicated", "NoSchedule", "user1")),
            tainted(taint("dedicated", "NoSchedule", "user2")),
            Q,
            id="queue-on-taint-change",
        ),
        pytest.param(
            tainted(taint("dedicated", "NoExecute", "user1")), tainted(), Q, id="queue-on-untolerated-taint-removed"
        ),
        pytest.param(
            tainted(taint("dedicated", "NoSchedule", "user2")), tainted(), SKIP, id="skip-when-it-was-tolerated-already"
        ),
        pytest.param(
            tainted(taint("dedicated", "NoSchedule", "user1")),
            tainted(taint("dedicated", "PreferNoSchedule", "user1")),
            Q,
            id="queue-when-only-a-prefer-taint-is-left",
        ),
        pytest.param(
            tainted(taint("dedicated", "PreferNoSchedule", "user1")),
            tainted(),
            SKIP,
            id="skip-on-a-prefer-taint-removed",
        ),
    ],
)
def test_hint_after_node_change(old: Node | None, new: Node, want: QueueingHint) -> None:
    assert TaintToleration().is_schedulable_after_node_change(USER2, old, new) == want


def test_hint_after_target_pod_toleration_change_always_queues() -> None:
    plugin = TaintToleration()
    new = tolerating(tol("foo", effect="NoSchedule"))
    assert plugin.is_schedulable_after_target_pod_toleration_change(tolerating(), tolerating(), new) == Q


def test_hint_refuses_what_is_not_a_node() -> None:
    plugin = TaintToleration()
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(USER2, None, "not-a-node")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(USER2, "not-a-node", tainted())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "pi",
    [
        tolerating(),
        USER2,
        tolerating(tol("dedicated", "Exists")),
        tolerating(tol(operator="Exists")),
        tolerating(tol("gpu", "Exists", effect="NoExecute")),
        tolerating(tol("gpu", "Equal", "", "NoSchedule")),
        tolerating(tol("dedicated", "Exists", effect="PreferNoSchedule")),
    ],
)
def test_hint_taints_agree_with_the_filter(pi: PodInfo) -> None:
    nodes = [
        tainted(),
        make_node("user1").taints([taint("dedicated", "NoSchedule", "user1")]).obj(),
        make_node("user2").taints([taint("dedicated", "NoSchedule", "user2")]).obj(),
        make_node("gpu-exec").taints([taint("gpu", "NoExecute")]).obj(),
        make_node("gpu-sched").taints([taint("gpu", "NoSchedule")]).obj(),
        make_node("soft").taints([taint("dedicated", "PreferNoSchedule", "user1")]).obj(),
        make_node("two").taints([taint("gpu", "NoSchedule"), taint("dedicated", "NoExecute", "user2")]).obj(),
    ]
    view = filter_view(pi, cache_with(nodes))
    for n in nodes:
        assert has_untolerated_taint(n.spec.taints, pi.pod.spec.tolerations) == (view[n.metadata.name] is not None), n.metadata.name
