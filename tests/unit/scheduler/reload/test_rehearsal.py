"""Configuration changes rehearsed in a simulated scenario: the reload controller and the SLO guard
of `kubesched run`, on the virtual clock (backends.sim.configchanges)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_objects
from unit.simkit import config_change, config_text, run, stream

GUARD = {"sloGuard": {"window": "5m", "interval": "10s", "minAttempts": 10}}
# Ten nodes of which one is labelled small: a filter that keeps only that one rejects most nodes.
NODES = [
    make_node(f"n{i}").capacity(cpu="4").without("ephemeral-storage").label(pool="small" if i == 0 else "big").manifest() for i in range(10)
]


def only_small() -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["small"]}]}
    return {"schedulerName": "default-scheduler", "pluginConfig": [{"name": "NodeAffinity", "args": {
        "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}}]}


def binpack() -> dict[str, Any]:
    return {"schedulerName": "default-scheduler", "pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "MostAllocated"}}}]}


def workload(count: int = 300) -> list[dict]:
    return stream("web", count, 2.0, cpu="500m", memory="512Mi", duration=120)


def test_a_bad_change_is_rolled_back_by_the_guard_and_pods_spread_again() -> None:
    bad = config_change("v2", "200s", config_text(only_small(), kubesched=GUARD))
    result, sim = run([*NODES, *workload(), bad], config_text({}, kubesched=GUARD))
    results = [r["result"] for r in result.reloads]
    assert results[:2] == ["applied", "rolled_back"], result.reloads
    applied, rolled = result.reloads[:2]
    assert applied["time"] == 200 and applied["generation"] == 2
    # Within the window, at a sample: unschedulable attempts rose far above the baseline's 0%.
    assert 200 < rolled["time"] <= 200 + 300 and rolled["generation"] == 1
    assert "unschedulableRatio" in rolled["message"] and "rolled back to generation 1" in rolled["message"]
    assert sim.scheduler.generation.number == 1 and sim.reload.differs
    assert sim.scheduler.metrics.collect  # the rollback is counted
    assert sim.reload.rollbacks.get(("unschedulableRatio",)) == 1
    # Every pod is bound in the end, most of them on the big nodes again.
    assert result.pods_scheduled == 300
    late = [p for k, p in result.placements.items() if int(k.rsplit("-", 1)[1]) * 2 > rolled["time"] + 10]
    assert late and sum(1 for n in late if n != "n0") > len(late) // 2


def test_a_neutral_change_is_kept_and_confirmed_after_the_window() -> None:
    neutral = config_change("v2", "200s", config_text(binpack(), kubesched=GUARD))
    result, sim = run([*NODES, *workload(), neutral], config_text({}, kubesched=GUARD))
    assert [r["result"] for r in result.reloads] == ["applied", "confirmed"], result.reloads
    assert result.reloads[1]["time"] >= 200 + 300
    assert sim.scheduler.generation.number == 2 and sim.reload.good is sim.scheduler.generation
    assert not sim.reload.differs and result.pods_scheduled == 300


def test_a_rolled_back_change_is_not_applied_again_and_a_later_one_is_judged_afresh() -> None:
    objects = [
        *NODES, *workload(400),
        config_change("v2", "200s", config_text(only_small(), kubesched=GUARD)),
        config_change("v3", "600s", config_text(binpack(), kubesched=GUARD)),
    ]
    result, sim = run(objects, config_text({}, kubesched=GUARD))
    assert [r["result"] for r in result.reloads] == ["applied", "rolled_back", "applied", "confirmed"], result.reloads
    assert [r["generation"] for r in result.reloads] == [2, 1, 3, 3]
    assert sim.scheduler.generation.number == 3 and not sim.reload.differs


def test_an_invalid_change_is_refused_and_the_running_configuration_goes_on() -> None:
    broken = config_change("v2", "100s", config_text({"schedulerName": "default-scheduler", "plugins": {
        "score": {"enabled": [{"name": "NoSuchPlugin"}]}}}))
    result, sim = run([*NODES, *workload(100), broken])
    (refused,) = result.reloads
    assert refused["result"] == "refused" and refused["generation"] == 1
    assert "profiles[0].plugins.score.enabled[0]" in refused["message"] and "NoSuchPlugin" in refused["message"]
    assert sim.reload.differs and "still running generation 1" in (sim.reload.problem or "")
    assert result.pods_scheduled == 100  # pods arriving after the refusal were scheduled as before


def test_restart_only_settings_are_refused_by_name() -> None:
    text = config_text({}, leaderElection={"leaderElect": True, "resourceName": "other"})
    result, _ = run([*NODES, *workload(10), config_change("v2", "5s", text)])
    (refused,) = result.reloads
    assert refused["result"] == "refused"
    assert refused["message"].startswith("leaderElection.resourceName: changed, but takes effect only when kubesched restarts")


def test_a_change_that_means_the_same_is_no_change() -> None:
    # Formatting, comments and spelled-out defaults do not make a new generation.
    same = config_change("v2", "10s", "# the defaults, written out\n" + config_text(
        {"schedulerName": "default-scheduler", "plugins": {"score": {"enabled": [{"name": "TaintToleration", "weight": 3}]}}}))
    result, sim = run([*NODES, *workload(20), same])
    assert [r["result"] for r in result.reloads] == ["unchanged"]
    assert sim.scheduler.generation.number == 1


def test_a_profile_added_by_a_change_takes_its_pending_pods() -> None:
    pods = stream("other", 5, 1.0, scheduler="second-scheduler")
    text = config_text({"schedulerName": "default-scheduler"}, {"schedulerName": "second-scheduler"})
    result, sim = run([*NODES, *pods, config_change("v2", "30s", text)])
    assert [r["result"] for r in result.reloads] == ["applied"]  # the run ends before the guard's window
    # Not ours until the change; then every one of them is placed.
    assert all(sim.cluster.pods[p.metadata.uid].spec.node_name for p in sim.cluster.pods.values()
               if p.spec.scheduler_name == "second-scheduler")
    assert all(sim.cluster.bound_at[uid] >= 30 for uid, p in sim.cluster.pods.items() if p.spec.scheduler_name == "second-scheduler")


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"data": {"other.yaml": "x"}}, "data[config.yaml]: Required value"),
        ({"data": {"config.yaml": 3}}, "data[config.yaml]: must be a string"),
        ({"arrival": "soon"}, "metadata.annotations[sim.kubesched.io/arrival]: invalid duration"),
    ],
)
def test_a_malformed_change_is_refused_when_the_scenario_loads(change: dict[str, Any], error: str) -> None:
    cm = config_change("v2", change.get("arrival", "10s"), "x")
    if "data" in change:
        cm["data"] = change["data"]
    with pytest.raises(ManifestError, match=error.replace("[", r"\[").replace("]", r"\]")):
        load_objects([cm])
