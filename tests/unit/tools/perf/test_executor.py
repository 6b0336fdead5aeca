"""scheduler_perf workloads run on the simulator: ops, barriers, churn, deletes, volumes, and what is measured."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from kubesched.tools.perf import objects, workloads
from kubesched.tools.perf.executor import attempt_percentiles, refusal
from kubesched.tools.perf.run import plan, run_on_simulator
from kubesched.tools.perf.workloads import CreateNodes, CreatePods, NodeStrategy, Unsupported, WorkloadError

POD = """apiVersion: v1
kind: Pod
metadata:
  generateName: pod-
  labels: {app: web}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources: {requests: {cpu: {{if .cpu}}{{.cpu}}{{else}}100m{{end}}, memory: 100Mi}}
"""
GATED = """apiVersion: v1
kind: Pod
metadata: {generateName: gated-, labels: {type: gated}}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: pause, resources: {requests: {cpu: 100m}}}]
"""
NODE = """apiVersion: v1
kind: Node
metadata: {generateName: worker-}
status:
  capacity: {pods: "110", cpu: "4", memory: 32Gi}
  conditions: [{type: Ready, status: "True"}]
"""
CHURN_NODE = """apiVersion: v1
kind: Node
metadata: {generateName: churn-node-}
status:
  capacity: {pods: "0"}
"""
SERVICE = """apiVersion: v1
kind: Service
metadata: {generateName: svc-}
spec: {selector: {app: foo}, ports: [{port: 80}]}
"""
PV = """apiVersion: v1
kind: PersistentVolume
spec:
  accessModes: [ReadOnlyMany]
  capacity: {storage: 1Gi}
  csi: {driver: ebs.csi.aws.com}
  persistentVolumeReclaimPolicy: Retain
"""
PVC = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  annotations: {pv.kubernetes.io/bind-completed: "true"}
spec:
  accessModes: [ReadOnlyMany]
  resources: {requests: {storage: 1Gi}}
"""


def _case(tmp_path: Path, template: list[dict[str, object]], params: dict[str, object] | None = None) -> tuple[object, object]:
    for name, text in (("pod.yaml", POD), ("gated.yaml", GATED), ("node.yaml", NODE), ("churn-node.yaml", CHURN_NODE),
                       ("svc.yaml", SERVICE), ("pv.yaml", PV), ("pvc.yaml", PVC)):
        (tmp_path / name).write_text(text)
    config = tmp_path / "performance-config.yaml"
    config.write_text(yaml.safe_dump([{"name": "T", "defaultPodTemplatePath": "pod.yaml", "workloadTemplate": template,
                                       "workloads": [{"name": "w", "params": params or {}}]}]))
    (case,) = workloads.load(config)
    return case, case.workloads[0]


async def _run(tmp_path: Path, template: list[dict[str, object]], params: dict[str, object] | None = None, wait: float = 30.0):
    case, w = _case(tmp_path, template, params)
    return await run_on_simulator(plan(case, w), wait_seconds=wait)  # type: ignore[arg-type]


async def test_created_pods_are_scheduled_and_measured(tmp_path: Path) -> None:
    result = await _run(tmp_path, [
        {"opcode": "createNodes", "countParam": "$nodes"},
        {"opcode": "createPods", "count": 5},
        {"opcode": "createPods", "countParam": "$pods", "collectMetrics": True, "templateParams": {"cpu": "200m"}},
    ], {"nodes": 4, "pods": 30})
    (measured,) = result.throughput
    assert measured.pods == 30 and measured.seconds > 0 and measured.average > 0
    assert result.measured_pods == 30
    assert result.cpu_seconds > 0 and result.rss_peak_mib > 0
    assert set(result.attempt_ms) == {"p50", "p90", "p99"} and result.attempt_ms["p50"] <= result.attempt_ms["p99"]
    assert result.skipped == []


async def test_gated_pods_are_attempted_not_scheduled_and_deletes_free_room(tmp_path: Path) -> None:
    # SchedulingWhileGated's shape: pods that stay gated, a barrier on their attempts, pods deleted at
    # a rate in the background while the measured ones are scheduled.
    result = await _run(tmp_path, [
        {"opcode": "createNodes", "count": 1, "nodeTemplatePath": "node.yaml"},
        {"opcode": "createPods", "count": 5, "podTemplatePath": "gated.yaml", "skipWaitToCompletion": True},
        {"opcode": "barrier", "stageRequirement": "Attempted"},
        {"opcode": "createPods", "count": 20},
        {"opcode": "deletePods", "namespace": "namespace-3", "deletePodsPerSecond": 200, "skipWaitToCompletion": True},
        {"opcode": "createPods", "count": 20, "collectMetrics": True},
    ])
    assert result.measured_pods == 20


async def test_churn_runs_beside_the_measured_pods(tmp_path: Path) -> None:
    result = await _run(tmp_path, [
        {"opcode": "createNodes", "count": 3, "nodeTemplatePath": "node.yaml"},
        {"opcode": "churn", "mode": "recreate", "number": 1, "intervalMilliseconds": 5,
         "templatePaths": ["churn-node.yaml", "pod.yaml", "svc.yaml"]},
        {"opcode": "sleep", "duration": "60ms"},
        {"opcode": "createPods", "count": 20, "collectMetrics": True},
    ])
    assert result.measured_pods == 20


async def test_pods_with_bound_volumes(tmp_path: Path) -> None:
    result = await _run(tmp_path, [
        {"opcode": "createNodes", "count": 2, "nodeTemplatePath": "node.yaml",
         "nodeAllocatableStrategy": {"nodeAllocatable": {"attachable-volumes-csi-ebs.csi.aws.com": "5"},
                                     "csiNodeAllocatable": {"ebs.csi.aws.com": {"count": 5}}}},
        {"opcode": "createPods", "count": 8, "collectMetrics": True,
         "persistentVolumeTemplatePath": "pv.yaml", "persistentVolumeClaimTemplatePath": "pvc.yaml"},
    ])
    assert result.measured_pods == 8


async def test_a_collector_window_over_several_ops(tmp_path: Path) -> None:
    result = await _run(tmp_path, [
        {"opcode": "createNodes", "count": 2},
        {"opcode": "startCollectingMetrics", "name": "both", "namespaces": ["a", "b"]},
        {"opcode": "createPods", "count": 4, "namespace": "a", "skipWaitToCompletion": True},
        {"opcode": "createPods", "count": 6, "namespace": "b", "skipWaitToCompletion": True},
        {"opcode": "barrier"},
        {"opcode": "stopCollectingMetrics"},
    ])
    (window,) = result.throughput
    assert (window.name, window.pods) == ("both", 10)


async def test_pods_that_never_fit_time_out_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="timed out after 1 s waiting for 3 pods of op 1 scheduled in namespace-1"):
        await _run(tmp_path, [
            {"opcode": "createNodes", "count": 1},
            {"opcode": "createPods", "count": 3, "templateParams": {"cpu": "64"}},
        ], wait=1.0)


def test_an_essential_unsupported_op_refuses_the_workload_and_a_profile_op_does_not(tmp_path: Path) -> None:
    case, w = _case(tmp_path, [{"opcode": "createNodes", "count": 1}, {"opcode": "startCollectingProfile"}])
    ops = case.ops(w)  # type: ignore[attr-defined]
    assert isinstance(ops[1], Unsupported) and not ops[1].essential
    assert plan(case, w).refused is None  # type: ignore[arg-type]
    lacking = [*ops, Unsupported(2, "someOp", "not implemented in kubesched")]
    assert refusal(case, w, lacking, lambda _g: None) == "op 2 someOp: not implemented in kubesched"  # type: ignore[arg-type]


def test_node_strategies_and_names(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(NODE)
    templates, namer = objects.Templates(), objects.Namer()
    label = CreateNodes(0, 3, tmp_path / "node.yaml", strategy=NodeStrategy("label", label_key="zone", label_values=("a", "b")))
    made = [n for n, _ in objects.nodes(label, templates, namer)]
    assert [n["metadata"]["name"] for n in made] == ["worker-00000", "worker-00001", "worker-00002"]
    assert [n["metadata"]["labels"]["zone"] for n in made] == ["a", "b", "a"]
    base = list(objects.nodes(CreateNodes(4, 1), templates, namer))
    assert base[0][0]["metadata"]["name"] == "node-4-00000"
    assert base[0][0]["status"]["allocatable"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    alloc = CreateNodes(5, 1, tmp_path / "node.yaml", strategy=NodeStrategy("allocatable", allocatable={"x/y": "3"},
                                                                           csi_allocatable={"d": 7}, migrated_plugins=("p",)))
    ((node, extra),) = list(objects.nodes(alloc, templates, namer))
    assert node["status"]["allocatable"]["x/y"] == "3" and node["status"]["allocatable"]["cpu"] == "4"
    (csinode,) = extra
    assert csinode["kind"] == "CSINode" and csinode["spec"]["drivers"] == [{"name": "d", "nodeID": node["metadata"]["name"],
                                                                             "allocatable": {"count": 7}}]


def test_pods_carry_upstream_signature_labels(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(POD)
    op = CreatePods(2, 5, "ns", tmp_path / "pod.yaml", signature_batch=2)
    pods = [p for p, _ in objects.pods(op, objects.Templates(), objects.Namer())]
    assert [p["metadata"]["labels"]["signature"] for p in pods] == [f"signature-label-{i // 2}" for i in range(5)]
    assert all(p["metadata"]["namespace"] == "ns" for p in pods)


def test_attempt_percentiles_interpolate_within_a_bucket() -> None:
    before = [(0.001, 0.0), (0.01, 0.0), (math.inf, 0.0)]
    after = [(0.001, 50.0), (0.01, 100.0), (math.inf, 100.0)]
    got = attempt_percentiles(before, after)
    assert got["p50"] == pytest.approx(1.0)  # the 50th of 100 at the top of the first bucket
    assert got["p90"] == pytest.approx(1.0 + 9.0 * 0.8)
    assert attempt_percentiles(after, after) == {}


def test_field_names_in_another_case_are_read_as_go_reads_them() -> None:
    # v1.37.2's pod-with-node-inclusion-policy.yaml spells NodeAffinityPolicy with a capital N.
    pod = {"kind": "Pod", "spec": {"topologySpreadConstraints": [{"NodeAffinityPolicy": "Honor", "maxSkew": 1}],
                                   "Containers": [{"name": "c"}], "madeUp": 1}}
    got = objects.typed("Pod", pod)
    assert got["spec"]["topologySpreadConstraints"] == [{"nodeAffinityPolicy": "Honor", "maxSkew": 1}]
    assert got["spec"]["containers"] == [{"name": "c"}] and got["spec"]["madeUp"] == 1


def test_the_markdown_table_takes_medians_and_lists_what_did_not_run() -> None:
    from kubesched.tools.perf.markdown import table

    def row(workload: str, target: str, pps: float, **more: object) -> dict[str, object]:
        return {"workload": workload, "target": target, "threshold": 100, "pods_per_second": pps,
                "cpu_seconds_per_1000_pods": 1.0, "rss_peak_mib": 50, "attempt_ms": {"p99": 1.5}, **more}

    sim = {"rows": [row("A/x", "kubesched (simulator)", 900), {"workload": "D/y", "target": "kubesched (simulator)",
                                                                "threshold": 0, "refused": "dynamic resource allocation"}]}
    kube = {"rows": [row("A/x", "kubesched (apiserver)", 300), row("A/x", "kubesched (apiserver)", 500),
                     row("A/x", "kube-scheduler (apiserver)", 200)]}
    text = table(sim, kube)
    assert "| A/x | 100 | 900 | 1.50 | 400 | 200 | 1.00 | 1.00 | 50 | 50 |" in text
    assert "- D/y: dynamic resource allocation" in text
