"""A pod's resource claims (dynamic resource allocation), as pkg/apis/core/validation checks them
on create: the entries of spec.resourceClaims (validatePodResourceClaims) and the containers' and
the pod's resources.claims that use them (validateResourceClaimNames).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.api.objects import ContainerClaim, PodResourceClaim
from kubesched.api.validation.field import FieldIssue, duplicate, forbidden, go_json, invalid, required, shown
from kubesched.api.validation.meta import dns1123_label, name_is_dns_subdomain

# The annotation the kubelet puts on the API server's copy of a static pod.
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def pod_claim_names(claims: Iterable[PodResourceClaim]) -> set[str]:
    """The names containers may refer to: every non-empty entry name (their own validity is
    reported once, on spec.resourceClaims)."""
    return {c.name for c in claims if c.name}


def validate_pod_resource_claims(claims: list[PodResourceClaim], path: str, *, mirror: bool = False) -> list[FieldIssue]:
    """spec.resourceClaims: unique DNS labels, each naming exactly one of a ResourceClaim or a
    ResourceClaimTemplate by a valid name. A static pod's mirror may have none."""
    out: list[FieldIssue] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        at = f"{path}[{i}]"
        if mirror:
            # On the root path, which the API server prints as "[]".
            out.append(forbidden("[]", "static pods do not support resource claims"))
            continue
        if not claim.name:
            out.append(required(f"{at}.name"))
        elif claim.name in seen:
            out.append(duplicate(f"{at}.name", claim.name))
        else:
            out.extend(invalid(f"{at}.name", claim.name, msg) for msg in dns1123_label(claim.name))
            seen.add(claim.name)
        named, templated = claim.resource_claim_name, claim.resource_claim_template_name
        if (named is None) == (templated is None):
            # The API server prints the whole entry as its Go struct (json.Marshal, no JSON tags).
            shown_entry = go_json({"Name": claim.name, "ResourceClaimName": named, "ResourceClaimTemplateName": templated})
            detail = ("must specify one of: `resourceClaimName`, `resourceClaimTemplateName`" if named is None
                      else "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
            out.append(invalid(at, shown_entry, detail, rendered=True))
        if named is not None:
            out.extend(invalid(f"{at}.resourceClaimName", named, msg) for msg in name_is_dns_subdomain(named))
        if templated is not None:
            out.extend(invalid(f"{at}.resourceClaimTemplateName", templated, msg) for msg in name_is_dns_subdomain(templated))
    return out


def validate_claim_references(refs: list[ContainerClaim], pod_claims: set[str], path: str) -> list[FieldIssue]:
    """A container's (or the pod's) resources.claims at `path`: each names an entry of
    spec.resourceClaims, and no claim, nor one request of it, is used twice."""
    out: list[FieldIssue] = []
    used: set[str] = set()  # claim names, and claim/request for one request's result
    for i, ref in enumerate(refs):
        at = f"{path}[{i}]"
        if not ref.name:
            out.append(required(at))
            continue
        if ref.name in used:
            out.append(duplicate(at, ref.name))  # the whole claim is in use already
        else:
            key = ref.name
            if ref.request:
                out.extend(invalid(f"{at}.request", ref.request, msg) for msg in dns1123_label(ref.request))
                key += "/" + ref.request
            if key in used:
                out.append(duplicate(at, key))
            elif not ref.request:
                # The whole claim after one of its requests: an overlap for each request used.
                out.extend(duplicate(at, ref.name) for k in used if k.partition("/")[0] == ref.name and "/" in k)
            used.add(key)
        if ref.name not in pod_claims:
            names = ", ".join(sorted(pod_claims))
            detail = ": " + names if pod_claims else " which is empty"
            out.append(FieldIssue(at, f"Not found: {shown(ref.name)}: must be one of the names in pod.spec.resourceClaims{detail}"))
    return out
