"""CapacityScheduling with ElasticQuota (scheduler-plugins v0.34.7) end to end on the simulated
cluster: borrowing, the two PreFilter refusals, reclaim by preemption and its victim rules, and
the quota arithmetic (plugins.elasticquotas) on its own."""

from __future__ import annotations

import pytest

from builders import make_node, make_pod, make_priority_class
from kubesched.api.xk8s import ElasticQuota, XK8sError
from kubesched.plugins.elasticquotas import QuotaInfo, QuotaSnapshot, Resource, over, quota_info
from unit.plugins.xk8skit import capacity, notes, quota
from unit.simkit import profile_config, run

BOTH = {"cpu": "2", "memory": "1Gi"}
MAX = {"cpu": "4", "memory": "2Gi"}


def quota_run(objects: list[dict]):  # type: ignore[no-untyped-def]
    return run(objects, profile_config(capacity()))


def two_tenants(a_min: dict[str, str] = BOTH, b_min: dict[str, str] = BOTH) -> list[dict]:
    return [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        quota("team-a", a_min, MAX),
        quota("team-b", b_min, MAX),
    ]


# --- borrowing and reclaim ---------------------------------------------------------------------------------------


def test_a_tenant_borrows_unused_min_and_the_lender_reclaims_it() -> None:
    objs = two_tenants() + [make_pod(f"a{i}").ns("team-a").req(cpu="1", memory="100Mi").manifest() for i in range(4)]
    objs += [make_pod(f"b{i}").ns("team-b").req(cpu="1", memory="100Mi").arrival("10").manifest() for i in range(2)]
    result, sim = quota_run(objs)
    # A ran 4 cpu on a 2 cpu min (B's 2 unused); B's two pods took its min back from two of A's.
    assert result.placements["team-b/b0"] and result.placements["team-b/b1"]
    assert len(result.preempted) == 2 and all(p.startswith("team-a/") for p in result.preempted)
    assert sum(1 for k, v in result.placements.items() if k.startswith("team-a/") and v) == 2
    assert notes(sim, "team-b/b0")[0] == (
        "0/2 nodes are available: Pod team-b/b0 is rejected in PreFilter because total ElasticQuota used is more than min.")
    b_uids = {sp.pod.metadata.uid for sp in sim.input.pods if sp.pod.metadata.namespace == "team-b"}
    preempted = [e.message for e in sim.cluster.events if e.reason == "Preempted"]
    assert len(preempted) == 2 and all(m.split(" ")[3] in b_uids for m in preempted), preempted
    assert result.quota == {"tenants": 2, "borrowing_pods": 2, "borrowed_pod_seconds": 20.0, "reclaims": 2}


def test_reclaim_takes_only_from_tenants_over_their_min_whatever_their_priority() -> None:
    # A (min 0) borrows with an important pod; C is at its min with an unimportant one. B reclaims its
    # min from A, not from C, though evicting C's pod would cost less.
    zero, one = {"cpu": "0", "memory": "0"}, {"cpu": "1", "memory": "1Gi"}
    objs = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="1").without("ephemeral-storage").manifest(),
        quota("team-a", zero, MAX),
        quota("team-b", one, MAX),
        quota("team-c", one, MAX),
    ]
    objs += [
        make_pod("c").ns("team-c").req(cpu="1", memory="100Mi").priority(0).node("n1").manifest(),
        make_pod("a").ns("team-a").req(cpu="1", memory="100Mi").priority(1000).node("n2").manifest(),
    ]
    objs.append(make_pod("b").ns("team-b").req(cpu="1", memory="100Mi").arrival("5").manifest())
    result, _ = quota_run(objs)
    assert result.preempted == ["team-a/a"] and result.placements["team-b/b"] == "n2"
    assert "team-c/c" not in result.preempted


def test_many_reclaimers_at_once_evict_no_more_than_the_borrowed_room() -> None:
    # examples/tenants: team-a borrowed up to 96 cpu; team-c's 12 and team-b's 36 pods, arriving in
    # bursts, reclaim their mins. With a hundred preemptions under way at once, victims being deleted
    # no longer count in team-a's use, or later preemptors would evict again for room already freed.
    import asyncio
    from pathlib import Path

    from kubesched.backends.sim.engine import Simulation
    from kubesched.backends.sim.manifests import load_paths
    from kubesched.config.parse import parse_config_text

    examples = Path(__file__).resolve().parents[3] / "examples"
    cfg = parse_config_text((examples / "profiles" / "capacity-scheduling.yaml").read_text(), "capacity-scheduling.yaml")
    result = asyncio.run(Simulation(load_paths(examples / "tenants"), cfg).run())
    assert result.quota["reclaims"] == len(result.preempted) == 36
    assert all(v for k, v in result.placements.items() if not k.startswith("team-a/"))


def test_beyond_its_max_a_tenant_is_refused_and_preempts_nobody() -> None:
    objs = (
        two_tenants()
        + [make_pod(f"a{i}").ns("team-a").req(cpu="1", memory="100Mi").manifest() for i in range(4)]
        + [make_pod("a-over").ns("team-a").req(cpu="1", memory="100Mi").arrival("5").manifest()]
    )
    result, sim = quota_run(objs)
    assert not result.placements["team-a/a-over"] and not result.preempted
    assert notes(sim, "team-a/a-over")[0] == (
        "0/2 nodes are available: Pod team-a/a-over is rejected in PreFilter because ElasticQuota team-a is more than Max. "
        "0/2 nodes are available: 1 No victims found on node n1 for preemptor pod a-over, "
        "1 No victims found on node n2 for preemptor pod a-over."
    )


def test_a_borrowing_tenant_preempts_only_its_own_lower_priority_pods() -> None:
    objs = [
        make_node("n1").capacity(cpu="3").without("ephemeral-storage").manifest(),
        quota("team-a", {"cpu": "1", "memory": "1Gi"}, MAX),
        quota("team-b", BOTH, MAX),
    ]
    objs += [
        make_pod("b-low").ns("team-b").req(cpu="1", memory="100Mi").priority(1).manifest(),
        make_pod("a-low").ns("team-a").req(cpu="1", memory="100Mi").priority(1).manifest(),
        make_pod("a-low2").ns("team-a").req(cpu="1", memory="100Mi").priority(1).manifest(),
    ]
    objs.append(make_pod("a-high").ns("team-a").req(cpu="1", memory="100Mi").arrival("5").priority(100).manifest())
    result, _ = quota_run(objs)
    # A is over its min with the new pod: it may only evict its own less important pods, never B's.
    assert result.placements["team-a/a-high"] == "n1"
    assert result.preempted and all(p.startswith("team-a/") for p in result.preempted)
    assert result.placements["team-b/b-low"] == "n1"


def test_a_pod_without_a_quota_preempts_only_pods_without_one() -> None:
    objs = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), quota("team-a", BOTH, MAX)]
    objs += [
        make_pod("a-low").ns("team-a").req(cpu="1", memory="100Mi").priority(1).manifest(),
        make_pod("free-low").ns("free").req(cpu="1", memory="100Mi").priority(1).manifest(),
    ]
    objs.append(make_pod("free-high").ns("free").req(cpu="1", memory="100Mi").arrival("5").priority(100).manifest())
    result, _ = quota_run(objs)
    assert result.placements["free/free-high"] == "n1"
    assert result.preempted == ["free/free-low"]
    assert result.placements["team-a/a-low"] == "n1"


def test_reclaim_that_cannot_free_enough_quota_on_a_node_says_so() -> None:
    # A (min 1) borrowed B's min with pods on both nodes; B's 2-cpu pod may only go to n1, where A's one
    # pod is all there is to take back: the total would still exceed the sum of mins.
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").label(zone="one").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        quota("team-a", {"cpu": "1", "memory": "1Gi"}, MAX),
        quota("team-b", BOTH, MAX),
    ]
    objs += [
        make_pod("a0").ns("team-a").req(cpu="1", memory="100Mi").node("n1").manifest(),
        make_pod("a1").ns("team-a").req(cpu="1", memory="100Mi").node("n2").manifest(),
        make_pod("a2").ns("team-a").req(cpu="1", memory="100Mi").node("n2").manifest(),
    ]
    objs.append(make_pod("b").ns("team-b").req(cpu="2", memory="100Mi").spec(nodeSelector={"zone": "one"}).manifest())
    result, sim = quota_run(objs)
    assert not result.placements["team-b/b"] and not result.preempted
    assert notes(sim, "team-b/b")[0] == (
        "0/2 nodes are available: Pod team-b/b is rejected in PreFilter because total ElasticQuota used is more than min. "
        "0/2 nodes are available: 1 global quota max exceeded, 1 node(s) didn't match Pod's node affinity/selector."
    )


def test_a_pod_that_may_not_preempt_says_so() -> None:
    objs = two_tenants() + [make_pod(f"a{i}").ns("team-a").req(cpu="1", memory="100Mi").manifest() for i in range(4)]
    objs.append(make_priority_class("polite", 0, preemptionPolicy="Never"))
    objs.append(make_pod("b0").ns("team-b").req(cpu="1", memory="100Mi").arrival("5").priority_class("polite").manifest())
    result, sim = quota_run(objs)
    assert not result.placements["team-b/b0"] and not result.preempted
    assert notes(sim, "team-b/b0")[0] == (
        "0/2 nodes are available: Pod team-b/b0 is rejected in PreFilter because total ElasticQuota used is more than min. "
        "not eligible due to preemptionPolicy=Never."
    )


def test_alone_a_tenant_cannot_go_past_its_min() -> None:
    objs = [make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(), quota("team-a", BOTH, MAX)] + [
        make_pod(f"a{i}").ns("team-a").req(cpu="1", memory="100Mi").manifest() for i in range(3)
    ]
    result, sim = quota_run(objs)
    assert sum(1 for v in result.placements.values() if v) == 2
    assert [k for k, v in result.placements.items() if not v] == ["team-a/a2"]
    assert notes(sim, "team-a/a2")[0].startswith(
        "0/1 nodes are available: Pod team-a/a2 is rejected in PreFilter because total ElasticQuota used is more than min.")


def test_a_namespace_without_a_quota_is_not_limited_by_quotas() -> None:
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        quota("team-a", {"cpu": "0", "memory": "0"}, {"cpu": "0", "memory": "0"}),
    ]
    objs += [
        make_pod("free").ns("other").req(cpu="1", memory="100Mi").manifest(),
        make_pod("capped").ns("team-a").req(cpu="1", memory="100Mi").manifest(),
    ]
    result, sim = quota_run(objs)
    assert result.placements["other/free"] == "n1" and not result.placements["team-a/capped"]
    assert "ElasticQuota team-a is more than Max" in notes(sim, "team-a/capped")[0]


def test_max_without_memory_caps_memory_at_zero_as_upstream_reads_it() -> None:
    # Upstream builds the max from the listed resources only: a quota listing cpu alone refuses any
    # pod that requests memory. (List every resource your pods request in min and max.)
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        quota("team-a", {"cpu": "1"}, {"cpu": "2"}),
        make_pod("p").ns("team-a").req(cpu="1", memory="100Mi").manifest(),
    ]
    result, sim = quota_run(objs)
    assert not result.placements["team-a/p"]
    assert "because ElasticQuota team-a is more than Max" in notes(sim, "team-a/p")[0]


# --- the arithmetic ----------------------------------------------------------------------------------------------


def eq(low: dict | None, high: dict | None) -> ElasticQuota:
    from msgspec import convert

    spec: dict = {}
    if low is not None:
        spec["min"] = low
    if high is not None:
        spec["max"] = high
    obj: ElasticQuota = convert({"metadata": {"name": "q", "namespace": "ns"}, "spec": spec}, ElasticQuota, strict=False)
    return obj


def test_absent_bounds_are_zero_min_and_unbounded_max() -> None:
    info = quota_info(eq(None, None))
    assert info.min == Resource.bound(0)
    assert info.max.milli_cpu == info.max.memory == 2**63 - 1
    big = Resource(milli_cpu=10**9, memory=10**15)
    assert info.used_over_min_with(big) and not info.used_over_max_with(big)


def test_over_compares_every_resource_and_the_left_sides_scalars() -> None:
    bound = Resource(milli_cpu=1000, memory=100, scalars={"nvidia.com/gpu": 1})
    assert not over(Resource(milli_cpu=1000), Resource(), bound, 0)
    assert over(Resource(milli_cpu=600), Resource(milli_cpu=500), bound, 0)
    assert over(Resource(scalars={"nvidia.com/gpu": 2}), Resource(), bound, 0)
    # A scalar the bound does not name is bounded by `bound`: 0 for a min, unbounded for a max.
    assert over(Resource(scalars={"example.com/fpga": 1}), Resource(), bound, 0)
    assert not over(Resource(scalars={"example.com/fpga": 1}), Resource(), bound, 2**63 - 1)


def test_aggregate_min_counts_every_tenant() -> None:
    a = QuotaInfo("a", "q", Resource(milli_cpu=2000), Resource(milli_cpu=4000), Resource(milli_cpu=3000))
    b = QuotaInfo("b", "q", Resource(milli_cpu=2000), Resource(milli_cpu=4000), Resource(milli_cpu=0))
    snap = QuotaSnapshot({"a": a, "b": b})
    assert not snap.aggregated_used_over_min_with(Resource(milli_cpu=1000))
    assert snap.aggregated_used_over_min_with(Resource(milli_cpu=1001))
    clone = snap.clone()
    clone.infos["a"].add_pod("x", Resource(milli_cpu=500))
    assert a.used.milli_cpu == 3000  # the snapshot's copy changed, not the original


def test_a_bad_quantity_names_the_quota_and_field() -> None:
    with pytest.raises(XK8sError, match=r"ElasticQuota ns/q: spec.max\[cpu\]: "):
        quota_info(eq(None, {"cpu": "lots"}))


def test_quota_book_follows_placed_pods_and_reserve() -> None:
    # (The third pod borrows from team-b's unused min: with team-a's quota alone it could not go past 2.)
    objs = two_tenants() + [make_pod(f"a{i}").ns("team-a").req(cpu="1", memory="100Mi").manifest() for i in range(3)]
    _result, sim = quota_run(objs)
    book = sim.scheduler.frameworks["default-scheduler"].instances["CapacityScheduling"].book
    info = book.get("team-a")
    assert info is not None and info.used.milli_cpu == 3000 and len(info.pods) == 3
    pi = next(iter(sim.scheduler.cache.placed.values())).info
    book.unreserve(pi)
    assert info.used.milli_cpu == 2000
    book.reserve(pi)
    book.reserve(pi)  # idempotent, as upstream's addPodIfNotPresent
    assert info.used.milli_cpu == 3000


def test_capacity_preemption_spares_a_pod_a_budget_protects() -> None:
    """Pods without a quota preempt pods without one, as kube's evaluator does: trying back first
    those a PodDisruptionBudget protects (upstream's SelectVictimsOnNode and its PDB filter)."""
    from builders import make_pdb

    objs = [make_node("n1").capacity(cpu="3").without("ephemeral-storage").manifest()]
    objs += [
        make_pod("guarded").ns("free").req(cpu="1", memory="100Mi").priority(1).label(app="db").manifest(),
        make_pod("plain-1").ns("free").req(cpu="1", memory="100Mi").priority(2).manifest(),
        make_pod("plain-2").ns("free").req(cpu="1", memory="100Mi").priority(2).manifest(),
        make_pdb("db", min_available=1, match_labels={"app": "db"}, namespace="free"),
    ]
    objs.append(make_pod("high").ns("free").req(cpu="2", memory="100Mi").arrival("5").priority(100).manifest())
    result, _ = quota_run(objs)
    assert result.placements["free/high"] == "n1"
    assert sorted(result.preempted) == ["free/plain-1", "free/plain-2"]
