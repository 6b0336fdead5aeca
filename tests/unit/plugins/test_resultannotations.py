"""SimulatorResultAnnotations on the simulator: kube-scheduler-simulator's annotations, exact."""

from __future__ import annotations

import json

from builders import make_node, make_pod
from unit.simkit import run

P = "kube-scheduler-simulator.sigs.k8s.io/"
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler",
                  "plugins": {"postBind": {"enabled": [{"name": "SimulatorResultAnnotations"}]}}}],
}
TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}


def annotations_of(sim, name: str) -> dict:  # type: ignore[no-untyped-def]
    pod_obj = next(p for p in sim.cluster.pods.values() if p.metadata.name == name)
    return {k.removeprefix(P): v for k, v in pod_obj.metadata.annotations.items() if k.startswith(P)}


def test_a_scheduled_pod_carries_the_simulators_annotations() -> None:
    objects = [
        make_node("a").capacity(cpu="4").without("ephemeral-storage").manifest(),
        make_node("b").capacity(cpu="8").without("ephemeral-storage").manifest(),
        make_node("t").without("ephemeral-storage").taints([TAINT]).manifest(),
        make_pod("web").req(cpu="500m", memory="100Mi").manifest(),
    ]
    result, sim = run(objects, CONFIG)
    chosen = result.placements["default/web"]
    ann = annotations_of(sim, "web")
    assert ann["selected-node"] == chosen
    filters = json.loads(ann["filter-result"])
    assert filters["t"]["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert "NodeResourcesFit" not in filters["t"]  # a rejected node goes no further, as in kube
    assert filters["a"]["NodeResourcesFit"] == "passed" and filters["b"]["TaintToleration"] == "passed"
    score, final = json.loads(ann["score-result"]), json.loads(ann["finalscore-result"])
    assert set(score) == set(final) == {"a", "b"}
    assert final["a"]["TaintToleration"] == "300" and score["a"]["TaintToleration"] == "0"
    assert json.loads(ann["bind-result"]) == {"DefaultBinder": "success"}
    assert json.loads(ann["prefilter-result-status"])["NodeResourcesFit"] == "success"
    assert json.loads(ann["postfilter-result"]) == {}
    totals = {n: sum(int(v) for v in parts.values()) for n, parts in final.items()}
    assert totals[chosen] == max(totals.values())


def test_a_pending_pod_is_annotated_and_its_message_is_unchanged() -> None:
    objects = [
        make_node("a").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("big").req(cpu="2", memory="100Mi").manifest(),
    ]
    with_plugin, sim = run(objects, CONFIG)
    without, _ = run(objects)
    assert with_plugin.unschedulable == without.unschedulable
    ann = annotations_of(sim, "big")
    assert ann["selected-node"] == ""
    # NodeAffinity and NodePorts skip this pod at PreFilter: their Filter does not run, so no entry.
    assert json.loads(ann["filter-result"]) == {"a": {"NodeName": "passed", "NodeUnschedulable": "passed",
                                                      "TaintToleration": "passed", "NodeResourcesFit": "Insufficient cpu"}}
    assert json.loads(ann["prefilter-result-status"])["NodeAffinity"] == ""  # Skip: not a success, no message
    assert json.loads(ann["score-result"]) == {} and json.loads(ann["bind-result"]) == {}


def test_off_by_default() -> None:
    _, sim = run([make_node("a").without("ephemeral-storage").manifest(), make_pod("web").req(cpu="100m", memory="100Mi").manifest()])
    assert annotations_of(sim, "web") == {}
