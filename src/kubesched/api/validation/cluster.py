"""Nodes, Namespaces and PriorityClasses, as ValidateNode / ValidateNamespace /
ValidatePriorityClass check them on create."""

from __future__ import annotations

import re

import msgspec

from kubesched.api.objects import Int32, Namespace, Node, ObjectMeta, PriorityClass, Taint
from kubesched.api.validation.field import FieldIssue, duplicate, forbidden, go_json, invalid, not_supported, required, shown
from kubesched.api.validation.meta import (
    dns1123_subdomain,
    label_value,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_label_name,
    validate_labels,
    validate_object_meta,
)
from kubesched.api.validation.pod import PREEMPTION_POLICIES, PROTOCOLS, port_name_errors
from kubesched.api.validation.resources import validate_resource_map
from kubesched.api.validation.scheduling import validate_taint_effect

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
IMAGE_SIZES_LIMIT = 2**62
# A declared feature's name: an UpperCamelCase segment, then '/'-separated alphanumeric segments.
DECLARED_FEATURE_NAME = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")
DECLARED_FEATURE_NAME_MAX = 253  # bytes, a DNS-1123 subdomain's limit


def _taint_struct(t: Taint) -> str:
    """core.Taint as the API server prints it (its internal struct: Go field names)."""
    return go_json({"Key": t.key, "Value": t.value, "Effect": t.effect, "TimeAdded": None})


def validate_taints(taints: list[Taint], path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        at = f"{path}[{i}]"
        out.extend(validate_label_name(t.key, f"{at}.key"))
        errs = label_value(t.value)
        if errs:
            out.append(invalid(f"{at}.value", t.value, ";".join(errs)))
        out.extend(validate_taint_effect(t.effect, f"{at}.effect", allow_empty=False))
        if (t.key, t.effect) in seen:
            out.append(duplicate(at, _taint_struct(t), "taints must be unique by key and effect pair", rendered=True))
            continue
        seen.add((t.key, t.effect))
    return out


def validate_node(node: Node) -> list[FieldIssue]:
    """ValidateNode on create: metadata, taints, the quantities of capacity and allocatable
    (reported at status.capacity.<resource>, as kube's path reads) and the declared features."""
    out = validate_object_meta(node.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    # kube reports node taints under metadata (its validation is handed the metadata path).
    out.extend(validate_taints(node.spec.taints, "metadata.taints"))
    for where, values in (("status.capacity", node.status.capacity), ("status.allocatable", node.status.allocatable)):
        _, errs = validate_resource_map(values, where, names=False, key_style=".")
        out.extend(errs)
    out.extend(validate_declared_features(node.status.declared_features, "status.declaredFeatures"))
    # Not a rule of kube's: ImageLocality adds a pod's images' sizes on a node in int64 (after a
    # float step), so a node's images may not add up beyond 2^62.
    total = sum(max(0, image.size_bytes) * max(1, len(image.names)) for image in node.status.images)
    if total > IMAGE_SIZES_LIMIT:
        out.append(invalid("status.images", total, f"the images' sizeBytes must add up to at most {IMAGE_SIZES_LIMIT}"))
    return out


def _declared_feature_name_error(name: str) -> str | None:
    if len(name.encode()) > DECLARED_FEATURE_NAME_MAX:
        return f"invalid feature name {shown(name)}: must be no more than {DECLARED_FEATURE_NAME_MAX} characters"
    if DECLARED_FEATURE_NAME.fullmatch(name) is None:
        return (f"invalid feature name {shown(name)}: must start with an UpperCamelCase segment, with subsequent segments "
                "separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes")
    return None


def validate_declared_features(names: list[str], path: str) -> list[FieldIssue]:
    """status.declaredFeatures, as kube checks it on create and update: each name well formed, the
    list sorted (byte order) without repeats; each pair out of order is reported at the later one."""
    out: list[FieldIssue] = []
    for i, name in enumerate(names):
        error = _declared_feature_name_error(name)
        if error is not None:
            out.append(invalid(f"{path}[{i}]", name, error))
        if i + 1 < len(names):
            following = names[i + 1]
            if following == name:
                out.append(duplicate(f"{path}[{i + 1}]", following))
            elif name.encode() > following.encode():
                out.append(invalid(f"{path}[{i + 1}]", following, "list must be sorted alphabetically"))
    return out


def validate_namespace(ns: Namespace) -> list[FieldIssue]:
    return validate_object_meta(ns.metadata, namespaced=False, name_check=name_is_dns_label)


def validate_priority_class(pc: PriorityClass) -> list[FieldIssue]:
    out = validate_object_meta(pc.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    name = pc.metadata.name
    if name.startswith("system-"):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        problem = ""
        if known is None:
            problem = f"{name} is not a known system priority class"
        elif pc.value != known:
            problem = f"value of {name} PriorityClass must be {known}"
        elif pc.global_default:
            problem = f"globalDefault of {name} PriorityClass must be false"
        if problem:
            out.append(forbidden("metadata.name", "priority class names with 'system-' prefix are reserved for system use "
                                                  f"only. error: {problem}"))
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        out.append(forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    if pc.preemption_policy is not None and pc.preemption_policy not in PREEMPTION_POLICIES:
        out.append(not_supported("preemptionPolicy", pc.preemption_policy, PREEMPTION_POLICIES))
    return out


# --- services (read for their selector; validated as ValidateService does the fields here) ---------

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class ServicePort(_Obj):
    name: str = ""
    port: Int32 = 0
    protocol: str = ""
    target_port: Int32 | str = 0


TRAFFIC_POLICIES = ["Cluster", "Local"]


class ServiceSpec(_Obj):
    type: str = ""
    cluster_ip: str = msgspec.field(default="", name="clusterIP")
    external_name: str = ""
    selector: dict[str, str] = msgspec.field(default_factory=dict)
    ports: list[ServicePort] = msgspec.field(default_factory=list)
    session_affinity: str = ""
    external_i_ps: list[str] = msgspec.field(default_factory=list, name="externalIPs")
    external_traffic_policy: str = ""
    internal_traffic_policy: str | None = None


class Service(_Obj):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


def validate_service(svc: Service) -> list[FieldIssue]:
    """ValidateService on create, for its type, ports and selector. The name is a DNS-1035 label
    (it starts with a letter) in the pinned kube 1.34."""
    out = validate_object_meta(svc.metadata, namespaced=True, name_check=name_is_dns1035_label)
    spec = svc.spec
    kind = spec.type or "ClusterIP"
    if kind not in SERVICE_TYPES:
        out.append(not_supported("spec.type", kind, SERVICE_TYPES))
    if spec.session_affinity and spec.session_affinity not in ("ClientIP", "None"):
        out.append(not_supported("spec.sessionAffinity", spec.session_affinity, ["ClientIP", "None"]))
    if kind == "ExternalName":
        if not spec.external_name:
            out.append(required("spec.externalName"))
        else:
            out.extend(invalid("spec.externalName", spec.external_name, msg) for msg in dns1123_subdomain(spec.external_name))
    headless = kind == "ClusterIP" and spec.cluster_ip == "None"
    if not spec.ports and not headless and kind != "ExternalName":
        out.append(required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(spec.ports):
        at = f"spec.ports[{i}]"
        if len(spec.ports) > 1 and not port.name:
            out.append(required(f"{at}.name"))
        elif port.name:
            out.extend(invalid(f"{at}.name", port.name, msg) for msg in name_is_dns_label(port.name))
            if port.name in names:
                out.append(duplicate(f"{at}.name", port.name))
            names.add(port.name)
        if not 1 <= port.port <= 65535:
            out.append(invalid(f"{at}.port", port.port, "must be between 1 and 65535, inclusive"))
        protocol = port.protocol or "TCP"
        if protocol not in PROTOCOLS:
            out.append(not_supported(f"{at}.protocol", protocol, PROTOCOLS))
        # An unset targetPort (0 or "") is defaulted to the port; a name must be an IANA service name.
        if isinstance(port.target_port, str) and port.target_port:
            out.extend(invalid(f"{at}.targetPort", port.target_port, msg) for msg in port_name_errors(port.target_port))
        elif isinstance(port.target_port, int) and port.target_port and not 1 <= port.target_port <= 65535:
            out.append(invalid(f"{at}.targetPort", port.target_port, "must be between 1 and 65535, inclusive"))
    out.extend(validate_labels(spec.selector, "spec.selector"))
    out.extend(_traffic_policies(spec, kind))
    return out


def _traffic_policies(spec: ServiceSpec, kind: str) -> list[FieldIssue]:
    """externalTrafficPolicy only where traffic comes from outside (defaulted to Cluster there);
    internalTrafficPolicy defaulted to Cluster except on ExternalName Services (a value set is checked on all)."""
    out: list[FieldIssue] = []
    external = kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and bool(spec.external_i_ps))
    policy = spec.external_traffic_policy
    if not external and policy:
        out.append(invalid("spec.externalTrafficPolicy", policy, "may only be set for externally-accessible services"))
    elif external and policy and policy not in TRAFFIC_POLICIES:
        out.append(not_supported("spec.externalTrafficPolicy", policy, TRAFFIC_POLICIES))
    internal = spec.internal_traffic_policy
    if internal is not None and internal not in TRAFFIC_POLICIES:
        out.append(not_supported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES))
    return out
