"""Typed views of the scheduler-plugins API, `scheduling.x-k8s.io/v1alpha1` (kubernetes-sigs/
scheduler-plugins v0.34.7, apis/scheduling/v1alpha1): the Coscheduling PodGroup and the
ElasticQuota, in objects.py's style (only what scheduling reads; Go's zero values as defaults;
unknown fields ignored). These are CRDs: a cluster serves them only where they are installed
(deploy/crds/ holds the definitions kubesched's tests install).

- A pod joins a Coscheduling PodGroup with the label `scheduling.x-k8s.io/pod-group: <name>`, in
  the group's namespace. This PodGroup is a different kind from scheduling.k8s.io's (api.podgroups).
- An ElasticQuota governs every pod of its namespace (one quota per namespace, a tenant):
  `spec.min` is guaranteed, `spec.max` is the most the namespace may use, borrowing other
  tenants' unused min in between.

Resource lists hold quantities as the API gives them; `resource_list` reads one into the
scheduler's integers, naming the object and field on a value that does not parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.api.customresources import CustomResource
from kubesched.api.objects import Int32, ObjectMeta, _Obj
from kubesched.api.quantity import QuantityError, resource_value

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

Quantities = dict[str, str | int | float]


class XK8sError(ValueError):
    """An object of this API that cannot be used: the message names the object and the field."""


class CoschedulingPodGroupSpec(_Obj):
    min_member: Int32 = 0
    # None when absent (no resource pre-check); {} is a check of the pod count alone, as upstream.
    min_resources: Quantities | None = None
    schedule_timeout_seconds: Int32 | None = None


class CoschedulingPodGroupStatus(_Obj):
    """Written by scheduler-plugins' PodGroup controller, never by the scheduler; kept as read."""

    phase: str = ""
    occupied_by: str = ""
    running: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    schedule_start_time: str | None = None


class CoschedulingPodGroup(_Obj):
    api_version: str = API_VERSION
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CoschedulingPodGroupSpec = msgspec.field(default_factory=CoschedulingPodGroupSpec)
    status: CoschedulingPodGroupStatus = msgspec.field(default_factory=CoschedulingPodGroupStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


class ElasticQuotaSpec(_Obj):
    # None when absent: min then counts as 0, max as unbounded. An empty map is not absent: every
    # resource's bound is 0 (upstream's reading of a non-nil empty ResourceList).
    min: Quantities | None = None
    max: Quantities | None = None


class ElasticQuotaStatus(_Obj):
    used: Quantities = msgspec.field(default_factory=dict)


class ElasticQuota(_Obj):
    api_version: str = API_VERSION
    kind: str = "ElasticQuota"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ElasticQuotaSpec = msgspec.field(default_factory=ElasticQuotaSpec)
    status: ElasticQuotaStatus = msgspec.field(default_factory=ElasticQuotaStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


PODGROUPS = CustomResource(GROUP, VERSION, "podgroups", "PodGroup", CoschedulingPodGroup)
ELASTICQUOTAS = CustomResource(GROUP, VERSION, "elasticquotas", "ElasticQuota", ElasticQuota)


def describe(obj: Any) -> str:
    """`<Kind> <namespace>/<name>`, how messages name an object of this API."""
    return f"{obj.kind} {obj.metadata.namespace}/{obj.metadata.name}"


def resource_list(obj: Any, field: str, raw: Mapping[str, Any]) -> dict[str, int]:
    """A ResourceList in the scheduler's units (millicores for cpu); XK8sError naming the object and
    field (`spec.max[cpu]`) for a value that is no quantity or does not fit the scheduler's int64."""
    out: dict[str, int] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise XK8sError(f"{describe(obj)}: {field}[{name}]: expected a quantity, got {type(value).__name__}")
        try:
            out[name] = resource_value(name, value)
        except QuantityError as exc:
            raise XK8sError(f"{describe(obj)}: {field}[{name}]: {exc}") from None
    return out
