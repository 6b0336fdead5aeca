from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ClusterEvent, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.framework.types import PreFilterResult
from kubesched.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
    UnparsableTermsError,
    required_node_affinity_mask,
    required_node_affinity_matches,
)
from unit.plugins.pluginkit import score_all

POD_FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_POD,))
ENFORCED_FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_ENFORCED,))


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "preference": t} for w, t in weighted]}


def affinity_pod(node_affinity: dict[str, Any] | None = None, node_selector: dict[str, str] | None = None) -> PodInfo:
    spec: dict[str, Any] = {}
    if node_affinity is not None:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return make_pod("p").spec(**spec).info()


def zoned_cache() -> Cache:
    return cache_with(
        [
            make_node("a").label(zone="z1", gen="10", ssd="true").obj(),
            make_node("b").label(zone="z2", gen="3").obj(),
            make_node("c").label(zone="z3", gen="abc").obj(),
            make_node("d").label(gen="1.5").obj(),
        ]
    )


def verdicts(plugin: NodeAffinity, pi: PodInfo, cache: Cache) -> dict[str, tuple[Code, tuple[str, ...]] | None]:
    """Node name -> None when it passes, else (code, reasons)."""
    table = cache.table
    result = plugin.filter(CycleState(), pi, table)
    out: dict[str, tuple[Code, tuple[str, ...]] | None] = {}
    for row in table.rows():
        code = 0 if result is None else int(result.codes[row])
        out[table.name_of(row)] = None if code == 0 else result.describe(code)  # type: ignore[union-attr]
    return out


def passing(plugin: NodeAffinity, pi: PodInfo, cache: Cache) -> set[str]:
    return {name for name, v in verdicts(plugin, pi, cache).items() if v is None}


def match_one(*exprs: dict[str, Any]) -> PodInfo:
    return affinity_pod(required({"matchExpressions": list(exprs)}))


# --- operators --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (expr("zone", "In", "z1", "z2"), {"a", "b"}),
        (expr("zone", "In", "nowhere"), set()),
        (expr("zone", "NotIn", "z1"), {"b", "c", "d"}),  # a node without the label matches NotIn
        (expr("ssd", "Exists"), {"a"}),
        (expr("ssd", "DoesNotExist"), {"b", "c", "d"}),
        (expr("unknown-key", "DoesNotExist"), {"a", "b", "c", "d"}),
        (expr("unknown-key", "In", "x"), set()),
        (expr("gen", "Gt", "3"), {"a"}),  # "abc" and "1.5" are not integers: never greater
        (expr("gen", "Lt", "10"), {"b"}),  # nor less
        (expr("gen", "Gt", "2"), {"a", "b"}),
        (expr("gen", "Lt", "100"), {"a", "b"}),
        (expr("zone", "Gt", "0"), set()),  # every zone value is non-integer
        (expr("unknown-key", "Lt", "5"), set()),  # a missing label never compares
    ],
)
def test_each_operator(requirement: dict[str, Any], expected: set[str]) -> None:
    cache = zoned_cache()
    assert passing(NodeAffinity(), match_one(requirement), cache) == expected


def test_requirements_in_a_term_are_anded() -> None:
    cache = zoned_cache()
    pi = match_one(expr("zone", "In", "z1", "z2"), expr("gen", "Gt", "5"))
    assert passing(NodeAffinity(), pi, cache) == {"a"}


def test_terms_are_ored() -> None:
    cache = zoned_cache()
    pi = affinity_pod(
        required(
            {"matchExpressions": [expr("zone", "In", "z1")]},
            {"matchExpressions": [expr("gen", "In", "1.5")]},
        )
    )
    assert passing(NodeAffinity(), pi, cache) == {"a", "d"}


def test_node_selector_and_affinity_are_anded() -> None:
    cache = zoned_cache()
    pi = affinity_pod(required({"matchExpressions": [expr("zone", "In", "z1", "z2")]}), node_selector={"gen": "3"})
    assert passing(NodeAffinity(), pi, cache) == {"b"}


def test_node_selector_alone_needs_every_pair() -> None:
    cache = zoned_cache()
    assert passing(NodeAffinity(), affinity_pod(node_selector={"zone": "z1", "ssd": "true"}), cache) == {"a"}
    assert passing(NodeAffinity(), affinity_pod(node_selector={"zone": "z1", "ssd": "false"}), cache) == set()


def test_failure_reason_and_code() -> None:
    cache = zoned_cache()
    out = verdicts(NodeAffinity(), affinity_pod(node_selector={"zone": "z2"}), cache)
    assert out == {"a": POD_FAIL, "b": None, "c": POD_FAIL, "d": POD_FAIL}


# --- empty and invalid terms ----------------------------------------------------------------------


def test_required_with_no_terms_matches_no_node() -> None:
    cache = zoned_cache()
    assert passing(NodeAffinity(), affinity_pod(required()), cache) == set()


def test_empty_term_matches_nothing_but_other_terms_still_can() -> None:
    cache = zoned_cache()
    assert passing(NodeAffinity(), affinity_pod(required({})), cache) == set()
    pi = affinity_pod(required({}, {"matchExpressions": [expr("zone", "In", "z3")]}))
    assert passing(NodeAffinity(), pi, cache) == {"c"}


@pytest.mark.parametrize(
    "bad",
    [
        expr("zone", "Like", "z1"),  # unknown operator
        expr("gen", "Gt", "abc"),  # Gt needs an integer
        expr("gen", "Gt", "1", "2"),  # ... exactly one
        expr("gen", "Lt", "9223372036854775808"),  # ... that fits int64
        expr("gen", "Gt", "1_0"),  # Go's ParseInt refuses underscores
        expr("ssd", "Exists", "true"),  # Exists takes no values
        expr("zone", "NotIn"),  # NotIn needs values
        expr("zone", "NotIn", "not a label value"),
        expr("bad key!", "DoesNotExist"),
    ],
)
def test_a_term_that_does_not_parse_never_matches(bad: dict[str, Any]) -> None:
    cache = zoned_cache()
    pi = affinity_pod(
        required({"matchExpressions": [bad]}, {"matchExpressions": [expr("zone", "In", "z2")]})
    )
    # Only the valid second term can match (every bad one would otherwise match some node).
    assert passing(NodeAffinity(), pi, cache) == {"b"}


def test_match_fields_on_node_name() -> None:
    cache = zoned_cache()
    pin = affinity_pod(required({"matchFields": [expr("metadata.name", "In", "c")]}))
    assert passing(NodeAffinity(), pin, cache) == {"c"}
    avoid = affinity_pod(required({"matchFields": [expr("metadata.name", "NotIn", "c")]}))
    assert passing(NodeAffinity(), avoid, cache) == {"a", "b", "d"}
    both = affinity_pod(
        required({"matchFields": [expr("metadata.name", "In", "a")], "matchExpressions": [expr("ssd", "Exists")]})
    )
    assert passing(NodeAffinity(), both, cache) == {"a"}


def test_match_fields_need_exactly_one_value_and_in_or_notin() -> None:
    cache = zoned_cache()
    two = affinity_pod(required({"matchFields": [expr("metadata.name", "In", "a", "b")]}))
    assert passing(NodeAffinity(), two, cache) == set()
    exists = affinity_pod(required({"matchFields": [expr("metadata.name", "Exists")]}))
    assert passing(NodeAffinity(), exists, cache) == set()


def test_no_constraints_means_filter_says_nothing() -> None:
    cache = zoned_cache()
    assert NodeAffinity().filter(CycleState(), affinity_pod(), cache.table) is None
    # and when every node matches, no result either
    assert NodeAffinity().filter(CycleState(), affinity_pod(node_selector={}), cache.table) is None
    pi = match_one(expr("unknown-key", "DoesNotExist"))
    assert NodeAffinity().filter(CycleState(), pi, cache.table) is None


def test_no_nodes() -> None:
    cache = cache_with([])
    plugin = NodeAffinity()
    pi = affinity_pod(node_selector={"zone": "z1"})
    assert plugin.filter(CycleState(), pi, cache.table) is None
    assert required_node_affinity_mask(cache.table, pi).shape == (0,)
    rows = np.zeros(0, dtype=np.int64)
    pref = affinity_pod(preferred((5, {"matchExpressions": [expr("zone", "In", "z1")]})))
    assert plugin.score(CycleState(), pref, cache.table, rows).shape == (0,)
    assert plugin.normalize_score(CycleState(), pref, np.zeros(0, dtype=np.int64)).shape == (0,)


def test_removed_node_row_is_not_reported() -> None:
    cache = zoned_cache()
    cache.remove_node("b")
    pi = affinity_pod(node_selector={"zone": "z1"})
    out = verdicts(NodeAffinity(), pi, cache)
    assert out == {"a": None, "c": POD_FAIL, "d": POD_FAIL}
    # When only a tombstoned row (which has no labels left) fails, there is nothing to report.
    cache2 = cache_with([make_node("x").label(zone="z").obj(), make_node("y").label(zone="z").obj()])
    cache2.remove_node("y")
    assert NodeAffinity().filter(CycleState(), match_one(expr("zone", "Exists")), cache2.table) is None


# --- PreFilter ---------------------------------------------------------------------------------------


def test_prefilter_skips_pods_without_required_constraints() -> None:
    plugin = NodeAffinity()
    result, status = plugin.pre_filter(CycleState(), affinity_pod())
    assert result is None and status is not None and status.code == Code.SKIP
    # preferred terms alone do not involve the Filter
    pref = affinity_pod(preferred((1, {"matchExpressions": [expr("zone", "In", "z1")]})))
    assert plugin.pre_filter(CycleState(), pref)[1].code == Code.SKIP  # type: ignore[union-attr]
    assert plugin.pre_filter(CycleState(), affinity_pod(node_selector={"zone": "z1"})) == (None, None)
    assert plugin.pre_filter(CycleState(), affinity_pod(required())) == (None, None)


def test_prefilter_does_not_skip_when_scheduler_enforces_required_affinity() -> None:
    enforced = NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": required({"matchExpressions": [
        expr("zone", "Exists")]})}))
    assert enforced.pre_filter(CycleState(), affinity_pod()) == (None, None)
    # an added affinity with preferred terms only leaves the Filter nothing to do
    pref_only = NodeAffinity({"addedAffinity": preferred((1, {"matchExpressions": [expr("zone", "Exists")]}))})
    assert pref_only.pre_filter(CycleState(), affinity_pod())[1].code == Code.SKIP  # type: ignore[union-attr]


def test_prefilter_narrows_to_pinned_node_names() -> None:
    plugin = NodeAffinity()
    one = affinity_pod(required({"matchFields": [expr("metadata.name", "In", "a")]}))
    assert plugin.pre_filter(CycleState(), one) == (PreFilterResult(frozenset({"a"})), None)
    union = affinity_pod(
        required(
            {"matchFields": [expr("metadata.name", "In", "a")]},
            {"matchFields": [expr("metadata.name", "In", "b")], "matchExpressions": [expr("zone", "Exists")]},
        )
    )
    assert plugin.pre_filter(CycleState(), union) == (PreFilterResult(frozenset({"a", "b"})), None)
    intersect = affinity_pod(
        required(
            {"matchFields": [expr("metadata.name", "In", "a", "b"), expr("metadata.name", "In", "b", "c")]}
        )
    )
    assert plugin.pre_filter(CycleState(), intersect) == (PreFilterResult(frozenset({"b"})), None)


def test_prefilter_does_not_narrow_when_a_term_pins_no_name() -> None:
    plugin = NodeAffinity()
    pi = affinity_pod(
        required(
            {"matchFields": [expr("metadata.name", "In", "a")]},
            {"matchExpressions": [expr("zone", "In", "z2")]},
        )
    )
    assert plugin.pre_filter(CycleState(), pi) == (None, None)
    notin = affinity_pod(required({"matchFields": [expr("metadata.name", "NotIn", "a")]}))
    assert plugin.pre_filter(CycleState(), notin) == (None, None)


def test_prefilter_conflicting_names_are_unresolvable() -> None:
    pi = affinity_pod(
        required({"matchFields": [expr("metadata.name", "In", "a"), expr("metadata.name", "In", "b")]})
    )
    result, status = NodeAffinity().pre_filter(CycleState(), pi)
    assert result is None
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (ERR_REASON_CONFLICT,)


# --- addedAffinity --------------------------------------------------------------------------------


def test_added_required_affinity_is_enforced_first() -> None:
    cache = zoned_cache()
    plugin = NodeAffinity({"addedAffinity": required({"matchExpressions": [expr("zone", "In", "z1", "z2")]})})
    out = verdicts(plugin, affinity_pod(node_selector={"zone": "z2"}), cache)
    # a fails only the pod's selector; c and d fail both and report the enforced one.
    assert out == {"a": POD_FAIL, "b": None, "c": ENFORCED_FAIL, "d": ENFORCED_FAIL}
    # a pod with no constraints of its own is still held to the added affinity
    assert passing(plugin, affinity_pod(), cache) == {"a", "b"}


def test_args_read_camel_case_and_field_names() -> None:
    by_alias = NodeAffinityArgs.model_validate({"addedAffinity": required({"matchExpressions": [expr("x", "Exists")]})})
    assert by_alias.added_affinity is not None
    assert NodeAffinityArgs().added_affinity is None
    by_name = NodeAffinityArgs(added_affinity=by_alias.added_affinity)
    assert by_name.added_affinity is by_alias.added_affinity


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (required({"matchExpressions": [expr("zone", "Like", "z")]}), "operator"),
        (required({"matchExpressions": [expr("gen", "Gt", "x")]}), "integer"),
        # The API server's words for what it checks on a pod's affinity too.
        (required({"matchFields": [expr("metadata.name", "In", "a", "b")]}),
         "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"),
        (preferred((1, {"matchExpressions": [expr("zone", "In")]})),
         "values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        (preferred((0, {"matchExpressions": [expr("zone", "Exists")]})),
         r"weight: Invalid value: 0: must be in the range 1-100"),
        (required({"matchExpressions": [expr("zone", "Foo", "z")]}),
         'operator: Invalid value: "Foo": not a valid selector operator'),
    ],
)
def test_args_refuse_unparsable_added_affinity(raw: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(fragment)):
        NodeAffinityArgs.model_validate({"addedAffinity": raw})


def test_args_refuse_unknown_fields_and_bad_shapes() -> None:
    with pytest.raises(ValidationError):
        NodeAffinityArgs.model_validate({"addedAfinity": {}})
    with pytest.raises(ValidationError, match="addedAffinity"):
        NodeAffinityArgs.model_validate({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}})


# --- scoring -----------------------------------------------------------------------------------------


def test_score_sums_weights_of_matching_preferred_terms() -> None:
    cache = zoned_cache()
    pi = affinity_pod(
        preferred(
            (5, {"matchExpressions": [expr("zone", "In", "z1", "z2")]}),
            (3, {"matchExpressions": [expr("ssd", "Exists")]}),
            (10, {"matchExpressions": [expr("gen", "Lt", "5")]}),
        )
    )
    raw, norm = score_all(NodeAffinity(), pi, cache.table)
    # a: 5 + 3 = 8; b: 5 + 10 = 15; c, d: nothing.
    assert raw == {"a": 8, "b": 15, "c": 0, "d": 0}
    # 8 * 100 // 15 = 53
    assert norm == {"a": 53, "b": 100, "c": 0, "d": 0}


def test_score_adds_the_scheduler_preferred_terms() -> None:
    cache = zoned_cache()
    plugin = NodeAffinity({"addedAffinity": preferred((7, {"matchExpressions": [expr("zone", "In", "z3")]}))})
    pi = affinity_pod(preferred((2, {"matchExpressions": [expr("zone", "In", "z1", "z3")]})))
    raw, norm = score_all(plugin, pi, cache.table)
    assert raw == {"a": 2, "b": 0, "c": 9, "d": 0}
    assert norm == {"a": 22, "b": 0, "c": 100, "d": 0}  # 2 * 100 // 9 = 22
    # a pod without preferences still gets the added ones
    raw, norm = score_all(plugin, affinity_pod(), cache.table)
    assert raw == {"a": 0, "b": 0, "c": 7, "d": 0}
    assert norm == {"a": 0, "b": 0, "c": 100, "d": 0}


def test_score_ignores_zero_weight_and_empty_preferences() -> None:
    cache = zoned_cache()
    pi = affinity_pod(preferred((0, {"matchExpressions": [expr("zone", "Exists")]}), (4, {})))
    status = NodeAffinity().pre_score(CycleState(), pi, cache.table, cache.table.rows())
    assert status is not None and status.code == Code.SKIP


def test_score_with_no_match_anywhere_normalizes_to_zero() -> None:
    cache = zoned_cache()
    pi = affinity_pod(preferred((9, {"matchExpressions": [expr("zone", "In", "mars")]})))
    raw, norm = score_all(NodeAffinity(), pi, cache.table)
    assert set(raw.values()) == {0} and set(norm.values()) == {0}


def test_prescore_skips_without_preferences_and_errors_on_bad_ones() -> None:
    cache = zoned_cache()
    table = cache.table
    plugin = NodeAffinity()
    status = plugin.pre_score(CycleState(), affinity_pod(node_selector={"zone": "z1"}), table, table.rows())
    assert status is not None and status.code == Code.SKIP
    bad = affinity_pod(preferred((3, {"matchExpressions": [expr("gen", "Gt", "many")]})))
    status = plugin.pre_score(CycleState(), bad, table, table.rows())
    assert status is not None and status.code == Code.ERROR
    assert "integer" in status.message()


def test_score_only_scores_the_given_rows() -> None:
    cache = zoned_cache()
    table = cache.table
    pi = affinity_pod(preferred((4, {"matchExpressions": [expr("zone", "In", "z2", "z3")]})))
    rows = np.array([table.row_of("c"), table.row_of("a")])
    assert NodeAffinity().score(CycleState(), pi, table, rows).tolist() == [4, 0]


# --- the helper PodTopologySpread uses --------------------------------------------------------------


def test_required_mask_without_constraints_is_all_true() -> None:
    cache = zoned_cache()
    mask = required_node_affinity_mask(cache.table, affinity_pod())
    assert mask.dtype == np.bool_ and mask.tolist() == [True] * 4


def test_required_mask_combines_selector_and_affinity_and_ignores_preferences() -> None:
    cache = zoned_cache()
    table = cache.table
    pi = affinity_pod(
        {
            **required({"matchExpressions": [expr("zone", "In", "z1", "z2")]}),
            **preferred((5, {"matchExpressions": [expr("ssd", "Exists")]})),
        },
        node_selector={"gen": "3"},
    )
    mask = required_node_affinity_mask(table, pi)
    assert set(table.names_of(np.flatnonzero(mask))) == {"b"}


def test_required_mask_is_shared_read_only_and_follows_table_changes() -> None:
    cache = zoned_cache()
    table = cache.table
    pi = affinity_pod(node_selector={"zone": "z1"})
    first = required_node_affinity_mask(table, pi)
    assert required_node_affinity_mask(table, pi) is first
    with pytest.raises(ValueError):
        first[0] = False
    cache.update_node(make_node("b").label(zone="z1").obj())
    again = required_node_affinity_mask(table, pi)
    assert set(table.names_of(np.flatnonzero(again))) == {"a", "b"}
    cache.add_node(make_node("e").label(zone="z1").obj())
    assert set(table.names_of(np.flatnonzero(required_node_affinity_mask(table, pi)))) == {"a", "b", "e"}


def test_plugin_works_with_a_handle() -> None:
    cache = zoned_cache()
    plugin = NodeAffinity(None, UnitHandle(cache))
    assert plugin.name == "NodeAffinity"
    assert passing(plugin, affinity_pod(node_selector={"zone": "z3"}), cache) == {"c"}


# --- events and queueing hints ------------------------------------------------------------------------

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
FOO_BAR = required({"matchExpressions": [expr("foo", "In", "bar")]})


def test_events_are_kubes() -> None:
    plugin = NodeAffinity()
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (NODE, A.Add | A.UpdateNodeLabel, plugin.is_schedulable_after_node_change)
    ]
    for action in (A.Add, A.UpdateNodeLabel):
        assert events[0].event.covers(ClusterEvent(NODE, action))
    for action in (A.Delete, A.UpdateNodeTaint, A.UpdateNodeAllocatable, A.UpdateNodeLabel | A.UpdateNodeTaint):
        assert not events[0].event.covers(ClusterEvent(NODE, action))


def bare(name: str = "n", labels: dict[str, str] | None = None, cpu: str = "4") -> Node:
    """A node carrying only the given labels (no hostname label)."""
    n = make_node(name).capacity(cpu=cpu).obj()
    n.metadata.labels = dict(labels or {})
    return n


@pytest.mark.parametrize(
    ("added", "old", "new", "want"),
    [
        pytest.param(None, None, bare(), SKIP, id="skip-queue-on-add"),
        pytest.param(None, None, bare(labels={"foo": "bar"}), Q, id="queue-on-add"),
        pytest.param(None, bare(), bare(cpu="8"), SKIP, id="skip-unrelated-changes"),
        pytest.param(None, bare(), bare(labels={"k": "v"}), SKIP, id="skip-unrelated-changes-on-labels"),
        pytest.param(None, bare(labels={"foo": "bar"}), bare(labels={"k": "v"}), SKIP, id="skip-suitable-to-unsuitable"),
        pytest.param(None, bare(), bare(labels={"foo": "bar"}), Q, id="queue-on-labels-change-makes-pod-schedulable"),
        pytest.param(None, bare(labels={"foo": "bar"}), bare(cpu="8", labels={"foo": "bar"}), SKIP, id="skip-still-schedulable"),
        pytest.param(FOO_BAR, None, bare(), SKIP, id="skip-queue-on-add-scheduler-enforced-node-affinity"),
        pytest.param(FOO_BAR, None, bare(labels={"foo": "bar"}), Q, id="queue-on-add-scheduler-enforced-node-affinity"),
    ],
)
def test_hint_after_node_change(added: dict[str, Any] | None, old: Node | None, new: Node, want: QueueingHint) -> None:
    plugin = NodeAffinity({"addedAffinity": added} if added else None)
    assert plugin.is_schedulable_after_node_change(affinity_pod(FOO_BAR), old, new) == want


def test_hint_needs_the_scheduler_enforced_affinity_too() -> None:
    plugin = NodeAffinity({"addedAffinity": required({"matchExpressions": [expr("zone", "In", "z1")]})})
    pi = affinity_pod(node_selector={"foo": "bar"})
    assert plugin.is_schedulable_after_node_change(pi, None, bare(labels={"foo": "bar"})) == SKIP
    assert plugin.is_schedulable_after_node_change(pi, None, bare(labels={"foo": "bar", "zone": "z1"})) == Q
    # A pod without constraints of its own is queued by any added node the enforced affinity admits.
    assert plugin.is_schedulable_after_node_change(affinity_pod(), None, bare(labels={"zone": "z1"})) == Q
    assert plugin.is_schedulable_after_node_change(affinity_pod(), bare(), bare(labels={"zone": "z1"})) == SKIP


def test_hint_on_node_selector_and_node_name_fields() -> None:
    plugin = NodeAffinity()
    by_selector = affinity_pod(node_selector={"disk": "ssd"})
    assert plugin.is_schedulable_after_node_change(by_selector, bare(labels={"disk": "hdd"}), bare(labels={"disk": "ssd"})) == Q
    assert plugin.is_schedulable_after_node_change(by_selector, None, bare(labels={"disk": ""})) == SKIP
    pinned = affinity_pod(required({"matchFields": [expr("metadata.name", "In", "wanted")]}))
    assert plugin.is_schedulable_after_node_change(pinned, None, bare("wanted")) == Q
    assert plugin.is_schedulable_after_node_change(pinned, None, bare("other")) == SKIP


def test_hint_with_unparsable_terms_queues_when_no_term_matches() -> None:
    # kube's Match reports the bad term's error only when no term matched; the error means Queue.
    plugin = NodeAffinity()
    pi = affinity_pod(required({"matchExpressions": [expr("gen", "Gt", "abc")]}, {"matchExpressions": [expr("foo", "In", "bar")]}))
    with pytest.raises(UnparsableTermsError):
        required_node_affinity_matches(pi, bare())
    assert plugin.is_schedulable_after_node_change(pi, None, bare()) == Q
    assert plugin.is_schedulable_after_node_change(pi, None, bare(labels={"foo": "bar"})) == Q
    # ... and when the node moved into a term, the old node's error counts as not matching before.
    assert plugin.is_schedulable_after_node_change(pi, bare(), bare(labels={"foo": "bar"})) == Q
    # A node failing the pod's nodeSelector never gets as far as the terms.
    picky = affinity_pod(required({"matchExpressions": [expr("gen", "Gt", "abc")]}), node_selector={"disk": "ssd"})
    assert plugin.is_schedulable_after_node_change(picky, None, bare()) == SKIP


def test_hint_refuses_what_is_not_a_node() -> None:
    plugin = NodeAffinity()
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(affinity_pod(FOO_BAR), None, "not-a-node")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plugin.is_schedulable_after_node_change(affinity_pod(FOO_BAR), "not-a-node", bare())  # type: ignore[arg-type]


AGREEMENT_PODS = [
    *(match_one(e) for e in (
        expr("zone", "In", "z1", "z2"), expr("zone", "NotIn", "z1"), expr("ssd", "Exists"), expr("ssd", "DoesNotExist"),
        expr("gen", "Gt", "3"), expr("gen", "Lt", "10"), expr("gen", "Gt", "2"), expr("zone", "Gt", "0"),
        expr("unknown-key", "Lt", "5"), expr("unknown-key", "DoesNotExist"), expr("gen", "Gt", "abc"),
    )),
    match_one(expr("zone", "In", "z1", "z2"), expr("gen", "Gt", "5")),
    affinity_pod(required({}, {"matchExpressions": [expr("zone", "In", "z3")]})),
    affinity_pod(required()),
    affinity_pod(required({"matchFields": [expr("metadata.name", "NotIn", "c")]})),
    affinity_pod(required({"matchFields": [expr("metadata.name", "In", "a", "b")]})),
    affinity_pod(required({"matchFields": [expr("other.field", "In", "")]})),
    affinity_pod(required({"matchExpressions": [expr("zone", "In", "z1", "z2")]}), node_selector={"gen": "3"}),
    affinity_pod(node_selector={"zone": "z1", "ssd": "true"}),
    affinity_pod(),
]


@pytest.mark.parametrize("pi", AGREEMENT_PODS)
def test_hint_matching_agrees_with_the_filter(pi: PodInfo) -> None:
    cache = zoned_cache()
    table = cache.table
    mask = required_node_affinity_mask(table, pi)
    for name, row in table.index.items():
        n = table.nodes[row]
        assert n is not None
        try:
            matched = required_node_affinity_matches(pi, n)
        except UnparsableTermsError:
            matched = False
        assert matched == bool(mask[row]), name
