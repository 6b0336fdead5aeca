"""Simulator input for custom resources: scheduler-plugins' PodGroup and ElasticQuota
(`scheduling.x-k8s.io/v1alpha1`), checked as an API server with their CRDs (deploy/crds/) checks
them on create: the structural schema (types, `spec.minMember` at least 1, quantities), unknown
fields refused (strict field validation, as kubectl apply asks for), and, for an ElasticQuota,
kubesched's overcommit annotation (plugins.tenantovercommit), so a typo fails the run instead of
silently meaning "never".

`read_custom` returns the resource and the typed object, or raises ValueError with the message
(the caller prefixes the file, document and object).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.customresources import CustomResource
from kubesched.api.knownfields import strict_decoding_error
from kubesched.api.validation import FieldIssue, invalid_object
from kubesched.api.validation.meta import name_is_dns_subdomain
from kubesched.api.xk8s import ELASTICQUOTAS, GROUP, PODGROUPS, XK8sError, resource_list
from kubesched.plugins.tenantovercommit import policy_problem

# kind -> the resource, the fields its spec may hold, the versions served.
KINDS: dict[str, tuple[CustomResource, frozenset[str]]] = {
    "PodGroup": (PODGROUPS, frozenset({"minMember", "minResources", "scheduleTimeoutSeconds"})),
    "ElasticQuota": (ELASTICQUOTAS, frozenset({"min", "max"})),
}
_TOP = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_INT32 = (-(2**31), 2**31 - 1)


def is_custom(raw: dict[str, Any]) -> bool:
    api_version = raw.get("apiVersion")
    return isinstance(api_version, str) and api_version.split("/", 1)[0] == GROUP


def read_custom(raw: dict[str, Any], namespace: str) -> tuple[CustomResource, Any]:
    """The object of a `scheduling.x-k8s.io` manifest, in `namespace` (the default applied)."""
    kind = str(raw.get("kind") or "")
    api_version = str(raw.get("apiVersion"))
    name = str((raw.get("metadata") or {}).get("name") or "")
    if kind not in KINDS:
        raise ValueError(f"no matches for kind {kind!r} in version {api_version!r}")
    resource, spec_fields = KINDS[kind]
    if api_version != resource.api_version:
        raise ValueError(f"no matches for kind {kind!r} in version {api_version!r}")
    issues = _schema_issues(raw, spec_fields)
    if issues:
        raise ValueError(invalid_object(kind, name, issues, api_version))
    unknown = sorted(k for k in raw if k not in _TOP) + sorted(
        f"spec.{k}" for k in (raw.get("spec") or {}) if k not in spec_fields)
    if unknown:
        raise ValueError(invalid_object(kind, name, [FieldIssue("", strict_decoding_error(unknown), decode=True)], api_version))
    try:
        obj = msgspec.convert({**raw, "status": {}}, resource.type, strict=False)
    except msgspec.ValidationError as exc:
        raise ValueError(invalid_object(kind, name, [FieldIssue("", str(exc), decode=True)], api_version)) from None
    obj.metadata.namespace = namespace
    try:
        if kind == "PodGroup" and obj.spec.min_resources is not None:
            resource_list(obj, "spec.minResources", obj.spec.min_resources)
        elif kind == "ElasticQuota":
            for field, value in (("spec.min", obj.spec.min), ("spec.max", obj.spec.max)):
                if value is not None:
                    resource_list(obj, field, value)
            problem = policy_problem(obj)
            if problem is not None:
                raise XK8sError(problem)
    except XK8sError as exc:
        raise ValueError(str(exc).split(": ", 1)[1] if str(exc).startswith(f"{kind} ") else str(exc)) from None
    return resource, obj


def _schema_issues(raw: dict[str, Any], spec_fields: frozenset[str]) -> list[FieldIssue]:
    """What the CRD's structural schema refuses, in the API server's words."""
    issues: list[FieldIssue] = []
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        return [FieldIssue("metadata.name", "Required value: name or generateName is required")]
    for problem in name_is_dns_subdomain(str(meta["name"])):
        issues.append(FieldIssue("metadata.name", f"Invalid value: {str(meta['name'])!r}: {problem}"))
    spec = raw.get("spec", {})
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return [FieldIssue("spec", f'Invalid value: "{type(spec).__name__}": spec in body must be of type object: '
                                   f'"{type(spec).__name__}"')]
    if "minMember" in spec_fields:
        member = spec.get("minMember")
        if member is not None:
            if isinstance(member, bool) or not isinstance(member, int):
                issues.append(FieldIssue("spec.minMember", f'Invalid value: "{type(member).__name__}": spec.minMember in body '
                                                           'must be of type integer: "' + type(member).__name__ + '"'))
            elif member < 1:
                issues.append(FieldIssue("spec.minMember", f"Invalid value: {member}: spec.minMember in body should be greater "
                                                           "than or equal to 1"))
            elif member > _INT32[1]:
                issues.append(FieldIssue("spec.minMember", f"Invalid value: {member}: spec.minMember in body should be less "
                                                           f"than or equal to {_INT32[1]}"))
        timeout = spec.get("scheduleTimeoutSeconds")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)):
            issues.append(FieldIssue("spec.scheduleTimeoutSeconds", f'Invalid value: "{type(timeout).__name__}": '
                                     'spec.scheduleTimeoutSeconds in body must be of type integer: "'
                                     + type(timeout).__name__ + '"'))
    for field in ("minResources", "min", "max"):
        value = spec.get(field)
        if field in spec_fields and value is not None and not isinstance(value, dict):
            issues.append(FieldIssue(f"spec.{field}", f'Invalid value: "{type(value).__name__}": spec.{field} in body must '
                                                      f'be of type object: "{type(value).__name__}"'))
    return issues
