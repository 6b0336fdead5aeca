"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Both plugins score a node from, per configured resource, what the node would have
requested with the pod on it and what it can allocate. This module gathers those two
numbers for every candidate row at once and holds the vectorized scorers. Everything
stays in int64 and mirrors kube's integer arithmetic (Go division truncates; all the
operands here are non-negative, so numpy's floor division gives the same result).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from kubesched.api.podinfo import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.interface import MAX_NODE_SCORE

# A shape point's score is 0..10 in configuration and is scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

_REQUESTS_PREFIX = "requests."
_NATIVE_NAMESPACE = "kubernetes.io/"
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_error(value: str) -> str | None:
    """Why `value` is not a Kubernetes qualified name (a label key), or None if it is one."""
    prefix, slash, name = value.rpartition("/")
    if not slash:
        prefix, name = "", value
    elif not prefix:
        return "prefix part must be non-empty"
    elif len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
        return "prefix part must be a lowercase RFC 1123 subdomain (at most 253 characters)"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME_PART.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def is_extended_resource(name: str) -> bool:
    """kube's IsExtendedResourceName: a fully-qualified name outside the kubernetes.io namespace."""
    if "/" not in name or _NATIVE_NAMESPACE in name or name.startswith(_REQUESTS_PREFIX):
        return False
    return qualified_name_error(_REQUESTS_PREFIX + name) is None


def is_scalar_resource(name: str) -> bool:
    """kube's IsScalarResourceName: the resources besides cpu/memory/ephemeral-storage/pods that
    the scheduler accounts for (extended, hugepages, prefixed native, attachable volumes)."""
    return (
        is_extended_resource(name)
        or name.startswith("hugepages-")
        or _NATIVE_NAMESPACE in name
        or name.startswith("attachable-volumes-")
    )


class ResourceSpec(BaseModel):
    """One resource a scoring strategy looks at, with its weight."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    weight: int = 1

    @field_validator("weight")
    @classmethod
    def _default_weight(cls, value: int) -> int:
        # kube's defaulting turns an unset (or explicit 0) weight into 1.
        return 1 if value == 0 else value


def default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name=CPU, weight=1), ResourceSpec(name=MEMORY, weight=1)]


def pod_scoring_requests(pi: PodInfo, names: Sequence[str], use_requested: bool) -> np.ndarray:
    """The pod's request for each named resource, as the scorers count it.

    Without use_requested (NodeResourcesFit), containers that set no cpu/memory request count
    with the scheduler's defaults; `pods` is never a container request.
    """
    out = np.zeros(len(names), dtype=np.int64)
    for i, name in enumerate(names):
        if name == CPU and not use_requested:
            out[i] = pi.non_zero_cpu
        elif name == MEMORY and not use_requested:
            out[i] = pi.non_zero_memory
        elif name != PODS:
            out[i] = pi.requests.get(name, 0)
    return out


def gather(
    table: NodeTable, rows: np.ndarray, names: Sequence[str], pod_requests: np.ndarray, use_requested: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(requested, allocatable), each [len(names), len(rows)] int64, counting the pod on the node.

    An allocatable of 0 means "leave this resource out for this node": the node lacks it, or
    it is an extended resource the pod does not request, or one kube never scores (pods).
    """
    k, m = len(names), len(rows)
    requested = np.zeros((k, m), dtype=np.int64)
    allocatable = np.zeros((k, m), dtype=np.int64)
    for i, name in enumerate(names):
        req = int(pod_requests[i])
        col = table.resource_index.get(name)
        if col is None:
            continue
        if name in (CPU, MEMORY):
            if use_requested:
                used = table.requested[rows, col]
            else:
                used = table.non_zero_requested[rows, 0 if name == CPU else 1]
        elif name == EPHEMERAL_STORAGE:
            used = table.requested[rows, col]
        elif is_scalar_resource(name) and req != 0:
            used = table.requested[rows, col]
        else:
            continue
        allocatable[i] = table.allocatable[rows, col]
        requested[i] = used + req
    return requested, allocatable


def _weighted_mean(scores: np.ndarray, included: np.ndarray, weights: np.ndarray) -> np.ndarray:
    w = weights[:, None] * included
    weight_sum = w.sum(axis=0)
    total = (scores * w).sum(axis=0)
    return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)


def least_allocated(requested: np.ndarray, allocatable: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Share of each resource left free, 0..100, weighted mean (kube's leastResourceScorer)."""
    included = allocatable > 0
    cap = np.maximum(allocatable, 1)
    free = (cap - requested) * MAX_NODE_SCORE // cap
    scores = np.where(requested > allocatable, 0, free)
    return _weighted_mean(scores, included, weights)


def most_allocated(requested: np.ndarray, allocatable: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Share of each resource requested (capped at full), weighted mean (kube's mostResourceScorer)."""
    included = allocatable > 0
    cap = np.maximum(allocatable, 1)
    scores = np.minimum(requested, cap) * MAX_NODE_SCORE // cap
    return _weighted_mean(scores, included, weights)


def _go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def shape_lookup(shape: Sequence[tuple[int, int]]) -> np.ndarray:
    """The broken-linear function of a requestedToCapacityRatio shape at every utilization
    0..100, scores already scaled to 0..MAX_NODE_SCORE (kube's BuildBrokenLinearFunction)."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(u, s * scale) for u, s in shape]
    table = np.zeros(MAX_UTILIZATION + 1, dtype=np.int64)
    for p in range(MAX_UTILIZATION + 1):
        value = points[-1][1]
        for i, (u, s) in enumerate(points):
            if p <= u:
                if i == 0:
                    value = s
                else:
                    u0, s0 = points[i - 1]
                    value = s0 + _go_div((s - s0) * (p - u0), u - u0)
                break
        table[p] = value
    return table


def requested_to_capacity_ratio(
    requested: np.ndarray, allocatable: np.ndarray, weights: np.ndarray, lookup: np.ndarray
) -> np.ndarray:
    """Shape value at each resource's utilization, weighted mean rounded half away from zero;
    resources scoring 0 are left out of the mean (kube's requestedToCapacityRatioScorer)."""
    included = allocatable > 0
    cap = np.maximum(allocatable, 1)
    utilization = np.where(requested > allocatable, MAX_UTILIZATION, requested * MAX_UTILIZATION // cap)
    scores = lookup[np.clip(utilization, 0, MAX_UTILIZATION)]
    counted = included & (scores > 0)
    w = weights[:, None] * counted
    weight_sum = w.sum(axis=0)
    total = (scores * w).sum(axis=0)
    safe = np.maximum(weight_sum, 1)
    quotient, remainder = np.divmod(total, safe)
    rounded = quotient + (2 * remainder >= safe)
    return np.where(weight_sum > 0, rounded, 0).astype(np.int64)


def balanced(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """(1 - standard deviation of the requested fractions) * 100, fractions capped at 1
    (kube's balancedResourceScorer). Float operations follow kube's order so the truncated
    result is the same."""
    included = allocatable > 0
    k, m = requested.shape
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    fractions = np.minimum(requested / np.maximum(allocatable, 1), 1.0)
    fractions = np.where(included, fractions, 0.0)
    count = included.sum(axis=0)
    total = np.zeros(m)
    for i in range(k):
        total = total + fractions[i]
    std = np.zeros(m)
    two = count == 2
    if two.any():
        # With exactly two resources kube takes |f1 - f2| / 2; the pair is the first and
        # last included fraction of the row.
        first = fractions[np.argmax(included, axis=0), np.arange(m)]
        last = fractions[k - 1 - np.argmax(included[::-1], axis=0), np.arange(m)]
        std = np.where(two, np.abs((first - last) / 2), std)
    many = count > 2
    if many.any():
        mean = total / np.maximum(count, 1)
        squares = np.zeros(m)
        for i in range(k):
            d = fractions[i] - mean
            squares = squares + np.where(included[i], d * d, 0.0)
        std = np.where(many, np.sqrt(squares / np.maximum(count, 1)), std)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
