"""Pods and pod templates: pkg/apis/core/validation's ValidatePodCreate / ValidatePodTemplateSpec
for the fields the scheduler reads, applied after the API server's defaulting (restartPolicy
Always, protocol TCP, a request defaulted from its limit, hostPort from containerPort with
hostNetwork).
"""

from __future__ import annotations

from kubesched.api.objects import (
    Affinity,
    Container,
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    PodAffinityTerm,
    PodSpec,
    Toleration,
    TopologySpreadConstraint,
)
from kubesched.api.quantity import INT64_MAX
from kubesched.api.validation.field import (
    FieldIssue,
    duplicate,
    forbidden,
    go_string,
    invalid,
    not_supported,
    required,
)
from kubesched.api.validation.meta import (
    dns1123_subdomain,
    label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_annotations,
    validate_label_name,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
)
from kubesched.api.validation.resources import scheduler_value, validate_requirements, validate_resource_map

RESTART_POLICIES = ("Always", "OnFailure", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
INT32_MAX = 2**31 - 1
_PORT_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def validate_pod(pod: Pod) -> list[FieldIssue]:
    """ValidatePodCreate for a decoded Pod (metadata and spec)."""
    out = validate_object_meta(pod.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    out.extend(validate_pod_spec(pod.spec, "spec", template=False))
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


def validate_pod_spec(spec: PodSpec, path: str, *, template: bool) -> list[FieldIssue]:
    out, totals = _containers(spec, path, template=template)
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
    if spec.preemption_policy is not None and spec.preemption_policy not in PREEMPTION_POLICIES:
        out.append(not_supported(f"{path}.preemptionPolicy", spec.preemption_policy, PREEMPTION_POLICIES))
    if spec.affinity is not None:
        out.extend(validate_affinity(spec.affinity, f"{path}.affinity"))
    out.extend(validate_tolerations(spec.tolerations, f"{path}.tolerations"))
    out.extend(validate_topology_spread(spec.topology_spread_constraints, f"{path}.topologySpreadConstraints"))
    out.extend(_scheduling_gates(spec, f"{path}.schedulingGates"))
    if spec.resources is not None:
        # Pod-level resources: names, quantities and requests against limits (the comparison with
        # the containers' aggregate is not checked here).
        _, errs = validate_requirements(spec.resources, f"{path}.resources", pod_level=True)
        out.extend(errs)
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
            if group == "initContainers":
                if c.restart_policy is not None and c.restart_policy != "Always":
                    out.append(not_supported(f"{where}.restartPolicy", c.restart_policy, ["Always"]))
            elif c.restart_policy is not None:
                out.append(forbidden(f"{where}.restartPolicy", "may not be set for non-init containers"))
            out.extend(_ports(c, where, spec.host_network))
            if group == "containers":
                out.extend(_host_port_conflicts(c, where, ports))
            values, errs = validate_requirements(c.resources, f"{where}.resources")
            out.extend(errs)
            for name, value in values.items():
                totals[name] = totals.get(name, 0) + value
    return out, totals


def _port_name(name: str) -> list[str]:
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 bytes")
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
            errs = _port_name(p.name)
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


def _host_port_conflicts(c: Container, where: str, seen: set[str]) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for j, p in enumerate(c.ports):
        if p.host_port == 0:
            continue
        key = f"{p.protocol or 'TCP'}/{p.host_ip}/{p.host_port}"
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


# --- affinity ------------------------------------------------------------------------------


def validate_affinity(affinity: Affinity, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    na = affinity.node_affinity
    if na is not None:
        where = f"{path}.nodeAffinity"
        if na.required_during_scheduling_ignored_during_execution is not None:
            out.extend(_node_selector(na.required_during_scheduling_ignored_during_execution,
                                      f"{where}.requiredDuringSchedulingIgnoredDuringExecution"))
        for i, term in enumerate(na.preferred_during_scheduling_ignored_during_execution):
            at = f"{where}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not 1 <= term.weight <= 100:
                out.append(invalid(f"{at}.weight", term.weight, "must be in the range 1-100"))
            out.extend(_node_selector_term(term.preference, f"{at}.preference"))
    for name, pa in (("podAffinity", affinity.pod_affinity), ("podAntiAffinity", affinity.pod_anti_affinity)):
        if pa is None:
            continue
        where = f"{path}.{name}"
        for i, t in enumerate(pa.required_during_scheduling_ignored_during_execution):
            out.extend(_pod_affinity_term(t, f"{where}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"))
        for i, w in enumerate(pa.preferred_during_scheduling_ignored_during_execution):
            at = f"{where}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not 1 <= w.weight <= 100:
                out.append(invalid(f"{at}.weight", w.weight, "must be in the range 1-100"))
            out.extend(_pod_affinity_term(w.pod_affinity_term, f"{at}.podAffinityTerm"))
    return out


def _node_selector(selector: NodeSelector, path: str) -> list[FieldIssue]:
    terms = f"{path}.nodeSelectorTerms"
    if not selector.node_selector_terms:
        return [required(terms, "must have at least one node selector term")]
    out: list[FieldIssue] = []
    for i, term in enumerate(selector.node_selector_terms):
        out.extend(_node_selector_term(term, f"{terms}[{i}]"))
    return out


def _node_selector_term(term: NodeSelectorTerm, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for j, req in enumerate(term.match_expressions):
        out.extend(_node_requirement(req, f"{path}.matchExpressions[{j}]"))
    for j, req in enumerate(term.match_fields):
        out.extend(_node_field_requirement(req, f"{path}.matchFields[{j}]"))
    return out


def _node_requirement(req: NodeSelectorRequirement, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    op = req.operator
    if op in ("In", "NotIn"):
        if not req.values:
            out.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if req.values:
            out.append(forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        # The API server checks the count only; a non-integer value makes the term match no node.
        if len(req.values) != 1:
            out.append(required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        out.append(invalid(f"{path}.operator", op, "not a valid selector operator"))
    out.extend(validate_label_name(req.key, f"{path}.key"))
    return out


def _node_field_requirement(req: NodeSelectorRequirement, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            out.append(required(f"{path}.values",
                                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        out.append(invalid(f"{path}.operator", req.operator, "not a valid selector operator"))
    if req.key != "metadata.name":
        out.append(invalid(f"{path}.key", req.key, "not a valid field selector key"))
    else:
        for i, value in enumerate(req.values):
            out.extend(invalid(f"{path}.values[{i}]", value, msg) for msg in name_is_dns_subdomain(value))
    return out


def _pod_affinity_term(term: PodAffinityTerm, path: str) -> list[FieldIssue]:
    out = validate_label_selector(term.label_selector, f"{path}.labelSelector")
    out.extend(validate_label_selector(term.namespace_selector, f"{path}.namespaceSelector"))
    for ns in term.namespaces:
        # kube reports these at ".namespace" (singular), and so do we.
        out.extend(invalid(f"{path}.namespace", ns, msg) for msg in name_is_dns_label(ns))
    if not term.topology_key:
        out.append(required(f"{path}.topologyKey", "can not be empty"))
    out.extend(validate_label_name(term.topology_key, f"{path}.topologyKey"))
    out.extend(_match_label_keys(term.match_label_keys, term.mismatch_label_keys, term.label_selector, path))
    return out


def _match_label_keys(match: list[str], mismatch: list[str], selector: LabelSelector | None, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if selector is None:
        if match:
            out.append(forbidden(f"{path}.matchLabelKeys", "must not be specified when labelSelector is not set"))
        if mismatch:
            out.append(forbidden(f"{path}.mismatchLabelKeys", "must not be specified when labelSelector is not set"))
        return out
    for name, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        for i, key in enumerate(keys):
            out.extend(validate_label_name(key, f"{path}.{name}[{i}]"))
    both = set(mismatch)
    for i, key in enumerate(match):
        if key in both:
            out.append(invalid(f"{path}.matchLabelKeys[{i}]", key, "exists in both matchLabelKeys and mismatchLabelKeys"))
    return out


# --- tolerations and spreading -----------------------------------------------------------------


def _toleration_struct(t: Toleration) -> str:
    """core.Toleration as Go's %#v prints it (a set tolerationSeconds is a pointer: no value)."""
    seconds = "(*int64)(nil)" if t.toleration_seconds is None else "(*int64)(0xc000000000)"
    return (f"core.Toleration{{Key:{go_string(t.key)}, Operator:{go_string(t.operator)}, Value:{go_string(t.value)}, "
            f"Effect:{go_string(t.effect)}, TolerationSeconds:{seconds}}}")


def validate_taint_effect(effect: str, path: str, *, allow_empty: bool) -> list[FieldIssue]:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect not in TAINT_EFFECTS:
        return [not_supported(path, effect, TAINT_EFFECTS)]
    return []


def validate_tolerations(tolerations: list[Toleration], path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for i, t in enumerate(tolerations):
        at = f"{path}[{i}]"
        if t.key:
            out.extend(validate_label_name(t.key, f"{at}.key"))
        if not t.key and t.operator != "Exists":
            out.append(invalid(f"{at}.operator", t.operator,
                               "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            out.append(invalid(f"{at}.effect", t.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if t.operator in ("Equal", ""):
            errs = label_value(t.value)
            if errs:
                out.append(invalid(f"{at}.operator", t.value, ";".join(errs)))
        elif t.operator == "Exists":
            if t.value:
                out.append(invalid(f"{at}.operator", _toleration_struct(t), "value must be empty when `operator` is 'Exists'",
                                   rendered=True))
        else:
            out.append(not_supported(f"{at}.operator", t.operator, ["Equal", "Exists"]))
        out.extend(validate_taint_effect(t.effect, f"{at}.effect", allow_empty=True))
    return out


def validate_topology_spread(constraints: list[TopologySpreadConstraint], path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for i, c in enumerate(constraints):
        at = f"{path}[{i}]"
        if c.max_skew <= 0:
            out.append(invalid(f"{at}.maxSkew", c.max_skew, "must be greater than zero"))
        if not c.topology_key:
            out.append(required(f"{at}.topologyKey", "can not be empty"))
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            out.append(not_supported(f"{at}.whenUnsatisfiable", c.when_unsatisfiable, WHEN_UNSATISFIABLE))
        if any(c.topology_key == o.topology_key and c.when_unsatisfiable == o.when_unsatisfiable for o in constraints[i + 1:]):
            out.append(duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", f"{{{c.topology_key}, {c.when_unsatisfiable}}}"))
        if c.min_domains is not None:
            if c.min_domains <= 0:
                out.append(invalid(f"{at}.minDomains", c.min_domains, "must be greater than zero"))
            if c.when_unsatisfiable != "DoNotSchedule":
                out.append(invalid(f"{at}.minDomains", c.min_domains,
                                   f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {c.when_unsatisfiable}"))
        for name, policy in (("nodeAffinityPolicy", c.node_affinity_policy), ("nodeTaintsPolicy", c.node_taints_policy)):
            if policy is not None and policy not in NODE_INCLUSION_POLICIES:
                out.append(not_supported(f"{at}.{name}", policy, NODE_INCLUSION_POLICIES))
        out.extend(_spread_match_label_keys(c, f"{at}.matchLabelKeys"))
        out.extend(validate_label_selector(c.label_selector, f"{at}.labelSelector"))
    return out


def _spread_match_label_keys(c: TopologySpreadConstraint, path: str) -> list[FieldIssue]:
    if not c.match_label_keys:
        return []
    out: list[FieldIssue] = []
    keys: set[str] = set()
    if c.label_selector is not None:
        keys.update(c.label_selector.match_labels)
        keys.update(e.key for e in c.label_selector.match_expressions)
    else:
        out.append(forbidden(path, "must not be specified when labelSelector is not set"))
    for i, key in enumerate(c.match_label_keys):
        out.extend(validate_label_name(key, f"{path}[{i}]"))
        if key in keys:
            out.append(invalid(f"{path}[{i}]", key, "exists in both matchLabelKeys and labelSelector"))
    return out
