"""Builders for the cluster-scoped and grouping objects tests write: PriorityClasses, Namespaces
and PodGroups (kube's scheduling.k8s.io and scheduler-plugins' scheduling.x-k8s.io), as the
manifest dicts the simulator and the API server read."""

from __future__ import annotations

from typing import Any

POD_GROUP_API = "scheduling.k8s.io/v1beta1"
XK8S_API = "scheduling.x-k8s.io/v1alpha1"


def make_priority_class(name: str, value: int, **fields: Any) -> dict[str, Any]:
    """A PriorityClass; other fields (globalDefault, preemptionPolicy, description) as the API spells them."""
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
            **fields}


def make_namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def make_pod_group(name: str, min_count: int | None = 3, *, metadata: dict[str, Any] | None = None,
                   **spec: Any) -> dict[str, Any]:
    """A scheduling.k8s.io PodGroup: a gang of at least `min_count`, or a basic group (None)."""
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"apiVersion": POD_GROUP_API, "kind": "PodGroup", "metadata": {"name": name, **(metadata or {})},
            "spec": {"schedulingPolicy": policy, **spec}}


def make_xk8s_pod_group(name: str, min_member: int, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    """A scheduler-plugins (Coscheduling) PodGroup."""
    return {"apiVersion": XK8S_API, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": min_member, **spec}}


def make_pdb(name: str, *, min_available: int | str | None = None, max_unavailable: int | str | None = None,
             match_labels: dict[str, str] | None = None, namespace: str = "default", status: dict[str, Any] | None = None,
             **spec: Any) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget selecting `match_labels` (none: no selector); `status` as
    `kubectl get -o yaml` writes it (camelCase fields), when given."""
    body: dict[str, Any] = dict(spec)
    if min_available is not None:
        body["minAvailable"] = min_available
    if max_unavailable is not None:
        body["maxUnavailable"] = max_unavailable
    if match_labels is not None:
        body["selector"] = {"matchLabels": match_labels}
    out: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                           "metadata": {"name": name, "namespace": namespace}, "spec": body}
    if status is not None:
        out["status"] = status
    return out
