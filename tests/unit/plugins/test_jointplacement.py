"""JointPlacement: a pod group's members' nodes chosen together (kubesched.plugins.placement) and then
placed by the group cycle with every Filter, where the per-pod order would strand the group."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod_group
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config
from unit.scheduler.test_groupcycle import conditions, member, run_groups
from unit.simkit import profile_config

JOINT = profile_config({"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": "JointPlacement"}]}},
                        "pluginConfig": [{"name": "JointPlacement", "args": {"timeBudget": "0s", "workLimit": 1000}}]})


def stranding() -> list[dict[str, Any]]:
    """One 8-cpu node and two 2-cpu ones; two 2-cpu members, then a 6-cpu one. One by one, the
    small members go to the emptiest node (LeastAllocated), the big one then fits nowhere."""
    return [
        make_node("big").capacity(cpu="8").without("ephemeral-storage").manifest(),
        make_node("s1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("s2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_pod_group("g", 3),
        member("a-0", "g", cpu="2"),
        member("a-1", "g", cpu="2"),
        member("z-big", "g", cpu="6"),
    ]


def test_the_per_pod_order_strands_the_gang() -> None:
    result, sim = run_groups(stranding())
    assert result.pods_scheduled == 0
    assert conditions(sim, "g")[0][1] == "Unschedulable"


def test_placed_jointly_the_gang_fits() -> None:
    result, sim = run_groups(stranding(), config=JOINT)
    assert result.pods_scheduled == 3 and result.placements["default/z-big"] == "big"
    assert conditions(sim, "g") == [("True", "Scheduled", "")]
    plugin = sim.scheduler.frameworks["default-scheduler"].instances["JointPlacement"]
    assert plugin.last_source in ("optimal", "feasible")


def test_a_plan_that_does_not_pass_the_filters_falls_back_to_the_per_pod_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # Required anti-affinity among the members on the zone: the program cannot see it and puts both
    # small members in zone z1; the cycle finds the second does not pass there and places one by one.
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": "zone"}]}}
    objects = [
        make_node("z1a").capacity(cpu="4").without("ephemeral-storage").label(zone="z1").manifest(),
        make_node("z1b").capacity(cpu="4").without("ephemeral-storage").label(zone="z1").manifest(),
        make_node("z2a").capacity(cpu="1").without("ephemeral-storage").label(zone="z2").manifest(),
        make_pod_group("g", 2),
        member("m-0", "g", cpu="1", labels={"app": "spread"}, affinity=anti),
        member("m-1", "g", cpu="1", labels={"app": "spread"}, affinity=anti),
    ]
    from kubesched.scheduler import groupcycle

    outcomes: list[object] = []
    original = groupcycle.GroupCycle._place_members

    def spy(self: Any, *args: Any) -> Any:
        outcome = original(self, *args)
        outcomes.append(outcome)
        return outcome

    monkeypatch.setattr(groupcycle.GroupCycle, "_place_members", spy)
    result, sim = run_groups(objects, config=JOINT)
    assert outcomes[:2] == [groupcycle._PLAN_FAILED, None]  # the plan, then the per-pod order
    zones = {result.placements["default/m-0"], result.placements["default/m-1"]}
    assert len(zones) == 2 and "z2a" in zones
    assert conditions(sim, "g") == [("True", "Scheduled", "")]


def test_args_are_checked() -> None:
    bad = profile_config({"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"enabled": [{"name": "JointPlacement"}]}},
                          "pluginConfig": [{"name": "JointPlacement", "args": {"topK": -1}}]})
    with pytest.raises(ConfigError, match=r"profiles\[0\]\.pluginConfig\[0\]\.args\.topK"):
        parse_config(bad)


def test_without_groups_it_changes_nothing() -> None:
    from builders import make_node, make_pod
    from unit.simkit import run

    plain = [
        make_node("n1").without("ephemeral-storage").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        *(make_pod(f"p{i}").req(cpu="100m", memory="100Mi").manifest() for i in range(5)),
    ]
    assert run(plain, JOINT)[0].placements == run(plain)[0].placements
