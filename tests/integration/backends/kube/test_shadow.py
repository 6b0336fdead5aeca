"""A shadow profile on the real apiserver, checked against a separate run of the same profile.

`kubesched run` schedules with its live profile (default scoring, LeastAllocated) while a shadow
profile (NodeResourcesFit MostAllocated, samplingPercentage 100) decides beside it for every pod,
binding nothing. Each shadow decision, read from /debug/decisions, must be what kubesched's own
simulator decides when the shadow profile is the only profile and the cluster is the state the
live scheduler saw for that pod: the nodes and the pods bound before it, as the API server has
them. The outcome counters must add up to the same comparison.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, Kube
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import parse_config

LIVE = "kubesched"
SHADOW = "kubesched-packer"
SHADOW_PROFILE = {"schedulerName": SHADOW, "pluginConfig": [
    {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}
# Nodes of distinct sizes.
NODES = [("4", "12Gi"), ("6", "20Gi"), ("10", "24Gi"), ("16", "40Gi")]
# p-04 fits only the 16-cpu node: both profiles choose it. The others were picked (from random
# shapes, with the simulator) so that neither profile's best two nodes tie at any step.
PODS = [("600m", "4864Mi"), ("800m", "2688Mi"), ("1100m", "2560Mi"), ("1600m", "1792Mi"), ("11", "20Gi"),
        ("1900m", "3328Mi"), ("1700m", "3840Mi"), ("500m", "2176Mi"), ("1400m", "2176Mi"), ("1100m", "1280Mi"),
        ("200m", "1408Mi"), ("200m", "4864Mi")]


def simulate_shadow(nodes: list[JSON], bound: list[JSON], pod: JSON) -> tuple[str | None, list[int]]:
    """Where the shadow profile, alone, places `pod` on `nodes` holding the `bound` pods; and the
    best scores of that cycle."""
    def manifest(obj: JSON, **spec: Any) -> JSON:
        meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
        return {"apiVersion": "v1", "kind": obj["kind"], "metadata": meta,
                "spec": {**obj["spec"], **spec}, "status": obj.get("status", {})}

    objects = [manifest({**n, "kind": "Node"}) for n in nodes]
    objects += [manifest({**p, "kind": "Pod"}) for p in bound]
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    objects.append(manifest({**pod, "kind": "Pod", "spec": spec, "status": {}}, schedulerName=SHADOW))
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                           "profiles": [SHADOW_PROFILE]})
    sim = Simulation(load_objects(objects), config, seed=0)
    result = asyncio.run(sim.run())
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    record = sim.scheduler.recorder.latest[key]
    return result.placements[key], [score for _, score, _ in record.top]


def test_shadow_decisions_match_a_separate_run_of_the_shadow_profile(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON], tmp_path: Path
) -> None:
    for cpu, memory in NODES:
        make_node(cpu=cpu, memory=memory)
    base = kubesched_config(control_plane.admin_kubeconfig, lease_namespace=namespace)
    config = {**base, "profiles": [{"schedulerName": LIVE}, SHADOW_PROFILE]}
    ext = {"apiVersion": "kubesched.io/v1alpha1", "kind": "KubeschedConfiguration",
           "shadowProfiles": [{"schedulerName": SHADOW, "shadowOf": LIVE, "samplingPercentage": 100,
                               "maxOverheadPercentage": 1000}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump_all([config, ext], sort_keys=False))
    names = [f"p-{i:02d}" for i in range(len(PODS))]
    with run_kubesched(tmp_path, base, config_path=path) as ks:
        live = {}
        for name, (cpu, memory) in zip(names, PODS, strict=True):
            create_pod(kube, name, namespace, cpu=cpu, memory=memory, scheduler_name=LIVE)
            live[name] = wait_bound(kube, namespace, name)
        # A pod naming the shadow profile is nobody's: the shadow schedules nothing itself.
        create_pod(kube, "for-the-shadow", namespace, scheduler_name=SHADOW)
        code, body = ks.get("/debug/decisions?limit=1000")
        assert code == 200, body
        records = {r["pod"].split("/", 1)[1]: r for r in yaml.safe_load(body) if r["pod"].startswith(f"{namespace}/")}
        counted = {outcome: ks.metric("kubesched_shadow_decisions_total", profile=LIVE, shadow=SHADOW, outcome=outcome)
                   for outcome in ("same_node", "different_node", "shadow_unschedulable", "live_unschedulable",
                                   "both_unschedulable", "shadow_error")}
        skipped = ks.metric("kubesched_shadow_skipped_total", profile=LIVE, shadow=SHADOW)
        time.sleep(1.0)
        assert not kube.get(f"/api/v1/namespaces/{namespace}/pods/for-the-shadow")["spec"].get("nodeName")
        assert "for-the-shadow" not in records

    nodes = kube.list("/api/v1/nodes")
    pods = {p["metadata"]["name"]: p for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")}
    others = [p for p in kube.list("/api/v1/pods") if p["metadata"]["namespace"] != namespace and p["spec"].get("nodeName")]
    expected: Counter[str] = Counter()
    for i, name in enumerate(names):
        record = records[name]
        assert record["result"] == "scheduled" and record["chosen"] == live[name] == pods[name]["spec"]["nodeName"]
        shadow = record.get("shadow") or []
        assert [d["profile"] for d in shadow] == [SHADOW], record
        node, top = simulate_shadow(nodes, others + [pods[n] for n in names[:i]], pods[name])
        assert len(top) < 2 or top[0] > top[1], f"{name}: a tie in the separate run ({top}); the comparison needs none"
        outcome = "same_node" if node == live[name] else "different_node"
        expected[outcome] += 1
        assert (shadow[0]["node"], shadow[0]["outcome"]) == (node, outcome), (name, shadow[0], node, live[name])
        assert (shadow[0]["gap"] is None) == (outcome == "same_node") and (shadow[0]["gap"] or 1) > 0, shadow[0]
    assert expected["same_node"] and expected["different_node"], expected  # the profiles do disagree sometimes
    assert counted == {**dict.fromkeys(counted, 0.0), **{k: float(v) for k, v in expected.items()}}
    assert skipped == 0
