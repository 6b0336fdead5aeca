"""Pods and pod templates: pkg/apis/core/validation's ValidatePodCreate / ValidatePodTemplateSpec
for the fields the scheduler reads, applied after the API server's defaulting (restartPolicy
Always, protocol TCP, a request defaulted from its limit, hostPort from containerPort with
hostNetwork, a Pod's pod-level resources: validation.podlevel).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.objects import Container, ObjectMeta, Pod, PodSpec
from kubesched.api.quantity import INT64_MAX
from kubesched.api.validation.field import FieldIssue, duplicate, forbidden, invalid, not_supported, required, too_many
from kubesched.api.validation.meta import (
    dns1123_subdomain,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_annotations,
    validate_label_name,
    validate_labels,
    validate_object_meta,
)
from kubesched.api.validation.podclaims import (
    MIRROR_POD_ANNOTATION,
    pod_claim_names,
    validate_claim_references,
    validate_pod_resource_claims,
)
from kubesched.api.validation.podfields import validate_container_fields, validate_pod_fields
from kubesched.api.validation.podlevel import validate_pod_resources
from kubesched.api.validation.resources import scheduler_value, validate_requirements, validate_resource_map
from kubesched.api.validation.scheduling import validate_affinity, validate_tolerations, validate_topology_spread

RESTART_POLICIES = ("Always", "OnFailure", "Never")
# A container's own restartPolicy and restartPolicyRules, as v1.37.2 validates them with its default
# gates (ContainerRestartRules and RestartAllContainersOnContainerExits on): sorted as kube lists them.
CONTAINER_RESTART_POLICIES = ("Always", "Never", "OnFailure")
RESTART_RULE_ACTIONS = ("Restart", "RestartAllContainers")
RESTART_RULE_OPERATORS = ("In", "NotIn")
MAX_RESTART_RULES = 20
MAX_RESTART_RULE_EXIT_CODES = 255
PROTOCOLS = ("SCTP", "TCP", "UDP")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
INT32_MAX = 2**31 - 1
_PORT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def validate_pod(pod: Pod) -> list[FieldIssue]:
    """ValidatePodCreate for a decoded Pod (metadata and spec)."""
    out = validate_object_meta(pod.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    out.extend(validate_pod_spec(pod.spec, "spec", template=False, labels=pod.metadata.labels,
                                 mirror=MIRROR_POD_ANNOTATION in pod.metadata.annotations))
    if pod.spec.node_name and pod.spec.scheduling_gates:
        out.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return out


def validate_pod_template(meta: ObjectMeta, spec: PodSpec, path: str) -> list[FieldIssue]:
    """ValidatePodTemplateSpec. Its labels and annotations are reported at `<path>.labels` and
    `<path>.annotations` (without "metadata"), as kube reports them."""
    out = validate_labels(meta.labels, f"{path}.labels")
    out.extend(validate_annotations(meta.annotations, f"{path}.annotations"))
    out.extend(validate_pod_spec(spec, f"{path}.spec", template=True))
    return out


def validate_pod_spec(spec: PodSpec, path: str, *, template: bool, labels: Mapping[str, str] | None = None,
                      mirror: bool = False) -> list[FieldIssue]:
    """A pod's spec (`labels` its own; `mirror` for a static pod's mirror) or a template's (no
    labels: not a pod yet)."""
    out = validate_pod_resource_claims(spec.resource_claims, f"{path}.resourceClaims", mirror=mirror)
    issues, totals = _containers(spec, path, template=template)
    out.extend(issues)
    restart = spec.restart_policy or "Always"
    if restart not in RESTART_POLICIES:
        out.append(not_supported(f"{path}.restartPolicy", restart, RESTART_POLICIES))
    if spec.active_deadline_seconds is not None and not 1 <= spec.active_deadline_seconds <= INT32_MAX:
        out.append(invalid(f"{path}.activeDeadlineSeconds", spec.active_deadline_seconds,
                           f"must be between 1 and {INT32_MAX}, inclusive"))
    out.extend(validate_labels(spec.node_selector, f"{path}.nodeSelector"))
    if spec.node_name:
        out.extend(invalid(f"{path}.nodeName", spec.node_name, msg) for msg in name_is_dns_subdomain(spec.node_name))
    if spec.scheduler_name:
        out.extend(invalid(f"{path}.schedulerName", spec.scheduler_name, msg) for msg in dns1123_subdomain(spec.scheduler_name))
    if spec.priority_class_name:
        out.extend(invalid(f"{path}.priorityClassName", spec.priority_class_name, msg)
                   for msg in name_is_dns_subdomain(spec.priority_class_name))
    if spec.runtime_class_name is not None:
        out.extend(invalid(f"{path}.runtimeClassName", spec.runtime_class_name, msg)
                   for msg in name_is_dns_subdomain(spec.runtime_class_name))
    if spec.preemption_policy is not None and spec.preemption_policy not in PREEMPTION_POLICIES:
        out.append(not_supported(f"{path}.preemptionPolicy", spec.preemption_policy, PREEMPTION_POLICIES))
    if spec.affinity is not None:
        out.extend(validate_affinity(spec.affinity, f"{path}.affinity"))
    out.extend(validate_tolerations(spec.tolerations, f"{path}.tolerations"))
    out.extend(validate_topology_spread(spec.topology_spread_constraints, f"{path}.topologySpreadConstraints", labels))
    out.extend(validate_pod_fields(spec, path))
    out.extend(_scheduling_gates(spec, f"{path}.schedulingGates"))
    out.extend(validate_pod_resources(spec, path, template=template, claim_names=pod_claim_names(spec.resource_claims)))
    overhead, errs = validate_resource_map(spec.overhead, f"{path}.overhead", names=True)
    out.extend(errs)
    for name, q in overhead.items():
        totals[name] = totals.get(name, 0) + (scheduler_value(name, q) or 0)
    for name, total in sorted(totals.items()):
        # Not a rule of kube's: the pod's summed request (all containers and the overhead, an upper
        # bound of what kube computes) is an int64 in the scheduler's columns.
        if total > INT64_MAX:
            unit = "m" if name == "cpu" else ""
            out.append(invalid(f"{path}.containers", name,
                               f"the pod's total request must be less than or equal to {INT64_MAX}{unit}"))
    return out


# --- containers ----------------------------------------------------------------------------


def _containers(spec: PodSpec, path: str, *, template: bool) -> tuple[list[FieldIssue], dict[str, int]]:
    out: list[FieldIssue] = []
    if not spec.containers:
        out.append(required(f"{path}.containers"))
    names: set[str] = set()
    totals: dict[str, int] = {}
    ports: set[str] = set()
    volumes = {v.name for v in spec.volumes}
    claims = pod_claim_names(spec.resource_claims)
    for group, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
        for i, c in enumerate(containers):
            where = f"{path}.{group}[{i}]"
            if not c.name:
                out.append(required(f"{where}.name"))
            else:
                out.extend(invalid(f"{where}.name", c.name, msg) for msg in name_is_dns_label(c.name))
                if c.name in names:
                    out.append(duplicate(f"{where}.name", c.name))
                names.add(c.name)
            if not c.image:
                out.append(required(f"{where}.image"))
            elif not template and c.image != c.image.strip():
                out.append(invalid(f"{where}.image", c.image, "must not have leading or trailing whitespace"))
            out.extend(_restart_policy(c, where))
            out.extend(validate_container_fields(c, where, volumes))
            out.extend(_ports(c, where, spec.host_network))
            if group == "containers":
                out.extend(_host_port_conflicts(c, where, ports, spec.host_network))
            values, errs = validate_requirements(c.resources, f"{where}.resources")
            out.extend(errs)
            out.extend(validate_claim_references(c.resources.claims or [], claims, f"{where}.resources.claims"))
            for name, value in values.items():
                totals[name] = totals.get(name, 0) + value
    return out, totals


def _restart_policy(c: Container, where: str) -> list[FieldIssue]:
    """A container's restartPolicy and restartPolicyRules (the same for init, sidecar and regular
    containers under v1.37.2's default gates): rules need a policy, each rule an action and exit codes."""
    out: list[FieldIssue] = []
    rules = c.restart_policy_rules
    if c.restart_policy is None:
        if not rules:
            return out
        out.append(required(f"{where}.restartPolicy", "must specify restartPolicy when restart rules are used"))
    elif c.restart_policy not in CONTAINER_RESTART_POLICIES:
        out.append(not_supported(f"{where}.restartPolicy", c.restart_policy, CONTAINER_RESTART_POLICIES))
    if len(rules) > MAX_RESTART_RULES:
        out.append(too_many(f"{where}.restartPolicyRules", len(rules), MAX_RESTART_RULES))
    for i, rule in enumerate(rules):
        at = f"{where}.restartPolicyRules[{i}]"
        if rule.action not in RESTART_RULE_ACTIONS:
            out.append(not_supported(f"{at}.action", rule.action, RESTART_RULE_ACTIONS))
        if rule.exit_codes is None:
            out.append(required(f"{at}.exitCodes", "must be specified"))
            continue
        if rule.exit_codes.operator not in RESTART_RULE_OPERATORS:
            out.append(not_supported(f"{at}.exitCodes.operator", rule.exit_codes.operator, RESTART_RULE_OPERATORS))
        if len(rule.exit_codes.values) > MAX_RESTART_RULE_EXIT_CODES:
            out.append(too_many(f"{at}.exitCodes.values", len(rule.exit_codes.values), MAX_RESTART_RULE_EXIT_CODES))
    return out


def port_name_errors(name: str) -> list[str]:
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not name or not set(name) <= _PORT_NAME_CHARS:
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= ch <= "z" for ch in name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _ports(c: Container, where: str, host_network: bool) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    names: set[str] = set()
    for j, p in enumerate(c.ports):
        at = f"{where}.ports[{j}]"
        if p.name:
            errs = port_name_errors(p.name)
            out.extend(invalid(f"{at}.name", p.name, msg) for msg in errs)
            if not errs and p.name in names:
                out.append(duplicate(f"{at}.name", p.name))
            names.add(p.name)
        if p.container_port == 0:
            out.append(required(f"{at}.containerPort"))
        elif not 1 <= p.container_port <= 65535:
            out.append(invalid(f"{at}.containerPort", p.container_port, "must be between 1 and 65535, inclusive"))
        if p.host_port != 0 and not 1 <= p.host_port <= 65535:
            out.append(invalid(f"{at}.hostPort", p.host_port, "must be between 1 and 65535, inclusive"))
        protocol = p.protocol or "TCP"
        if protocol not in PROTOCOLS:
            out.append(not_supported(f"{at}.protocol", protocol, PROTOCOLS))
        host_port = p.host_port or (p.container_port if host_network else 0)
        if host_network and host_port != p.container_port:
            out.append(invalid(f"{at}.containerPort", p.container_port, "must match `hostPort` when `hostNetwork` is true"))
    return out


def _host_port_conflicts(c: Container, where: str, seen: set[str], host_network: bool) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for j, p in enumerate(c.ports):
        # With hostNetwork, defaulting has set hostPort to containerPort before validation.
        host_port = p.host_port or (p.container_port if host_network else 0)
        if host_port == 0:
            continue
        key = f"{p.protocol or 'TCP'}/{p.host_ip}/{host_port}"
        if key in seen:
            out.append(duplicate(f"{where}.ports[{j}].hostPort", key))
        seen.add(key)
    return out


def _scheduling_gates(spec: PodSpec, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    seen: set[str] = set()
    for i, gate in enumerate(spec.scheduling_gates):
        out.extend(validate_label_name(gate.name, f"{path}[{i}]"))
        if gate.name in seen:
            out.append(duplicate(f"{path}[{i}]", gate.name))
        seen.add(gate.name)
    return out
