"""The scheduling fields of a pod spec, as pkg/apis/core/validation checks them: node and pod
(anti-)affinity, tolerations (and taint effects, shared with nodes), topology spread constraints.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.objects import (
    Affinity,
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinityTerm,
    Toleration,
    TopologySpreadConstraint,
)
from kubesched.api.validation.field import (
    FieldIssue,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kubesched.api.validation.meta import (
    label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_label_name,
    validate_label_selector,
)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
# Toleration operators behind the TaintTolerationComparisonOperators gate, in the order kube lists them.
COMPARISON_OPERATORS = ("Lt", "Gt")


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


def validate_node_selector(selector: NodeSelector, path: str) -> list[FieldIssue]:
    """ValidateNodeSelector, as for required terms (a PV's node affinity, say)."""
    return _node_selector(selector, path)


def _node_selector(selector: NodeSelector, path: str) -> list[FieldIssue]:
    terms = f"{path}.nodeSelectorTerms"
    if not selector.node_selector_terms:
        return [required(terms, "must have at least one node selector term")]
    out: list[FieldIssue] = []
    for i, term in enumerate(selector.node_selector_terms):
        out.extend(_node_selector_term(term, f"{terms}[{i}]", label_values=True))
    return out


def _node_selector_term(term: NodeSelectorTerm, path: str, *, label_values: bool = False) -> list[FieldIssue]:
    """One term; `label_values` for the required terms, whose values must be label values on
    create (kube keeps accepting old preferred terms, and required ones already stored, without)."""
    out: list[FieldIssue] = []
    for j, req in enumerate(term.match_expressions):
        out.extend(_node_requirement(req, f"{path}.matchExpressions[{j}]", label_values=label_values))
    for j, req in enumerate(term.match_fields):
        out.extend(_node_field_requirement(req, f"{path}.matchFields[{j}]"))
    return out


def _node_requirement(req: NodeSelectorRequirement, path: str, *, label_values: bool) -> list[FieldIssue]:
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
    if label_values:
        for i, value in enumerate(req.values):
            out.extend(invalid(f"{path}.values[{i}]", value, msg) for msg in label_value(value))
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
                out.append(invalid(f"{at}.operator", t.value, "value must be empty when `operator` is 'Exists'"))
        elif t.operator in COMPARISON_OPERATORS:
            # Lt and Gt need the TaintTolerationComparisonOperators gate (alpha, off in v1.37.2,
            # not one kubesched takes): refused, with the comparison operators listed as valid.
            out.append(not_supported(f"{at}.operator", t.operator, ["Equal", "Exists", *COMPARISON_OPERATORS]))
        else:
            out.append(not_supported(f"{at}.operator", t.operator, ["Equal", "Exists"]))
        out.extend(validate_taint_effect(t.effect, f"{at}.effect", allow_empty=True))
    return out


def validate_topology_spread(constraints: list[TopologySpreadConstraint], path: str,
                             pod_labels: Mapping[str, str] | None = None) -> list[FieldIssue]:
    """The constraints of a pod (`pod_labels` its labels) or of a pod template (None)."""
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
        out.extend(_spread_match_label_keys(c, at, pod_labels))
        out.extend(validate_label_selector(c.label_selector, f"{at}.labelSelector"))
    return out


def _spread_match_label_keys(c: TopologySpreadConstraint, at: str, pod_labels: Mapping[str, str] | None) -> list[FieldIssue]:
    """matchLabelKeys of the constraint at `at`. On a pod, the API server first merges each key
    the pod has a label for into the selector (once per key); a key then also in the selector as
    the user wrote it, or listed again after its merge, "exists in both" (reported at
    `<constraint>[i]`, as kube reports it). Templates are not merged and not checked for that."""
    if not c.match_label_keys:
        return []
    path = f"{at}.matchLabelKeys"
    out: list[FieldIssue] = []
    keys: set[str] = set()
    if c.label_selector is not None:
        keys.update(c.label_selector.match_labels)
        keys.update(e.key for e in c.label_selector.match_expressions)
    else:
        out.append(forbidden(path, "must not be specified when labelSelector is not set"))
    seen: set[str] = set()
    for i, key in enumerate(c.match_label_keys):
        out.extend(validate_label_name(key, f"{path}[{i}]"))
        if pod_labels is not None and (key in keys or (key in seen and key in pod_labels)):
            out.append(invalid(f"{at}[{i}]", key, "exists in both matchLabelKeys and labelSelector"))
        seen.add(key)
    return out
