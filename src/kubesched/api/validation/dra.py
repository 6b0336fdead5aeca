"""Dynamic Resource Allocation's objects (resource.k8s.io/v1) as kube-apiserver v1.37.2 checks them
on create, after its defaulting (api.dra.defaults), with the features on by default: DeviceClass,
ResourceClaim, ResourceClaimTemplate (draclaims.py) and ResourceSlice (draslices.py), with kube's
paths and messages, the declarative validation's where it takes a rule over (drafields.Found).

CEL: a selector's expression is checked for presence and length (10 KiB) here; compiling it
(syntax, types, a bool result, the cost limit of 1,000,000) is DRA's CEL environment's, which
devices/ owns and this layer cannot import. The caller hands it in as `check_selector`
(drafields.SelectorCheck): the simulator's loader passes devices.cel.validate_selector
(backends/sim/draadmission.check_selector), and its verdicts land where validateCELExpression's
do, among the handwritten errors in kube's order. Without it (the default), only presence and
length are checked.

Left to others:
- adminAccess needs the claim's namespace (the label resource.kubernetes.io/admin-access: "true"):
  `admin_access_issue` is the check, the loader calls it with the namespace it knows.
- A claim's status: the API server resets it on create. The simulator keeps it (an allocated claim
  from `kubectl get -o yaml`) and checks it as the status update that wrote it would have been.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.dra.claims import ResourceClaimSpec, ResourceClaimStatus
from kubesched.api.dra.common import ADMIN_ACCESS_NAMESPACE_LABEL, DEVICE_CONFIG_MAX_SIZE, OPAQUE_PARAMETERS_MAX_LENGTH
from kubesched.api.objects import ObjectMeta
from kubesched.api.validation.draclaims import request_names, validate_claim_status, validate_device_claim
from kubesched.api.validation.drafields import Found, SelectorCheck, configuration, no_cel, over_limit, selectors
from kubesched.api.validation.draquantity import QuantityIssues
from kubesched.api.validation.draslices import validate_slice_spec
from kubesched.api.validation.field import FieldIssue, forbidden, invalid
from kubesched.api.validation.meta import (
    label_key,
    name_is_dns_subdomain,
    validate_annotations,
    validate_labels,
    validate_object_meta,
)


def validate_device_class(dc: DeviceClass, check_selector: SelectorCheck = no_cel) -> list[FieldIssue]:
    f = Found()
    for issue in validate_object_meta(dc.metadata, namespaced=False, name_check=name_is_dns_subdomain):
        # The name's format is the declarative validation's (LongName) in v1.37.
        (f.declared if issue.path == "metadata.name" and issue.body.startswith("Invalid") else f.hand).append(issue)
    spec = dc.spec
    selectors(f, spec.selectors, "spec.selectors", check_selector)
    if not over_limit(f, spec.config, DEVICE_CONFIG_MAX_SIZE, "spec.config", covered=True):
        for i, config in enumerate(spec.config):
            configuration(f, config, f"spec.config[{i}]", OPAQUE_PARAMETERS_MAX_LENGTH)
    if spec.extended_resource_name is not None:
        f.declared.extend(invalid("spec.extendedResourceName", spec.extended_resource_name, msg)
                          for msg in extended_resource_name(spec.extended_resource_name))
    return f.all()


def extended_resource_name(name: str) -> list[str]:
    """Why `name` is no extended resource name, in the declarative validation's words (the API
    server reports these for DeviceClass, not pkg/apis' own "must be a valid extended resource name")."""
    errs = []
    if "/" not in name:
        errs.append("a name must be a domain-prefixed path, such as 'example.com/my-prop'")
    elif "kubernetes.io/" in name:
        errs.append('must not have "kubernetes.io/" domain')
    if name.startswith("requests."):
        errs.append('must not have "requests." prefix')
    errs.extend(label_key("requests." + name))
    return errs


def validate_resource_claim(claim: ResourceClaim, check_selector: SelectorCheck = no_cel) -> list[FieldIssue]:
    quantities = QuantityIssues()
    _claim_quantities(claim.spec, "spec", quantities)
    for i, result in enumerate(claim.status.allocation.devices.results if claim.status.allocation else ()):
        for name, raw in result.consumed_capacity.items():
            quantities.parse(raw, f"status.allocation.devices.results[{i}].consumedCapacity[{name}]")
    f = Found(hand=validate_object_meta(claim.metadata, namespaced=True, name_check=name_is_dns_subdomain))
    validate_device_claim(f, claim.spec.devices, "spec.devices", check_selector)
    if claim.status != ResourceClaimStatus():
        validate_claim_status(f, claim.status, request_names(claim.spec.devices))
    return quantities.issues or f.all()


def _claim_quantities(spec: ResourceClaimSpec, path: str, quantities: QuantityIssues) -> None:
    """The capacity requests of every request and subrequest: a bad quantity fails decoding."""
    for i, request in enumerate(spec.devices.requests):
        at = f"{path}.devices.requests[{i}]"
        capacities = [(f"{at}.exactly", request.exactly.capacity)] if request.exactly is not None else []
        capacities += [(f"{at}.firstAvailable[{j}]", sub.capacity) for j, sub in enumerate(request.first_available)]
        for where, capacity in capacities:
            for name, raw in (capacity.requests.items() if capacity is not None else ()):
                quantities.parse(raw, f"{where}.capacity.requests[{name}]")


# ObjectMeta's fields a template's metadata may not set (all but labels and annotations), in
# ObjectMeta's order, with what "unset" is for each.
_TEMPLATE_META_FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("name", "name"), ("generate_name", "generateName"), ("namespace", "namespace"), ("uid", "uid"),
    ("resource_version", "resourceVersion"), ("creation_timestamp", "creationTimestamp"),
    ("deletion_timestamp", "deletionTimestamp"), ("owner_references", "ownerReferences"),
)


def _template_metadata(meta: ObjectMeta, path: str) -> list[FieldIssue]:
    """ValidateTemplateObjectMeta: annotations and labels, and nothing else set."""
    out = validate_annotations(meta.annotations, f"{path}.annotations")
    out.extend(validate_labels(meta.labels, f"{path}.labels"))
    out.extend(forbidden(f"{path}.{name}", "cannot be set") for attr, name in _TEMPLATE_META_FORBIDDEN if getattr(meta, attr))
    return out


def validate_resource_claim_template(template: ResourceClaimTemplate, check_selector: SelectorCheck = no_cel) -> list[FieldIssue]:
    quantities = QuantityIssues()
    _claim_quantities(template.spec.spec, "spec.spec", quantities)
    f = Found(hand=validate_object_meta(template.metadata, namespaced=True, name_check=name_is_dns_subdomain))
    f.hand.extend(_template_metadata(template.spec.metadata, "spec.metadata"))
    validate_device_claim(f, template.spec.spec.devices, "spec.spec.devices", check_selector)
    return quantities.issues or f.all()


def validate_resource_slice(rs: ResourceSlice, check_selector: SelectorCheck = no_cel) -> list[FieldIssue]:
    del check_selector  # a slice holds no selectors; the parameter keeps DRA_VALIDATORS' signature one
    quantities = QuantityIssues()
    f = Found(hand=validate_object_meta(rs.metadata, namespaced=False, name_check=name_is_dns_subdomain))
    validate_slice_spec(f, rs.spec, quantities)
    # A quantity that does not parse stops the API server while decoding, before any validation.
    return quantities.issues or f.all()


def admin_access_issue(spec: ResourceClaimSpec, namespace_labels: Mapping[str, str], path: str = "spec") -> FieldIssue | None:
    """AuthorizedForAdmin (the registry's, checked before validation): a request with adminAccess
    needs its namespace labelled resource.kubernetes.io/admin-access: "true"."""
    for i, request in enumerate(spec.devices.requests):
        if request.exactly is not None and request.exactly.admin_access:
            if namespace_labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) == "true":
                return None
            detail = f"admin access to devices requires the `{ADMIN_ACCESS_NAMESPACE_LABEL}: true` label on the containing namespace"
            return forbidden(f"{path}.devices.requests[{i}].adminAccess", detail)
    return None


# Manifest kind -> its validation, given the CEL environment's check of selector expressions.
DRA_VALIDATORS: dict[str, Callable[[Any, SelectorCheck], list[FieldIssue]]] = {
    "DeviceClass": validate_device_class,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
    "ResourceSlice": validate_resource_slice,
}
