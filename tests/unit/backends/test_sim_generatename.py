"""metadata.generateName on every kind the simulator reads: the API server names the object (the
prefix, cut to 58 characters, and 5 characters of kube's alphabet) before it validates it, and so
does the loader, from the run's seed; workloads named so expand into their pods as usual."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kubesched.backends.sim.manifests import load_objects, load_paths
from unit.backends.manifestkit import write

SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
SELECTOR = {"matchLabels": {"app": "a"}}
JOB_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}

# One object of every kind the loader reads, each with a generateName and no name.
OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "ns-"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "node-"}, "status": {"capacity": {"cpu": "8"}}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"generateName": "pc-"}, "value": 5},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"}, "spec": TEMPLATE["spec"]},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"generateName": "svc-"},
     "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generateName": "deploy-"},
     "spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generateName": "rs-"},
     "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generateName": "ss-"},
     "spec": {"selector": SELECTOR, "template": TEMPLATE}},
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"generateName": "rc-"},
     "spec": {"selector": {"app": "a"}, "template": TEMPLATE}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "job-"},
     "spec": {"parallelism": 3, "completions": 3, "template": JOB_TEMPLATE}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"generateName": "pvc-"},
     "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"generateName": "pv-"},
     "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"generateName": "sc-"}, "provisioner": "x"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"generateName": "driver-"}, "spec": {}},
    {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"generateName": "gang-"},
     "spec": {"minMember": 1}},
    {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota", "metadata": {"generateName": "quota-"},
     "spec": {"min": {"cpu": "1"}, "max": {"cpu": "2"}}},
]


def names(cluster: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {
        "Namespace": [n.metadata.name for n in cluster.namespaces],
        "Node": [n.metadata.name for n in cluster.nodes],
        "PriorityClass": [p.metadata.name for p in cluster.priority_classes],
        "Pod": [sp.pod.metadata.name for sp in cluster.pods],
    }
    for kind, _, name, _ in cluster.workload_selectors:
        out.setdefault(kind, []).append(name)
    for _, obj, _ in [*cluster.storage, *cluster.custom_objects]:
        out.setdefault(obj.kind, []).append(obj.metadata.name)
    # A Deployment shows in its ReplicaSet's name, a Job in its pods' label.
    out["Deployment"] = [rs.rsplit("-", 1)[0] for rs in out.get("ReplicaSet", []) if rs.startswith("deploy-")]
    out["Job"] = sorted({sp.pod.metadata.labels["batch.kubernetes.io/job-name"] for sp in cluster.pods
                         if "batch.kubernetes.io/job-name" in sp.pod.metadata.labels})
    return out


def test_every_kind_is_named_from_its_generate_name_and_expanded() -> None:
    cluster = load_objects(OBJECTS, keep_going=True)
    assert cluster.errors == []
    found = names(cluster)
    for obj in OBJECTS:
        prefix = obj["metadata"]["generateName"]
        assert any(re.fullmatch(prefix + SUFFIX, n) for n in found.get(obj["kind"], [])), (obj["kind"], found.get(obj["kind"]))
    pods = found["Pod"]
    # Each workload's pods carry its generated name, as its controller names them.
    (deployment,) = [n for n in found["ReplicaSet"] if n.startswith("deploy-")]
    assert sum(p.startswith(f"{deployment}-") for p in pods) == 2
    (job_name,) = found["Job"]
    assert sum(p.startswith(f"{job_name}-") for p in pods) == 3
    (stateful,) = found["StatefulSet"]
    assert f"{stateful}-0" in pods


def test_names_repeat_with_the_seed_and_change_with_another() -> None:
    first, again = names(load_objects(OBJECTS)), names(load_objects(OBJECTS))
    other = names(load_objects(OBJECTS, seed=7))
    assert first == again and names(load_objects(OBJECTS, seed=7)) == other
    for kind in ("Namespace", "Pod", "Job", "Deployment", "StatefulSet"):
        assert first[kind] != other[kind]
    # Seed 0 (the default) keeps the names pods and nodes always had (their uids, and so their
    # drawn usage, with them).
    assert load_objects([OBJECTS[3]]).pods[0].pod.metadata.name == "pod-rh9g5"
    pool = {**OBJECTS[1], "metadata": {"generateName": "pool-", "annotations": {"sim.kubesched.io/count": "2"}}}
    assert [n.metadata.name for n in load_objects([pool]).nodes] == ["pool-78ns2", "pool-qpxkv"]


def test_kueue_intro_job_runs(tmp_path: Path) -> None:
    """kubernetes-engine-samples batch/kueue-intro/job-team-a.yaml (less its suspend, which leaves
    the Job to Kueue): the API server names it; it was refused as nameless."""
    path = write(tmp_path, """
        apiVersion: batch/v1
        kind: Job
        metadata:
          namespace: team-a
          generateName: sample-job-team-a-
          labels: {kueue.x-k8s.io/queue-name: lq-team-a}
        spec:
          ttlSecondsAfterFinished: 60
          parallelism: 3
          completions: 3
          template:
            spec:
              containers:
              - name: dummy-job
                image: gcr.io/k8s-staging-perf-tests/sleep:latest
                resources: {requests: {cpu: 500m, memory: 512Mi}}
              restartPolicy: Never
    """)
    cluster = load_paths([path])
    assert len(cluster.pods) == 3
    assert all(re.fullmatch(f"sample-job-team-a-{SUFFIX}-{SUFFIX}", sp.pod.metadata.name) for sp in cluster.pods)
    assert {sp.pod.metadata.namespace for sp in cluster.pods} == {"team-a"}


def test_a_refused_object_is_named_as_the_api_server_names_it() -> None:
    """Validation sees the generated name too: `The Job "Job-xxxxx" is invalid`, with the prefix's
    problem and the name's, as v1.37.2 reports them."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "Job-"}, "spec": {"template": JOB_TEMPLATE}}
    (error,) = load_objects([job], keep_going=True).errors
    match = re.search(f'Job default/(Job-{SUFFIX}): The Job "(Job-{SUFFIX})" is invalid: '
                      r'\[metadata.generateName: Invalid value: "Job-": .*, metadata.name: Invalid value: "(Job-\w+)": ', error)
    assert match and match.group(1) == match.group(2) == match.group(3), error


def test_the_prefix_is_cut_to_58_characters() -> None:
    long = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generateName": "r" * 70},
            "spec": {"selector": SELECTOR, "template": TEMPLATE}}
    (pod,) = load_objects([long]).pods
    assert re.fullmatch("r" * 58 + SUFFIX + "-" + SUFFIX, pod.pod.metadata.name)


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_neither_name_nor_generate_name_is_refused_in_kubes_words(kind: str) -> None:
    obj = next(o for o in OBJECTS if o["kind"] == kind)
    (error,) = load_objects([{**obj, "metadata": {}}], keep_going=True).errors
    assert error.endswith(f'{kind} default/*: The {kind} "" is invalid: metadata.name: Required value: name or generateName '
                          "is required")
