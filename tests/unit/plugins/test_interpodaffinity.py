"""InterPodAffinity: kube-scheduler's required/preferred pod (anti-)affinity semantics."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pydantic
import pytest

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, UNSCHEDULED_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.interpodaffinity import (
    ERR_AFFINITY_RULES,
    ERR_ANTI_AFFINITY_RULES,
    ERR_EXISTING_ANTI_AFFINITY_RULES,
    PRE_FILTER_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from unit.plugins.pluginkit import check_coverage

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


# --- builders --------------------------------------------------------------------------------------


def term(
    labels: dict[str, str] | None = None,
    key: str = ZONE,
    *,
    selector: dict[str, Any] | None = None,
    nil_selector: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": key, **extra}
    if not nil_selector:
        out["labelSelector"] = selector if selector is not None else {"matchLabels": labels or {}}
    return out


def affinity(
    required: list[dict[str, Any]] | None = None,
    preferred: list[tuple[int, dict[str, Any]]] | None = None,
    anti_required: list[dict[str, Any]] | None = None,
    anti_preferred: list[tuple[int, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    def block(req: list[dict[str, Any]] | None, pref: list[tuple[int, dict[str, Any]]] | None) -> dict[str, Any]:
        return {
            "requiredDuringSchedulingIgnoredDuringExecution": req or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "podAffinityTerm": t} for w, t in (pref or [])],
        }

    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = block(required, preferred)
    if anti_required or anti_preferred:
        out["podAntiAffinity"] = block(anti_required, anti_preferred)
    return {"affinity": out}


def mk(
    name: str,
    labels: dict[str, str] | None = None,
    on: str = "",
    namespace: str = "default",
    aff: dict[str, Any] | None = None,
) -> PodInfo:
    return make_pod(name).ns(namespace).label(labels).node(on).spec(**(aff or {})).info()


def zoned_cluster(*existing: PodInfo) -> Cache:
    """n1, n2 in zone a; n3 in zone b; n4 has no zone label."""
    nodes = [
        make_node("n1").label({ZONE: "a"}).obj(),
        make_node("n2").label({ZONE: "a"}).obj(),
        make_node("n3").label({ZONE: "b"}).obj(),
        make_node("n4").obj(),
    ]
    cache = cache_with(nodes)
    for p in existing:
        cache.add_pod(p)
    return cache


def plugin_for(cache: Cache, **args: Any) -> InterPodAffinity:
    return InterPodAffinity(InterPodAffinityArgs(**args), UnitHandle(cache))


def verdicts(pl: InterPodAffinity, state: CycleState, pi: PodInfo) -> dict[str, tuple[Code, str] | None]:
    table = pl.handle.table  # type: ignore[union-attr]
    result = pl.filter(state, pi, table)
    out: dict[str, tuple[Code, str] | None] = {}
    for name, row in table.index.items():
        if result is None or result.codes[row] == 0:
            out[name] = None
        else:
            code, reasons = result.describe(int(result.codes[row]))
            assert len(reasons) == 1
            out[name] = (code, reasons[0])
    return out


def run_filter(cache: Cache, pi: PodInfo, **args: Any) -> dict[str, tuple[Code, str] | None] | str:
    pl = plugin_for(cache, **args)
    state = CycleState()
    result, status = pl.pre_filter(state, pi)
    assert result is None
    if status is not None:
        assert status.code == Code.SKIP, status
        return "skip"
    return verdicts(pl, state, pi)


AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_AFFINITY_RULES)
ANTI = (Code.UNSCHEDULABLE, ERR_ANTI_AFFINITY_RULES)
EXISTING = (Code.UNSCHEDULABLE, ERR_EXISTING_ANTI_AFFINITY_RULES)


# --- args ------------------------------------------------------------------------------------------


def test_args_defaults_and_aliases() -> None:
    args = InterPodAffinityArgs()
    assert args.hard_pod_affinity_weight == 1
    assert args.ignore_preferred_terms_of_existing_pods is False
    args = InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True})
    assert (args.hard_pod_affinity_weight, args.ignore_preferred_terms_of_existing_pods) == (100, True)
    assert InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": 0}).hard_pod_affinity_weight == 0
    assert InterPodAffinity(None, UnitHandle(cache_with([]))).args.hard_pod_affinity_weight == 1


@pytest.mark.parametrize("weight", [-1, 101])
def test_args_reject_weight_out_of_range(weight: int) -> None:
    with pytest.raises(pydantic.ValidationError, match=rf"hardPodAffinityWeight: Invalid value: {weight}: not in valid range \[0, 100\]"):
        InterPodAffinityArgs.model_validate({"hardPodAffinityWeight": weight})


def test_args_reject_unknown_field() -> None:
    with pytest.raises(pydantic.ValidationError):
        InterPodAffinityArgs.model_validate({"hardPodAffinityWieght": 2})


# --- events and queueing hints ------------------------------------------------------------------------


def test_events_are_kubes() -> None:
    pl = InterPodAffinity(None, UnitHandle(cache_with([])))
    events = pl.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (ASSIGNED_POD, A.Add | A.UpdatePodLabel | A.Delete),
        (TARGET_POD, A.UpdatePodLabel),
        (NODE, A.Add | A.UpdateNodeLabel),
    ]
    assert [e.hint for e in events] == [
        pl.is_schedulable_after_assigned_pod_change,
        pl.is_schedulable_after_target_pod_update_label,
        pl.is_schedulable_after_node_change,
    ]
    covered = [
        (ASSIGNED_POD, A.Add),
        (ASSIGNED_POD, A.Delete),
        (ASSIGNED_POD, A.UpdatePodLabel),
        (TARGET_POD, A.UpdatePodLabel),
        (NODE, A.Add),
        (NODE, A.UpdateNodeLabel),
    ]
    check_coverage(events, covered=covered)
    not_covered = [
        (NODE, A.Delete),
        (NODE, A.UpdateNodeTaint),
        (NODE, A.UpdateNodeAllocatable),
        (UNSCHEDULED_POD, A.Add),
        (ASSIGNED_POD, A.UpdatePodScaleDown),
        (ASSIGNED_POD, A.UpdatePodLabel | A.UpdatePodScaleDown),
        (TARGET_POD, A.UpdatePodToleration),
    ]
    check_coverage(events, not_covered=not_covered)


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


SCAN = _expr("service", "In", "securityscan", "value2")


def nominated(name: str, labels: dict[str, str] | None = None, aff: dict[str, Any] | None = None) -> PodInfo:
    """A pod nominated to a node but not bound to it."""
    p = make_pod(name).label(labels).spec(**(aff or {})).obj()
    return make_pod_info(msgspec.structs.replace(p, status=msgspec.structs.replace(p.status, nominated_node_name="n1")))


def hint_plugin() -> InterPodAffinity:
    return plugin_for(zoned_cluster())


def with_affinity(*selectors: dict[str, Any], key: str = "region", labels: dict[str, str] | None = None) -> PodInfo:
    return mk("p", labels, aff=affinity(required=[term(selector=s, key=key) for s in selectors]))


def with_anti(*selectors: dict[str, Any], key: str = "region", labels: dict[str, str] | None = None) -> PodInfo:
    return mk("p", labels, aff=affinity(anti_required=[term(selector=s, key=key) for s in selectors]))


Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
TWO_EXISTS = (_expr("aaa", "Exists"), _expr("bbb", "Exists"))
TWO_ANTI = (_expr("service", "In", "securityscan"), _expr("app", "In", "web"))
ANTI_GUARD = affinity(anti_required=[term(selector=SCAN, key="region")])
TWO_ANTI_GUARD = affinity(anti_required=[term(selector=s, key="region") for s in TWO_ANTI])


@pytest.mark.parametrize(
    ("pending", "old", "new", "want"),
    [
        pytest.param(with_affinity(SCAN), None, mk("o", {"service": "securityscan"}, on="n1"), Q, id="add-matching-affinity"),
        pytest.param(with_affinity(SCAN), None, mk("o", {"service": "securityscan"}), SKIP, id="add-unscheduled"),
        pytest.param(with_affinity(SCAN), None, mk("o", {"aaa": "a"}, on="n1"), SKIP, id="add-not-matching-affinity"),
        pytest.param(
            with_affinity(SCAN), mk("o", {"aaa": "a"}, on="n1"), mk("o", {"service": "securityscan"}, on="n1"), Q, id="update-into-affinity"
        ),
        pytest.param(
            with_affinity(SCAN),
            mk("o", {"service": "value2"}, on="n1"),
            mk("o", {"service": "securityscan"}, on="n1"),
            SKIP,
            id="update-matching-before-and-after",
        ),
        pytest.param(with_affinity(SCAN), mk("o", {"aaa": "a"}), mk("o", {"service": "securityscan"}), SKIP, id="update-unscheduled"),
        pytest.param(
            with_affinity(SCAN),
            mk("o", {"service": "securityscan"}, on="n1"),
            mk("o", {"aaa": "a"}, on="n1"),
            SKIP,
            id="update-out-of-affinity",
        ),
        pytest.param(
            with_affinity(*TWO_EXISTS, key="hostname"),
            mk("o", {"aaa": "a"}, on="n1"),
            mk("o", {"service": "securityscan"}, on="n1"),
            SKIP,
            id="update-out-of-one-of-two-terms",
        ),
        pytest.param(
            with_affinity(*TWO_EXISTS, key="hostname"),
            mk("o", {"aaa": "a"}, on="n1"),
            mk("o", {"aaa": "", "bbb": ""}, on="n1"),
            Q,
            id="update-into-all-terms",
        ),
        pytest.param(
            with_affinity(*TWO_EXISTS, key="hostname"),
            None,
            mk("o", {"aaa": ""}, on="n1"),
            SKIP,
            id="add-matching-one-of-two-terms",
        ),
        pytest.param(
            with_anti(SCAN),
            mk("o", {"service": "securityscan"}, on="n1"),
            mk("o", {"service": "aaaa"}, on="n1"),
            Q,
            id="update-out-of-anti",
        ),
        pytest.param(
            with_anti(SCAN),
            mk("o", {"service": "bbb"}, on="n1"),
            mk("o", {"service": "securityscan"}, on="n1"),
            SKIP,
            id="update-into-anti",
        ),
        pytest.param(with_anti(SCAN), mk("o", {"aaa": "a"}, on="n1"), None, SKIP, id="delete-not-matching-anti"),
        pytest.param(with_anti(SCAN), mk("o", {"service": "securityscan"}, on="n1"), None, Q, id="delete-matching-anti"),
        pytest.param(
            mk("p", {"service": "securityscan"}), mk("o", on="n1", aff=ANTI_GUARD), None, Q, id="delete-pod-whose-anti-matches-pending"
        ),
        pytest.param(mk("p", {"service": "foo"}), mk("o", on="n1", aff=ANTI_GUARD), None, SKIP, id="delete-pod-whose-anti-does-not-match"),
        pytest.param(
            mk("p", {"service": "foo"}, aff=ANTI_GUARD),
            mk("o", {"service": "foo"}, on="n1", aff=ANTI_GUARD),
            None,
            SKIP,
            id="delete-neither-way",
        ),
        pytest.param(with_anti(SCAN), nominated("o", {"aaa": "a"}), None, SKIP, id="delete-nominated-not-matching-anti"),
        pytest.param(with_anti(SCAN), nominated("o", {"service": "securityscan"}), None, Q, id="delete-nominated-matching-anti"),
        pytest.param(with_affinity(SCAN), None, nominated("o", {"service": "securityscan"}), Q, id="add-nominated-matching-affinity"),
        pytest.param(
            with_anti(*TWO_ANTI),
            mk("o", {"service": "securityscan", "app": "bar"}, on="n1"),
            mk("o", {"service": "foo", "app": "bar"}, on="n1"),
            Q,
            id="update-out-of-the-only-anti-term-matched",
        ),
        pytest.param(
            with_anti(*TWO_ANTI),
            mk("o", {"service": "securityscan", "app": "bar"}, on="n1"),
            mk("o", {"service": "foo", "app": "web"}, on="n1"),
            SKIP,
            id="update-still-matching-another-anti-term",
        ),
        pytest.param(with_anti(*TWO_ANTI), mk("o", {"service": "securityscan"}, on="n1"), None, Q, id="delete-matching-one-anti-term"),
        pytest.param(
            mk("p", {"service": "securityscan"}),
            mk("o", on="n1", aff=TWO_ANTI_GUARD),
            None,
            Q,
            id="delete-pod-with-one-anti-term-matching-pending",
        ),
        pytest.param(
            mk("p", {"app": "web"}), mk("o", {"app": "web"}, on="n1"), mk("o", {"app": "db"}, on="n1"), SKIP, id="no-terms-relabel"
        ),
        # An added pod never lifts anti-affinity, nor a deleted one satisfy affinity.
        pytest.param(with_anti(SCAN), None, mk("o", {"aaa": "a"}, on="n1"), SKIP, id="add-with-anti-only"),
        pytest.param(with_affinity(SCAN), mk("o", {"service": "securityscan"}, on="n1"), None, SKIP, id="delete-with-affinity-only"),
    ],
)
def test_hint_assigned_pod_change(pending: PodInfo, old: PodInfo | None, new: PodInfo | None, want: QueueingHint) -> None:
    assert hint_plugin().is_schedulable_after_assigned_pod_change(pending, old, new) == want


def test_hint_assigned_pod_term_namespaces() -> None:
    pl = hint_plugin()
    own_ns = with_affinity(SCAN)
    listed = mk("p", aff=affinity(required=[term(selector=SCAN, namespaces=["other"])]))
    every_ns = mk("p", aff=affinity(required=[term(selector=SCAN, namespaceSelector={})]))
    match = {"service": "securityscan"}
    assert pl.is_schedulable_after_assigned_pod_change(own_ns, None, mk("o", match, on="n1", namespace="other")) == SKIP
    assert pl.is_schedulable_after_assigned_pod_change(listed, None, mk("o", match, on="n1", namespace="other")) == Q
    assert pl.is_schedulable_after_assigned_pod_change(listed, None, mk("o", match, on="n1")) == SKIP
    assert pl.is_schedulable_after_assigned_pod_change(every_ns, None, mk("o", match, on="n1", namespace="x")) == Q
    # A deleted pod's anti-affinity term, namespaced to its owner by default.
    guard = mk("o", on="n1", namespace="other", aff=ANTI_GUARD)
    assert pl.is_schedulable_after_assigned_pod_change(mk("p", match), guard, None) == SKIP
    assert pl.is_schedulable_after_assigned_pod_change(mk("p", match, namespace="other"), guard, None) == Q


def test_hint_reads_no_namespace_labels_as_kubes_does() -> None:
    """kube's hints match a namespaceSelector against no labels at all (kubernetes#141953): a pod
    that Filter would count through its namespace's labels is not worth a retry to the hint."""
    cache = zoned_cluster()
    cache.set_namespace("team-a", {"team": "a"})
    pl = plugin_for(cache)
    by_label = mk("p", aff=affinity(required=[term(selector=SCAN, namespaceSelector={"matchLabels": {"team": "a"}})]))
    added = mk("o", {"service": "securityscan"}, on="n1", namespace="team-a")
    assert pl.is_schedulable_after_assigned_pod_change(by_label, None, added) == SKIP
    # A selector that holds for a namespace without labels selects every namespace here.
    unlabelled = mk("p", aff=affinity(required=[term(selector=SCAN, namespaceSelector=_expr("team", "DoesNotExist"))]))
    assert pl.is_schedulable_after_assigned_pod_change(unlabelled, None, added) == Q


def test_hint_unparsable_required_terms_queue() -> None:
    pl = hint_plugin()
    bad = {"matchExpressions": [{"key": "service", "operator": "In", "values": []}]}
    broken = mk("p", aff=affinity(required=[term(selector=bad)]))
    broken_anti = mk("p", aff=affinity(anti_required=[term(selector=bad)]))
    placed = mk("o", {"aaa": "a"}, on="n1")
    for pending in (broken, broken_anti):
        assert pl.is_schedulable_after_assigned_pod_change(pending, None, placed) == Q
        assert pl.is_schedulable_after_node_change(pending, make_node("n1").obj(), make_node("n1").label(x="y").obj()) == Q
        # The unscheduled-pod check comes first.
        assert pl.is_schedulable_after_assigned_pod_change(pending, None, mk("o", {"aaa": "a"})) == SKIP
    # Only required terms are read: a broken preferred term changes nothing.
    preferred_broken = mk("p", aff=affinity(required=[term(selector=SCAN)], preferred=[(1, term(selector=bad))]))
    assert pl.is_schedulable_after_assigned_pod_change(preferred_broken, None, placed) == SKIP
    # A deleted pod's unparsable anti-affinity may have been what kept the pod out.
    guard = mk("o", on="n1", aff=affinity(anti_required=[term(selector=bad)]))
    assert pl.is_schedulable_after_assigned_pod_change(mk("p", {"aaa": "a"}), guard, None) == Q


def test_hint_target_pod_label_update_always_queues() -> None:
    pl = hint_plugin()
    p = mk("p", {"foo": "baz"})
    assert pl.is_schedulable_after_target_pod_update_label(p, p, p) == Q


def _n(**labels: str) -> Any:
    return make_node("node-a").label(labels).obj()


ZONE_AFF = affinity(required=[term(selector=SCAN, key="zone")])
REGION_AFF = affinity(required=[term(selector=SCAN, key="region")])
ZONE_ANTI = affinity(anti_required=[term({"another": "label"}, key="zone")])


@pytest.mark.parametrize(
    ("aff", "old", "new", "want"),
    [
        pytest.param(ZONE_AFF, None, _n(zone="zone1"), Q, id="add-node-with-affinity-key"),
        pytest.param(REGION_AFF, None, _n(zone="zone1"), SKIP, id="add-node-without-affinity-key"),
        pytest.param(ZONE_AFF, _n(aaa="a"), _n(aaa="b"), SKIP, id="update-other-label"),
        pytest.param(ZONE_AFF, _n(zone="zone1"), _n(zone="zone1", unrelated="x"), SKIP, id="update-unrelated-label"),
        pytest.param(ZONE_AFF, _n(zone="zone1"), _n(zone="zone2"), Q, id="update-affinity-domain"),
        pytest.param(ZONE_AFF, _n(aaa="a"), _n(zone="zone1"), Q, id="update-gains-affinity-key"),
        pytest.param(ZONE_AFF, _n(zone="zone1"), _n(aaa="a"), SKIP, id="update-loses-affinity-key"),
        pytest.param(ZONE_ANTI, None, _n(zone="zone1"), Q, id="add-node-with-anti-key"),
        pytest.param(ZONE_ANTI, None, _n(), Q, id="add-node-without-anti-key"),
        pytest.param(ZONE_ANTI, _n(zone="zone1"), _n(zone="zone1", unrelated="x"), SKIP, id="update-unrelated-label-anti"),
        pytest.param(ZONE_ANTI, _n(zone="zone1"), _n(zone="zone2"), Q, id="update-anti-domain"),
        pytest.param(ZONE_ANTI, _n(aaa="a"), _n(zone="zone1"), SKIP, id="update-gains-anti-key"),
        pytest.param(ZONE_ANTI, _n(zone="zone1"), _n(aaa="a"), Q, id="update-loses-anti-key"),
        # Rejected only by existing pods' anti-affinity: no node change is worth a retry here.
        pytest.param(None, None, _n(zone="zone1"), SKIP, id="add-node-no-own-terms"),
    ],
)
def test_hint_node_change(aff: dict[str, Any] | None, old: Any, new: Any, want: QueueingHint) -> None:
    assert hint_plugin().is_schedulable_after_node_change(mk("p", aff=aff), old, new) == want


def test_hint_agrees_with_filter_on_a_pod_that_satisfies_affinity() -> None:
    cache = zoned_cluster()
    pl = plugin_for(cache)
    p = mk("p", aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}
    db = mk("db", {"app": "db"}, on="n3")
    assert pl.is_schedulable_after_assigned_pod_change(p, None, db) == Q
    cache.add_pod(db)
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": None, "n4": AFF}
    # Relabelled away: no help to a pod with affinity only, and Filter fails again.
    away = make_pod("db").label(app="cache").node("n3").info()
    away.uid = db.uid
    assert pl.is_schedulable_after_assigned_pod_change(p, db, away) == SKIP
    cache.update_pod(away)
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}


# --- PreFilter skip ----------------------------------------------------------------------------------


def test_prefilter_skips_pod_without_terms_when_no_existing_anti_affinity() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1"))
    assert run_filter(cache, mk("p", {"app": "web"})) == "skip"


def test_prefilter_skips_when_existing_anti_affinity_does_not_match_the_pod() -> None:
    guard = mk("guard", {"app": "x"}, on="n1", aff=affinity(anti_required=[term({"app": "web"})]))
    cache = zoned_cluster(guard)
    assert run_filter(cache, mk("p", {"app": "other"})) == "skip"


def test_prefilter_rejects_unparsable_terms() -> None:
    bad = term(selector={"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
    pl = plugin_for(zoned_cluster())
    _, status = pl.pre_filter(CycleState(), mk("p", aff=affinity(required=[bad])))
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons[0].startswith("parsing pod:")


# --- required affinity ---------------------------------------------------------------------------------


def test_required_affinity_satisfied_in_zone_of_matching_pod() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1"))
    p = mk("p", {"app": "web"}, aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, p) == {"n1": None, "n2": None, "n3": AFF, "n4": AFF}


def test_required_affinity_unsatisfied_when_no_pod_matches() -> None:
    cache = zoned_cluster(mk("cache", {"app": "cache"}, on="n1"))
    p = mk("p", {"app": "web"}, aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}


def test_first_pod_of_self_affine_group_goes_to_any_node_with_the_key() -> None:
    cache = zoned_cluster(mk("other", {"app": "x"}, on="n1"))
    p = mk("p", {"app": "db"}, aff=affinity(required=[term({"app": "db"})]))
    # n4 lacks the zone label: topology keys are required even for the first pod.
    assert run_filter(cache, p) == {"n1": None, "n2": None, "n3": None, "n4": AFF}


def test_first_pod_rule_off_once_a_matching_pod_exists() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n3"))
    p = mk("p", {"app": "db"}, aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": None, "n4": AFF}


def test_matching_pod_on_node_without_key_does_not_count() -> None:
    # kube counts only pods whose node carries the key, so the first-pod rule still applies.
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n4"))
    self_affine = mk("p", {"app": "db"}, aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, self_affine) == {"n1": None, "n2": None, "n3": None, "n4": AFF}
    other = mk("q", {"app": "web"}, aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, other) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}


def test_topology_key_absent_everywhere_fails_every_node() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1"))
    p = mk("p", {"app": "db"}, aff=affinity(required=[term({"app": "db"}, key="rack")]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}


def test_one_pod_must_match_all_affinity_terms() -> None:
    cache = zoned_cluster(
        mk("half", {"app": "db"}, on="n1"),  # matches only the first term
        mk("full", {"app": "db", "tier": "be"}, on="n3"),
    )
    p = mk("p", aff=affinity(required=[term({"app": "db"}), term({"tier": "be"}, key=HOST)]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": None, "n4": AFF}


def test_nil_label_selector_selects_nothing_and_empty_selects_everything() -> None:
    cache = zoned_cluster(mk("any", {"app": "x"}, on="n3"))
    nil = mk("p", aff=affinity(required=[term(nil_selector=True)]))
    assert run_filter(cache, nil) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}
    everything = mk("q", aff=affinity(required=[term({})]))
    assert run_filter(cache, everything) == {"n1": AFF, "n2": AFF, "n3": None, "n4": AFF}


# --- required anti-affinity ------------------------------------------------------------------------------


def test_anti_affinity_by_hostname() -> None:
    cache = zoned_cluster(mk("w1", {"app": "web"}, on="n1"), mk("w4", {"app": "web"}, on="n4"))
    p = mk("p", {"app": "web"}, aff=affinity(anti_required=[term({"app": "web"}, key=HOST)]))
    assert run_filter(cache, p) == {"n1": ANTI, "n2": None, "n3": None, "n4": ANTI}


def test_anti_affinity_by_zone_spares_nodes_without_the_key() -> None:
    cache = zoned_cluster(mk("w1", {"app": "web"}, on="n1"), mk("w4", {"app": "web"}, on="n4"))
    p = mk("p", {"app": "web"}, aff=affinity(anti_required=[term({"app": "web"})]))
    # w4's node has no zone, so it defines no domain; n4 itself lacks the key and passes.
    assert run_filter(cache, p) == {"n1": ANTI, "n2": ANTI, "n3": None, "n4": None}


def test_existing_pod_anti_affinity_blocks_its_domain() -> None:
    guard = mk("guard", {"app": "db"}, on="n1", aff=affinity(anti_required=[term({"app": "web"})]))
    cache = zoned_cluster(guard)
    assert run_filter(cache, mk("p", {"app": "web"})) == {"n1": EXISTING, "n2": EXISTING, "n3": None, "n4": None}


def test_affinity_reason_takes_precedence() -> None:
    guard = mk("guard", {"app": "db"}, on="n3", aff=affinity(anti_required=[term({"app": "web"})]))
    cache = zoned_cluster(guard, mk("w", {"app": "web"}, on="n1"))
    p = mk(
        "p",
        {"app": "web"},
        aff=affinity(required=[term({"app": "db"})], anti_required=[term({"app": "web"}, key=HOST)]),
    )
    # n1: anti (w on the host); n2: fine; n3: existing guard + own affinity ok; n4: no zone.
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": EXISTING, "n4": AFF}
    p2 = mk("p2", {"app": "web"}, aff=affinity(required=[term({"app": "web"})], anti_required=[term({"app": "web"}, key=HOST)]))
    assert run_filter(cache, p2) == {"n1": ANTI, "n2": None, "n3": AFF, "n4": AFF}


# --- namespaces ---------------------------------------------------------------------------------------------


def test_term_defaults_to_the_pods_own_namespace() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1", namespace="other"))
    p = mk("p", aff=affinity(required=[term({"app": "db"})]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}


def test_term_namespaces_list() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1", namespace="other"), mk("db2", {"app": "db"}, on="n3"))
    p = mk("p", aff=affinity(required=[term({"app": "db"}, namespaces=["other"])]))
    assert run_filter(cache, p) == {"n1": None, "n2": None, "n3": AFF, "n4": AFF}


def test_term_namespace_selector() -> None:
    cache = zoned_cluster(
        mk("a", {"app": "db"}, on="n1", namespace="team-a"),
        mk("b", {"app": "db"}, on="n3", namespace="team-b"),
    )
    cache.set_namespace("team-a", {"team": "a"})
    cache.set_namespace("team-b", {"team": "b"})
    by_label = mk("p", aff=affinity(required=[term({"app": "db"}, namespaceSelector={"matchLabels": {"team": "a"}})]))
    assert run_filter(cache, by_label) == {"n1": None, "n2": None, "n3": AFF, "n4": AFF}
    # Selector and list are ORed.
    both = mk(
        "q",
        aff=affinity(required=[term({"app": "db"}, namespaces=["team-b"], namespaceSelector={"matchLabels": {"team": "a"}})]),
    )
    assert run_filter(cache, both) == {"n1": None, "n2": None, "n3": None, "n4": AFF}
    # An empty selector means every namespace.
    all_ns = mk("r", aff=affinity(anti_required=[term({"app": "db"}, namespaceSelector={})]))
    assert run_filter(cache, all_ns) == {"n1": ANTI, "n2": ANTI, "n3": ANTI, "n4": None}


def test_existing_pod_namespace_selector_reads_incoming_pods_namespace_labels() -> None:
    guard = mk(
        "guard",
        {"app": "db"},
        on="n3",
        namespace="ops",
        aff=affinity(anti_required=[term({"app": "web"}, namespaceSelector={"matchLabels": {"env": "prod"}})]),
    )
    cache = zoned_cluster(guard)
    cache.set_namespace("prod-ns", {"env": "prod"})
    cache.set_namespace("dev-ns", {"env": "dev"})
    assert run_filter(cache, mk("p", {"app": "web"}, namespace="prod-ns")) == {
        "n1": None,
        "n2": None,
        "n3": EXISTING,
        "n4": None,
    }
    assert run_filter(cache, mk("q", {"app": "web"}, namespace="dev-ns")) == "skip"
    # The guard's own namespace is not implied once a namespaceSelector is set.
    assert run_filter(cache, mk("r", {"app": "web"}, namespace="ops")) == "skip"


# --- matchLabelKeys / mismatchLabelKeys ---------------------------------------------------------------------


def test_match_label_keys_take_values_from_the_incoming_pod() -> None:
    cache = zoned_cluster(
        mk("old", {"app": "web", "rev": "1"}, on="n1"),
        mk("new", {"app": "web", "rev": "2"}, on="n3"),
    )
    p = mk("p", {"app": "web", "rev": "2"}, aff=affinity(required=[term({"app": "web"}, matchLabelKeys=["rev"])]))
    assert run_filter(cache, p) == {"n1": AFF, "n2": AFF, "n3": None, "n4": AFF}
    # A key the pod does not carry is ignored.
    q = mk("q", {"app": "web"}, aff=affinity(anti_required=[term({"app": "web"}, matchLabelKeys=["rev"])]))
    assert run_filter(cache, q) == {"n1": ANTI, "n2": ANTI, "n3": ANTI, "n4": None}
    # A nil selector stays nil: still nothing.
    r = mk("r", {"app": "web", "rev": "2"}, aff=affinity(anti_required=[term(nil_selector=True, matchLabelKeys=["rev"])]))
    assert run_filter(cache, r) == {"n1": None, "n2": None, "n3": None, "n4": None}


def test_mismatch_label_keys_exclude_the_pods_own_value() -> None:
    cache = zoned_cluster(
        mk("t1", {"tenant": "t1"}, on="n1"),
        mk("t2", {"tenant": "t2"}, on="n3"),
    )
    exists = {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]}
    p = mk("p", {"tenant": "t1"}, aff=affinity(anti_required=[term(selector=exists, mismatchLabelKeys=["tenant"])]))
    assert run_filter(cache, p) == {"n1": None, "n2": None, "n3": ANTI, "n4": None}


def test_match_label_keys_already_merged_by_the_api_server_are_not_merged_again() -> None:
    # The stored pod has rev In (1) from creation; its label has since moved to 2.
    merged = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "rev", "operator": "In", "values": ["1"]}]}
    cache = zoned_cluster(mk("old", {"app": "web", "rev": "1"}, on="n1"))
    p = mk("p", {"app": "web", "rev": "2"}, aff=affinity(required=[term(selector=merged, matchLabelKeys=["rev"])]))
    assert run_filter(cache, p) == {"n1": None, "n2": None, "n3": AFF, "n4": AFF}


def test_existing_pods_terms_merge_their_own_labels() -> None:
    guard = mk(
        "guard",
        {"app": "web", "rev": "1"},
        on="n1",
        aff=affinity(anti_required=[term({"app": "web"}, key=HOST, matchLabelKeys=["rev"])]),
    )
    cache = zoned_cluster(guard)
    assert run_filter(cache, mk("same", {"app": "web", "rev": "1"})) == {
        "n1": EXISTING,
        "n2": None,
        "n3": None,
        "n4": None,
    }
    assert run_filter(cache, mk("next", {"app": "web", "rev": "2"})) == "skip"


# --- PreFilter extensions and clone ---------------------------------------------------------------------------


def prefiltered(cache: Cache, pi: PodInfo) -> tuple[InterPodAffinity, CycleState]:
    pl = plugin_for(cache)
    state = CycleState()
    _, status = pl.pre_filter(state, pi)
    assert status is None
    return pl, state


def test_add_and_remove_pod_update_anti_affinity_counts() -> None:
    w1 = mk("w1", {"app": "web"}, on="n1")
    cache = zoned_cluster(w1)
    p = mk("p", {"app": "web"}, aff=affinity(anti_required=[term({"app": "web"}, key=HOST)]))
    pl, state = prefiltered(cache, p)
    extra = mk("w3", {"app": "web"}, on="n3")
    row3 = cache.table.row_of("n3")
    assert pl.has_prefilter_extensions
    assert pl.add_pod(state, p, extra, row3) is None
    assert verdicts(pl, state, p) == {"n1": ANTI, "n2": None, "n3": ANTI, "n4": None}
    pl.remove_pod(state, p, extra, row3)
    assert verdicts(pl, state, p) == {"n1": ANTI, "n2": None, "n3": None, "n4": None}
    pl.remove_pod(state, p, w1, cache.table.row_of("n1"))
    assert verdicts(pl, state, p) == {"n1": None, "n2": None, "n3": None, "n4": None}


def test_add_pod_with_anti_affinity_against_incoming_pod() -> None:
    cache = zoned_cluster()
    p = mk("p", {"app": "web"}, aff=affinity(required=[term({"app": "web"})]))  # self-affine first pod
    pl, state = prefiltered(cache, p)
    assert verdicts(pl, state, p) == {"n1": None, "n2": None, "n3": None, "n4": AFF}
    guard = mk("guard", {"app": "db"}, aff=affinity(anti_required=[term({"app": "web"})]))
    pl.add_pod(state, p, guard, cache.table.row_of("n3"))
    assert verdicts(pl, state, p) == {"n1": None, "n2": None, "n3": EXISTING, "n4": AFF}


def test_remove_only_matching_pod_reopens_first_pod_rule() -> None:
    db = mk("db", {"app": "db"}, on="n3")
    cache = zoned_cluster(db)
    p = mk("p", {"app": "db"}, aff=affinity(required=[term({"app": "db"})]))
    pl, state = prefiltered(cache, p)
    assert verdicts(pl, state, p) == {"n1": AFF, "n2": AFF, "n3": None, "n4": AFF}
    pl.remove_pod(state, p, db, cache.table.row_of("n3"))
    assert verdicts(pl, state, p) == {"n1": None, "n2": None, "n3": None, "n4": AFF}
    # A pod that does not match its own terms gets nowhere once the match is gone.
    q = mk("q", {"app": "web"}, aff=affinity(required=[term({"app": "db"})]))
    pl, state = prefiltered(cache, q)
    pl.remove_pod(state, q, db, cache.table.row_of("n3"))
    assert verdicts(pl, state, q) == {"n1": AFF, "n2": AFF, "n3": AFF, "n4": AFF}


def test_clone_is_independent() -> None:
    cache = zoned_cluster()
    p = mk("p", {"app": "web"}, aff=affinity(anti_required=[term({"app": "web"}, key=HOST)]))
    pl, state = prefiltered(cache, p)
    copy = state.clone()
    assert copy.read(PRE_FILTER_KEY) is not state.read(PRE_FILTER_KEY)
    pl.add_pod(copy, p, mk("w", {"app": "web"}), cache.table.row_of("n1"))
    assert verdicts(pl, copy, p)["n1"] == ANTI
    assert verdicts(pl, state, p)["n1"] is None
    pl.add_pod(state, p, mk("w2", {"app": "web"}), cache.table.row_of("n2"))
    assert verdicts(pl, copy, p)["n2"] is None


def test_filter_copes_with_nodes_added_after_prefilter() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1"))
    p = mk("p", aff=affinity(required=[term({"app": "db"})]))
    pl, state = prefiltered(cache, p)
    cache.add_node(make_node("n5").label({ZONE: "c"}).obj())
    row5 = cache.table.row_of("n5")
    assert verdicts(pl, state, p)["n5"] == AFF
    pl.add_pod(state, p, mk("db5", {"app": "db"}), row5)
    assert verdicts(pl, state, p)["n5"] is None


def test_empty_cluster() -> None:
    cache = cache_with([])
    p = mk("p", {"app": "db"}, aff=affinity(required=[term({"app": "db"})]))
    pl, state = prefiltered(cache, p)
    assert pl.filter(state, p, cache.table) is None


def test_removed_node_rows_do_not_break_filter() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n2"))
    cache.remove_node("n2")
    p = mk("p", aff=affinity(required=[term({"app": "db"})]))
    # The pod on the removed node no longer counts: nothing matches anywhere.
    assert run_filter(cache, p) == {"n1": AFF, "n3": AFF, "n4": AFF}


# --- scoring ---------------------------------------------------------------------------------------------------


def scores(cache: Cache, pi: PodInfo, **args: Any) -> dict[str, int] | str:
    pl = plugin_for(cache, **args)
    state = CycleState()
    table = cache.table
    rows = table.rows()
    status = pl.pre_score(state, pi, table, rows)
    if status is not None:
        assert status.code == Code.SKIP, status
        return "skip"
    raw = pl.score(state, pi, table, rows)
    assert raw.dtype == np.int64
    out = pl.normalize_score(state, pi, raw)
    return {table.name_of(int(r)): int(s) for r, s in zip(rows, out, strict=True)}


def raw_scores(cache: Cache, pi: PodInfo, **args: Any) -> dict[str, int]:
    pl = plugin_for(cache, **args)
    state = CycleState()
    rows = cache.table.rows()
    assert pl.pre_score(state, pi, cache.table, rows) is None
    raw = pl.score(state, pi, cache.table, rows)
    return {cache.table.name_of(int(r)): int(s) for r, s in zip(rows, raw, strict=True)}


def scoring_cluster() -> Cache:
    return zoned_cluster(
        mk("db1", {"app": "db"}, on="n1"),
        mk("db3", {"app": "db"}, on="n3"),
        mk("cache3", {"app": "cache"}, on="n3"),
        # Requires pods labelled app=web on its host: credits n2 with hardPodAffinityWeight.
        mk("hard", {"role": "x"}, on="n2", aff=affinity(required=[term({"app": "web"}, key=HOST)])),
        # Prefers to keep app=web out of its zone: zone b gets -4.
        mk("soft", {"role": "y"}, on="n3", aff=affinity(anti_preferred=[(4, term({"app": "web"}))])),
    )


def test_score_hand_computed() -> None:
    p = mk(
        "p",
        {"app": "web"},
        aff=affinity(preferred=[(10, term({"app": "db"}))], anti_preferred=[(3, term({"app": "cache"}))]),
    )
    cache = scoring_cluster()
    # zone a: +10 (db1); zone b: +10 (db3) - 3 (cache3) - 4 (soft); host n2: +5 (hard, weight 5).
    assert raw_scores(cache, p, hardPodAffinityWeight=5) == {"n1": 10, "n2": 15, "n3": 3, "n4": 0}
    # min 0, max 15: 100 * (s - 0) / 15, truncated.
    assert scores(cache, p, hardPodAffinityWeight=5) == {"n1": 66, "n2": 100, "n3": 20, "n4": 0}
    # Default weight 1.
    assert raw_scores(cache, p) == {"n1": 10, "n2": 11, "n3": 3, "n4": 0}


def test_hard_weight_zero_ignores_existing_required_terms() -> None:
    p = mk("p", {"app": "web"}, aff=affinity(preferred=[(10, term({"app": "db"}))]))
    assert raw_scores(scoring_cluster(), p, hardPodAffinityWeight=0) == {"n1": 10, "n2": 10, "n3": 6, "n4": 0}


def test_existing_pods_terms_score_a_pod_without_its_own_terms() -> None:
    p = mk("p", {"app": "web"})
    cache = scoring_cluster()
    assert raw_scores(cache, p) == {"n1": 0, "n2": 1, "n3": -4, "n4": 0}
    # min -4, max 1: 100 * (s + 4) / 5.
    assert scores(cache, p) == {"n1": 80, "n2": 100, "n3": 0, "n4": 80}


def test_ignore_preferred_terms_of_existing_pods() -> None:
    cache = scoring_cluster()
    assert scores(cache, mk("p", {"app": "web"}), ignorePreferredTermsOfExistingPods=True) == "skip"
    # With terms of its own, kube still counts the existing pods' terms.
    p = mk("q", {"app": "web"}, aff=affinity(preferred=[(10, term({"app": "db"}))]))
    assert raw_scores(cache, p, ignorePreferredTermsOfExistingPods=True) == {"n1": 10, "n2": 11, "n3": 6, "n4": 0}


def test_prescore_skips_when_nothing_to_score() -> None:
    cache = zoned_cluster(mk("db", {"app": "db"}, on="n1"))
    assert scores(cache, mk("p", {"app": "web"})) == "skip"
    # Preferred terms that match no pod leave nothing to score either.
    p = mk("q", aff=affinity(preferred=[(5, term({"app": "none"}))]))
    assert scores(cache, p) == "skip"
    pl = plugin_for(cache)
    empty = pl.pre_score(CycleState(), p, cache.table, np.array([], dtype=np.int64))
    assert empty is not None and empty.code == Code.SKIP


def test_equal_scores_normalize_to_zero() -> None:
    cache = cache_with([make_node("n1").label({ZONE: "a"}).obj(), make_node("n2").label({ZONE: "a"}).obj()])
    cache.add_pod(mk("db", {"app": "db"}, on="n1"))
    p = mk("p", aff=affinity(preferred=[(7, term({"app": "db"}))]))
    assert raw_scores(cache, p) == {"n1": 7, "n2": 7}
    assert scores(cache, p) == {"n1": 0, "n2": 0}


def test_all_negative_scores_normalize_min_max() -> None:
    cache = zoned_cluster(mk("c1", {"app": "c"}, on="n1"), mk("c3", {"app": "c"}, on="n3"), mk("c3b", {"app": "c"}, on="n3"))
    p = mk("p", aff=affinity(anti_preferred=[(2, term({"app": "c"}))]))
    assert raw_scores(cache, p) == {"n1": -2, "n2": -2, "n3": -4, "n4": 0}
    pl = plugin_for(cache)
    state = CycleState()
    rows = np.array([cache.table.row_of(n) for n in ("n1", "n2", "n3")])
    assert pl.pre_score(state, p, cache.table, rows) is None
    out = pl.normalize_score(state, p, pl.score(state, p, cache.table, rows))
    assert out.tolist() == [MAX_NODE_SCORE, MAX_NODE_SCORE, 0]


def test_preferred_term_namespace_selector_and_match_label_keys() -> None:
    cache = zoned_cluster(
        mk("a", {"app": "db", "rev": "1"}, on="n1", namespace="team-a"),
        mk("b", {"app": "db", "rev": "2"}, on="n3", namespace="team-a"),
        mk("c", {"app": "db", "rev": "1"}, on="n3", namespace="team-b"),
    )
    cache.set_namespace("team-a", {"team": "a"})
    cache.set_namespace("team-b", {"team": "b"})
    t = term({"app": "db"}, namespaceSelector={"matchLabels": {"team": "a"}}, matchLabelKeys=["rev"])
    p = mk("p", {"rev": "1"}, aff=affinity(preferred=[(9, t)]))
    assert raw_scores(cache, p) == {"n1": 9, "n2": 9, "n3": 0, "n4": 0}


# --- the index of existing pods' terms follows the cluster ------------------------------------------------------


def test_same_plugin_follows_pod_adds_removes_and_updates() -> None:
    cache = zoned_cluster()
    pl = plugin_for(cache)
    p = mk("p", {"app": "web"})

    def check() -> dict[str, tuple[Code, str] | None] | str:
        state = CycleState()
        _, status = pl.pre_filter(state, p)
        return "skip" if status is not None else verdicts(pl, state, p)

    assert check() == "skip"
    guard = mk("guard", {"app": "db"}, on="n1", aff=affinity(anti_required=[term({"app": "web"})]))
    cache.add_pod(guard)
    assert check() == {"n1": EXISTING, "n2": EXISTING, "n3": None, "n4": None}
    # Same uid, new spec: the guard now keeps app=web off its host only.
    moved = make_pod("guard").label(app="db").node("n1").spec(**affinity(anti_required=[term({"app": "web"}, key=HOST)])).info()
    moved.uid = guard.uid
    cache.update_pod(moved)
    assert check() == {"n1": EXISTING, "n2": None, "n3": None, "n4": None}
    cache.remove_pod(guard.uid)
    assert check() == "skip"


def test_node_removed_and_added_back_moves_its_pods_row() -> None:
    guard = mk("guard", {"app": "db"}, on="n3", aff=affinity(anti_required=[term({"app": "web"}, key=HOST)]))
    cache = zoned_cluster(guard)
    pl = plugin_for(cache)
    p = mk("p", {"app": "web"})
    state = CycleState()
    pl.pre_filter(state, p)
    assert verdicts(pl, state, p)["n3"] == EXISTING
    cache.remove_node("n3")
    cache.add_node(make_node("n5").obj())  # takes n3's old row
    cache.add_node(make_node("n3").label({ZONE: "b"}).obj())
    state = CycleState()
    pl.pre_filter(state, p)
    assert verdicts(pl, state, p) == {"n1": None, "n2": None, "n3": EXISTING, "n4": None, "n5": None}


# --- cross-check against a direct transcription of kube's per-node algorithm ----------------------------------------


def _reference(cache: Cache, p: PodInfo, hard: int) -> tuple[dict[str, tuple[Code, str] | None], dict[str, int]]:
    from kubesched.plugins.interpodaffinity import pod_matches_all, pod_terms, resolve_term

    table = cache.table
    ns_labels = cache.namespace_labels.get(p.namespace, {})
    terms = pod_terms(p)
    req_aff = [resolve_term(t, cache.namespace_labels) for t in terms.required_affinity]
    req_anti = [resolve_term(t, cache.namespace_labels) for t in terms.required_anti_affinity]
    pref_aff = [resolve_term(t, cache.namespace_labels) for t in terms.preferred_affinity]
    pref_anti = [resolve_term(t, cache.namespace_labels) for t in terms.preferred_anti_affinity]
    placed = [(e, table.node_labels[cache.pods.row[uid]]) for uid, e in cache.pods.infos.items()]

    existing: dict[tuple[str, str], int] = {}
    aff: dict[tuple[str, str], int] = {}
    anti: dict[tuple[str, str], int] = {}
    topo: dict[tuple[str, str], int] = {}
    for e, labels in placed:
        et = pod_terms(e)
        for t in et.required_anti_affinity:
            if t.matches(p, ns_labels) and t.topology_key in labels:
                pair = (t.topology_key, labels[t.topology_key])
                existing[pair] = existing.get(pair, 0) + 1
        if pod_matches_all(req_aff, e):
            for rt in req_aff:
                if rt.topology_key in labels:
                    pair = (rt.topology_key, labels[rt.topology_key])
                    aff[pair] = aff.get(pair, 0) + 1
        for rt in req_anti:
            if rt.matches(e) and rt.topology_key in labels:
                pair = (rt.topology_key, labels[rt.topology_key])
                anti[pair] = anti.get(pair, 0) + 1
        credits = [(rt.topology_key, rt.weight) for rt in pref_aff if rt.matches(e)]
        credits += [(rt.topology_key, -rt.weight) for rt in pref_anti if rt.matches(e)]
        if hard > 0:
            credits += [(t.topology_key, hard) for t in et.required_affinity if t.matches(p, ns_labels)]
        credits += [(t.topology_key, t.weight) for t in et.preferred_affinity if t.matches(p, ns_labels)]
        credits += [(t.topology_key, -t.weight) for t in et.preferred_anti_affinity if t.matches(p, ns_labels)]
        for key, w in credits:
            if key in labels:
                topo[(key, labels[key])] = topo.get((key, labels[key]), 0) + w
    matches_own = pod_matches_all(req_aff, p)
    verdict: dict[str, tuple[Code, str] | None] = {}
    raw: dict[str, int] = {}
    for name, row in table.index.items():
        labels = table.node_labels[row]
        ok_aff, exist = True, True
        for rt in req_aff:
            if rt.topology_key not in labels:
                ok_aff = False
            elif aff.get((rt.topology_key, labels[rt.topology_key]), 0) <= 0:
                exist = False
        if ok_aff and not exist:
            ok_aff = not any(aff.values()) and matches_own
        ok_anti = not any(anti.get((rt.topology_key, labels.get(rt.topology_key, "\0")), 0) > 0 for rt in req_anti)
        ok_existing = not any(existing.get((k, v), 0) > 0 for k, v in labels.items())
        verdict[name] = AFF if not ok_aff else ANTI if not ok_anti else EXISTING if not ok_existing else None
        raw[name] = sum(w for (k, v), w in topo.items() if labels.get(k) == v)
    return verdict, raw


def _read(result: Any, at: np.ndarray) -> list[tuple[Code, tuple[str, ...]] | None]:
    """A FilterResult's verdicts at the positions `at` of its codes."""
    if result is None:
        return [None] * at.size
    return [None if c == 0 else result.describe(c) for c in result.codes[at].tolist()]


def _random_term(rng: np.random.Generator) -> dict[str, Any]:
    choice = int(rng.integers(4))
    if choice == 0:
        selector: dict[str, Any] = {"matchLabels": {"app": str(rng.choice(["x", "y", "z"]))}}
    elif choice == 1:
        selector = {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    elif choice == 2:
        selector = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}
    else:
        selector = {"matchLabels": {"app": str(rng.choice(["x", "y"])), "tier": str(rng.choice(["1", "2"]))}}
    out = term(selector=selector, key=str(rng.choice([ZONE, "rack", HOST])))
    ns = int(rng.integers(5))
    if ns == 1:
        out["namespaces"] = ["other"]
    elif ns == 2:
        out["namespaceSelector"] = {}
    elif ns == 3:
        out["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    if rng.random() < 0.2:
        out["matchLabelKeys"] = ["tier"]
    return out


def _random_pod(rng: np.random.Generator, name: str, on: str = "") -> PodInfo:
    labels = {"app": str(rng.choice(["x", "y", "z"]))}
    if rng.random() < 0.6:
        labels["tier"] = str(rng.choice(["1", "2"]))
    groups: dict[str, Any] = {}
    for kind in ("required", "anti_required"):
        if rng.random() < 0.35:
            groups[kind] = [_random_term(rng) for _ in range(int(rng.integers(1, 3)))]
    for kind in ("preferred", "anti_preferred"):
        if rng.random() < 0.35:
            groups[kind] = [(int(rng.integers(1, 101)), _random_term(rng)) for _ in range(int(rng.integers(1, 3)))]
    namespace = str(rng.choice(["default", "other"]))
    return mk(name, labels, on=on, namespace=namespace, aff=affinity(**groups) if groups else None)


@pytest.mark.parametrize("seed", range(12))
def test_matches_reference_on_random_clusters(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nodes = []
    for i in range(10):
        labels: dict[str, str] = {}
        if rng.random() < 0.8:
            labels[ZONE] = str(rng.choice(["a", "b", "c"]))
        if rng.random() < 0.6:
            labels["rack"] = str(rng.choice(["r1", "r2"]))
        nodes.append(make_node(f"n{i}").label(labels).obj())
    cache = cache_with(nodes)
    cache.set_namespace("other", {"team": "a"})
    cache.set_namespace("default", {"team": "b"})
    placed = [_random_pod(rng, f"e{i}", on=f"n{int(rng.integers(10))}") for i in range(25)]
    for e in placed:
        cache.add_pod(e)
    hard = int(rng.integers(0, 4))
    pl = plugin_for(cache, hardPodAffinityWeight=hard)
    for step in range(8):
        p = _random_pod(rng, f"p{step}")
        want_codes, want_raw = _reference(cache, p, hard)
        state = CycleState()
        _, status = pl.pre_filter(state, p)
        got = {n: None for n in cache.table.index} if status is not None else verdicts(pl, state, p)
        assert got == want_codes, (seed, step)
        rows = cache.table.rows()
        if status is None:  # the row-wise Filter (preemption's dry runs) says what the whole one says
            some = np.sort(rng.choice(rows, size=int(rng.integers(1, rows.size + 1)), replace=False))
            assert _read(pl.filter_rows(state, p, cache.table, some), np.arange(some.size)) == \
                _read(pl.filter(state, p, cache.table), some), (seed, step)
        status = pl.pre_score(state, p, cache.table, rows)
        raw = np.zeros(rows.size, dtype=np.int64) if status is not None else pl.score(state, p, cache.table, rows)
        assert {cache.table.name_of(int(r)): int(s) for r, s in zip(rows, raw, strict=True)} == want_raw, (seed, step)
        # Churn between cycles exercises the incremental index of existing terms.
        gone = placed.pop(int(rng.integers(len(placed))))
        cache.remove_pod(gone.uid)
        fresh = _random_pod(rng, f"f{seed}-{step}", on=f"n{int(rng.integers(10))}")
        cache.add_pod(fresh)
        placed.append(fresh)
