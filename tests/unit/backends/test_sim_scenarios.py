"""The built-in scenarios (backends.sim.scenarios) load cleanly and have the shape they promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api.quantity import resource_value
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.scenarios import builtin_scenarios, load_scenario, scenario_path
from unit.backends.manifestkit import POD, write


def test_builtin_scenarios_are_listed_with_descriptions() -> None:
    scenarios = builtin_scenarios()
    assert set(scenarios) >= {"web-batch", "basic", "preemption"}
    assert all(desc and "\n" not in desc for desc in scenarios.values())
    assert all(scenario_path(name).is_file() for name in scenarios)


@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_each_builtin_scenario_loads_cleanly(name: str) -> None:
    cluster = load_scenario(name)
    assert cluster.name == name and cluster.description == builtin_scenarios()[name]
    assert cluster.nodes and cluster.pods and cluster.warnings == []
    assert len({sp.pod.metadata.uid for sp in cluster.pods}) == len(cluster.pods)
    assert len({n.metadata.name for n in cluster.nodes}) == len(cluster.nodes)


def test_basic_scenario_has_scheduler_perf_shape() -> None:
    cluster = load_scenario("basic")
    assert len(cluster.nodes) == 100 and len(cluster.pods) == 500
    assert {tuple(sorted(n.status.allocatable.items())) for n in cluster.nodes} == {
        (("cpu", "4"), ("memory", "32Gi"), ("pods", "110"))
    }
    assert {tuple(sorted(sp.pod.spec.containers[0].resources.requests.items())) for sp in cluster.pods} == {
        (("cpu", "100m"), ("memory", "500Mi"))
    }
    assert cluster.workload_selectors == []


def test_preemption_scenario_fills_then_preempts() -> None:
    cluster = load_scenario("preemption")
    low = [sp for sp in cluster.pods if sp.pod.spec.priority == 100]
    high = [sp for sp in cluster.pods if sp.pod.spec.priority == 10000]
    cpu_total = sum(int(n.status.allocatable["cpu"]) for n in cluster.nodes)
    assert len(low) == cpu_total  # one CPU each: the cluster is exactly full
    assert high and min(sp.arrival for sp in high) > max(sp.arrival for sp in low)
    assert any(sp.pod.spec.preemption_policy == "Never" for sp in high)


def test_web_batch_scenario_has_what_the_demo_needs() -> None:
    cluster = load_scenario("web-batch")
    assert 300 <= len(cluster.pods) <= 800 and len(cluster.nodes) == 40
    zones = {n.metadata.labels["topology.kubernetes.io/zone"] for n in cluster.nodes}
    assert len(zones) == 3
    gpu = [n for n in cluster.nodes if "nvidia.com/gpu" in n.status.allocatable]
    assert gpu and all(any(t.key == "nvidia.com/gpu" for t in n.spec.taints) for n in gpu)
    assert sum(n.spec.unschedulable for n in cluster.nodes) == 2
    classes = {pc.metadata.name for pc in cluster.priority_classes}
    assert {"high", "normal", "batch-low"} <= classes
    pods = cluster.pods
    assert any(sp.pod.spec.scheduling_gates for sp in pods)
    assert any(sp.pod.spec.topology_spread_constraints for sp in pods)
    assert any(sp.pod.spec.affinity and sp.pod.spec.affinity.pod_anti_affinity for sp in pods)
    batch = [sp for sp in pods if sp.pod.spec.priority_class_name == "batch-low"]
    assert batch and all(sp.arrival > 0 for sp in batch if sp.duration is not None)
    assert any(sp.duration for sp in batch)
    late_high = [sp for sp in pods if sp.pod.spec.priority_class_name == "high" and sp.arrival > 0]
    assert late_high and min(sp.arrival for sp in late_high) > min(sp.arrival for sp in batch if sp.arrival > 0)
    # GPU training tolerates the taint.
    gpu_pods = [sp for sp in pods if "nvidia.com/gpu" in sp.pod.spec.containers[0].resources.requests]
    assert gpu_pods and all(any(t.key == "nvidia.com/gpu" for t in sp.pod.spec.tolerations) for sp in gpu_pods)
    # Some pods are too big for every node.
    biggest = max(resource_value("cpu", n.status.allocatable["cpu"]) for n in cluster.nodes)
    assert any(resource_value("cpu", sp.pod.spec.containers[0].resources.requests.get("cpu", 0)) > biggest
               for sp in pods)
    kinds = {k for k, _, _, _ in cluster.workload_selectors}
    assert kinds == {"Service", "ReplicaSet", "StatefulSet"}


def test_load_scenario_falls_back_to_paths(tmp_path: Path) -> None:
    path = write(tmp_path, POD.format(name="a"))
    assert load_scenario(str(path)).pods[0].pod.metadata.name == "a"
    with pytest.raises(ManifestError, match="no such file, directory or built-in scenario"):
        load_scenario("no-such-scenario")
