"""Dynamic Resource Allocation's objects (resource.k8s.io/v1), as pkg/apis/resource/validation
checks them on create, for what kubesched reads today: every object's metadata (names are DNS
subdomains; claims and templates are namespaced, classes and slices are not), a template's own
metadata, a DeviceClass's `spec.extendedResourceName` (what the DRA guard reads) and the sizes of
its selector and configuration lists.

Not checked yet, until the DynamicResources plugin reads them: the device requests of claims and
templates, slices' devices, and the CEL of selectors (it needs DRA's CEL environment).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.validation.field import FieldIssue, invalid, too_many
from kubesched.api.validation.meta import (
    label_key,
    name_is_dns_subdomain,
    validate_annotations,
    validate_labels,
    validate_object_meta,
)

# resource.DeviceSelectorsMaxSize and DeviceConfigMaxSize.
MAX_SELECTORS = 32
MAX_CONFIGS = 32


def validate_device_class(dc: DeviceClass) -> list[FieldIssue]:
    out = validate_object_meta(dc.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    spec = dc.spec
    # The API server stops at a list's size (a guard against huge objects), before its entries.
    if len(spec.selectors) > MAX_SELECTORS:
        out.append(too_many("spec.selectors", len(spec.selectors), MAX_SELECTORS))
    if len(spec.config) > MAX_CONFIGS:
        out.append(too_many("spec.config", len(spec.config), MAX_CONFIGS))
    if spec.extended_resource_name is not None:
        out.extend(invalid("spec.extendedResourceName", spec.extended_resource_name, msg)
                   for msg in extended_resource_name(spec.extended_resource_name))
    return out


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


def validate_resource_claim(claim: ResourceClaim) -> list[FieldIssue]:
    return validate_object_meta(claim.metadata, namespaced=True, name_check=name_is_dns_subdomain)


def validate_resource_claim_template(template: ResourceClaimTemplate) -> list[FieldIssue]:
    out = validate_object_meta(template.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    meta = template.spec.metadata
    out.extend(validate_annotations(meta.annotations, "spec.metadata.annotations"))
    out.extend(validate_labels(meta.labels, "spec.metadata.labels"))
    return out


def validate_resource_slice(rs: ResourceSlice) -> list[FieldIssue]:
    return validate_object_meta(rs.metadata, namespaced=False, name_check=name_is_dns_subdomain)


# Manifest kind -> its validation.
DRA_VALIDATORS: dict[str, Callable[[Any], list[FieldIssue]]] = {
    "DeviceClass": validate_device_class,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
    "ResourceSlice": validate_resource_slice,
}
