"""Topology-aware placement of pod groups (TopologyAwareWorkloadScheduling, with GenericWorkload):
TopologyPlacementGenerator's domains, PodGroupPodsCount and NodeResourcesFit scoring placements,
and kube v1.37.2's messages when no placement fits (docs/design/podgroups-upstream.md 10.3)."""

from __future__ import annotations

from typing import Any

from builders import make_node, make_pod, make_pod_group
from kubesched.infra import features
from unit.scheduler.test_groupcycle import NO_VICTIMS, conditions, first_messages, member
from unit.simkit import run


def run_tas(objects: list[dict[str, Any]]) -> Any:
    with features.gates(generic_workload=True, topology_aware_workload_scheduling=True):
        return run(objects)


def racks(cpu: str = "4", per_rack: int = 2, names: tuple[str, ...] = ("a", "b")) -> list[dict[str, Any]]:
    return [
        make_node(f"{r}{i}").capacity(cpu=cpu).without("ephemeral-storage").label(rack=r).manifest() for r in names for i in range(per_rack)
    ]


def in_rack(name: str, min_count: int = 3) -> dict[str, Any]:
    return make_pod_group(name, min_count, schedulingConstraints={"topology": [{"key": "rack"}]})


def test_a_gang_that_asks_for_one_rack_lands_in_one_rack() -> None:
    # Rack a is half full: only rack b holds four 1500m members; spread over both they would fit too.
    busy = [make_pod(f"busy-{i}").req(cpu="2500m", memory="100Mi").node(f"a{i}").manifest() for i in range(2)]
    result, sim = run_tas([*racks(), *busy, in_rack("g", 4), *(member(f"g-{i}", "g", cpu="1500m") for i in range(4))])
    placed = {result.placements[f"default/g-{i}"] for i in range(4)}
    assert placed == {"b0", "b1"}
    assert conditions(sim, "g") == [("True", "Scheduled", "")]


def test_the_fullest_rack_wins_among_those_that_fit() -> None:
    # Both racks fit the gang; NodeResourcesFit scores placements bin-packed: rack a, fuller, wins.
    busy = [make_pod("busy").req(cpu="1", memory="100Mi").node("a0").manifest()]
    result, _ = run_tas([*racks(), *busy, in_rack("g", 2), *(member(f"g-{i}", "g", cpu="1") for i in range(2))])
    assert {result.placements[f"default/g-{i}"] for i in range(2)} <= {"a0", "a1"}


def test_no_rack_holds_the_gang() -> None:
    result, sim = run_tas([*racks(), in_rack("g", 3), *(member(f"g-{i}", "g", cpu="3") for i in range(3))])
    assert result.pods_scheduled == 0
    reported = "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    message = f"pod group is unschedulable, 0/2 placements are available, first placement status: {reported}"
    assert first_messages(sim) == {"g-0": f"pod group is unschedulable, {message}, {NO_VICTIMS}",
                                   "g-1": f"pod group is unschedulable, {message}, {NO_VICTIMS}",
                                   "g-2": "0/2 nodes are available: 2 Insufficient cpu."}
    assert conditions(sim, "g") == [("False", "Unschedulable", f"{message}, {NO_VICTIMS}")]


def test_a_group_without_a_constraint_goes_through_one_placement() -> None:
    # Observed from kube-scheduler v1.37.2 with both gates (podgroups-upstream.md 10.3, item 13).
    two = [
        make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="4").without("ephemeral-storage").manifest(),
    ]
    result, sim = run_tas([*two, make_pod_group("g", 3), *(member(f"g-{i}", "g", cpu="3") for i in range(3))])
    message = ("pod group is unschedulable, 0/1 placements are available, first placement status: "
               "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")
    assert result.pods_scheduled == 0
    assert first_messages(sim)["g-0"] == f"pod group is unschedulable, {message}, {NO_VICTIMS}"
    assert conditions(sim, "g") == [("False", "Unschedulable", f"{message}, {NO_VICTIMS}")]


def test_a_key_no_node_carries_has_no_placement() -> None:
    pg = make_pod_group("g", 2, schedulingConstraints={"topology": [{"key": "zone"}]})
    _result, sim = run_tas([*racks(), pg, *(member(f"g-{i}", "g") for i in range(2))])
    assert set(first_messages(sim).values()) == {"no feasible placements found"}
    assert conditions(sim, "g") == [("False", "Unschedulable", f"no feasible placements found, {NO_VICTIMS}")]
