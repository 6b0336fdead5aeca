"""What upstream's Go test files add to a scheduler_perf family: nodedeclaredfeatures' node update,
and the gates of its workloads (on, or off with kube v1.36 emulated, as upstream runs them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.infra import features
from kubesched.tools.perf import families, workloads
from kubesched.tools.perf.executor import Executor
from kubesched.tools.perf.gates import kubesched_gates, parse_for_kubesched
from kubesched.tools.perf.run import plan, scheduler_config
from kubesched.tools.perf.simtarget import SimTarget

NODE = """apiVersion: v1
kind: Node
metadata: {generateName: node-}
status:
  capacity: {pods: "110", cpu: "128", memory: 16Gi}
"""
POD = """apiVersion: v1
kind: Pod
metadata: {generateName: pod-}
spec:
  resources: {requests: {cpu: 100m, memory: 200Mi}}
  containers: [{name: c, image: registry.k8s.io/pause:3.10.1}]
"""


def family(tmp_path: Path, directory: str, gates: dict[str, bool], params: dict[str, Any]) -> workloads.TestCase:
    where = tmp_path / directory
    where.mkdir()
    (where / "node.yaml").write_text(NODE)
    (where / "pod.yaml").write_text(POD)
    (where / "performance-config.yaml").write_text(yaml.safe_dump([{
        "name": "NodeDeclaredFeaturesEnabled", "defaultPodTemplatePath": "pod.yaml",
        "workloadTemplate": [{"opcode": "createNodes", "countParam": "$nodes", "nodeTemplatePath": "node.yaml"},
                             {"opcode": "createPods", "countParam": "$measurePods", "collectMetrics": True}],
        "workloads": [{"name": "w", "featureGates": gates, "params": params}],
    }]))
    (case,) = workloads.load(where / "performance-config.yaml")
    return case


def test_only_the_family_with_its_gate_on_updates_nodes(tmp_path: Path) -> None:
    params = {"nodes": 2, "measurePods": 2, "numNodeDeclaredFeatures": 12}
    case = family(tmp_path, "nodedeclaredfeatures", {"NodeDeclaredFeatures": True}, params)
    update = families.node_update(case, case.workloads[0])
    assert update is not None
    (node,) = update([{"kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"pods": "1"}}}])
    assert node["status"]["declaredFeatures"] == ["Feature1", "Feature10", "Feature11", "Feature12", "Feature2", "Feature3",
                                                  "Feature4", "Feature5", "Feature6", "Feature7", "Feature8", "Feature9"]
    assert node["status"]["capacity"] == {"pods": "1"}
    off = family(tmp_path, "other", {"NodeDeclaredFeatures": True}, params)
    assert families.node_update(off, off.workloads[0]) is None


def test_a_bad_feature_count_is_named(tmp_path: Path) -> None:
    case = family(tmp_path, "nodedeclaredfeatures", {"NodeDeclaredFeatures": True}, {"nodes": 1, "numNodeDeclaredFeatures": "x"})
    with pytest.raises(workloads.WorkloadError, match="numNodeDeclaredFeatures must be a non-negative integer"):
        families.node_update(case, case.workloads[0])


async def test_the_simulator_runs_the_family_with_every_node_declaring(tmp_path: Path) -> None:
    case = family(tmp_path, "nodedeclaredfeatures", {"NodeDeclaredFeatures": True},
                  {"nodes": 3, "measurePods": 6, "numNodeDeclaredFeatures": 5})
    w = case.workloads[0]
    p = plan(case, w)
    assert p.refused is None and p.gates == "NodeDeclaredFeatures=true"
    target = SimTarget(scheduler_config(case))
    await target.start()
    try:
        result = await Executor(case, w, target, wait_seconds=30).run(case.ops(w))
        table = target.scheduler.cache.table
        wanted = [f"Feature{i}" for i in range(1, 6)]
        assert table.declared_features.declaring(wanted, table.size).tolist() == [True] * 3
    finally:
        await target.stop()
    assert result.measured_pods == 6


def test_a_workload_turning_the_locked_gate_off_runs_with_kube_1_36_emulated() -> None:
    spec, why = kubesched_gates({"NodeDeclaredFeatures": False})
    assert (spec, why) == ("NodeDeclaredFeatures=false", None)
    assert parse_for_kubesched(spec).node_declared_features is False
    with pytest.raises(features.FeatureGateError, match="cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"):
        features.parse(spec)
