"""The objects integration tests create (built by the tests' builders), and the steps a controller-less cluster needs.

No kubelet and no node-lifecycle controller run against the harness's apiserver, so a node the
tests create stays as they make it: `create_ready_node` posts the Node, clears the
`node.kubernetes.io/not-ready` taint that the TaintNodesByCondition admission plugin adds on
create, and writes status (capacity, allocatable, Ready) through the status subresource, which
is the only way status is written (it is dropped on create).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import time
from collections.abc import Iterator
from typing import Any

from builders import NodeBuilder, make_node, make_pod

from .rest import JSON, KINDS, ApiError, Kube, collection_path

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def ready_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[JSON] | None = None,
    extra_resources: dict[str, str] | None = None,
    ready: bool = True,
) -> NodeBuilder:
    """A node as a kubelet registers it (the os label, capacity = allocatable, the Ready condition,
    an address and the node info), built by the tests' builders."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        make_node(name)
        .label({"kubernetes.io/os": "linux"})
        .label(labels or {})
        .taints(taints)
        .capacity(cpu=cpu, memory=memory, pods=str(pods))
        .capacity(extra_resources or {})
        .status(
            conditions=[
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "set by the kubesched test harness",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            addresses=[{"type": "InternalIP", "address": "10.0.0.10"}],
            nodeInfo={
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "v1.37.2",
                "kubeProxyVersion": "",
                "containerRuntimeVersion": "containerd://2.0.0",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
                "kernelVersion": "",
                "osImage": "",
            },
        )
    )


@contextlib.contextmanager
def node_pool(kube: Kube, prefix: str, count: int, *, cpu: str, memory: str) -> Iterator[tuple[str, list[str]]]:
    """`count` ready nodes named `<prefix>-<token>-<i>` and labelled `<prefix>-test: <token>`, so
    that only the pods selecting that label go there; deleted afterwards. Yields (token, names)."""
    token = secrets.token_hex(3)
    names = [f"{prefix}-{token}-{i}" for i in range(count)]
    try:
        for name in names:
            create_ready_node(kube, name, cpu=cpu, memory=memory, labels={f"{prefix}-test": token})
        yield token, names
    finally:
        for name in names:
            kube.delete(f"/api/v1/nodes/{name}", missing_ok=True)


def create_ready_node(kube: Kube, name: str, **kwargs: Any) -> JSON:
    """Create a schedulable node (`ready_node`'s keywords): POST, reset taints to its own (the
    admission plugin's not-ready taint removed), PATCH status/ with capacity = allocatable and the
    Ready condition. Returns the node."""
    node = ready_node(name, **kwargs).manifest()
    status = node.pop("status")
    kube.create("/api/v1/nodes", node)
    kube.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": node["spec"]["taints"]}})
    return kube.patch(f"/api/v1/nodes/{name}/status", {"status": status})


def pod_manifest(
    name: str,
    namespace: str,
    *,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    scheduler_name: str | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    priority_class: str | None = None,
    extra_spec: dict[str, Any] | None = None,
    owner_references: list[JSON] | None = None,
) -> JSON:
    """A pod the API server deletes at once (no grace period) running the pause image, built by
    the tests' builders."""
    pod = (
        make_pod(name)
        .ns(namespace)
        .container("main", PAUSE_IMAGE)
        .req({k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None})
        .label(labels or {})
        .owned_by(*(owner_references or []))
        .spec(terminationGracePeriodSeconds=0)
    )
    if scheduler_name:
        pod.scheduler(scheduler_name)
    if node_name:
        pod.node(node_name)
    if priority_class:
        pod.priority_class(priority_class)
    return pod.spec(**(extra_spec or {})).manifest()


def create_pod(kube: Kube, name: str, namespace: str, **kwargs: Any) -> JSON:
    # The Priority admission plugin reads PriorityClasses from an informer: one created a moment
    # ago may not be there yet, and the pod is refused with 403 until it is.
    deadline = time.monotonic() + 10
    while True:
        try:
            return kube.create(f"/api/v1/namespaces/{namespace}/pods", pod_manifest(name, namespace, **kwargs))
        except ApiError as e:
            if e.status != 403 or "no PriorityClass with name" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def wait_bound(kube: Kube, namespace: str, name: str, *, timeout: float = 30.0) -> str:
    """Wait until the pod has spec.nodeName; returns the node name."""
    pod = kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/{name}", lambda p: bool(p["spec"].get("nodeName")), timeout=timeout)
    return str(pod["spec"]["nodeName"])


def delete_namespace(kube: Kube, name: str) -> None:
    """Remove a namespace and what tests put in it, as the namespace controller would (none runs here).

    Pods go first with a zero grace period (no kubelet confirms graceful deletions); then the
    namespaced kinds the harness knows; then the namespace, finalized at once.
    """
    kube.request("DELETE", f"/api/v1/namespaces/{name}/pods", {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    for kind, (_, _, namespaced) in KINDS.items():
        if namespaced and kind != "Pod":
            try:
                kube.request("DELETE", collection_path(kind, name), {"apiVersion": "v1", "kind": "DeleteOptions"})
            except ApiError as e:  # a kind without deletecollection, or not served, must not break teardown
                if e.status not in (404, 405):
                    raise
    ns = kube.delete(f"/api/v1/namespaces/{name}", missing_ok=True)
    if not ns:
        return
    current = kube.get_or_none(f"/api/v1/namespaces/{name}")
    if current is not None:
        current.setdefault("spec", {})["finalizers"] = []
        kube.replace(f"/api/v1/namespaces/{name}/finalize", current)
