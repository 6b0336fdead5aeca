"""PodDisruptionBudgets (policy/v1) as the API server validates them on create (kube's
pkg/apis/policy/validation): the name, minAvailable or maxUnavailable (not both; each a
non-negative integer or a percentage up to 100%), the selector, unhealthyPodEvictionPolicy.
The status a create carries is dropped by the API server, so it is not validated here."""

from __future__ import annotations

from typing import Any

from kubesched.api.policy import UNHEALTHY_POD_EVICTION_POLICIES, PodDisruptionBudget
from kubesched.api.validation.field import FieldIssue, go_json, invalid, not_supported
from kubesched.api.validation.meta import name_is_path_segment, selector_string, validate_label_selector, validate_object_meta
from kubesched.api.validation.strategies import not_over_100_percent, positive_int_or_percent

BOTH_SET = "minAvailable and maxUnavailable cannot be both set"


def validate_pdb(pdb: PodDisruptionBudget) -> list[FieldIssue]:
    out = validate_object_meta(pdb.metadata, namespaced=True, name_check=name_is_path_segment)
    spec = pdb.spec
    if spec.min_available is not None and spec.max_unavailable is not None:
        out.append(invalid("spec", _spec_as_printed(pdb), BOTH_SET, rendered=True))
    for value, field in ((spec.min_available, "spec.minAvailable"), (spec.max_unavailable, "spec.maxUnavailable")):
        if value is not None:
            out.extend(positive_int_or_percent(value, field))
            out.extend(not_over_100_percent(value, field))
    out.extend(validate_label_selector(spec.selector, "spec.selector"))
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        out.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES))
    return out


def _spec_as_printed(pdb: PodDisruptionBudget) -> str:
    """The spec as the API server echoes its internal struct in a message: Go field names, the
    selector in its own JSON."""
    spec = pdb.spec
    body: dict[str, Any] = {
        "MinAvailable": spec.min_available,
        "Selector": None,
        "MaxUnavailable": spec.max_unavailable,
        "UnhealthyPodEvictionPolicy": spec.unhealthy_pod_eviction_policy,
    }
    text = go_json(body)
    if spec.selector is not None:
        text = text.replace('"Selector":null', '"Selector":' + selector_string(spec.selector))
    return text
