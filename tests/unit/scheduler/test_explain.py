"""scheduler.explain on the simulator: what a pending pod lacks, node by node; what decided a
scheduled pod's node; and that asking changes nothing."""

from __future__ import annotations

import json

from rich.console import Console

from builders import make_node, make_pod, make_priority_class
from kubesched.backends.sim.manifests import load_objects
from kubesched.observe.explainview import render
from kubesched.scheduler.explain import explain_pod
from unit.simkit import run

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def three_reasons() -> list[dict]:
    """`web` (1 cpu) is kept off n1 by cpu, off n2 by a taint, off n3 by its node selector."""
    return [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="8").without("ephemeral-storage").label(disk="hdd").taints([GPU_TAINT]).manifest(),
        make_node("n3").capacity(cpu="8").without("ephemeral-storage").label(disk="hdd").manifest(),
        make_pod("filler").req(cpu="700m", memory="100Mi").node("n1").manifest(),
        make_pod("web").req(cpu="1", memory="100Mi").spec(nodeSelector={"disk": "hdd"}, tolerations=[]).manifest(),
    ]


def test_a_pending_pod_is_explained_node_by_node() -> None:
    objects = three_reasons()
    objects[-1]["spec"]["nodeSelector"] = {"disk": "ssd"}
    _, sim = run(objects)
    e = sim.scheduler.explain("default", "web")
    assert e is not None and e["status"] == "pending" and e["node"] is None
    groups = {(g["plugin"], g["reason"]): g["nodes"] for g in e["filter"]["rejected"]}
    assert groups == {
        ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"): ["n1", "n3"],
        ("TaintToleration", "node(s) had untolerated taint(s)"): ["n2"],
    }
    # Nearest misses: every node fails one plugin or more; n1 and n2 fail two.
    nearest = {m["node"]: m["failed"] for m in e["filter"]["nearest"]}
    assert [f["plugin"] for f in nearest["n1"]] == ["NodeAffinity", "NodeResourcesFit"]
    assert nearest["n1"][1]["detail"] == "needs 700m more cpu"
    assert nearest["n2"][0] == {"plugin": "TaintToleration", "reason": "node(s) had untolerated taint(s)",
                                "detail": "taint dedicated=gpu:NoSchedule"}
    assert [m["node"] for m in e["filter"]["nearest"]] == ["n3", "n1", "n2"]
    assert e["message"] == sim.scheduler.recorder.latest["default/web"].message.split(" preemption:")[0]
    assert e["preemption"]["possible"] is False
    assert e["scores"] is None


def test_three_reasons_on_three_nodes_and_the_nearest_miss() -> None:
    objects = three_reasons()
    objects[2]["status"]["allocatable"]["cpu"] = "700m"  # n3 matches the selector but is too small
    objects[2]["status"]["capacity"]["cpu"] = "700m"
    _, sim = run(objects)
    e = sim.scheduler.explain("default", "web")
    first = {g["nodes"][0]: (g["plugin"], g["reason"]) for g in e["filter"]["rejected"]}
    assert first == {
        "n1": ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector"),
        "n2": ("TaintToleration", "node(s) had untolerated taint(s)"),
        "n3": ("NodeResourcesFit", "Insufficient cpu"),
    }
    assert e["filter"]["feasible"] == 0 and e["filter"]["evaluated"] == 3
    # n2 and n3 fail one plugin each; the taint is one step, n3 can never hold a 1-cpu pod.
    nearest = e["filter"]["nearest"]
    assert [m["node"] for m in nearest] == ["n2", "n3", "n1"]
    assert nearest[1]["failed"][0]["detail"] == "requests 1 cpu, allocatable only 700m"


def test_preemption_preview_names_the_victims_and_evicts_nothing() -> None:
    objects = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_pod("low").req(cpu="1500m", memory="100Mi").priority(1).node("n1").manifest(),
        make_pod("other").req(cpu="100m", memory="100Mi").priority(1000).node("n1").manifest(),
    ]
    _, sim = run(objects)
    sched = sim.scheduler
    priority = make_priority_class("priority-100", 100)
    big = load_objects([priority, make_pod("big").req(cpu="1", memory="100Mi").priority(100).manifest()]).pods[0].pod
    sched.queue.add(sched._pod_info(big))
    state_before = sched.rng.bit_generator.state
    deletions_before = dict(sim.cluster.event_counts)
    e = explain_pod(sched, "default", "big")
    assert e["preemption"] == {"plugin": "DefaultPreemption", "possible": True, "node": "n1", "victims": ["default/low"],
                               "violating_budgets": [], "message": ""}
    assert sched.rng.bit_generator.state == state_before
    assert dict(sim.cluster.event_counts) == deletions_before
    assert not sched.nominator and "default/low" in {p.key for p in sched.cache.table.pods[0].values()}


def test_a_scheduled_pod_shows_the_scores_that_chose_its_node() -> None:
    objects = [
        make_node("a").capacity(cpu="4").without("ephemeral-storage").manifest(),
        make_node("b").capacity(cpu="8").without("ephemeral-storage").manifest(),
        make_node("c").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_pod("busy").req(cpu="1", memory="100Mi").node("a").manifest(),
        make_pod("web").req(cpu="500m", memory="1Gi").manifest(),
    ]
    result, sim = run(objects)
    e = sim.scheduler.explain("default", "web")
    scores = e["scores"]
    assert e["status"] == "scheduled" and scores["source"] == "record"
    assert scores["chosen"] == e["node"] == result.placements["default/web"]
    assert scores["nodes"][0]["node"] == scores["chosen"]
    weights = {p["name"]: p["weight"] for p in scores["plugins"]}
    for entry in scores["nodes"]:
        parts = entry["plugins"]
        assert sum(p["weighted"] for p in parts.values()) == entry["total"]
        for name, p in parts.items():
            assert p["weighted"] == p["normalized"] * weights[name]
    runner = max(n["total"] for n in scores["nodes"][1:])
    assert scores["margin"] == scores["nodes"][0]["total"] - runner > 0
    decided = scores["decided_by"]
    leads = {name: p["weighted"] - next(n for n in scores["nodes"][1:] if n["total"] == runner)["plugins"][name]["weighted"]
             for name, p in scores["nodes"][0]["plugins"].items()}
    assert leads[decided] == max(leads.values())


def test_the_dry_run_scores_every_feasible_node_and_counts_nothing() -> None:
    objects = [make_node(f"n{i}").capacity(cpu=str(2 + i)).without("ephemeral-storage").manifest() for i in range(4)] + [
        make_pod("web").req(cpu="100m", memory="100Mi").gate("hold").manifest()
    ]
    _, sim = run(objects)
    sched = sim.scheduler
    attempts = dict(sched.metrics.attempts.values)
    points = {k: v.copy() for k, v in sched.metrics.extension_point_duration._counts.items()}
    pending = {k: len(v) for k, v in sched.metrics.extension_point_duration._pending.items()}
    e = sched.explain("default", "web")
    assert e["status"] == "gated"
    assert e["filter"]["feasible"] == 4 and e["scores"]["source"] == "dry-run" and len(e["scores"]["nodes"]) == 4
    assert e["scores"]["chosen"] == e["scores"]["nodes"][0]["node"]
    assert dict(sched.metrics.attempts.values) == attempts
    assert {k: len(v) for k, v in sched.metrics.extension_point_duration._pending.items()} == pending
    assert all((sched.metrics.extension_point_duration._counts[k] == v).all() for k, v in points.items())
    assert sched.recorder.latest.get("default/web") is None  # a dry run leaves no decision record


def test_unknown_pods_and_json_round_trip() -> None:
    objects = three_reasons()
    objects[-1]["spec"]["nodeSelector"] = {"disk": "ssd"}
    _, sim = run(objects)
    assert sim.scheduler.explain("default", "nope") is None
    e = sim.scheduler.explain("default", "web")
    assert json.loads(json.dumps(e)) == e
    console = Console(record=True, width=200)
    render(console, e)
    text = console.export_text()
    assert "default/web" in text and "n1" in text


def test_rendering_never_reads_cluster_text_as_markup() -> None:
    console = Console(record=True, width=200)
    render(console, {"pod": "ns/[bold]x", "status": "pending", "message": "[red]boom", "filter": {
        "feasible": 0, "rejected": [{"plugin": "P", "reason": "[link]r", "count": 1, "nodes": ["[b]n"]}], "nearest": []}})
    text = console.export_text()
    assert "[bold]x" in text and "[red]boom" in text and "[link]r" in text and "[b]n" in text


def test_node_affinity_says_which_label_is_missing() -> None:
    objects = [
        make_node("n1").without("ephemeral-storage").label(disk="ssd").manifest(),
        make_node("n2").without("ephemeral-storage").manifest(),
        make_pod("web").req(cpu="100m", memory="100Mi").spec(nodeSelector={"disk": "hdd", "zone": "a"}).manifest(),
    ]
    _, sim = run(objects)
    nearest = {m["node"]: m["failed"][0]["detail"] for m in sim.scheduler.explain("default", "web")["filter"]["nearest"]}
    assert nearest == {"n1": "needs label disk=hdd (node has disk=ssd), label zone=a", "n2": "needs label disk=hdd, label zone=a"}


def test_a_pod_a_user_plugin_rejects_is_explained() -> None:
    """A plugin configured as `module:Class` is keyed by that name in the profile, while its
    verdicts carry the plugin's own name: the explanation finds it by the latter."""
    from unit.simkit import profile_config

    config = profile_config({"schedulerName": "default-scheduler",
                             "plugins": {"filter": {"enabled": [{"name": "unit.sample_plugins:EvenOnly"}]}}})
    objects = [make_node("n1").manifest(), make_node("n3").manifest(),
               make_pod("web").req(cpu="100m", memory="100Mi").manifest()]
    _, sim = run(objects, config)
    e = sim.scheduler.explain("default", "web")
    assert e is not None and e["status"] == "pending"
    assert [(g["plugin"], g["reason"], g["nodes"]) for g in e["filter"]["rejected"]] == [
        ("EvenOnly", "node(s) had an odd name", ["n1", "n3"])]
    assert [f["plugin"] for m in e["filter"]["nearest"] for f in m["failed"]] == ["EvenOnly", "EvenOnly"]
