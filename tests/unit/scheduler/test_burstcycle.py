"""Bursts: identical pending pods of one owner placed jointly (burstcycle, queue.bursts), with
JointPlacement's `bursts` on; on the simulator, so the real scheduler and queue run."""

from __future__ import annotations

from typing import Any

from builders import make_node, make_pod
from unit.simkit import profile_config, run


def joint(**args: Any) -> dict[str, Any]:
    return profile_config({"schedulerName": "default-scheduler",
                           "plugins": {"multiPoint": {"enabled": [{"name": "JointPlacement"}]}},
                           "pluginConfig": [{"name": "JointPlacement",
                                             "args": {"timeBudget": "0s", "workLimit": 1000, "bursts": True, **args}}]})


def owned(name: str, owner: str = "web", *, arrival: float = 0.0, cpu: str = "100m", memory: str = "100Mi",
          labels: dict[str, str] | None = None, affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    builder = make_pod(name).req(cpu=cpu, memory=memory).label(labels or {}).arrival(str(arrival))
    if affinity is not None:
        builder.spec(affinity=affinity)
    p = builder.manifest()
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                         "uid": f"uid-{owner}", "controller": True}]
    return p


def fragmenting() -> list[dict[str, Any]]:
    """Three 4-cpu nodes; a burst of three 2-cpu pods, then a 4-cpu pod. One by one, the burst
    spreads over the three nodes (LeastAllocated) and the big pod fits nowhere."""
    return [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        make_node("n3").without("ephemeral-storage").manifest(),
        *(owned(f"web-{i}", cpu="2") for i in range(3)),
        make_pod("big").req(cpu="4", memory="100Mi").arrival("10").manifest(),
    ]


def test_one_by_one_the_burst_fragments_the_cluster() -> None:
    result, _ = run(fragmenting())
    assert len({result.placements[f"default/web-{i}"] for i in range(3)}) == 3
    assert result.placements["default/big"] is None


def test_placed_jointly_the_burst_leaves_a_whole_node() -> None:
    result, sim = run(fragmenting(), joint(emptyNodeBonus=100))
    assert len({result.placements[f"default/web-{i}"] for i in range(3)}) == 2
    assert result.placements["default/big"] not in {result.placements[f"default/web-{i}"] for i in range(3)}
    records = {r.pod: r for r in sim.scheduler.recorder.latest.values()}
    assert [records[f"default/web-{i}"].jointly for i in range(3)] == [3, 3, 3]


def test_different_owners_or_shapes_are_not_one_burst() -> None:
    objects = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        make_node("n3").without("ephemeral-storage").manifest(),
        owned("a-0", "a", cpu="2"),
        owned("b-0", "b", cpu="2"),
        owned("a-1", "a", cpu="1"),
    ]
    result, sim = run(objects, joint(emptyNodeBonus=100))
    assert result.pods_scheduled == 3
    assert all(r.jointly == 0 for r in sim.scheduler.recorder.latest.values())


def test_a_window_gathers_a_burst_created_over_seconds() -> None:
    objects = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        make_node("n3").without("ephemeral-storage").manifest(),
        *(owned(f"web-{i}", cpu="2", arrival=0.5 * i) for i in range(3)),
    ]
    spread, _ = run(objects, joint(emptyNodeBonus=100))
    assert len({spread.placements[f"default/web-{i}"] for i in range(3)}) == 3  # each alone: no burst
    gathered, sim = run(objects, joint(emptyNodeBonus=100, burstWindow="2s"))
    assert len({gathered.placements[f"default/web-{i}"] for i in range(3)}) == 2
    assert all(r.jointly == 3 for r in sim.scheduler.recorder.latest.values())


def test_a_full_burst_does_not_wait_out_its_window() -> None:
    objects = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        *(owned(f"web-{i}", cpu="1") for i in range(2)),
    ]
    result, sim = run(objects, joint(burstWindow="30s", maxMembers=2))
    assert result.pods_scheduled == 2
    assert all(r.time == 0.0 and r.jointly == 2 for r in sim.scheduler.recorder.latest.values())


def test_a_pod_the_plan_cannot_place_gets_the_whole_cycle() -> None:
    # Required anti-affinity among the burst's pods on the hostname: the plan may put two on one
    # node; the second then does not pass there and is placed by its own cycle.
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    objects = [
        make_node("n1").capacity(cpu="8").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="8").without("ephemeral-storage").manifest(),
        make_node("n3").capacity(cpu="8").without("ephemeral-storage").manifest(),
        *(owned(f"web-{i}", cpu="1", labels={"app": "web"}, affinity=anti) for i in range(3)),
    ]
    result, sim = run(objects, joint(emptyNodeBonus=1000))
    assert len({result.placements[f"default/web-{i}"] for i in range(3)}) == 3
    records = {r.pod: r for r in sim.scheduler.recorder.latest.values()}
    assert [records[f"default/web-{i}"].jointly for i in range(3)] == [3, 0, 0]  # two by their own cycle


def test_what_does_not_fit_fails_as_any_pod() -> None:
    objects = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), *(owned(f"web-{i}", cpu="1") for i in range(3))]
    result, sim = run(objects, joint())
    assert result.pods_scheduled == 2
    failed = [r for r in sim.scheduler.recorder.latest.values() if r.result == "unschedulable"]
    assert [r.message for r in failed] == ["0/1 nodes are available: 1 Insufficient cpu. "
                                           "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."]


def test_explain_says_the_burst_chose_the_node() -> None:
    from rich.console import Console

    from kubesched.observe.explainview import render

    _, sim = run(fragmenting(), joint(emptyNodeBonus=100))
    e = sim.scheduler.explain("default", "web-1")
    assert e["record"]["placed_jointly_with"] == 3
    console = Console(record=True, width=200)
    render(console, e)
    assert "a joint plan chose for its burst of 3 pods" in console.export_text()


def test_crowding_spreads_a_burst_as_the_per_pod_order_would() -> None:
    # Scores on the snapshot alone favour n1 (emptier) for every pod; each pod there lowers the
    # next one's LeastAllocated score, which the plan's crowding sees: the burst spreads as the
    # per-pod order spreads it (no fragmentation weights to pull it together).
    objects = [
        make_node("n1").capacity(cpu="16", memory="64Gi").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="16", memory="64Gi").without("ephemeral-storage").manifest(),
        make_pod("busy").req(cpu="4", memory="16Gi").node("n2").manifest(),
        *(owned(f"web-{i}", cpu="2", memory="8Gi") for i in range(4)),
    ]
    alone, _ = run(objects)
    jointly, _ = run(objects, joint(slotBonus=0, balanceWeight=0))
    nodes = sorted(jointly.placements[f"default/web-{i}"] for i in range(4))
    assert nodes == sorted(alone.placements[f"default/web-{i}"] for i in range(4))
    assert nodes.count("n1") == 3
