"""Simulator input: manifests -> ClusterInput (kinds, expansion, priority, annotations, errors, scenarios)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from kubesched.api.objects import Pod
from kubesched.api.quantity import resource_value
from kubesched.backends.sim.manifests import (
    ClusterInput,
    ManifestError,
    SimPod,
    load_objects,
    load_paths,
)
from kubesched.backends.sim.scenarios import builtin_scenarios, load_scenario, scenario_path

CONTAINER = """
      containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          resources:
            requests: {cpu: 100m, memory: 128Mi}
"""


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str, name: str = "cluster.yaml") -> ClusterInput:
    return load_paths([write(tmp_path, text, name)])


def pods_by_name(cluster: ClusterInput) -> dict[str, SimPod]:
    return {sp.pod.metadata.name: sp for sp in cluster.pods}


def error_of(tmp_path: Path, text: str, name: str = "cluster.yaml") -> str:
    with pytest.raises(ManifestError) as info:
        load(tmp_path, text, name)
    message = str(info.value)
    assert "Traceback" not in message and "\n" not in message
    return message


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
    - name: c
      image: nginx
      resources:
        requests: {{cpu: 250m, memory: 64Mi}}
"""


# --- core kinds ------------------------------------------------------------------------------------


def test_pod_gets_api_server_defaults(tmp_path: Path) -> None:
    cluster = load(tmp_path, POD.format(name="web"))
    (sp,) = cluster.pods
    pod = sp.pod
    assert isinstance(pod, Pod)
    assert pod.metadata.namespace == "default"
    assert pod.spec.scheduler_name == "default-scheduler"
    assert pod.spec.restart_policy == "Always"
    assert pod.status.phase == "Pending"
    assert pod.spec.priority == 0
    assert pod.spec.preemption_policy == "PreemptLowerPriority"
    assert re.fullmatch(r"[0-9a-f-]{36}", pod.metadata.uid)
    keys = {(t.key, t.effect, t.toleration_seconds) for t in pod.spec.tolerations}
    assert keys == {("node.kubernetes.io/not-ready", "NoExecute", 300), ("node.kubernetes.io/unreachable", "NoExecute", 300)}
    assert sp.arrival == 0.0 and sp.duration is None
    # Namespaces the pods use exist, with the metadata.name label.
    ns = {n.metadata.name: n for n in cluster.namespaces}
    assert ns["default"].metadata.labels == {"kubernetes.io/metadata.name": "default"}
    assert "kube-system" in ns


def test_uids_are_deterministic_and_explicit_ones_kept(tmp_path: Path) -> None:
    text = POD.format(name="a") + "---" + POD.format(name="b").replace("name: b", "name: b\n  uid: given-uid")
    first = pods_by_name(load(tmp_path, text))
    second = pods_by_name(load(tmp_path, text))
    assert first["a"].pod.metadata.uid == second["a"].pod.metadata.uid
    assert first["b"].pod.metadata.uid == "given-uid"
    assert first["a"].pod.metadata.uid != load(tmp_path, POD.format(name="c")).pods[0].pod.metadata.uid


def test_existing_not_ready_toleration_is_not_duplicated(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: team}
        spec:
          schedulerName: my-scheduler
          tolerations:
            - {key: node.kubernetes.io/not-ready, operator: Exists}
          containers: [{name: c, image: nginx}]
    """)
    pod = cluster.pods[0].pod
    assert pod.spec.scheduler_name == "my-scheduler"
    assert pod.metadata.namespace == "team"
    assert [t.key for t in pod.spec.tolerations] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert "team" in {n.metadata.name for n in cluster.namespaces}


def test_node_capacity_used_when_no_allocatable_and_kubelet_labels(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Node
        metadata:
          name: n1
          labels: {kubernetes.io/arch: arm64}
        spec:
          unschedulable: true
        status:
          capacity: {cpu: "4", memory: 16Gi}
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: n2}
        status:
          capacity: {cpu: "8", memory: 32Gi, pods: "58"}
          allocatable: {cpu: 7910m, memory: 30Gi, pods: "58"}
    """)
    n1, n2 = cluster.nodes
    assert n1.status.allocatable == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert n1.metadata.labels == {
        "kubernetes.io/arch": "arm64",
        "kubernetes.io/hostname": "n1",
        "kubernetes.io/os": "linux",
    }
    assert [(t.key, t.effect) for t in n1.spec.taints] == [("node.kubernetes.io/unschedulable", "NoSchedule")]
    assert n2.status.allocatable == {"cpu": "7910m", "memory": "30Gi", "pods": "58"}
    assert n2.spec.taints == []
    assert n1.metadata.uid and n1.metadata.uid != n2.metadata.uid


def test_node_without_resources_is_a_warning(tmp_path: Path) -> None:
    cluster = load(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: bare}\n")
    assert cluster.nodes[0].status.allocatable == {"pods": "110"}
    assert any("Node bare" in w and "allocatable" in w for w in cluster.warnings)


def test_namespace_and_service(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Namespace
        metadata:
          name: shop
          labels: {team: storefront}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web, namespace: shop}
        spec:
          selector: {app: web}
          ports: [{port: 80}]
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: external, namespace: shop}
        spec: {type: ExternalName, externalName: example.com}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: headless-no-selector, namespace: shop}
        spec: {clusterIP: None}
    """)
    shop = next(n for n in cluster.namespaces if n.metadata.name == "shop")
    assert shop.metadata.labels == {"team": "storefront", "kubernetes.io/metadata.name": "shop"}
    assert [(k, ns, n) for k, ns, n, _ in cluster.workload_selectors] == [("Service", "shop", "web")]
    sel = cluster.workload_selectors[0][3]
    assert sel.matches({"app": "web", "x": "y"}) and not sel.matches({"app": "db"})


def test_unknown_kinds_and_foreign_groups_are_skipped_with_a_warning(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: b}
        ---
        apiVersion: example.com/v1
        kind: Deployment
        metadata: {name: not-apps}
        ---
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: agent}
    """)
    assert cluster.pods == [] and cluster.workload_selectors == []
    text = "\n".join(cluster.warnings)
    assert "skipped 2 objects of kind ConfigMap (v1)" in text
    assert "Deployment (example.com/v1)" in text
    assert "DaemonSet" in text and "cluster.yaml: document 4" in text


def test_timestamps_stay_strings(tmp_path: Path) -> None:
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Pod
        metadata:
          name: exported
          creationTimestamp: 2024-05-01T10:00:00Z
        spec:
          nodeName: n1
          containers: [{name: c, image: nginx}]
        status:
          phase: Running
          startTime: 2024-05-01T10:00:05Z
    """)
    pod = cluster.pods[0].pod
    assert pod.metadata.creation_timestamp == "2024-05-01T10:00:00Z"
    assert pod.status.phase == "Running" and pod.spec.node_name == "n1"


# --- files, directories, lists ---------------------------------------------------------------------------


def test_directories_are_read_recursively_in_sorted_order(tmp_path: Path) -> None:
    write(tmp_path, POD.format(name="b"), "d/2-b.yaml")
    write(tmp_path, POD.format(name="a"), "d/1-a.yml")
    write(tmp_path, POD.format(name="c"), "d/sub/3-c.yaml")
    write(tmp_path, "not: a manifest", "d/notes.txt")
    write(tmp_path, "on: push\njobs: {}", "d/.github/workflows/ci.yaml")
    write(tmp_path, "not: a manifest", "d/.hidden.yaml")
    pod_json = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    (tmp_path / "d" / "0-j.json").write_text(json.dumps(pod_json))
    cluster = load_paths([tmp_path / "d"])
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["j", "a", "b", "c"]
    assert cluster.name == "d"


def test_kind_list_in_yaml_and_json(tmp_path: Path) -> None:
    items = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": {"cpu": "2"}}}
        for i in range(3)
    ]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    write(tmp_path, """
        apiVersion: v1
        kind: PodList
        items:
          - apiVersion: v1
            kind: Pod
            metadata: {name: p1}
            spec: {containers: [{name: c, image: pause}]}
          - apiVersion: v1
            kind: Pod
            metadata: {name: p2}
            spec: {containers: [{name: c, image: pause}]}
    """, "pods.yaml")
    cluster = load_paths([tmp_path / "nodes.json", tmp_path / "pods.yaml"])
    assert [n.metadata.name for n in cluster.nodes] == ["n0", "n1", "n2"]
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["p1", "p2"]


def test_list_item_errors_name_the_item(tmp_path: Path) -> None:
    message = error_of(tmp_path, """
        apiVersion: v1
        kind: List
        items:
          - {apiVersion: v1, kind: Pod, metadata: {name: ok}, spec: {containers: [{name: c, image: pause}]}}
          - {apiVersion: v1, kind: Pod, metadata: {}, spec: {containers: [{name: c, image: pause}]}}
    """)
    assert message.startswith(f"{tmp_path / 'cluster.yaml'}: document 1, item 2: Pod default/")
    assert "metadata.name: Required value" in message


def test_missing_path_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no such file or directory"):
        load_paths([tmp_path / "nope.yaml"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ManifestError, match="no manifest files"):
        load_paths([tmp_path / "empty"])
    message = error_of(tmp_path, POD.format(name="a") + "---\nkind: Pod\nmetadata: {name: [unclosed\n")
    assert "cluster.yaml: document 2: line" in message and "invalid YAML" in message
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"kind": "Pod",}')
    with pytest.raises(ManifestError, match=r"bad.json: line 1 column \d+: invalid JSON"):
        load_paths([bad_json])


def test_document_that_is_not_an_object(tmp_path: Path) -> None:
    message = error_of(tmp_path, "- just\n- a list\n")
    assert "cluster.yaml: document 1: expected a Kubernetes object" in message
    assert "kind: Required value" in error_of(tmp_path, "metadata: {name: x}\n")


def test_duplicate_objects_are_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, POD.format(name="a") + "---" + POD.format(name="a"))
    assert "document 2: Pod default/a: defined twice: first at" in message and "document 1" in message


# --- workload expansion ------------------------------------------------------------------------------------


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web, tier: front}
    spec:
""" + CONTAINER


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


JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: etl
  namespace: batch
spec:
  parallelism: 5
  completions: 3
  template:
    metadata:
      labels: {app: etl}
    spec:
      restartPolicy: Never
""" + CONTAINER


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
    assert message.endswith('Job batch/etl: The Job "etl" is invalid: spec.template.spec.restartPolicy: Unsupported value: '
                            '"Always": supported values: "OnFailure", "Never"')
    # Without one, the pod template's default (Always) is what is refused, as kube does.
    message = error_of(tmp_path, JOB.replace("      restartPolicy: Never\n", ""))
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always"' in message


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


# --- priority -------------------------------------------------------------------------------------------------


CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 10000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: polite}
value: 5000
preemptionPolicy: Never
---
"""


def test_priority_from_class_and_preemption_policy(tmp_path: Path) -> None:
    text = CLASSES + POD.format(name="a").replace("spec:\n", "spec:\n  priorityClassName: high\n") + "---" + (
        POD.format(name="b").replace("spec:\n", "spec:\n  priorityClassName: polite\n")
    ) + "---" + POD.format(name="c").replace("spec:\n", "spec:\n  priorityClassName: system-node-critical\n")
    pods = pods_by_name(load(tmp_path, text))
    assert (pods["a"].pod.spec.priority, pods["a"].pod.spec.preemption_policy) == (10000, "PreemptLowerPriority")
    assert (pods["b"].pod.spec.priority, pods["b"].pod.spec.preemption_policy) == (5000, "Never")
    assert pods["c"].pod.spec.priority == 2000001000


def test_builtin_classes_always_exist(tmp_path: Path) -> None:
    classes = {pc.metadata.name: pc.value for pc in load(tmp_path, POD.format(name="a")).priority_classes}
    assert classes == {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
    # A cluster dump that includes them is fine.
    dump = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-node-critical}\nvalue: 2000001000\n"
    assert len(load(tmp_path, dump).priority_classes) == 2


def test_global_default_class_applies_to_pods_without_a_class(tmp_path: Path) -> None:
    text = CLASSES + """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: normal}
value: 1000
globalDefault: true
---
""" + POD.format(name="plain")
    pod = load(tmp_path, text).pods[0].pod
    assert (pod.spec.priority, pod.spec.priority_class_name) == (1000, "normal")


def test_workload_template_priority(tmp_path: Path) -> None:
    text = CLASSES + DEPLOYMENT.replace("    spec:\n", "    spec:\n      priorityClassName: high\n", 1)
    assert {sp.pod.spec.priority for sp in load(tmp_path, text).pods} == {10000}


def test_missing_priority_class_names_pod_and_class(tmp_path: Path) -> None:
    message = error_of(tmp_path, POD.format(name="a").replace("spec:\n", "spec:\n  priorityClassName: gold\n"))
    assert message == (
        f"{tmp_path / 'cluster.yaml'}: document 1: Pod default/a: spec.priorityClassName: "
        "no PriorityClass with name gold was found"
    )
    in_template = DEPLOYMENT.replace("    spec:\n", "    spec:\n      priorityClassName: gold\n", 1)
    message = error_of(tmp_path, in_template)
    assert "Deployment shop/web: spec.template.spec.priorityClassName: no PriorityClass with name gold" in message


def test_overhead_needs_a_runtime_class(tmp_path: Path) -> None:
    # The RuntimeClass admission plugin refuses overhead a pod sets without naming a RuntimeClass.
    message = error_of(tmp_path, POD.format(name="a").replace("spec:\n", "spec:\n  overhead: {cpu: 10m}\n"))
    assert message == (f"{tmp_path / 'cluster.yaml'}: document 1: Pod default/a: spec.overhead: "
                       "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
    # A pod exported from a cluster names its RuntimeClass and carries the overhead it was given.
    exported = POD.format(name="a").replace("spec:\n", "spec:\n  runtimeClassName: kata\n  overhead: {cpu: 10m}\n")
    assert load(tmp_path, exported).pods[0].pod.spec.overhead == {"cpu": "10m"}
    bad_name = POD.format(name="a").replace("spec:\n", "spec:\n  runtimeClassName: Kata_\n")
    assert 'spec.runtimeClassName: Invalid value: "Kata_"' in error_of(tmp_path, bad_name)


def test_priority_that_disagrees_with_class_is_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, CLASSES + POD.format(name="a").replace(
        "spec:\n", "spec:\n  priorityClassName: high\n  priority: 7\n"))
    assert "spec.priority: the integer value of priority (7) must not be provided" in message
    assert "computed 10000" in message
    message = error_of(tmp_path, CLASSES + POD.format(name="a").replace(
        "spec:\n", "spec:\n  priorityClassName: polite\n  preemptionPolicy: PreemptLowerPriority\n"))
    assert "spec.preemptionPolicy:" in message and "computed Never" in message
    # A matching value (as in an exported pod) is fine.
    ok = CLASSES + POD.format(name="a").replace("spec:\n", "spec:\n  priorityClassName: high\n  priority: 10000\n")
    assert load(tmp_path, ok).pods[0].pod.spec.priority == 10000


def test_exported_pods_keep_their_admitted_priority(tmp_path: Path) -> None:
    # Created before the default class existed, or its class deleted since: the cluster keeps it.
    text = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: normal}
value: 1000
globalDefault: true
---
apiVersion: v1
kind: Pod
metadata: {name: old, resourceVersion: "4711", creationTimestamp: 2023-01-01T00:00:00Z}
spec:
  priority: 0
  nodeName: n1
  containers: [{name: c, image: pause}]
---
apiVersion: v1
kind: Pod
metadata: {name: orphaned-class, creationTimestamp: 2023-01-01T00:00:00Z}
spec:
  priorityClassName: deleted-since
  priority: 50
  containers: [{name: c, image: pause}]
"""
    pods = pods_by_name(load(tmp_path, text))
    assert pods["old"].pod.spec.priority == 0
    assert pods["orphaned-class"].pod.spec.priority == 50
    assert pods["orphaned-class"].pod.spec.preemption_policy == "PreemptLowerPriority"


def test_priority_class_validation(tmp_path: Path) -> None:
    two_defaults = CLASSES.replace("value: 10000", "value: 10000\nglobalDefault: true").replace(
        "value: 5000", "value: 5000\nglobalDefault: true")
    assert "PriorityClass high is already marked as default" in error_of(tmp_path, two_defaults + POD.format(name="a"))
    too_high = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: top}\nvalue: 1000000001\n"
    assert error_of(tmp_path, too_high).endswith(
        'PriorityClass top: The PriorityClass "top" is invalid: value: Forbidden: maximum allowed value of a user '
        "defined priority is 1000000000"
    )
    reserved = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 1\n"
    assert error_of(tmp_path, reserved).endswith(
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: system-mine is not a known system priority class"
    )
    # No value (or value: null) is value 0 to the API server, as to its Go decoder.
    for no_value in ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\n",
                     "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\nvalue: null\n"):
        assert [pc.value for pc in load(tmp_path, no_value).priority_classes if pc.metadata.name == "x"] == [0]


def test_nulls_are_go_zero_values(tmp_path: Path) -> None:
    text = POD.format(name="a").replace("spec:\n", "spec:\n  nodeSelector: {disk: null}\n  tolerations: null\n")
    pod = load(tmp_path, text.replace("metadata:\n", "metadata:\n  labels: {tier: null}\n", 1)).pods[0].pod
    assert pod.metadata.labels == {"tier": ""} and pod.spec.node_selector == {"disk": ""}


# --- simulation annotations --------------------------------------------------------------------------------------


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


# --- error messages -----------------------------------------------------------------------------------------------


def test_bad_quantity_in_pod_names_file_object_and_field(tmp_path: Path) -> None:
    message = error_of(tmp_path, POD.format(name="a").replace("cpu: 250m", "cpu: lots"), "pods.yaml")
    assert message == (
        f"{tmp_path / 'pods.yaml'}: document 1: Pod default/a: The Pod \"a\" is invalid: "
        "spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\": quantities must match the regular "
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_bad_quantity_in_template_points_into_the_template(tmp_path: Path) -> None:
    message = error_of(tmp_path, DEPLOYMENT.replace("memory: 128Mi", "memory: 1.5.5Gi"))
    assert ('Deployment shop/web: The Deployment "web" is invalid: '
            'spec.template.spec.containers[0].resources.requests[memory]: Invalid value: "1.5.5Gi"') in message


def test_bad_node_quantity(tmp_path: Path) -> None:
    message = error_of(tmp_path, "kind: Node\napiVersion: v1\nmetadata: {name: n1}\nstatus: {allocatable: {memory: 12XB}}\n")
    assert 'document 1: Node n1: The Node "n1" is invalid: status.allocatable.memory: Invalid value: "12XB"' in message
    message = error_of(tmp_path, "kind: Node\napiVersion: v1\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"-2\"}}\n")
    assert message.endswith('Node n1: The Node "n1" is invalid: status.capacity.cpu: Invalid value: "-2": must be greater '
                            "than or equal to 0")


def test_missing_name(tmp_path: Path) -> None:
    message = error_of(tmp_path, "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: pause}]}\n")
    assert message.endswith('document 1: Pod default/*: The Pod "" is invalid: metadata.name: Required value: name or '
                            "generateName is required")
    message = error_of(tmp_path, DEPLOYMENT.replace("  name: web\n", "", 1))
    assert 'Deployment shop/*: The Deployment "" is invalid: metadata.name: Required value' in message
    # generateName is enough for a pod.
    pod = load(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {generateName: job-}\nspec: {containers: [{name: c, image: pause}]}\n")
    assert re.fullmatch(r"job-[a-z0-9]{5}", pod.pods[0].pod.metadata.name)


def test_invalid_name_and_wrong_type(tmp_path: Path) -> None:
    assert 'metadata.name: Invalid value: "My_Pod"' in error_of(tmp_path, POD.format(name="My_Pod"))
    message = error_of(tmp_path, POD.format(name="a").replace("  name: a\n", "  name: a\n  labels: {replicas: 3}\n"))
    assert message.endswith('Pod default/a: Pod in version "v1" cannot be handled as a Pod: metadata.labels[...]: '
                            "expected `str`, got `int`")


def test_gated_pod_with_node_name_is_refused(tmp_path: Path) -> None:
    text = POD.format(name="a").replace("spec:\n", "spec:\n  nodeName: n1\n  schedulingGates: [{name: x}]\n")
    assert error_of(tmp_path, text).endswith(
        'The Pod "a" is invalid: spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared')


def test_load_objects_from_dicts() -> None:
    cluster = load_objects([
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    ])
    assert cluster.pods[0].pod.metadata.name == "p"
    with pytest.raises(ManifestError, match=re.escape('<input>: document 1: Pod default/p: Pod in version "v1" cannot be '
                                                      "handled as a Pod: spec.containers: expected `array`")):
        load_objects([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": 3}}])


# --- built-in scenarios ------------------------------------------------------------------------------------------


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


# --- validation and keep_going ---------------------------------------------------------------------------------


def named_pod(name: str, spec: str = "", namespace: str = "default") -> str:
    """A pod document; `spec` adds lines under spec (indented by two)."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n"
            f"  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: 100m}}}}}}]\n{spec}")


MIXED = "---\n".join([
    named_pod("ok-1"),
    named_pod("bad-name").replace("name: c,", "name: Web,"),
    "apiVersion: v1\nkind: Node\nmetadata: {name: huge}\nstatus: {capacity: {cpu: \"1e30\", memory: 99999999999999999999999}}\n",
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"4\", memory: 8Gi}}\n",
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gold}\nvalue: 2000000000\n",
    named_pod("wants-gold", "  priorityClassName: gold\n"),
    "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, labels: {\"bad key\": x}}\n",
    named_pod("in-team", namespace="team"),
    named_pod("weighty", "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n"
                         "      - {weight: 0, preference: {}}\n"),
    named_pod("ok-2"),
])


def test_keep_going_drops_refused_objects_and_lists_them(tmp_path: Path) -> None:
    path = write(tmp_path, MIXED)
    cluster = load_paths([path], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["ok-1", "ok-2"]
    assert [n.metadata.name for n in cluster.nodes] == ["n1"]
    assert "gold" not in {pc.metadata.name for pc in cluster.priority_classes}
    assert "team" not in {ns.metadata.name for ns in cluster.namespaces}
    f = str(path)
    assert cluster.errors == [
        f'{f}: document 2: Pod default/bad-name: The Pod "bad-name" is invalid: spec.containers[0].name: Invalid value: '
        "\"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
        "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        f'{f}: document 3: Node huge: The Node "huge" is invalid: [status.capacity.cpu: Invalid value: "1e30": must be less '
        "than or equal to 9223372036854775807m, status.capacity.memory: Invalid value: 99999999999999999999999: must be "
        "less than or equal to 9223372036854775807]",
        f'{f}: document 5: PriorityClass gold: The PriorityClass "gold" is invalid: value: Forbidden: maximum allowed value '
        "of a user defined priority is 1000000000",
        f'{f}: document 7: Namespace team: The Namespace "team" is invalid: metadata.labels: Invalid value: "bad key": name '
        "part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        f'{f}: document 9: Pod default/weighty: The Pod "weighty" is invalid: spec.affinity.nodeAffinity.'
        "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
        # Objects that need a refused one fail as they would on the API server.
        f"{f}: document 6: Pod default/wants-gold: spec.priorityClassName: no PriorityClass with name gold was found",
        f'{f}: document 8: Pod team/in-team: namespaces "team" not found',
    ]
    assert all("\n" not in e for e in cluster.errors)


def test_without_keep_going_the_first_refusal_raises(tmp_path: Path) -> None:
    message = error_of(tmp_path, MIXED)
    assert "document 2: Pod default/bad-name: The Pod \"bad-name\" is invalid: spec.containers[0].name" in message
    assert load(tmp_path, named_pod("a")).errors == []


def test_load_objects_keep_going_and_fatal_shape_errors() -> None:
    good = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}
    bad = {**good, "metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "x", "ports": [
        {"containerPort": 80, "hostPort": 70000}]}]}}
    cluster = load_objects([good, bad], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["p"]
    assert cluster.errors == [
        '<input>: document 2: Pod default/q: The Pod "q" is invalid: spec.containers[0].ports[0].hostPort: Invalid value: '
        "70000: must be between 1 and 65535, inclusive"
    ]
    # A document that is not an object is the input's shape, not one object: fatal in both modes.
    with pytest.raises(ManifestError, match="expected a Kubernetes object"):
        load_objects([good, ["not", "an", "object"]], keep_going=True)


def test_workload_refused_with_its_template_and_the_rest_runs(tmp_path: Path) -> None:
    spread = DEPLOYMENT.replace("    spec:\n", "    spec:\n      topologySpreadConstraints:\n"
                                              "      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: Sometimes}\n", 1)
    cluster = load_paths([write(tmp_path, spread + "---\n" + named_pod("ok"))], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["ok"] and cluster.workload_selectors == []
    (error,) = cluster.errors
    assert error.endswith(
        'Deployment shop/web: The Deployment "web" is invalid: [spec.template.spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero, spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable: "
        'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"]'
    )


@pytest.mark.parametrize(("spec", "expected"), [
    ("  tolerations: [{key: a, operator: Maybe}]\n",
     'spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"'),
    ("  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
     "      - {topologyKey: \"\", labelSelector: {matchLabels: {app: a}}}\n",
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not "
     "be empty"),
    ("  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n"
     "        - matchExpressions: [{key: zone, operator: Near, values: [a]}]\n",
     "matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"),
    ("  nodeSelector: {zone: \"a b\"}\n", 'spec.nodeSelector: Invalid value: "a b"'),
])
def test_api_server_refusals_through_the_loader(tmp_path: Path, spec: str, expected: str) -> None:
    assert expected in error_of(tmp_path, named_pod("p", spec))


def test_api_version_is_required_and_must_be_served(tmp_path: Path) -> None:
    assert "cluster.yaml: document 1: Pod: apiVersion: Required value" in error_of(
        tmp_path, "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
    old = DEPLOYMENT.replace("apps/v1", "apps/v1beta1")
    assert 'Deployment shop/web: no matches for kind "Deployment" in version "apps/v1beta1"' in error_of(tmp_path, old)


def test_huge_scalars_are_cut_in_messages(tmp_path: Path) -> None:
    big = "x" * 10_000_000
    message = error_of(tmp_path, named_pod("p").replace("name: c,", f"name: {big},"))
    assert len(message) < 2000 and "...(9999900 more)" in message
    for text in (named_pod(big), named_pod("p", namespace=big), f"apiVersion: v1\nkind: {big}\n"):
        cluster = load_paths([write(tmp_path, text)], keep_going=True)
        assert all(len(line) < 2000 for line in cluster.errors + cluster.warnings)
        assert len(cluster.errors + cluster.warnings) == 1


def test_overflowing_quantities_never_reach_scheduling(tmp_path: Path) -> None:
    import asyncio

    from kubesched.backends.sim.engine import Simulation
    from kubesched.config.parse import default_config

    text = "---\n".join([
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"4\", memory: 8Gi}}\n",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus: {capacity: {cpu: \"1e1000000\"}}\n",
        named_pod("big").replace("cpu: 100m", "cpu: \"1e30\""),
        named_pod("small"),
    ])
    cluster = load_paths([write(tmp_path, text)], keep_going=True)
    assert len(cluster.errors) == 2
    result = asyncio.run(asyncio.wait_for(Simulation(cluster, default_config(), seed=0).run(), timeout=60))
    assert result.placements == {"default/small": "n1"}


def test_job_selector_without_manual_selector(tmp_path: Path) -> None:
    on_generated = JOB.replace("spec:\n  parallelism", "spec:\n  selector: {matchLabels: {batch.kubernetes.io/job-name: etl}}\n"
                                                       "  parallelism", 1)
    assert len(load(tmp_path, on_generated).pods) == 3
    on_app = on_generated.replace("batch.kubernetes.io/job-name: etl", "app: etl")
    assert 'spec.selector: Invalid value: {"matchLabels":{"app":"etl",' in error_of(tmp_path, on_app)
    assert "`selector` not auto-generated" in error_of(tmp_path, on_app)


def test_pods_bound_by_node_name_cannot_overflow_a_node(tmp_path: Path) -> None:
    # nodeName skips the fit check, so only the loader keeps the node's summed requests in int64.
    big = named_pod("b", "  nodeName: n1\n").replace("cpu: 100m", f"memory: \"{2**62}\"")
    docs = [big.replace("name: b,", f"name: b{i},") for i in range(3)]
    cluster = load_paths([write(tmp_path, "---\n".join(docs))], keep_going=True)
    assert [sp.pod.metadata.name for sp in cluster.pods] == ["b0"]
    assert cluster.errors[0].endswith(
        'document 2: Pod default/b1: spec.nodeName: the memory requests of the pods bound to node "n1" add up beyond '
        "9223372036854775807"
    )
    assert len(cluster.errors) == 2


def test_services_are_validated(tmp_path: Path) -> None:
    svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}}\n"
    assert error_of(tmp_path, svc).endswith('Service default/web: The Service "web" is invalid: spec.ports: Required value')
    two = svc.replace("spec: {", "spec: {ports: [{port: 80}, {port: 70000, name: b}], ")
    assert error_of(tmp_path, two).endswith(
        'The Service "web" is invalid: [spec.ports[0].name: Required value, spec.ports[1].port: Invalid value: 70000: must '
        "be between 1 and 65535, inclusive]")
    # kube 1.34 names Services with DNS-1035 labels: a letter first.
    digit_first = svc.replace("name: web", "name: 1web").replace("spec: {", "spec: {ports: [{port: 80}], ")
    assert error_of(tmp_path, digit_first).endswith(
        'metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '
        "'-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def test_copies_and_generated_names_stay_valid_names(tmp_path: Path) -> None:
    long = "a" * 252
    text = named_pod(long).replace(f"  name: {long},", f"  name: {long},")
    text = text.replace(f"metadata: {{name: {long}, namespace: default}}",
                        f"metadata: {{name: {long}, namespace: default, annotations: {{sim.kubesched.io/count: \"3\"}}}}")
    message = error_of(tmp_path, text)
    assert f'metadata.name: Invalid value: "{"a" * 100}"...(154 more): must be no more than 253 characters' in message
    generated = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: " + "g" * 100 + "-}\n" \
                "spec: {containers: [{name: c, image: x}]}\n"
    (sp,) = load(tmp_path, generated).pods
    assert len(sp.pod.metadata.name) == 63 and sp.pod.metadata.name.startswith("g" * 58)
