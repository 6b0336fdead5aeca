"""Shadow profiles: decisions beside the live profile's on the same snapshot, never acted on."""

from __future__ import annotations

from typing import Any

from builders import make_node, make_pod
from kubesched.scheduler.shadow import BOTH_UNSCHEDULABLE, DIFFERENT, SAME, SHADOW_UNSCHEDULABLE
from unit.simkit import config_text, run, stream

# Nodes of distinct sizes, so that scores seldom tie.
NODES = [
    make_node(f"n{i}").capacity(cpu=str(4 + 2 * i), memory=f"{16 + 8 * i}Gi").without("ephemeral-storage").manifest() for i in range(6)
]


def shadowed(shadow_profile: dict[str, Any], **settings: Any) -> str:
    return config_text(
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "candidate", **shadow_profile},
        kubesched={"shadowProfiles": [{"schedulerName": "candidate", "shadowOf": "default-scheduler",
                                       "samplingPercentage": 100, "maxOverheadPercentage": 1000, **settings}]},
    )


BINPACK = {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}


def test_the_live_decisions_are_the_same_with_a_shadow_or_without() -> None:
    pods = stream("p", 60, 1.0, cpu="700m", duration=20)
    alone, _ = run([*NODES, *pods], config_text({"schedulerName": "default-scheduler"}), seed=3)
    with_shadow, sim = run([*NODES, *pods], shadowed(BINPACK), seed=3)
    assert with_shadow.placements == alone.placements
    # The shadow schedules nothing itself, and no pod names it.
    assert sim.scheduler.profile_names == ["default-scheduler"]
    assert sum(with_shadow.shadows["candidate"].values()) == with_shadow.cycles


def test_a_shadow_identical_to_the_live_profile_agrees_on_every_pod() -> None:
    result, _ = run([*NODES, *stream("p", 40, 1.0, cpu="500m")], shadowed({}))
    assert result.shadows == {"candidate": {SAME: 40}}


def test_bin_packing_disagrees_with_spreading_and_says_by_how_much() -> None:
    result, sim = run([*NODES, *stream("p", 30, 1.0, cpu="1")], shadowed(BINPACK))
    outcomes = result.shadows["candidate"]
    assert outcomes.get(DIFFERENT, 0) > 0
    different = [d for r in sim.scheduler.recorder.recent for d in r.shadow if d.outcome == DIFFERENT]
    assert different and all(d.gap is not None and d.gap > 0 and d.node for d in different)
    # The record says it, and so does the explanation's record.
    record = next(r for r in sim.scheduler.recorder.recent if r.shadow)
    assert record.as_dict()["shadow"][0]["profile"] == "candidate"


def test_a_shadow_that_places_nowhere_reports_its_own_fit_error() -> None:
    strict = {"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}}]}
    result, sim = run(
        [*NODES, make_pod("p").req(cpu="1", memory="100Mi").manifest(), make_pod("huge").req(cpu="100", memory="100Mi").manifest()],
        shadowed(strict),
    )
    assert result.shadows["candidate"][SHADOW_UNSCHEDULABLE] >= 1
    assert result.shadows["candidate"][BOTH_UNSCHEDULABLE] >= 1  # the huge pod fits neither
    d = next(d for r in sim.scheduler.recorder.recent for d in r.shadow if d.outcome == SHADOW_UNSCHEDULABLE)
    assert d.node is None and d.message == "0/6 nodes are available: 6 node(s) didn't match scheduler-enforced node affinity."


def test_sampling_decides_about_the_share_asked_for() -> None:
    result, sim = run([*NODES, *stream("p", 400, 0.5, cpu="100m", duration=30)], shadowed(BINPACK, samplingPercentage=10))
    decided = sum(result.shadows["candidate"].values())
    assert 20 <= decided <= 65, decided
    skipped = sim.scheduler.shadows.skipped.get(("default-scheduler", "candidate", "not_sampled"))
    assert decided + skipped == result.cycles


def test_over_its_budget_the_shadow_skips_cycles() -> None:
    # A shadow cannot decide in a thousandth of the live cycle's time: after its first decision,
    # it is over budget until the live cycles' time makes up for it.
    result, sim = run([*NODES, *stream("p", 200, 0.5, cpu="100m", duration=30)], shadowed(BINPACK, maxOverheadPercentage=0.1))
    over = sim.scheduler.shadows.skipped.get(("default-scheduler", "candidate", "over_budget"))
    decided = sum(result.shadows["candidate"].values())
    assert over > 0 and decided >= 1 and decided + over == result.cycles


def test_a_pod_nominated_in_memory_only_is_decided_alike_by_an_identical_shadow() -> None:
    """The live cycle takes a pod's nominated node when it fits, whether the nomination is in the
    pod's status yet or only in this scheduler's memory (a preemption whose status patch has not
    come back). The shadow chooses through the same node choice, so an identical shadow profile
    takes that node too, though it is not the node scoring would prefer."""
    from unit.scheduler.test_generation import drain, scheduler

    # The nominated node is the fullest one, so scoring alone would pick another.
    objects = [*NODES, make_pod("resident").req(cpu="3", memory="100Mi").node("n0").manifest(),
               make_pod("p").req(cpu="500m", memory="100Mi").manifest()]
    sched, _ = scheduler(shadowed({}), objects)
    (qpi,) = sched.queue.pods.values()
    assert not qpi.pi.pod.status.nominated_node_name
    sched.nominator.nominate(qpi.pi, "n0")
    drain(sched)
    record = sched.recorder.latest["default/p"]
    assert record.chosen == "n0"
    (decision,) = record.shadow
    assert (decision.outcome, decision.node) == (SAME, "n0")
