"""What kube-apiserver does to a resource.k8s.io/v1 object on create: its CEL environment's check of
selector expressions (`check_selector`, which the loader hands to the validation: api/ cannot
import the device CEL environment), and, besides validating it (the loader validated it
already), the defaulting of requests, subrequests and tolerations
(api.dra.defaults), a slice's device taints stamped with their creation time, and the registry's
admin-access check, which needs the claim's namespace.

Unlike the API server, the simulator keeps a ResourceClaim's status: a claim read from a
cluster's `kubectl get -o yaml` is already allocated, and reset would lose that.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesched.api.dra import ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.dra.defaults import default_claim, default_claim_spec, default_slice
from kubesched.api.validation.dra import admin_access_issue
from kubesched.api.validation.field import FieldIssue
from kubesched.devices.cel import ValidationProblem, validate_selector

# The simulation's wall clock starts here: an object arriving at second t was created at EPOCH + t.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def creation_time(arrival: float) -> str:
    """metav1.Time's form (RFC 3339, to the second) of the moment `arrival` seconds into the run."""
    return (EPOCH + timedelta(seconds=int(arrival))).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=1024)
def check_selector(expression: str) -> Sequence[ValidationProblem]:
    """validateCELExpression's verdict on a new selector expression. Remembered by expression: a
    thousand claims from one template share their selectors, and compiling one takes a millisecond."""
    return tuple(validate_selector(expression))


def admit(obj: Any, namespace_labels: dict[str, str], arrival: float) -> list[FieldIssue]:
    """Default `obj` in place; the issues the API server's registry would refuse it with."""
    if isinstance(obj, ResourceClaim):
        default_claim(obj)
        issue = admin_access_issue(obj.spec, namespace_labels)
        return [issue] if issue else []
    if isinstance(obj, ResourceClaimTemplate):
        default_claim_spec(obj.spec.spec)
        # AuthorizedForAdmin runs for templates too, and names the field as in a claim (spec.devices).
        issue = admin_access_issue(obj.spec.spec, namespace_labels)
        return [issue] if issue else []
    if isinstance(obj, ResourceSlice):
        default_slice(obj, obj.metadata.creation_timestamp or creation_time(arrival))
    return []
