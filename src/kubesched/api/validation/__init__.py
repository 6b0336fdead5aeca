"""What the Kubernetes API server's validation refuses, for the objects the simulator reads.

Each function takes a decoded object or the raw manifest dict and returns a list of
FieldIssue (a field path and kube's message), empty when the API server would accept the
object on create. Rules and texts follow pkg/apis/core/validation, apps and batch validation
and apimachinery (Kubernetes 1.34); paths and messages are what `kubectl apply` prints, e.g.

    spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of ...

`invalid_object(kind, name, issues)` gives kubectl's whole line (`The Pod "web" is invalid: ...`,
several issues as `[a, b]`). User values in messages are cut by `shown` (field.py).

Kinds: Pod, Node, Namespace, PriorityClass, Service, the workloads Deployment, ReplicaSet,
StatefulSet, Job, ReplicationController (their pod templates as ValidatePodTemplateSpec does), the
storage kinds PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode, CSIDriver,
CSIStorageCapacity and VolumeAttachment (validation.storage), DRA's DeviceClass, ResourceClaim,
ResourceClaimTemplate and ResourceSlice (validation.dra), and PodDisruptionBudget (validation.policy).

Some rules are the scheduler's rather than the API server's, because kubesched keeps these
numbers in int64 columns: a quantity (or a pod's summed request) whose scheduler integer does
not fit in int64 is refused (the API server would store it, and kube-scheduler would wrap it;
see api.quantity), and so is a node whose images' sizes add up beyond 2^62. The loader adds one
more: pods bound by nodeName may not take a node's summed requests beyond int64.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from kubesched.api.dra import DRA_KINDS, DRA_TYPES, ResourceClaim, ResourceClaimTemplate
from kubesched.api.dra.defaults import default_claim, default_claim_spec
from kubesched.api.objects import Namespace, Node, Pod, PriorityClass
from kubesched.api.podgroups import PodGroup
from kubesched.api.podgroups import Workload as GroupWorkload
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.storage import STORAGE_KINDS, STORAGE_TYPES
from kubesched.api.validation import cluster, dra, pod, podgroups, podsecurity, policy, servicefields, storage, workloads
from kubesched.api.validation.drafields import SelectorCheck, no_cel
from kubesched.api.validation.field import FieldIssue, aggregate, invalid_object, shown

WORKLOAD_KINDS = frozenset(workloads.NAME_CHECKS)
_MSGSPEC_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


def decode_issue(exc: msgspec.ValidationError, prefix: str = "") -> FieldIssue:
    """A decode error (wrong type, int32 out of range) as an issue on the exact field."""
    m = _MSGSPEC_PATH.match(str(exc))
    message = m.group("msg") if m else str(exc)
    path = ((m.group("path") or "") if m else "").lstrip(".")
    if prefix:
        path = f"{prefix}.{path}" if path and not path.startswith("[") else f"{prefix}{path}"
    return FieldIssue(path, message[:1].lower() + message[1:], decode=True)


def _decode(raw: Any, kind: type[Any]) -> tuple[Any, list[FieldIssue]]:
    try:
        return msgspec.convert(raw, kind, strict=False), []
    except msgspec.ValidationError as exc:
        return None, [decode_issue(exc)]


def validate_pod(obj: Pod | dict[str, Any]) -> list[FieldIssue]:
    """ValidatePodCreate (after defaulting) for a Pod or its manifest."""
    if isinstance(obj, dict):
        typed, issues = _decode(obj, Pod)
        return issues or pod.validate_pod(typed) + _security(obj.get("spec"), "spec")
    return pod.validate_pod(obj)


def _security(raw_spec: Any, path: str) -> list[FieldIssue]:
    """Probes, lifecycle handlers, securityContexts and spec.os of a raw pod spec (podsecurity):
    the typed PodSpec does not carry them."""
    try:
        spec = podsecurity.decode_spec(raw_spec)
    except msgspec.ValidationError as exc:
        return [decode_issue(exc, path)]
    return podsecurity.validate_security_spec(spec, path)


def validate_node(obj: Node | dict[str, Any]) -> list[FieldIssue]:
    if isinstance(obj, dict):
        typed, issues = _decode(obj, Node)
        return issues or cluster.validate_node(typed)
    return cluster.validate_node(obj)


def validate_namespace(obj: Namespace | dict[str, Any]) -> list[FieldIssue]:
    if isinstance(obj, dict):
        typed, issues = _decode(obj, Namespace)
        return issues or cluster.validate_namespace(typed)
    return cluster.validate_namespace(obj)


def validate_priority_class(obj: PriorityClass | dict[str, Any]) -> list[FieldIssue]:
    if isinstance(obj, dict):
        # No value is the value 0: the API server's Go type has no way to tell them apart.
        typed, issues = _decode(obj, PriorityClass)
        return issues or cluster.validate_priority_class(typed)
    return cluster.validate_priority_class(obj)


def validate_workload(kind: str, raw: dict[str, Any]) -> list[FieldIssue]:
    """A Deployment, ReplicaSet, StatefulSet, Job or ReplicationController manifest."""
    obj, issues = _decode(raw, workloads.Workload)
    if issues:
        return issues
    try:
        selector = workloads.decode_selector(kind, obj.spec.selector)
    except msgspec.ValidationError as exc:
        return [decode_issue(exc, "spec.selector")]
    spec = raw.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    return workloads.validate_workload(kind, obj, selector) + _security(pod_spec, "spec.template.spec")


def validate_manifest(raw: dict[str, Any], *, check_selector: SelectorCheck = no_cel) -> list[FieldIssue]:
    """Any object the simulator reads, by its kind (other kinds: no issues). `check_selector` is
    the CEL environment's check of DRA selector expressions (the simulator's admission hands in
    devices.cel.validate_selector); without it an expression is checked for presence and length."""
    kind = raw.get("kind")
    if kind == "Pod":
        return validate_pod(raw)
    if kind == "Node":
        return validate_node(raw)
    if kind == "Namespace":
        return validate_namespace(raw)
    if kind == "PriorityClass":
        return validate_priority_class(raw)
    if kind == "Service":
        typed, issues = _decode(raw, cluster.Service)
        if issues:
            return issues
        try:
            extras = servicefields.decode_extras(raw.get("spec"))
        except msgspec.ValidationError as exc:
            return [decode_issue(exc, "spec")]
        return cluster.validate_service(typed) + servicefields.validate_service_extras(extras, typed.spec.type or "ClusterIP")
    if isinstance(kind, str) and kind in WORKLOAD_KINDS:
        return validate_workload(kind, raw)
    if kind in ("PodGroup", "Workload"):
        typed, issues = _decode(raw, PodGroup if kind == "PodGroup" else GroupWorkload)
        if issues:
            return issues
        return podgroups.validate_pod_group(typed) if kind == "PodGroup" else podgroups.validate_workload(typed)
    if kind == "PodDisruptionBudget":
        typed, issues = _decode(raw, PodDisruptionBudget)
        return issues or policy.validate_pdb(typed)
    if isinstance(kind, str) and kind in _STORAGE:
        typed, issues = _decode(raw, STORAGE_TYPES[STORAGE_KINDS[kind]])
        if issues:
            return issues
        if kind == "PersistentVolume":
            spec = raw.get("spec")
            return storage.validate_pv(typed, spec if isinstance(spec, dict) else {})
        return _STORAGE[kind](typed)
    if isinstance(kind, str) and kind in dra.DRA_VALIDATORS:
        typed, issues = _decode(raw, DRA_TYPES[DRA_KINDS[kind]])
        if issues:
            return issues
        # The API server defaults on decode, before validating (allocationMode, count, operators).
        if isinstance(typed, ResourceClaim):
            default_claim(typed)
        elif isinstance(typed, ResourceClaimTemplate):
            default_claim_spec(typed.spec.spec)
        return dra.DRA_VALIDATORS[kind](typed, check_selector)
    return []


# Storage kinds and their validators (api.validation.storage).
_STORAGE: dict[str, Any] = {
    "PersistentVolumeClaim": storage.validate_pvc,
    "PersistentVolume": storage.validate_pv,
    "StorageClass": storage.validate_storage_class,
    "CSINode": storage.validate_csinode,
    "CSIDriver": storage.validate_csidriver,
    "CSIStorageCapacity": storage.validate_storage_capacity,
    "VolumeAttachment": storage.validate_volume_attachment,
}


__all__ = [
    "WORKLOAD_KINDS",
    "FieldIssue",
    "aggregate",
    "decode_issue",
    "invalid_object",
    "shown",
    "validate_manifest",
    "validate_namespace",
    "validate_node",
    "validate_pod",
    "validate_priority_class",
    "validate_workload",
]
