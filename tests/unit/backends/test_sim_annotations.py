"""The simulation annotations (backends.sim.simannotations): arrival, duration, arrival interval,
count, and the warnings for ones that are unknown or misplaced."""

from __future__ import annotations

import re
from pathlib import Path

from unit.backends.manifestkit import DEPLOYMENT, JOB, POD, error_of, load


def test_pod_arrival_and_duration(tmp_path: Path) -> None:
    text = POD.format(name="a").replace(
        "  name: a\n", "  name: a\n  annotations:\n    sim.kubesched.io/arrival: 1m30s\n    sim.kubesched.io/duration: \"45\"\n"
    )
    sp = load(tmp_path, text).pods[0]
    assert (sp.arrival, sp.duration) == (90.0, 45.0)


def test_workload_arrival_interval_and_template_annotations(tmp_path: Path) -> None:
    text = JOB.replace("  namespace: batch\n", """  namespace: batch
  annotations:
    sim.kubesched.io/arrival: 5m
    sim.kubesched.io/arrival-interval: 2s
    sim.kubesched.io/duration: 1h
""").replace("      labels: {app: etl}\n", "      labels: {app: etl}\n      annotations: {sim.kubesched.io/duration: 10m}\n")
    pods = load(tmp_path, text).pods
    assert [sp.arrival for sp in pods] == [300.0, 302.0, 304.0]
    assert {sp.duration for sp in pods} == {600.0}  # the template's annotation wins


def test_bad_duration_names_the_annotation(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("  namespace: shop\n", "  namespace: shop\n  annotations: {sim.kubesched.io/arrival: soon}\n")
    message = error_of(tmp_path, text)
    assert "Deployment shop/web: metadata.annotations[sim.kubesched.io/arrival]: invalid duration 'soon'" in message
    negative = POD.format(name="a").replace("  name: a\n", "  name: a\n  annotations: {sim.kubesched.io/duration: \"-5\"}\n")
    assert "invalid duration '-5'" in error_of(tmp_path, negative)


def test_count_copies_pods_and_nodes(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Node
        metadata:
          name: worker
          annotations: {sim.kubesched.io/count: "3"}
        status: {capacity: {cpu: "4"}}
        ---
        apiVersion: v1
        kind: Node
        metadata:
          generateName: pool-
          annotations: {sim.kubesched.io/count: "2"}
        status: {capacity: {cpu: "4"}}
        ---
        apiVersion: v1
        kind: Pod
        metadata:
          generateName: pause-
          annotations:
            sim.kubesched.io/count: "4"
            sim.kubesched.io/arrival: 10s
            sim.kubesched.io/arrival-interval: 500ms
        spec: {containers: [{name: c, image: pause}]}
    """)
    names = [n.metadata.name for n in cluster.nodes]
    assert names[:3] == ["worker-0", "worker-1", "worker-2"]
    assert all(re.fullmatch(r"pool-[a-z0-9]{5}", n) for n in names[3:]) and len(set(names)) == 5
    assert [n.metadata.labels["kubernetes.io/hostname"] for n in cluster.nodes] == names
    assert len({sp.pod.metadata.uid for sp in cluster.pods}) == 4
    assert [sp.arrival for sp in cluster.pods] == [10.0, 10.5, 11.0, 11.5]
    assert all(sp.pod.metadata.name.startswith("pause-") for sp in cluster.pods)


def test_count_on_a_workload_is_refused_and_unknown_sim_keys_warned(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("  namespace: shop\n", "  namespace: shop\n  annotations: {sim.kubesched.io/count: \"3\"}\n")
    assert "applies to Pods and Nodes" in error_of(tmp_path, text)
    typo = POD.format(name="a").replace("  name: a\n", "  name: a\n  annotations: {sim.kubesched.io/arival: 5s}\n")
    cluster = load(tmp_path, typo)
    assert cluster.pods[0].arrival == 0.0
    assert any("sim.kubesched.io/arival" in w and "unknown simulation annotation" in w for w in cluster.warnings)
