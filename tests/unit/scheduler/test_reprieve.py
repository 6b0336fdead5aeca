"""Group preemption's reprieve check (kubesched.scheduler.reprieve) against the plain ordered check it
shortens: on random clusters where gangs preempt, with node-local (cpu) and cross-node (pod
anti-affinity by zone, the members' own or the victims'; pod affinity by zone, with the first-pod
exemption; topology spread by zone) constraints, every answer matches, and the cluster is left as
it was found."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from builders import make_node, make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.infra import features
from kubesched.scheduler import groupcycle
from kubesched.scheduler.reprieve import ReprieveCheck
from unit.simkit import run

ZONE = "topology.kubernetes.io/zone"


def _scenario(rng: random.Random) -> list[dict[str, Any]]:
    nodes = [
        make_node(f"n{i}").capacity(cpu="4").without("ephemeral-storage").label({ZONE: f"z{i % 3}"}).manifest()
        for i in range(rng.randint(3, 7))
    ]
    shape = rng.randrange(5)
    # Shape 3: members without constraints of their own, some victims refusing them in their zone.
    refusing = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "gang"}}, "topologyKey": ZONE}]}}}
    # Shape 2: some victims count in the members' spreading. Shape 4: members wanting, by zone, pods
    # of their team, which they and some victims are in (the first member relies on matching its
    # own term while no other pod does).
    low = [make_pod(f"low-{i}").req(cpu=f"{rng.choice([300, 700, 1000, 1500, 2500])}m", memory="100Mi")
           .label({"app": "gang" if shape == 2 and rng.random() < 0.4 else f"l{rng.randrange(3)}",
                   **({"team": "x"} if shape == 4 and rng.random() < 0.3 else {})})
           .priority(rng.choice([0, 10])).node(f"n{rng.randrange(len(nodes))}")
           .spec(**(refusing if shape == 3 and rng.random() < 0.3 else {})).manifest() for i in range(rng.randint(4, 14))]
    size = rng.randint(2, min(4, len(nodes)))
    spec: dict[str, Any] = {}
    if shape == 1:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "l0"}}, "topologyKey": ZONE}]}}
    elif shape == 4:
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"team": "x"}}, "topologyKey": ZONE}]}}
    elif shape == 2:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": "gang"}}}]
    gang = [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": size}}, "priorityClassName": "priority-1000"}}]
    gang += [make_pod(f"g-{i}").req(cpu=f"{rng.choice([1000, 2000, 3000])}m", memory="100Mi").priority(1000)
             .label(app="gang", team="x").arrival("1s").group("g").spec(**spec).manifest()
             for i in range(size)]
    return [*nodes, *low, *gang]


def _usage(sched: Any) -> tuple[bytes, frozenset[str], tuple[tuple[str, int], ...]]:
    table = sched.cache.table
    return table.requested[: table.size].tobytes(), frozenset(sched.cache.placed), tuple(sorted(sched.cache.pods.row.items()))


def _compared(answers: Counter[tuple[bool, bool]]) -> type[ReprieveCheck]:
    """A ReprieveCheck that also runs the plain ordered check and asserts both answer alike and
    leave the cluster as they found it; `answers` counts (answer, a member on a unit's node)."""

    class Compared(ReprieveCheck):
        def __call__(self, proposed: Sequence[tuple[PodInfo, str]], added: Sequence[tuple[int, PodInfo]]) -> bool:
            before = _usage(self.sched)
            expected = ReprieveCheck(self.sched, self.fwk)._run(proposed, None)  # the ordered check alone
            assert _usage(self.sched) == before
            got = super().__call__(proposed, added)
            assert _usage(self.sched) == before
            assert got == expected, (proposed, added)
            table = self.sched.cache.table
            answers[(got, any(n in {table.name_of(row) for row, _ in added} for _, n in proposed))] += 1
            return got

    return Compared


def test_the_shortened_check_answers_as_the_ordered_check(monkeypatch: pytest.MonkeyPatch) -> None:
    answers: Counter[tuple[bool, bool]] = Counter()
    monkeypatch.setattr(groupcycle, "ReprieveCheck", _compared(answers))
    rng = random.Random(7)
    for seed in range(200):
        with features.gates(generic_workload=True):
            run(_scenario(rng), seed=seed)
    # The random clusters reach every case: spared and not, with and without a member on the unit's node.
    assert set(answers) == {(a, b) for a in (True, False) for b in (True, False)}, answers


def test_a_unit_on_a_members_node_that_must_go_is_answered_with_one_filter_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    members = 6
    objects = [make_node(f"n{i}").capacity(cpu="4").without("ephemeral-storage").manifest() for i in range(members)]
    objects += [make_pod(f"low-{i}").req(cpu="1", memory="100Mi").node(f"n{i % members}").manifest() for i in range(4 * members)]
    objects += [{"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": members}}, "priorityClassName": "priority-1000"}}]
    objects += [
        make_pod(f"g-{i}")
        .req(cpu="3500m", memory="100Mi")
        .arrival("1s")
        .priority(1000)
        .group("g")
        .manifest()
        for i in range(members)
    ]

    class Counted(ReprieveCheck):
        def __call__(self, proposed: Sequence[tuple[PodInfo, str]], added: Sequence[tuple[int, PodInfo]]) -> bool:
            before = len(calls)
            original = self.sched.schedule_member

            def counting(*a: Any, **kw: Any) -> Any:
                calls.append(1)
                return original(*a, **kw)

            def assuming(*a: Any, **kw: Any) -> Any:
                assumed.append(1)
                return original_assume(*a, **kw)

            original_assume = self.sched.assume_and_reserve
            self.sched.schedule_member = counting  # type: ignore[method-assign]
            self.sched.assume_and_reserve = assuming  # type: ignore[method-assign]
            assumed_before = len(assumed)
            try:
                return super().__call__(proposed, added)
            finally:
                del self.sched.schedule_member
                del self.sched.assume_and_reserve
                per_unit.append(len(calls) - before)
                assumed_per_unit.append(len(assumed) - assumed_before)

    per_unit: list[int] = []
    assumed: list[int] = []
    assumed_per_unit: list[int] = []
    monkeypatch.setattr(groupcycle, "ReprieveCheck", Counted)
    with features.gates(generic_workload=True):
        result, _ = run(objects)
    assert result.pods_scheduled == members and len(result.preempted) == 4 * members
    # Asked once per unit, each check runs the Filters of the member on the unit's node, and of a
    # member before it only the first time (its passing state is remembered): the ordered check
    # alone would run them for every member up to that one, each time.
    assert len(per_unit) == 4 * members
    assert sum(per_unit) <= len(per_unit) + members, per_unit
    # Nor is any member before it assumed: each is proposed for a node of its own, and with no
    # PreFilter extension active for the members none elsewhere can make the failing one pass.
    assert sum(assumed_per_unit) <= members, assumed_per_unit


def test_a_member_elsewhere_that_satisfies_a_members_affinity_is_assumed(monkeypatch: pytest.MonkeyPatch) -> None:
    """g-1 wants a team-x pod in its zone, and only g-0 (proposed for the other node of that zone)
    is one there: asked without g-0, g-1 fails on its node with the small victim put back; with
    g-0, the order kube checks in, it passes and that victim is spared. Nothing else is a victim."""
    answers: Counter[tuple[bool, bool]] = Counter()
    monkeypatch.setattr(groupcycle, "ReprieveCheck", _compared(answers))
    wants_x = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"team": "x"}}, "topologyKey": ZONE}]}}}
    objects = [
        make_node("n0").capacity(cpu="4").without("ephemeral-storage").label({ZONE: "z0"}).manifest(),
        make_node("n1").capacity(cpu="4").without("ephemeral-storage").label({ZONE: "z0"}).manifest(),
        make_node("n2").capacity(cpu="4").without("ephemeral-storage").label({ZONE: "z1"}).manifest(),
        make_pod("full-x").req(cpu="3900m", memory="100Mi").label(team="x").priority(2000).node("n2").manifest(),
    ]
    objects += [make_pod(f"{size}-{n}").req(cpu=cpu, memory="100Mi").priority(0).node(n).manifest() for n in ("n0", "n1")
                for size, cpu in (("small", "300m"), ("big", "1"))]
    objects += [
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "priority-1000"},
        },
        make_pod("g-0")
        .req(cpu="3500m", memory="100Mi")
        .label(team="x")
        .arrival("1s")
        .priority(1000)
        .group("g")
        .manifest(),
        make_pod("g-1").req(cpu="3500m", memory="100Mi").priority(1000).arrival("1s").group("g").spec(**wants_x).manifest(),
    ]
    with features.gates(generic_workload=True):
        result, _ = run(objects)
    assert result.pods_scheduled == 2
    assert sorted(p.rsplit("/", 1)[-1] for p in result.preempted) == ["big-n0", "big-n1"]
    assert answers[(True, True)] >= 1
