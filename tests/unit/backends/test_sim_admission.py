"""What the emulated API server does on create (backends.sim.admission), seen through the loader:
defaults of pods, nodes and namespaces, DefaultTolerationSeconds, Priority and RuntimeClass admission."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from kubesched.api.objects import Pod
from kubesched.api.podinfo import make_pod_info
from kubesched.backends.sim.engine import Simulation
from kubesched.config.parse import default_config
from unit.backends.manifestkit import DEPLOYMENT, POD, error_of, load, pods_by_name


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
        "beta.kubernetes.io/arch": "arm64",
        "beta.kubernetes.io/os": "linux",
    }
    assert [(t.key, t.effect) for t in n1.spec.taints] == [("node.kubernetes.io/unschedulable", "NoSchedule")]
    assert n2.status.allocatable == {"cpu": "7910m", "memory": "30Gi", "pods": "58"}
    assert n2.spec.taints == []
    assert n1.metadata.uid and n1.metadata.uid != n2.metadata.uid


def test_nodes_get_the_beta_os_and_arch_labels_a_kubelet_still_sets(tmp_path: Path) -> None:
    """v1.37's kubelet registers its node with kubernetes.io/os and /arch and the same values under
    the deprecated beta.kubernetes.io keys; manifests still select on those (the sock-shop demo)."""
    cluster = load(tmp_path, """
        apiVersion: v1
        kind: Node
        metadata: {name: plain}
        status: {capacity: {cpu: "4", memory: 16Gi}}
        ---
        apiVersion: v1
        kind: Node
        metadata:
          name: windows
          labels: {kubernetes.io/os: windows}
        status: {capacity: {cpu: "4", memory: 16Gi}}
        ---
        apiVersion: v1
        kind: Node
        metadata:
          name: old
          labels: {beta.kubernetes.io/arch: arm64, kubernetes.io/arch: amd64}
        status: {capacity: {cpu: "4", memory: 16Gi}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: sock-shop-style}
        spec:
          nodeSelector: {beta.kubernetes.io/os: linux}
          containers: [{name: c, image: i}]
    """)
    labels = {n.metadata.name: n.metadata.labels for n in cluster.nodes}
    assert labels["plain"] == {"kubernetes.io/hostname": "plain", "kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux",
                               "kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "amd64"}
    assert labels["windows"]["beta.kubernetes.io/os"] == "windows"
    # What the manifest says is kept, whichever key it used.
    assert (labels["old"]["beta.kubernetes.io/arch"], labels["old"]["kubernetes.io/arch"]) == ("arm64", "amd64")
    result = asyncio.run(Simulation(cluster, default_config()).run())
    assert result.placements["default/sock-shop-style"] in {"plain", "old"}


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


def test_gated_pod_with_node_name_is_refused(tmp_path: Path) -> None:
    text = POD.format(name="a").replace("spec:\n", "spec:\n  nodeName: n1\n  schedulingGates: [{name: x}]\n")
    assert error_of(tmp_path, text).endswith(
        'The Pod "a" is invalid: spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared')


def test_pod_level_resources_are_defaulted_on_create(tmp_path: Path) -> None:
    # The container requests 250m and 64Mi: the pod level's missing memory request is its; the
    # container sets no limits, so neither does the pod level; the scheduler counts the pod level.
    text = POD.format(name="a").replace("spec:\n", "spec:\n  resources: {requests: {cpu: '1'}}\n")
    (sp,) = load(tmp_path, text).pods
    resources = sp.pod.spec.resources
    assert resources is not None
    assert (resources.requests, resources.limits) == ({"cpu": "1", "memory": "64Mi"}, {})
    assert make_pod_info(sp.pod).requests == {"cpu": 1000, "memory": 64 * 2**20, "pods": 1}


def test_a_workload_pod_whose_defaulted_pod_level_contradicts_its_containers_is_refused(tmp_path: Path) -> None:
    # The template is valid as given (nothing defaulted); its pods are not: the containers' 100m
    # becomes the pod-level cpu request, above the pod-level limit.
    text = DEPLOYMENT.replace("    spec:\n", "    spec:\n      resources: {limits: {cpu: 50m}}\n", 1)
    assert error_of(tmp_path, text).endswith(
        'spec.resources.requests: Invalid value: "100m": must be less than or equal to cpu limit of 50m')
