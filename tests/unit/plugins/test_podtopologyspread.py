"""PodTopologySpread against hand-built clusters taken from kube's documented examples."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np
import pytest
from pydantic import ValidationError

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.objects import LabelSelector
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.api.selectors import compile_label_selector
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, UNSCHEDULED_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code, Status
from kubesched.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PREFILTER_STATE_KEY,
    PRESCORE_STATE_KEY,
    PodTopologySpread,
    PodTopologySpreadArgs,
    PreFilterState,
    merge_selectors,
    topology_normalizing_weight,
)
from unit.plugins.pluginkit import check_coverage, score_all

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
FOO = {"foo": "bar"}


# --- helpers ------------------------------------------------------------------------------------


def zn(name: str, zone: str | None, *, labels: dict[str, str] | None = None,
       taints: list[dict[str, str]] | None = None) -> Any:
    builder = make_node(name).label(labels or {}).taints(taints)
    if zone is not None:
        builder.zone(zone)
    return builder.obj()


def placed(name: str, on: str, labels: dict[str, str] | None = None, *, namespace: str = "default") -> Any:
    return make_pod(name).ns(namespace).label(FOO if labels is None else labels).node(on).obj()


def constraint(
    key: str = ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    selector: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    c["labelSelector"] = {"matchLabels": FOO} if selector is None else selector
    c.update(extra)
    return c


def incoming(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> PodInfo:
    body = dict(spec)
    if constraints:
        body["topologySpreadConstraints"] = list(constraints)
    return make_pod("incoming").label(FOO if labels is None else labels).spec(**body).info()


def plugin_for(cache: Cache, args: PodTopologySpreadArgs | None = None) -> PodTopologySpread:
    return PodTopologySpread(args, UnitHandle(cache))


def verdicts(pl: PodTopologySpread, cache: Cache, pi: PodInfo, state: CycleState | None = None) -> dict[str, str]:
    """Node name -> failure reason, for failing nodes only (runs PreFilter unless given a state)."""
    if state is None:
        state = CycleState()
        _, status = pl.pre_filter(state, pi)
        assert status is None, status
    table = cache.table
    result = pl.filter(state, pi, table)
    if result is None:
        return {}
    out = {}
    for row in table.rows():
        c = int(result.codes[row])
        if c:
            out[table.name_of(row)] = result.describe(c)[1][0]
    return out


def codes_by_node(pl: PodTopologySpread, cache: Cache, pi: PodInfo) -> dict[str, Code]:
    state = CycleState()
    pl.pre_filter(state, pi)
    result = pl.filter(state, pi, cache.table)
    assert result is not None
    out = {}
    for row in cache.table.rows():
        c = int(result.codes[row])
        if c:
            out[cache.table.name_of(row)] = result.describe(c)[0]
    return out


def scores(pl: PodTopologySpread, cache: Cache, pi: PodInfo, names: list[str] | None = None) -> dict[str, int]:
    """Normalized scores for the named nodes (all nodes by default)."""
    table = cache.table
    rows = table.rows() if names is None else np.array([table.row_of(n) for n in names], dtype=np.int64)
    return score_all(pl, pi, table, rows)[1]


def raw_scores(pl: PodTopologySpread, cache: Cache, pi: PodInfo) -> dict[str, int]:
    table = cache.table
    rows = table.rows()
    state = CycleState()
    assert pl.pre_score(state, pi, table, rows) is None
    return dict(zip(table.names_of(rows), pl.score(state, pi, table, rows).tolist(), strict=True))


def three_zones(extra_nodes: list[Any] = (), extra_pods: list[Any] = ()) -> Cache:  # type: ignore[assignment]
    """Zones A (2 matching pods), B (1) and C (0), two nodes each."""
    nodes = [zn("a1", "A"), zn("a2", "A"), zn("b1", "B"), zn("b2", "B"), zn("c1", "C"), zn("c2", "C"), *extra_nodes]
    pods = [placed("p1", "a1"), placed("p2", "a2"), placed("p3", "b1"), *extra_pods]
    return cache_with(nodes, pods)


# --- args -----------------------------------------------------------------------------------------


def _list(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"defaultingType": "List", "defaultConstraints": list(constraints)}


class TestArgs:
    def test_defaults_are_system(self) -> None:
        a = PodTopologySpreadArgs()
        assert a.defaulting_type == "System"
        assert a.default_constraints == []

    def test_list_with_constraints_from_camel_case(self) -> None:
        a = PodTopologySpreadArgs.model_validate(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
                ],
            }
        )
        assert [c.max_skew for c in a.default_constraints] == [1, 2]

    def test_list_without_constraints_is_accepted(self) -> None:
        # kube only refuses System with constraints; List with none means "no defaults".
        assert PodTopologySpreadArgs(defaultingType="List").default_constraints == []

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
                "when .defaultConstraints are not empty",
            ),
            ({"defaultingType": "Sometimes"}, "defaultingType"),
            (
                {"defaultingType": "List", "defaultConstraints": [{"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
                "maxSkew: Invalid value: 0: not in valid range (0, inf)",
            ),
            (
                _list({"maxSkew": -1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}),
                "not in valid range (0, inf)",
            ),
            (
                {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]},
                "topologyKey: Required value",
            ),
            (
                _list({"maxSkew": 1, "topologyKey": "-bad-", "whenUnsatisfiable": "DoNotSchedule"}),
                "topologyKey: Invalid value",
            ),
            (
                {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE}]},
                "whenUnsatisfiable: Required value",
            ),
            (
                {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Never"}]},
                "whenUnsatisfiable: Unsupported value",
            ),
            (
                {
                    "defaultingType": "List",
                    "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}],
                },
                "labelSelector: Forbidden",
            ),
            (
                {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                        {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    ],
                },
                "defaultConstraints[1]: Duplicate value",
            ),
            (
                _list({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "bogus": 1}),
                "bogus",
            ),
        ],
    )
    def test_refused(self, args: dict[str, Any], message: str) -> None:
        with pytest.raises(ValidationError) as exc:
            PodTopologySpreadArgs.model_validate(args)
        assert message in str(exc.value)

    def test_same_key_different_action_is_not_a_duplicate(self) -> None:
        PodTopologySpreadArgs.model_validate(
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
                ],
            }
        )


# --- filtering ------------------------------------------------------------------------------------


class TestFilter:
    def test_self_matching_pod_goes_to_the_empty_zone(self) -> None:
        cache = three_zones()
        pl = plugin_for(cache)
        got = verdicts(pl, cache, incoming(constraint()))
        # A: 2+1-0 > 1, B: 1+1-0 > 1, C: 0+1-0 <= 1
        assert got == {n: ERR_REASON_CONSTRAINTS_NOT_MATCH for n in ("a1", "a2", "b1", "b2")}

    def test_pod_not_matching_its_own_selector_adds_nothing(self) -> None:
        cache = three_zones()
        pl = plugin_for(cache)
        got = verdicts(pl, cache, incoming(constraint(), labels={"other": "x"}))
        # A: 2+0-0 > 1 fails; B: 1 <= 1 passes.
        assert got == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH, "a2": ERR_REASON_CONSTRAINTS_NOT_MATCH}

    def test_kube_doc_two_zones(self) -> None:
        # zoneA: node1 (1 pod), node2 (1 pod); zoneB: node3 (1 pod), node4 (0): the new pod
        # must land in zoneB.
        cache = cache_with(
            [zn("node1", "zoneA"), zn("node2", "zoneA"), zn("node3", "zoneB"), zn("node4", "zoneB")],
            [placed("p1", "node1"), placed("p2", "node2"), placed("p3", "node3")],
        )
        got = verdicts(plugin_for(cache), cache, incoming(constraint()))
        assert set(got) == {"node1", "node2"}
        # With maxSkew 2 every node fits (2+1-1 = 2).
        assert verdicts(plugin_for(cache), cache, incoming(constraint(max_skew=2))) == {}

    def test_all_nodes_pass_returns_none(self) -> None:
        cache = three_zones()
        pl = plugin_for(cache)
        state = CycleState()
        pi = incoming(constraint(max_skew=3))
        assert pl.pre_filter(state, pi) == (None, None)
        assert pl.filter(state, pi, cache.table) is None

    def test_hostname_spread(self) -> None:
        cache = cache_with(
            [make_node("n1").obj(), make_node("n2").obj(), make_node("n3").obj()],
            [placed("p1", "n1"), placed("p2", "n1"), placed("p3", "n2")],
        )
        got = verdicts(plugin_for(cache), cache, incoming(constraint(key=HOST)))
        assert got == {"n1": ERR_REASON_CONSTRAINTS_NOT_MATCH, "n2": ERR_REASON_CONSTRAINTS_NOT_MATCH}

    def test_other_namespaces_and_terminating_pods_do_not_count(self) -> None:
        terminating = placed("gone", "c1")
        terminating.metadata.deletion_timestamp = "2024-01-01T00:00:00Z"
        cache = three_zones(
            extra_pods=[placed("elsewhere1", "c1", namespace="other"), placed("elsewhere2", "c2", namespace="other"), terminating]
        )
        got = verdicts(plugin_for(cache), cache, incoming(constraint()))
        assert "c1" not in got and "c2" not in got

    def test_terminating_pods_do_not_count(self) -> None:
        terminating = placed("gone", "b1")
        terminating.metadata.deletion_timestamp = "2024-01-01T00:00:00Z"
        cache = cache_with([zn("a1", "A"), zn("b1", "B")], [terminating])
        # Counted, B would hold 1 and fail (1+1-0 > 1).
        assert verdicts(plugin_for(cache), cache, incoming(constraint())) == {}

    def test_non_matching_pods_do_not_count(self) -> None:
        cache = three_zones(extra_pods=[placed("x1", "c1", labels={"foo": "baz"}), placed("x2", "c2", labels={})])
        got = verdicts(plugin_for(cache), cache, incoming(constraint()))
        assert "c1" not in got

    def test_match_expressions_selector(self) -> None:
        cache = three_zones()
        sel = {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "qux"]}]}
        got = verdicts(plugin_for(cache), cache, incoming(constraint(selector=sel)))
        assert set(got) == {"a1", "a2", "b1", "b2"}

    def test_nil_selector_counts_nothing_empty_selector_counts_everything(self) -> None:
        cache = three_zones()
        nil = constraint()
        del nil["labelSelector"]
        # Nothing matches a nil selector, not even the pod itself: every node fits.
        assert verdicts(plugin_for(cache), cache, incoming(nil)) == {}
        # An empty selector matches every pod (current kube: the constraint is not a no-op).
        got = verdicts(plugin_for(cache), cache, incoming(constraint(selector={})))
        assert set(got) == {"a1", "a2", "b1", "b2"}

    def test_min_domains_above_domain_count_makes_global_minimum_zero(self) -> None:
        # Two zones with one matching pod each.
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B")],
            [placed("p1", "a1"), placed("p2", "b1")],
        )
        assert verdicts(plugin_for(cache), cache, incoming(constraint())) == {}
        got = verdicts(plugin_for(cache), cache, incoming(constraint(minDomains=3)))
        assert got == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH, "b1": ERR_REASON_CONSTRAINTS_NOT_MATCH}
        # minDomains equal to the domain count keeps the real minimum.
        assert verdicts(plugin_for(cache), cache, incoming(constraint(minDomains=2))) == {}

    def test_min_domains_counts_eligible_domains_only(self) -> None:
        # Zone C exists but the pod's nodeSelector excludes it: two eligible domains < 3.
        cache = cache_with(
            [zn("a1", "A", labels={"disk": "ssd"}), zn("b1", "B", labels={"disk": "ssd"}), zn("c1", "C")],
            [placed("p1", "a1"), placed("p2", "b1")],
        )
        pi = incoming(constraint(minDomains=3), nodeSelector={"disk": "ssd"})
        got = verdicts(plugin_for(cache), cache, pi)
        assert set(got) == {"a1", "b1"}
        pi = incoming(constraint(minDomains=2), nodeSelector={"disk": "ssd"})
        assert verdicts(plugin_for(cache), cache, pi) == {}

    def test_node_affinity_policy_honor_vs_ignore(self) -> None:
        # Zone C (no matching pods) is excluded by the pod's nodeSelector.
        nodes = [
            zn("a1", "A", labels={"disk": "ssd"}),
            zn("b1", "B", labels={"disk": "ssd"}),
            zn("c1", "C", labels={"disk": "hdd"}),
        ]
        cache = cache_with(nodes, [placed("p1", "a1"), placed("p2", "a1"), placed("p3", "b1")])
        honor = incoming(constraint(), nodeSelector={"disk": "ssd"})
        # Honor (default): C does not count, the minimum is B's 1: A fails (2+1-1), B fits (1+1-1).
        assert verdicts(plugin_for(cache), cache, honor) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}
        ignore = incoming(constraint(nodeAffinityPolicy="Ignore"), nodeSelector={"disk": "ssd"})
        # Ignore: C counts with 0, so B (1+1-0) fails too.
        got = verdicts(plugin_for(cache), cache, ignore)
        assert set(got) == {"a1", "b1"}

    def test_node_affinity_policy_with_required_affinity(self) -> None:
        nodes = [zn("a1", "A"), zn("b1", "B"), zn("c1", "C")]
        cache = cache_with(nodes, [placed("p1", "a1"), placed("p2", "a1"), placed("p3", "b1")])
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["A", "B"]}]}]
                }
            }
        }
        pi = incoming(constraint(), affinity=affinity)
        assert verdicts(plugin_for(cache), cache, pi) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}

    def test_node_taints_policy_honor(self) -> None:
        taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        nodes = [zn("a1", "A"), zn("b1", "B"), zn("c1", "C", taints=taint)]
        cache = cache_with(nodes, [placed("p1", "a1"), placed("p2", "a1"), placed("p3", "b1")])
        # Ignore (default): the tainted zone C counts with 0.
        assert set(verdicts(plugin_for(cache), cache, incoming(constraint()))) == {"a1", "b1"}
        # Honor: C is left out, the minimum becomes 1.
        honor = incoming(constraint(nodeTaintsPolicy="Honor"))
        assert verdicts(plugin_for(cache), cache, honor) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}
        # A pod tolerating the taint counts C again.
        tolerating = incoming(
            constraint(nodeTaintsPolicy="Honor"),
            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        )
        assert set(verdicts(plugin_for(cache), cache, tolerating)) == {"a1", "b1"}

    def test_prefer_no_schedule_taint_does_not_exclude(self) -> None:
        taint = [{"key": "soft", "value": "", "effect": "PreferNoSchedule"}]
        nodes = [zn("a1", "A"), zn("b1", "B"), zn("c1", "C", taints=taint)]
        cache = cache_with(nodes, [placed("p1", "a1"), placed("p2", "a1"), placed("p3", "b1")])
        honor = incoming(constraint(nodeTaintsPolicy="Honor"))
        assert set(verdicts(plugin_for(cache), cache, honor)) == {"a1", "b1"}

    def test_match_label_keys(self) -> None:
        v1 = {"app": "web", "pod-template-hash": "v1"}
        v2 = {"app": "web", "pod-template-hash": "v2"}
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B")],
            [placed("old1", "a1", labels=v1), placed("old2", "a1", labels=v1)],
        )
        sel = {"matchLabels": {"app": "web"}}
        # Without matchLabelKeys the old revision's pods count: A has 2.
        plain = incoming(constraint(selector=sel), labels=v2)
        assert verdicts(plugin_for(cache), cache, plain) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}
        # With it, only pods of the incoming pod's revision count: nothing anywhere.
        keyed = incoming(constraint(selector=sel, matchLabelKeys=["pod-template-hash"]), labels=v2)
        assert verdicts(plugin_for(cache), cache, keyed) == {}
        # The same revision's pods do count.
        same = incoming(constraint(selector=sel, matchLabelKeys=["pod-template-hash"]), labels=v1)
        assert verdicts(plugin_for(cache), cache, same) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}

    def test_match_label_keys_absent_from_pod_labels_are_ignored(self) -> None:
        cache = cache_with([zn("a1", "A"), zn("b1", "B")], [placed("p1", "a1"), placed("p2", "a1")])
        pi = incoming(constraint(matchLabelKeys=["missing-key"]))
        assert verdicts(plugin_for(cache), cache, pi) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}

    def test_missing_topology_label_is_unresolvable(self) -> None:
        cache = three_zones(extra_nodes=[zn("bare", None)])
        got = codes_by_node(plugin_for(cache), cache, incoming(constraint()))
        assert got["bare"] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got["a1"] == Code.UNSCHEDULABLE
        assert verdicts(plugin_for(cache), cache, incoming(constraint()))["bare"] == ERR_REASON_NODE_LABEL_NOT_MATCH

    def test_pods_on_nodes_missing_a_key_are_not_counted(self) -> None:
        # Many matching pods on a node without the zone label leave the zones' counts alone.
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B"), zn("bare", None)],
            [placed(f"p{i}", "bare") for i in range(5)],
        )
        assert verdicts(plugin_for(cache), cache, incoming(constraint())) == {"bare": ERR_REASON_NODE_LABEL_NOT_MATCH}

    def test_node_needs_every_constraints_key_to_count(self) -> None:
        # a2 has a zone but no "rack": its pods count for neither constraint.
        nodes = [
            zn("a1", "A", labels={"rack": "r1"}),
            zn("a2", "A"),
            zn("b1", "B", labels={"rack": "r2"}),
        ]
        cache = cache_with(nodes, [placed("p1", "a2"), placed("p2", "a2")])
        pi = incoming(constraint(), constraint(key="rack"))
        assert codes_by_node(plugin_for(cache), cache, pi) == {"a2": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}

    def test_first_failing_constraint_decides_the_reason(self) -> None:
        # "bare" has a zone (and fails the zone skew) but no rack label.
        nodes = [zn("a1", "A", labels={"rack": "r1"}), zn("b1", "B", labels={"rack": "r2"}), zn("bare", "A")]
        cache = cache_with(nodes, [placed("p1", "a1"), placed("p2", "a1")])
        zone_first = incoming(constraint(), constraint(key="rack", max_skew=5))
        assert verdicts(plugin_for(cache), cache, zone_first)["bare"] == ERR_REASON_CONSTRAINTS_NOT_MATCH
        rack_first = incoming(constraint(key="rack", max_skew=5), constraint())
        assert verdicts(plugin_for(cache), cache, rack_first)["bare"] == ERR_REASON_NODE_LABEL_NOT_MATCH

    def test_two_constraints_on_one_key_count_separately(self) -> None:
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B")],
            [placed("x1", "a1", labels={"foo": "bar", "tier": "x"}), placed("x2", "a1", labels={"tier": "x"})],
        )
        pi = incoming(
            constraint(selector={"matchLabels": {"foo": "bar"}}, max_skew=1),
            constraint(selector={"matchLabels": {"tier": "x"}}, max_skew=1),
            labels={"foo": "bar"},
        )
        # foo=bar: A has 1 -> 1+1-0 = 2 > 1 fails already; tier=x: A has 2, pod does not match.
        assert verdicts(plugin_for(cache), cache, pi) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}
        loose = incoming(
            constraint(selector={"matchLabels": {"foo": "bar"}}, max_skew=2),
            constraint(selector={"matchLabels": {"tier": "x"}}, max_skew=1),
            labels={"foo": "bar"},
        )
        # First passes (1+1-0 = 2), second fails (2+0-0 = 2 > 1).
        assert verdicts(plugin_for(cache), cache, loose) == {"a1": ERR_REASON_CONSTRAINTS_NOT_MATCH}

    def test_deleted_node_rows_are_ignored(self) -> None:
        cache = three_zones()
        cache.remove_node("c2")
        cache.add_node(zn("late", "A"))
        got = verdicts(plugin_for(cache), cache, incoming(constraint()))
        assert got == {n: ERR_REASON_CONSTRAINTS_NOT_MATCH for n in ("a1", "a2", "b1", "b2", "late")}

    def test_deleted_rows_never_fail(self) -> None:
        cache = cache_with([zn("a1", "A"), zn("b1", "B"), zn("gone", "C")])
        cache.remove_node("gone")
        pl = plugin_for(cache)
        state = CycleState()
        pi = incoming(constraint())
        pl.pre_filter(state, pi)
        # The tombstoned row has no labels left; it must not turn into a failure.
        assert pl.filter(state, pi, cache.table) is None

    def test_soft_only_pod_skips_prefilter(self) -> None:
        cache = three_zones()
        pl = plugin_for(cache)
        state = CycleState()
        _, status = pl.pre_filter(state, incoming(constraint(when="ScheduleAnyway")))
        assert status is not None and status.code == Code.SKIP
        assert state.read(PREFILTER_STATE_KEY) is None

    def test_no_constraints_and_no_workload_skips(self) -> None:
        cache = three_zones()
        pl = plugin_for(cache)
        state = CycleState()
        pi = incoming()
        _, status = pl.pre_filter(state, pi)
        assert status is not None and status.code == Code.SKIP
        assert pl.pre_score(state, pi, cache.table, cache.table.rows()) == Status(Code.SKIP)

    def test_invalid_selector_is_an_error(self) -> None:
        cache = three_zones()
        bad = constraint(selector={"matchExpressions": [{"key": "foo", "operator": "Near", "values": ["x"]}]})
        _, status = plugin_for(cache).pre_filter(CycleState(), incoming(bad))
        assert status is not None and status.code == Code.ERROR

    def test_empty_cluster(self) -> None:
        cache = cache_with([])
        pl = plugin_for(cache)
        pi = incoming(constraint())
        state = CycleState()
        assert pl.pre_filter(state, pi) == (None, None)
        assert pl.filter(state, pi, cache.table) is None
        assert pl.pre_score(CycleState(), incoming(constraint(when="ScheduleAnyway")), cache.table, cache.table.rows()) == Status(Code.SKIP)


# --- preemption extensions -------------------------------------------------------------------------


class TestPreFilterExtensions:
    def setup_method(self) -> None:
        # zoneA: a1 (1), a2 (1); zoneB: b1 (1), b2 (0). The pod fits zoneB only.
        self.victim = make_pod_info(placed("p1", "a1"))
        self.cache = cache_with([zn("a1", "A"), zn("a2", "A"), zn("b1", "B"), zn("b2", "B")], [placed("p2", "a2"), placed("p3", "b1")])
        self.cache.add_pod(self.victim)
        self.pl = plugin_for(self.cache)
        self.pi = incoming(constraint())
        self.state = CycleState()
        assert self.pl.pre_filter(self.state, self.pi) == (None, None)

    def test_declares_extensions(self) -> None:
        assert PodTopologySpread.has_prefilter_extensions is True

    def test_remove_pod_lets_the_zone_fit(self) -> None:
        assert set(verdicts(self.pl, self.cache, self.pi, self.state)) == {"a1", "a2"}
        trial = self.state.clone()
        assert self.pl.remove_pod(trial, self.pi, self.victim, self.cache.table.row_of("a1")) is None
        # A: 1, B: 1 -> 1+1-1 fits everywhere.
        assert verdicts(self.pl, self.cache, self.pi, trial) == {}
        # The original state is untouched.
        assert set(verdicts(self.pl, self.cache, self.pi, self.state)) == {"a1", "a2"}

    def test_add_pod_raises_the_minimum(self) -> None:
        trial = self.state.clone()
        self.pl.add_pod(trial, self.pi, make_pod_info(placed("nominated", "b2")), self.cache.table.row_of("b2"))
        # A: 2, B: 2 -> 2+1-2 fits everywhere.
        assert verdicts(self.pl, self.cache, self.pi, trial) == {}

    def test_other_namespace_or_non_matching_pods_change_nothing(self) -> None:
        trial = self.state.clone()
        row = self.cache.table.row_of("b2")
        self.pl.add_pod(trial, self.pi, make_pod_info(placed("ns", "b2", namespace="other")), row)
        self.pl.add_pod(trial, self.pi, make_pod_info(placed("nm", "b2", labels={"foo": "no"})), row)
        assert set(verdicts(self.pl, self.cache, self.pi, trial)) == {"a1", "a2"}

    def test_clone_copies_arrays(self) -> None:
        st: PreFilterState = self.state.read(PREFILTER_STATE_KEY)
        copy = st.clone()
        assert copy is not st
        for a, b in zip(st.counts, copy.counts, strict=True):
            assert a is not b and np.array_equal(a, b)
        copy.counts[0][:] = 99
        assert not (st.counts[0] == 99).any()
        # CycleState.clone goes through it.
        cloned = self.state.clone().read(PREFILTER_STATE_KEY)
        assert cloned is not st and cloned.counts[0] is not st.counts[0]

    def test_without_prefilter_state_extensions_are_no_ops(self) -> None:
        assert self.pl.add_pod(CycleState(), self.pi, self.victim, 0) is None
        assert self.pl.remove_pod(CycleState(), self.pi, self.victim, 0) is None

    def test_tainted_node_ignored_under_taints_honor(self) -> None:
        taint = [{"key": "k", "value": "v", "effect": "NoExecute"}]
        cache = cache_with([zn("a1", "A"), zn("b1", "B"), zn("b2", "B", taints=taint)], [placed("p1", "a1")])
        pl = plugin_for(cache)
        pi = incoming(constraint(nodeTaintsPolicy="Honor"))
        state = CycleState()
        pl.pre_filter(state, pi)
        # Adding a matching pod on the tainted node must not raise B's count.
        pl.add_pod(state, pi, make_pod_info(placed("x", "b2")), cache.table.row_of("b2"))
        assert set(verdicts(pl, cache, pi, state)) == {"a1"}


# --- scoring --------------------------------------------------------------------------------------


class TestScore:
    def test_zone_scores_hand_computed(self) -> None:
        # A (a1: 2 pods, a2: 1), B (b1: 0). Two domains -> weight ln(4).
        cache = cache_with(
            [zn("a1", "A"), zn("a2", "A"), zn("b1", "B")],
            [placed("p1", "a1"), placed("p2", "a1"), placed("p3", "a2")],
        )
        pl = plugin_for(cache)
        pi = incoming(constraint(when="ScheduleAnyway"))
        w = math.log(4)
        assert raw_scores(pl, cache, pi) == {"a1": round(3 * w), "a2": round(3 * w), "b1": 0}
        # max 4, min 0: 100*(4+0-s)/4
        assert scores(pl, cache, pi) == {"a1": 0, "a2": 0, "b1": 100}

    def test_hostname_scores_hand_computed(self) -> None:
        cache = cache_with(
            [make_node("n1").obj(), make_node("n2").obj(), make_node("n3").obj()],
            [placed("p1", "n1"), placed("p2", "n1"), placed("p3", "n2")],
        )
        pl = plugin_for(cache)
        pi = incoming(constraint(key=HOST, max_skew=2, when="ScheduleAnyway"))
        w = math.log(5)
        # count*ln(5) + (maxSkew-1), rounded: 4.22 -> 4, 2.61 -> 3, 1
        assert raw_scores(pl, cache, pi) == {"n1": 4, "n2": 3, "n3": 1}
        assert round(2 * w + 1) == 4
        # max 4, min 1: 100*(5-s)//4
        assert scores(pl, cache, pi) == {"n1": 25, "n2": 50, "n3": 100}

    def test_fewer_matching_pods_score_higher(self) -> None:
        cache = three_zones()
        got = scores(plugin_for(cache), cache, incoming(constraint(when="ScheduleAnyway")))
        assert got["c1"] == got["c2"] == 100
        assert got["b1"] > got["a1"]
        assert got["a1"] == got["a2"]

    def test_all_zero_scores_normalize_to_max(self) -> None:
        cache = cache_with([zn("a1", "A"), zn("b1", "B")])
        got = scores(plugin_for(cache), cache, incoming(constraint(when="ScheduleAnyway")))
        assert got == {"a1": 100, "b1": 100}

    def test_nodes_missing_a_key_are_ignored(self) -> None:
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B"), zn("bare", None)],
            [placed("p1", "a1"), placed("p2", "bare"), placed("p3", "bare")],
        )
        pl = plugin_for(cache)
        pi = incoming(constraint(when="ScheduleAnyway"))
        # bare scores 0 and is left out of min/max; a1 = round(1*ln4) = 1, b1 = 0.
        assert raw_scores(pl, cache, pi) == {"a1": 1, "b1": 0, "bare": 0}
        assert scores(pl, cache, pi) == {"a1": 0, "b1": 100, "bare": 0}

    def test_ignored_node_scores_zero_even_with_other_keys(self) -> None:
        # "bare" has a hostname but no zone: with explicit constraints it is ignored outright,
        # so its own pods (hostname term) do not earn it a score.
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B"), zn("bare", None)],
            [placed("p1", "bare"), placed("p2", "bare"), placed("p3", "a1"), placed("p4", "a1"), placed("p5", "a1")],
        )
        pl = plugin_for(cache)
        pi = incoming(constraint(key=HOST, when="ScheduleAnyway"), constraint(when="ScheduleAnyway"))
        raw = raw_scores(pl, cache, pi)
        assert raw["bare"] == 0
        # Two candidate hosts (bare is ignored) and two zones: both weights ln(4).
        w = math.log(4)
        assert raw == {"a1": 8, "b1": 0, "bare": 0}
        assert round((3 * w) + (3 * w)) == 8 and round(3 * math.log(5) + 3 * w) == 9
        assert scores(pl, cache, pi) == {"a1": 0, "b1": 100, "bare": 0}

    def test_domains_are_counted_over_candidate_nodes_only(self) -> None:
        cache = cache_with(
            [zn("a1", "A"), zn("b1", "B"), zn("c1", "C")],
            [placed("p1", "a1"), placed("p2", "a1"), placed("p3", "c1")],
        )
        pl = plugin_for(cache)
        pi = incoming(constraint(when="ScheduleAnyway"))
        table = cache.table
        rows = np.array([table.row_of("a1"), table.row_of("b1")])
        state = CycleState()
        assert pl.pre_score(state, pi, table, rows) is None
        st = state.read(PRESCORE_STATE_KEY)
        assert st.weights == [topology_normalizing_weight(2)]
        raw = pl.score(state, pi, table, rows)
        assert raw.tolist() == [round(2 * math.log(4)), 0]

    def test_score_honors_node_affinity_policy_in_counts(self) -> None:
        # Pods on an excluded node of zone A are not counted under Honor.
        cache = cache_with(
            [zn("a1", "A", labels={"disk": "ssd"}), zn("a2", "A"), zn("b1", "B", labels={"disk": "ssd"})],
            [placed("p1", "a2"), placed("p2", "a2"), placed("p3", "b1")],
        )
        pl = plugin_for(cache)
        honor = incoming(constraint(when="ScheduleAnyway"), nodeSelector={"disk": "ssd"})
        got = scores(pl, cache, honor, ["a1", "b1"])
        assert got == {"a1": 100, "b1": 0}  # A counts 0, B counts 1
        ignore = incoming(constraint(when="ScheduleAnyway", nodeAffinityPolicy="Ignore"), nodeSelector={"disk": "ssd"})
        got = scores(pl, cache, ignore, ["a1", "b1"])
        assert got["b1"] > got["a1"]

    def test_system_defaults_need_a_selecting_workload(self) -> None:
        cache = cache_with(
            [zn("a1", "A"), zn("a2", "A"), make_node("n3").obj()],
            [
                placed("w1", "a1", labels={"app": "web"}),
                placed("w2", "n3", labels={"app": "web"}),
                placed("w3", "n3", labels={"app": "web"}),
            ],
        )
        pl = plugin_for(cache)
        pi = incoming(labels={"app": "web"})
        state = CycleState()
        assert pl.pre_score(state, pi, cache.table, cache.table.rows()) == Status(Code.SKIP)
        cache.set_workload_selector("ReplicaSet", "default", "web", compile_label_selector(LabelSelector(match_labels={"app": "web"})))
        # A workload in another namespace or not selecting the pod does not count.
        cache.set_workload_selector("Service", "default", "api", compile_label_selector(LabelSelector(match_labels={"app": "api"})))
        # System defaults are soft: PreFilter still has nothing to do.
        _, status = pl.pre_filter(CycleState(), pi)
        assert status is not None and status.code == Code.SKIP
        # hostname (maxSkew 3, weight ln5) then zone (maxSkew 5, weight ln4: domains A and "no zone").
        h, z = math.log(5), math.log(4)
        expected_raw = {
            "a1": round((1 * h + 2) + (1 * z + 4)),
            "a2": round((0 * h + 2) + (1 * z + 4)),
            "n3": round(2 * h + 2),  # no zone label: not ignored under system defaults, no zone term
        }
        assert expected_raw == {"a1": 9, "a2": 7, "n3": 5}
        assert raw_scores(pl, cache, pi) == expected_raw
        assert scores(pl, cache, pi) == {"a1": 500 // 9, "a2": 700 // 9, "n3": 100}

    def test_own_constraints_override_defaults(self) -> None:
        cache = three_zones()
        cache.set_workload_selector("Service", "default", "s", compile_label_selector(LabelSelector(match_labels=FOO)))
        pl = plugin_for(cache)
        pi = incoming(constraint(key=HOST, when="ScheduleAnyway", max_skew=7))
        state = CycleState()
        pl.pre_score(state, pi, cache.table, cache.table.rows())
        st = state.read(PRESCORE_STATE_KEY)
        assert [(c.topology_key, c.max_skew) for c in st.constraints] == [(HOST, 7)]

    def test_list_defaults_apply_hard_constraints_with_a_workload(self) -> None:
        args = PodTopologySpreadArgs.model_validate(
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
            }
        )
        cache = three_zones()
        pl = plugin_for(cache, args)
        pi = incoming()
        _, status = pl.pre_filter(CycleState(), pi)
        assert status is not None and status.code == Code.SKIP
        cache.set_workload_selector("ReplicaSet", "default", "rs", compile_label_selector(LabelSelector(match_labels=FOO)))
        assert set(verdicts(pl, cache, pi)) == {"a1", "a2", "b1", "b2"}
        # No soft default constraints: PreScore skips.
        assert pl.pre_score(CycleState(), pi, cache.table, cache.table.rows()) == Status(Code.SKIP)

    def test_list_defaults_ignore_nodes_missing_keys(self) -> None:
        # Unlike System defaulting, List defaults require every topology key.
        args = PodTopologySpreadArgs.model_validate(
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}],
            }
        )
        cache = cache_with([zn("a1", "A"), make_node("bare").obj()], [placed("p", "a1")])
        cache.set_workload_selector("ReplicaSet", "default", "rs", compile_label_selector(LabelSelector(match_labels=FOO)))
        pl = plugin_for(cache, args)
        state = CycleState()
        pi = incoming()
        pl.pre_score(state, pi, cache.table, cache.table.rows())
        st = state.read(PRESCORE_STATE_KEY)
        assert st.ignored[cache.table.row_of("bare")]

    def test_default_selector_merges_all_workloads(self) -> None:
        web = compile_label_selector(LabelSelector(match_labels={"app": "web"}))
        tier = compile_label_selector(LabelSelector(match_labels={"tier": "front"}))
        merged = merge_selectors([web, tier])
        assert merged.matches({"app": "web", "tier": "front"})
        assert not merged.matches({"app": "web"})
        assert merge_selectors([web, web]).requirements == web.requirements

    def test_score_without_prescore_state(self) -> None:
        cache = three_zones()
        pl = plugin_for(cache)
        rows = cache.table.rows()
        assert pl.score(CycleState(), incoming(), cache.table, rows).tolist() == [0] * rows.size


# --- events and queueing hints ------------------------------------------------------------------------


def test_events_are_kubes() -> None:
    pl = PodTopologySpread(None, UnitHandle(Cache()))
    events = pl.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (ASSIGNED_POD, A.Add | A.UpdatePodLabel | A.Delete),
        (TARGET_POD, A.UpdatePodToleration | A.UpdatePodLabel),
        (NODE, A.Add | A.Delete | A.UpdateNodeLabel | A.UpdateNodeTaint),
    ]
    assert [e.hint for e in events] == [
        pl.is_schedulable_after_assigned_pod_change,
        pl.is_schedulable_after_target_pod_change,
        pl.is_schedulable_after_node_change,
    ]
    covered = [
        (ASSIGNED_POD, A.Add),
        (ASSIGNED_POD, A.Delete),
        (ASSIGNED_POD, A.UpdatePodLabel),
        (TARGET_POD, A.UpdatePodLabel),
        (TARGET_POD, A.UpdatePodToleration),
        (TARGET_POD, A.UpdatePodLabel | A.UpdatePodToleration),
        (NODE, A.Add),
        (NODE, A.Delete),
        (NODE, A.UpdateNodeLabel),
        (NODE, A.UpdateNodeTaint),
        (NODE, A.UpdateNodeLabel | A.UpdateNodeTaint),
    ]
    check_coverage(events, covered=covered)
    not_covered = [
        (NODE, A.UpdateNodeAllocatable),
        (NODE, A.UpdateNodeCondition),
        (UNSCHEDULED_POD, A.Add),
        (ASSIGNED_POD, A.UpdatePodScaleDown),
        (TARGET_POD, A.UpdatePodScaleUp),
    ]
    check_coverage(events, not_covered=not_covered)


EXISTS_FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
EXISTS_BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip


def hint_plugin(cache: Cache | None = None, args: PodTopologySpreadArgs | None = None) -> PodTopologySpread:
    return plugin_for(cache or Cache(), args)


def spread(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> PodInfo:
    """The pending pod (labels foo="" by default, as in kube's cases)."""
    return incoming(*constraints, labels={"foo": ""} if labels is None else labels, **spec)


ONE_ZONE = (constraint("zone", selector=EXISTS_FOO),)
ZONE_AND_NODE = (constraint("zone", selector=EXISTS_FOO), constraint("node", selector=EXISTS_FOO))
ZONE_FOO_NODE_BAR = (constraint("zone", selector=EXISTS_FOO), constraint("node", selector=EXISTS_BAR))


def _node(taints: list[dict[str, str]] | None = None, unschedulable: bool = False, **labels: str) -> Any:
    return make_node("node-a").label(labels).taints(taints).unschedulable(unschedulable).obj()


TAINT_A = [{"key": "aaa", "value": "bbb", "effect": "NoSchedule"}]
TAINT_C = [{"key": "ccc", "value": "bbb", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"),
    [
        pytest.param(ONE_ZONE, _node(zone="zone1"), _node(zone="zone2"), Q, id="update-topology-value"),
        pytest.param(ONE_ZONE, _node(foo="bar1"), _node(foo="bar2"), SKIP, id="update-unrelated-label-of-unmatching-node"),
        pytest.param(
            ZONE_AND_NODE,
            _node(zone="zone1", node="node1", foo="bar"),
            _node(zone="zone1", node="node1"),
            SKIP,
            id="remove-unrelated-label-of-matching-node",
        ),
        pytest.param(ONE_ZONE, None, _node(foo="bar"), SKIP, id="add-without-keys"),
        pytest.param(ONE_ZONE, None, _node(zone="zone1"), Q, id="add-with-keys"),
        pytest.param(ONE_ZONE, _node(foo="bar"), None, SKIP, id="delete-without-keys"),
        pytest.param(ONE_ZONE, _node(zone="zone1"), None, Q, id="delete-with-keys"),
        pytest.param(ZONE_AND_NODE, None, _node(zone="zone1"), SKIP, id="add-with-one-of-two-keys"),
        pytest.param(ZONE_AND_NODE, None, _node(zone="zone1", node="node1"), Q, id="add-with-all-keys"),
        pytest.param(ZONE_AND_NODE, _node(zone="zone1"), _node(zone="zone1"), SKIP, id="update-with-one-of-two-keys"),
        pytest.param(
            ZONE_AND_NODE, _node(zone="zone1", node="node1"), _node(zone="zone1", node="node2"), Q, id="update-value-with-all-keys"
        ),
        pytest.param(
            ZONE_AND_NODE,
            _node(TAINT_A, zone="zone1", node="node1"),
            _node(TAINT_C, zone="zone1", node="node1"),
            Q,
            id="update-taints-with-all-keys",
        ),
        pytest.param(ZONE_AND_NODE, _node(TAINT_A, node="node1"), _node(TAINT_C, node="node1"), SKIP, id="update-taints-missing-a-key"),
        pytest.param(ONE_ZONE, _node(foo="x"), _node(zone="zone1"), Q, id="update-gains-all-keys"),
        pytest.param(ONE_ZONE, _node(zone="zone1"), _node(foo="x"), Q, id="update-loses-a-key"),
        pytest.param(ONE_ZONE, _node(zone="zone1"), _node(zone="zone1", unschedulable=True), SKIP, id="update-unschedulable-only"),
        # Taint changes count whatever nodeTaintsPolicy says, as in kube.
        pytest.param(
            (constraint("zone", selector=EXISTS_FOO, nodeTaintsPolicy="Ignore"),),
            _node(zone="zone1"),
            _node(TAINT_A, zone="zone1"),
            Q,
            id="taint-added-policy-ignore",
        ),
        pytest.param(
            (constraint("zone", selector=EXISTS_FOO, nodeTaintsPolicy="Honor"),),
            _node(TAINT_A, zone="zone1"),
            _node(zone="zone1"),
            Q,
            id="taint-removed-policy-honor",
        ),
        pytest.param(
            (constraint("zone", selector=EXISTS_FOO, nodeTaintsPolicy="Honor"),),
            _node(TAINT_A, foo="x"),
            _node(foo="x"),
            SKIP,
            id="taint-removed-from-node-without-key",
        ),
        # Soft constraints are not read: a pod with none has every key on every node.
        pytest.param((constraint("zone", when="ScheduleAnyway"),), None, _node(), Q, id="add-no-hard-constraints"),
        pytest.param((constraint("zone", when="ScheduleAnyway"),), _node(zone="a"), _node(zone="b"), SKIP, id="update-no-hard-constraints"),
    ],
)
def test_hint_node_change(constraints: tuple[dict[str, Any], ...], old: Any, new: Any, want: QueueingHint) -> None:
    assert hint_plugin().is_schedulable_after_node_change(spread(*constraints), old, new) == want


def _on(name: str, labels: dict[str, str], namespace: str = "default") -> PodInfo:
    return make_pod(name).ns(namespace).label(labels).node("fake-node").info()


def _unscheduled(name: str, labels: dict[str, str]) -> PodInfo:
    return make_pod(name).label(labels).info()


def _terminating(name: str, labels: dict[str, str]) -> PodInfo:
    p = make_pod(name).label(labels).node("fake-node").obj()
    meta = msgspec.structs.replace(p.metadata, deletion_timestamp="2024-01-01T00:00:00Z")
    return make_pod_info(msgspec.structs.replace(p, metadata=meta))


def _nominated(name: str, labels: dict[str, str]) -> PodInfo:
    p = make_pod(name).label(labels).obj()
    return make_pod_info(msgspec.structs.replace(p, status=msgspec.structs.replace(p.status, nominated_node_name="fake-node")))


@pytest.mark.parametrize(
    ("constraints", "old", "new", "want"),
    [
        pytest.param(ONE_ZONE, None, _on("p2", {"foo": ""}), Q, id="add-matching"),
        pytest.param(ONE_ZONE, None, _unscheduled("p2", {"foo": ""}), SKIP, id="add-unscheduled"),
        pytest.param(ONE_ZONE, _unscheduled("p2", {"bar": ""}), _unscheduled("p2", {"foo": ""}), SKIP, id="update-unscheduled"),
        pytest.param(ONE_ZONE, _unscheduled("p2", {"foo": ""}), None, SKIP, id="delete-unscheduled"),
        pytest.param(ONE_ZONE, None, _on("p2", {"foo": ""}, namespace="fake-namespace"), SKIP, id="add-other-namespace"),
        pytest.param(ONE_ZONE, None, _on("p2", {"bar": ""}), SKIP, id="add-not-matching"),
        pytest.param(ONE_ZONE, _on("p2", {"foo": ""}), None, Q, id="delete-matching"),
        pytest.param(ONE_ZONE, _nominated("p2", {"bar": ""}), None, SKIP, id="delete-nominated-not-matching"),
        pytest.param(ONE_ZONE, _nominated("p2", {"foo": ""}), None, Q, id="delete-nominated-matching"),
        pytest.param(ONE_ZONE, _on("p2", {"bar": ""}), None, SKIP, id="delete-not-matching"),
        pytest.param(ONE_ZONE, _on("p2", {"foo": "", "bar": "bar1"}), _on("p2", {"foo": "", "bar": "bar2"}), SKIP, id="update-unrelated"),
        pytest.param(ONE_ZONE, _on("p2", {}), _on("p2", {"foo": ""}), Q, id="update-gains-matching-label"),
        pytest.param(ONE_ZONE, _on("p2", {"foo": ""}), _on("p2", {}), Q, id="update-loses-matching-label"),
        pytest.param(ONE_ZONE, _on("p2", {"foo": "foo1"}), _on("p2", {"foo": "foo2"}), SKIP, id="update-matching-value"),
        pytest.param(ZONE_FOO_NODE_BAR, _on("p2", {"foo": ""}), _on("p2", {"foo": "", "bar": "bar2"}), Q, id="update-into-second"),
        pytest.param(ZONE_FOO_NODE_BAR, _on("p2", {"foo": ""}), _on("p2", {"foo": "", "baz": ""}), SKIP, id="update-into-none"),
        pytest.param(
            ZONE_FOO_NODE_BAR, _on("p2", {"foo": "", "bar": ""}), _on("p2", {"foo": "", "bar": "bar2"}), SKIP, id="update-within-both"
        ),
        # A terminating pod is matched all the same, as by kube's hint (Filter does not count it).
        pytest.param(ONE_ZONE, None, _terminating("p2", {"foo": ""}), Q, id="add-terminating-matching"),
    ],
)
def test_hint_assigned_pod_change(
    constraints: tuple[dict[str, Any], ...], old: PodInfo | None, new: PodInfo | None, want: QueueingHint
) -> None:
    assert hint_plugin().is_schedulable_after_assigned_pod_change(spread(*constraints), old, new) == want


def test_hint_assigned_pod_with_list_default_constraints() -> None:
    args = PodTopologySpreadArgs.model_validate(
        {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}
    )
    cache = Cache()
    pl = hint_plugin(cache, args)
    pending = incoming(labels={"app": "web"})
    added = _on("w", {"app": "web"})
    # No workload selects the pod: no constraints, nothing selects the added pod.
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, added) == SKIP
    cache.set_workload_selector("ReplicaSet", "default", "rs", compile_label_selector(LabelSelector(match_labels={"app": "web"})))
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, added) == Q
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, _on("x", {"app": "db"})) == SKIP
    # The defaults' topology keys decide for nodes.
    assert pl.is_schedulable_after_node_change(pending, None, make_node("n").label({ZONE: "a"}).obj()) == Q
    assert pl.is_schedulable_after_node_change(pending, None, make_node("n").obj()) == SKIP


def test_hint_match_label_keys_narrow_the_selector() -> None:
    pl = hint_plugin()
    pending = spread(constraint("zone", selector=EXISTS_FOO, matchLabelKeys=["rev"]), labels={"foo": "", "rev": "2"})
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, _on("o", {"foo": "", "rev": "2"})) == Q
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, _on("o", {"foo": "", "rev": "1"})) == SKIP


def test_hint_unparsable_constraint_queues() -> None:
    pl = hint_plugin()
    bad = {"matchExpressions": [{"key": "foo", "operator": "In", "values": []}]}
    pending = spread(constraint("zone", selector=bad))
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, _on("o", {"x": ""})) == Q
    assert pl.is_schedulable_after_node_change(pending, None, make_node("n").obj()) == Q
    assert pl.is_schedulable_after_target_pod_change(pending, pending, pending) == Q
    # The namespace check comes first.
    assert pl.is_schedulable_after_assigned_pod_change(pending, None, _unscheduled("o", {"x": ""})) == SKIP


def _target(labels: dict[str, str], tolerations: list[dict[str, Any]] | None = None) -> PodInfo:
    return make_pod("p").label(labels).spec(tolerations=tolerations or []).info()


UNSCHEDULABLE_TOLERATION = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]


@pytest.mark.parametrize(
    ("policy", "old", "new", "want"),
    [
        pytest.param("Honor", _target({"foo": ""}), _target({"foo": ""}, UNSCHEDULABLE_TOLERATION), Q, id="new-toleration-honor"),
        pytest.param("Ignore", _target({"foo": ""}), _target({"foo": ""}, UNSCHEDULABLE_TOLERATION), SKIP, id="new-toleration-ignore"),
        pytest.param(None, _target({"foo": ""}), _target({"foo": ""}, UNSCHEDULABLE_TOLERATION), SKIP, id="new-toleration-default"),
        pytest.param("Honor", _target({"foo": ""}, UNSCHEDULABLE_TOLERATION), _target({"foo": ""}), Q, id="toleration-removed-honor"),
        pytest.param("Honor", _target({"foo": ""}), _target({"foo": ""}), SKIP, id="nothing-changed-honor"),
        pytest.param("Ignore", _target({}), _target({"foo": ""}), Q, id="gains-matching-label"),
        pytest.param("Ignore", _target({}), _target({"unrelated": ""}), SKIP, id="gains-unrelated-label"),
        pytest.param("Ignore", _target({"foo": "", "bar": ""}), _target({"foo": ""}), Q, id="leaves-second-selector"),
    ],
)
def test_hint_target_pod_change(policy: str | None, old: PodInfo, new: PodInfo, want: QueueingHint) -> None:
    extra = {} if policy is None else {"nodeTaintsPolicy": policy}
    pending = spread(constraint("zone", selector=EXISTS_FOO, **extra), constraint("node", selector=EXISTS_BAR))
    assert hint_plugin().is_schedulable_after_target_pod_change(pending, old, new) == want


def test_hint_agrees_with_filter_when_a_matching_pod_leaves() -> None:
    # Zone A holds 2 matching pods, B 1, C 0: with maxSkew 1 zone A is closed to a pod that
    # the selector does not match itself.
    cache = three_zones()
    pl = plugin_for(cache)
    pi = incoming(constraint(), labels={"app": "other"})
    assert set(verdicts(pl, cache, pi)) == {"a1", "a2"}
    gone = next(p for p in cache.pods.infos.values() if p.pod.metadata.name == "p1")
    assert pl.is_schedulable_after_assigned_pod_change(pi, gone, None) == Q
    cache.remove_pod(gone.uid)
    assert verdicts(pl, cache, pi) == {}
    # A pod of another namespace neither counts for Filter nor interests the hint.
    elsewhere = make_pod_info(placed("x", "c1", namespace="other"))
    assert pl.is_schedulable_after_assigned_pod_change(pi, None, elsewhere) == SKIP
    cache.add_pod(elsewhere)
    assert verdicts(pl, cache, pi) == {}
