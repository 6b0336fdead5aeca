"""Workloads expanded into the pods their controllers would create (backends.sim.workloads), through
the loader: Deployments, ReplicaSets, ReplicationControllers, StatefulSets, Jobs, adoption."""

from __future__ import annotations

import re
from pathlib import Path

from unit.backends.manifestkit import CONTAINER, DEPLOYMENT, JOB, POD, error_of, load


def test_deployment_expands_to_replicaset_and_pods(tmp_path: Path) -> None:
    cluster = load(tmp_path, DEPLOYMENT)
    assert len(cluster.pods) == 3
    (kind, ns, rs_name, selector), = cluster.workload_selectors
    assert (kind, ns) == ("ReplicaSet", "shop")
    m = re.fullmatch(r"web-([bcdfghjklmnpqrstvwxz2456789]{1,10})", rs_name)
    assert m, rs_name
    pth = m.group(1)
    names = [sp.pod.metadata.name for sp in cluster.pods]
    assert len(set(names)) == 3
    for sp in cluster.pods:
        pod = sp.pod
        assert re.fullmatch(rf"{rs_name}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", pod.metadata.name)
        assert pod.metadata.namespace == "shop"
        assert pod.metadata.labels == {"app": "web", "tier": "front", "pod-template-hash": pth}
        (ref,) = pod.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.controller) == ("apps/v1", "ReplicaSet", rs_name, True)
        assert pod.spec.containers[0].resources.requests == {"cpu": "100m", "memory": "128Mi"}
        assert selector.matches(pod.metadata.labels)
    # The RS selector includes the hash: another revision's pods are not selected.
    assert not selector.matches({"app": "web", "pod-template-hash": "other"})
    # Same input, same names (a scenario is reproducible).
    assert [sp.pod.metadata.name for sp in load(tmp_path, DEPLOYMENT).pods] == names


def test_generated_pods_do_not_share_mutable_state(tmp_path: Path) -> None:
    a, b, _ = load(tmp_path, DEPLOYMENT).pods
    a.pod.spec.node_name = "n1"
    a.pod.spec.containers[0].resources.requests["cpu"] = "9"
    assert b.pod.spec.node_name == "" and b.pod.spec.containers[0].resources.requests["cpu"] == "100m"


def test_template_change_changes_the_replicaset_hash(tmp_path: Path) -> None:
    one = load(tmp_path, DEPLOYMENT).workload_selectors[0][2]
    two = load(tmp_path, DEPLOYMENT.replace("cpu: 100m", "cpu: 200m")).workload_selectors[0][2]
    assert one != two


def test_replicas_default_to_one_and_zero_is_allowed(tmp_path: Path) -> None:
    assert len(load(tmp_path, DEPLOYMENT.replace("  replicas: 3\n", "")).pods) == 1
    assert load(tmp_path, DEPLOYMENT.replace("replicas: 3", "replicas: 0")).pods == []


def test_replicaset_and_replication_controller(tmp_path: Path) -> None:
    cluster = load(tmp_path, f"""
apiVersion: apps/v1
kind: ReplicaSet
metadata: {{name: rs}}
spec:
  replicas: 2
  selector:
    matchExpressions:
      - {{key: app, operator: In, values: [a, b]}}
  template:
    metadata:
      labels: {{app: a}}
    spec:
{CONTAINER}
---
apiVersion: v1
kind: ReplicationController
metadata: {{name: rc, namespace: legacy}}
spec:
  replicas: 4
  template:
    metadata:
      labels: {{app: old}}
    spec:
{CONTAINER}
""")
    rs_pods = [sp.pod for sp in cluster.pods if sp.pod.metadata.owner_references[0].kind == "ReplicaSet"]
    rc_pods = [sp.pod for sp in cluster.pods if sp.pod.metadata.owner_references[0].kind == "ReplicationController"]
    assert len(rs_pods) == 2 and len(rc_pods) == 4
    assert all(re.fullmatch(r"rs-[a-z0-9]{5}", p.metadata.name) for p in rs_pods)
    assert all(re.fullmatch(r"rc-[a-z0-9]{5}", p.metadata.name) and p.metadata.namespace == "legacy" for p in rc_pods)
    assert rc_pods[0].metadata.owner_references[0].api_version == "v1"
    kinds = {(k, ns, n) for k, ns, n, _ in cluster.workload_selectors}
    assert kinds == {("ReplicaSet", "default", "rs"), ("ReplicationController", "legacy", "rc")}
    rc_sel = next(s for k, _, _, s in cluster.workload_selectors if k == "ReplicationController")
    # An RC without a selector selects by its template's labels.
    assert rc_sel.matches({"app": "old"}) and not rc_sel.matches({"app": "a"})


def test_statefulset_names_and_labels(tmp_path: Path) -> None:
    cluster = load(tmp_path, f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: data}}
spec:
  serviceName: db
  replicas: 3
  ordinals: {{start: 2}}
  selector:
    matchLabels: {{app: db}}
  template:
    metadata:
      labels: {{app: db}}
    spec:
{CONTAINER}
""")
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["db-2", "db-3", "db-4"]
    pod = cluster.pods[1].pod
    assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == "db-3"
    assert pod.metadata.labels["apps.kubernetes.io/pod-index"] == "3"
    assert pod.metadata.labels["controller-revision-hash"].startswith("db-")
    assert pod.metadata.owner_references[0].kind == "StatefulSet"
    assert [(k, ns, n) for k, ns, n, _ in cluster.workload_selectors] == [("StatefulSet", "data", "db")]


def test_job_pods_bounded_by_completions_with_controller_labels(tmp_path: Path) -> None:
    cluster = load(tmp_path, JOB)
    assert len(cluster.pods) == 3  # min(parallelism 5, completions 3)
    pod = cluster.pods[0].pod
    assert re.fullmatch(r"etl-[bcdfghjklmnpqrstvwxz2456789]{5}", pod.metadata.name)
    uid = pod.metadata.owner_references[0].uid
    assert pod.metadata.owner_references[0].kind == "Job"
    assert pod.metadata.labels == {
        "app": "etl",
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "etl",
        "controller-uid": uid,
        "job-name": "etl",
    }
    # Jobs are not among the workloads whose selectors drive default spreading.
    assert cluster.workload_selectors == []


def test_job_parallelism_defaults_suspend_and_indexed(tmp_path: Path) -> None:
    assert len(load(tmp_path, JOB.replace("  parallelism: 5\n  completions: 3\n", "")).pods) == 1
    assert len(load(tmp_path, JOB.replace("  completions: 3\n", "")).pods) == 5
    assert load(tmp_path, JOB.replace("  parallelism: 5\n", "  parallelism: 5\n  suspend: true\n")).pods == []
    indexed = load(tmp_path, JOB.replace("  completions: 3\n", "  completions: 3\n  completionMode: Indexed\n"))
    names = [sp.pod.metadata.name for sp in indexed.pods]
    assert [n.rsplit("-", 1)[0] for n in names] == ["etl-0", "etl-1", "etl-2"]
    assert indexed.pods[2].pod.metadata.labels["batch.kubernetes.io/job-completion-index"] == "2"


def test_job_restart_policy_must_be_never_or_onfailure(tmp_path: Path) -> None:
    message = error_of(tmp_path, JOB.replace("restartPolicy: Never", "restartPolicy: Always"))
    assert message.endswith('Job batch/etl: The Job "etl" is invalid: spec.template.spec.restartPolicy: Required value: '
                            'valid values: "OnFailure", "Never"')
    # Without one, the same: kube does not blame the user for the Always that defaulting wrote.
    message = error_of(tmp_path, JOB.replace("      restartPolicy: Never\n", ""))
    assert message.endswith('spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"')
    message = error_of(tmp_path, JOB.replace("restartPolicy: Never", "restartPolicy: Sometimes"))
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never"' in message


def test_existing_pods_and_replicasets_are_adopted(tmp_path: Path) -> None:
    # What `kubectl get all -o yaml` gives: the Deployment, its ReplicaSet and one of its pods.
    cluster = load(tmp_path, DEPLOYMENT + f"""
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-7d9f
  namespace: shop
  ownerReferences:
    - {{apiVersion: apps/v1, kind: Deployment, name: web, uid: d1, controller: true}}
spec:
  replicas: 3
  selector:
    matchLabels: {{app: web, pod-template-hash: 7d9f}}
  template:
    metadata:
      labels: {{app: web, tier: front, pod-template-hash: 7d9f}}
    spec:
{CONTAINER}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7d9f-abcde
  namespace: shop
  labels: {{app: web, tier: front, pod-template-hash: 7d9f}}
  ownerReferences:
    - {{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9f, uid: r1, controller: true}}
spec:
  nodeName: n1
  containers: [{{name: c, image: pause}}]
status: {{phase: Running}}
""")
    names = sorted(sp.pod.metadata.name for sp in cluster.pods)
    assert len(names) == 3 and "web-7d9f-abcde" in names
    assert all(n.startswith("web-7d9f-") for n in names)
    assert [n for _, _, n, _ in cluster.workload_selectors] == ["web-7d9f"]


def test_generated_names_never_clash_with_explicit_pods(tmp_path: Path) -> None:
    ss = f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
{CONTAINER}
"""
    message = error_of(tmp_path, ss + "---" + POD.format(name="db-1"))
    assert "StatefulSet default/db" in message and "db-1" in message


def test_selector_mismatch_names_file_object_and_field(tmp_path: Path) -> None:
    message = error_of(tmp_path, DEPLOYMENT.replace("matchLabels: {app: web}", "matchLabels: {app: api}"), "web.yaml")
    assert message == (
        f"{tmp_path / 'web.yaml'}: document 1: Deployment shop/web: The Deployment \"web\" is invalid: "
        'spec.template.metadata.labels: Invalid value: {"app":"web","tier":"front"}: '
        "`selector` does not match template `labels`"
    )


def test_workload_selector_required_and_not_empty(tmp_path: Path) -> None:
    without = DEPLOYMENT.replace("  selector:\n    matchLabels: {app: web}\n", "")
    # A missing selector selects nothing, so kube reports the template's labels too.
    assert error_of(tmp_path, without).endswith(
        'Deployment shop/web: The Deployment "web" is invalid: [spec.selector: Required value, '
        'spec.template.metadata.labels: Invalid value: {"app":"web","tier":"front"}: '
        "`selector` does not match template `labels`]"
    )
    empty = DEPLOYMENT.replace("matchLabels: {app: web}", "matchLabels: {}")
    assert error_of(tmp_path, empty).endswith(
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment"
    )


def test_wrong_field_type_in_workload_is_named(tmp_path: Path) -> None:
    message = error_of(tmp_path, DEPLOYMENT.replace("replicas: 3", "replicas: three"))
    assert ('Deployment shop/web: Deployment in version "v1" cannot be handled as a Deployment: spec.replicas: '
            "expected `int") in message
    assert "got `str`" in message
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in error_of(
        tmp_path, DEPLOYMENT.replace("replicas: 3", "replicas: -1"))
