"""Pods whose state the simulated cluster, not the scheduler, has to say (issue 29, item 4 and a point
of item 5), in every output of `kubesched simulate`: a pod with scheduling gates is reported with
the PodScheduled condition the API server writes on it, and a pod bound by spec.nodeName to a node
that does not exist is listed as Pending there, never as scheduled."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from builders import make_node, make_pod
from kubesched.cli import app
from unit.simkit import run

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
PLUGIN_STATUS = "waiting for scheduling gates"
INPUT = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: lost}
spec:
  nodeName: gone
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec:
  containers: [{name: c, image: i}]
"""


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def simulate(tmp_path: Path, *extra: str) -> tuple[Result, dict]:
    (tmp_path / "cluster.yaml").write_text(INPUT)
    out = tmp_path / "out.json"
    result = invoke("simulate", str(tmp_path / "cluster.yaml"), "-q", "--json", str(out), "--report", str(tmp_path / "r.html"),
                    *extra)
    assert result.exit_code == 0, result.output
    return result, json.loads(out.read_text())


def test_a_gated_pod_is_reported_with_what_the_cluster_shows(tmp_path: Path) -> None:
    result, data = simulate(tmp_path, "--explain", "default/gated")
    assert f"1 x {GATED_MESSAGE}" in result.output
    assert f"note: {GATED_MESSAGE} (its PodScheduled condition, reason SchedulingGated; spec.schedulingGates: " \
           "example.com/wait)" in result.output
    (run_,) = data["results"]
    assert run_["unschedulable"] == {"default/gated": GATED_MESSAGE} and run_["pods_gated"] == 1
    assert run_["explanations"]["default/gated"]["note"].startswith(GATED_MESSAGE)
    assert GATED_MESSAGE in (tmp_path / "r.html").read_text()
    assert PLUGIN_STATUS not in result.output + (tmp_path / "out.json").read_text() + (tmp_path / "r.html").read_text()
    # A saved run explains it the same way.
    saved = invoke("explain", "default/gated", "--from", str(tmp_path / "out.json"))
    assert saved.exit_code == 0 and f"note: {GATED_MESSAGE}" in saved.output


def test_a_pod_bound_to_a_node_that_does_not_exist_is_listed_pending(tmp_path: Path) -> None:
    result, data = simulate(tmp_path, "--explain", "default/lost")
    assert ("1 pod is bound by spec.nodeName to a node that does not exist: it stays Pending and never runs (on a cluster, "
            "kube-controller-manager's pod garbage collector deletes it once the node has been missing for 40s): default/lost "
            "(node gone)") in result.output
    assert "default/lost  profile default-scheduler  status pending on gone" in result.output
    assert 'note: bound by spec.nodeName to node "gone", which does not exist: the pod stays Pending and never runs' \
           in result.output
    assert "status scheduled" not in result.output
    (run_,) = data["results"]
    assert run_["bound_to_missing_nodes"] == {"default/lost": "gone"}
    assert run_["explanations"]["default/lost"]["status"] == "pending"
    assert "default/lost" not in run_["placements"]  # not a pod to place: it came with its node


def test_the_simulation_reports_them_itself() -> None:
    result, sim = run([
        make_node("n1").manifest(),
        make_pod("lost").req(cpu="100m").node("gone").manifest(),
        make_pod("there").req(cpu="100m").node("n1").manifest(),
    ])
    assert result.bound_to_missing_nodes == {"default/lost": "gone"}
    explained = sim.explain("default", "lost")
    assert explained is not None and explained["status"] == "pending" and explained["node"] == "gone"
    there = sim.explain("default", "there")
    assert there is not None and there["status"] == "scheduled" and "does not exist" not in str(there.get("note"))
