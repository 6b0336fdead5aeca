"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation
(kube's noderesources resource_allocation.go and its scorers).

Both plugins score a node from, per configured resource, what the node would have
requested with the pod on it and what it can allocate. This module gathers those two
numbers for every candidate row at once and holds the vectorized scorers. Everything
stays in int64 and mirrors kube's integer arithmetic (Go division truncates; all the
operands here are non-negative, so numpy's floor division gives the same result).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated

import numpy as np
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, field_validator

from kubesched.api.podinfo import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, PodInfo
from kubesched.api.validation.resources import is_extended, is_hugepages
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.types import MAX_NODE_SCORE
from kubesched.plugins.helper.shape import MAX_UTILIZATION

_NATIVE_NAMESPACE = "kubernetes.io/"


def is_scalar_resource(name: str) -> bool:
    """kube's IsScalarResourceName: the resources besides cpu/memory/ephemeral-storage/pods that
    the scheduler accounts for (extended, hugepages, prefixed native, attachable volumes)."""
    return (
        is_extended(name)
        or is_hugepages(name)
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


def _null_is_empty(value: object) -> object:
    return [] if value is None else value


def _empty_is_default(resources: list[ResourceSpec]) -> list[ResourceSpec]:
    return resources or default_resources()


# A scoring strategy's `resources`: null or empty means cpu and memory with weight 1, as kube
# defaults them; the plugins' own checks then run on what is left.
ScoredResources = Annotated[list[ResourceSpec], BeforeValidator(_null_is_empty), AfterValidator(_empty_is_default)]


def pod_scoring_requests(pi: PodInfo, names: Sequence[str], use_requested: bool) -> np.ndarray:
    """The pod's request for each named resource, as the scorers count it.

    Without use_requested (NodeResourcesFit), containers that set no cpu/memory request count
    with the scheduler's defaults, and pod-level requests count for nothing (kube-scheduler v1.37.2
    builds its scorer without enablePodLevelResources); `pods` is never a
    container request.
    """
    out = np.zeros(len(names), dtype=np.int64)
    for i, name in enumerate(names):
        if name == CPU and not use_requested:
            out[i] = pi.scoring_cpu
        elif name == MEMORY and not use_requested:
            out[i] = pi.scoring_memory
        elif name != PODS:
            out[i] = pi.requests.get(name, 0)
    return out


# One scored resource over the selected rows: (weight, requested with the pod, allocatable).
Item = tuple[int, np.ndarray, np.ndarray]
Scorer = Callable[[list[Item], int], np.ndarray]
# Extended resources DRA serves, by name: (devices of the mapping class, devices allocated) per
# row of the whole table (plugins/helper/draresources.py).
DraTotals = Mapping[str, tuple[np.ndarray, np.ndarray]]


def gather(
    table: NodeTable,
    rows: np.ndarray | slice,
    names: Sequence[str],
    weights: Sequence[int],
    pod_requests: np.ndarray,
    use_requested: bool,
    with_pod: bool = True,
    dra: DraTotals | None = None,
) -> list[Item]:
    """The resources to score, with the node's requests counting the pod (unless `with_pod` is
    False: the node as it is, over the same resources) and its allocatable.

    Resources kube leaves out for every node are dropped here: extended resources the pod
    does not request, names it never scores (pods), names no node has. An allocatable of 0
    on some row leaves the resource out for that node only, unless DRA serves it there (`dra`):
    the node's devices of the class then stand for its allocatable and requests.
    """
    return [item for _, item in gather_indexed(table, rows, names, weights, pod_requests, use_requested, with_pod, dra)]


def gather_indexed(
    table: NodeTable,
    rows: np.ndarray | slice,
    names: Sequence[str],
    weights: Sequence[int],
    pod_requests: np.ndarray,
    use_requested: bool,
    with_pod: bool = True,
    dra: DraTotals | None = None,
) -> list[tuple[int, Item]]:
    """gather's items, each with the index in `names` of the resource it scores."""
    items: list[tuple[int, Item]] = []
    for i, name in enumerate(names):
        req = int(pod_requests[i])
        col = table.resource_index.get(name)
        totals = dra.get(name) if dra else None
        if totals is not None and req != 0 and is_scalar_resource(name):
            used, allocatable = _dra_served(table, rows, col, totals)
            items.append((i, (int(weights[i]), used + req if with_pod else used, allocatable)))
            continue
        if col is None:
            continue
        if name in (CPU, MEMORY) and not use_requested:
            used = table.non_zero_requested[rows, 0 if name == CPU else 1]
        elif name in (CPU, MEMORY, EPHEMERAL_STORAGE) or (req != 0 and is_scalar_resource(name)):
            used = table.requested[rows, col]
        else:
            continue
        items.append((i, (int(weights[i]), used + req if with_pod else used, table.allocatable[rows, col])))
    return items


def _dra_served(table: NodeTable, rows: np.ndarray | slice, col: int | None,
                totals: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(requested, allocatable) of an extended resource DRA may serve: the node's own where its
    allocatable has some, else its devices of the class and those allocated (kube's
    calculateResourceAllocatableRequest); 0 allocatable, and so left out, where it has neither."""
    capacity, allocated = totals[0][rows], totals[1][rows]
    if col is None:
        return allocated, capacity
    own_allocatable, own_requested = table.allocatable[rows, col], table.requested[rows, col]
    served = (own_allocatable == 0) & (capacity > 0)
    return np.where(served, allocated, own_requested), np.where(served, capacity, own_allocatable)


def score_rows(table: NodeTable, rows: np.ndarray | slice, names: Sequence[str], weights: Sequence[int],
               pod_requests: np.ndarray, use_requested: bool, scorer: Scorer, with_pod: bool = True,
               dra: DraTotals | None = None) -> np.ndarray:
    """Scores aligned with `rows` (every row: slice(0, table.size)). When most rows are candidates,
    columns are read as views over the whole table and the result picked once, which is cheaper
    than gathering each column."""
    if isinstance(rows, slice):
        return scorer(gather(table, rows, names, weights, pod_requests, use_requested, with_pod, dra), table.size)
    m = len(rows)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    if 4 * m >= table.size:
        items = gather(table, slice(0, table.size), names, weights, pod_requests, use_requested, with_pod, dra)
        out: np.ndarray = scorer(items, table.size)[rows]
        return out
    return scorer(gather(table, rows, names, weights, pod_requests, use_requested, with_pod, dra), m)


def score_rows_with_and_without(table: NodeTable, rows: np.ndarray | slice, names: Sequence[str], weights: Sequence[int],
                                pod_requests: np.ndarray, use_requested: bool, scorer: Scorer,
                                dra: DraTotals | None = None) -> tuple[np.ndarray, np.ndarray]:
    """score_rows with the pod counted and without it, from one read of the table's columns."""
    every = isinstance(rows, slice)
    m = table.size if isinstance(rows, slice) else len(rows)
    if m == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    whole = every or 4 * m >= table.size
    where: np.ndarray | slice = slice(0, table.size) if whole else rows
    indexed = gather_indexed(table, where, names, weights, pod_requests, use_requested, with_pod=False, dra=dra)
    without_items = [item for _, item in indexed]
    with_items = [(w, used + int(pod_requests[i]), alloc) for i, (w, used, alloc) in indexed]
    size = table.size if whole else m
    with_pod, without = scorer(with_items, size), scorer(without_items, size)
    return (with_pod[rows], without[rows]) if whole and not every else (with_pod, without)


def _safe(allocatable: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Allocatable with zeros replaced by 1 (to divide by), and which rows count the resource
    (None when all do, the common case)."""
    if allocatable.all():
        return allocatable, None
    included = allocatable > 0
    return np.where(included, allocatable, 1), included


def _weighted_mean(parts: list[tuple[int, np.ndarray, np.ndarray | None]], m: int) -> np.ndarray:
    """sum(score * weight) // sum(weight) over the resources each row counts; 0 if none.
    Scores must already be 0 where a resource is not counted."""
    total = np.zeros(m, dtype=np.int64)
    weight_sum: np.ndarray | int = 0
    for weight, score, included in parts:
        total += score * weight
        weight_sum = weight_sum + (weight if included is None else included * weight)
    if isinstance(weight_sum, int):
        return total // weight_sum if weight_sum else total
    return np.where(weight_sum > 0, total // np.maximum(weight_sum, 1), 0)


def least_allocated(items: list[Item], m: int) -> np.ndarray:
    """Share of each resource left free, 0..100, weighted mean (kube's leastResourceScorer).
    A request beyond capacity leaves nothing free and scores 0."""
    parts = []
    for weight, requested, allocatable in items:
        cap, included = _safe(allocatable)
        # Rows without the resource have allocatable 0, so their score is 0 too.
        parts.append((weight, np.maximum(allocatable - requested, 0) * MAX_NODE_SCORE // cap, included))
    return _weighted_mean(parts, m)


def most_allocated(items: list[Item], m: int) -> np.ndarray:
    """Share of each resource requested (capped at full), weighted mean (kube's mostResourceScorer)."""
    parts = []
    for weight, requested, allocatable in items:
        cap, included = _safe(allocatable)
        parts.append((weight, np.minimum(requested, allocatable) * MAX_NODE_SCORE // cap, included))
    return _weighted_mean(parts, m)


def requested_to_capacity_ratio(items: list[Item], m: int, lookup: np.ndarray) -> np.ndarray:
    """Shape value at each resource's utilization (100 % when over capacity), weighted mean
    rounded half away from zero; resources scoring 0 are left out of the mean
    (kube's requestedToCapacityRatioScorer)."""
    total = np.zeros(m, dtype=np.int64)
    weight_sum = np.zeros(m, dtype=np.int64)
    for weight, requested, allocatable in items:
        cap, included = _safe(allocatable)
        utilization = np.minimum(requested, allocatable) * MAX_UTILIZATION // cap
        score = lookup[utilization]
        counted = score > 0 if included is None else (score > 0) & included
        total += np.where(counted, score * weight, 0)
        weight_sum += counted * weight
    safe = np.maximum(weight_sum, 1)
    quotient, remainder = np.divmod(total, safe)
    rounded = quotient + (2 * remainder >= safe)
    return np.where(weight_sum > 0, rounded, 0).astype(np.int64)


def balanced(items: list[Item], m: int) -> np.ndarray:
    """(1 - standard deviation of the requested fractions) * 100, fractions capped at 1
    (kube's balancedResourceScore). Float operations follow kube's order so the truncated
    result is the same."""
    fractions: list[np.ndarray] = []
    masks: list[np.ndarray | None] = []
    for _, requested, allocatable in items:
        cap, included = _safe(allocatable)
        f = np.minimum(requested / cap, 1.0)
        fractions.append(f if included is None else np.where(included, f, 0.0))
        masks.append(included)
    k = len(fractions)
    if all(mask is None for mask in masks):
        # Every row counts every resource.
        if k == 2:
            std = np.abs((fractions[0] - fractions[1]) / 2)
        elif k > 2:
            total = fractions[0]
            for f in fractions[1:]:
                total = total + f
            mean = total / k
            squares = np.zeros(m)
            for f in fractions:
                d = f - mean
                squares = squares + d * d
            std = np.sqrt(squares / k)
        else:
            std = np.zeros(m)
        out: np.ndarray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        return out
    included = np.array([np.ones(m, dtype=bool) if mask is None else mask for mask in masks]).reshape(k, m)
    count = included.sum(axis=0)
    std = np.zeros(m)
    two = count == 2
    if two.any():
        # With exactly two resources kube takes |f1 - f2| / 2: the first and last counted ones.
        stacked = np.array(fractions).reshape(k, m)
        first = stacked[np.argmax(included, axis=0), np.arange(m)]
        last = stacked[k - 1 - np.argmax(included[::-1], axis=0), np.arange(m)]
        std = np.where(two, np.abs((first - last) / 2), std)
    many = count > 2
    if many.any():
        total = np.zeros(m)
        for f in fractions:
            total = total + f
        mean = total / np.maximum(count, 1)
        squares = np.zeros(m)
        for i, f in enumerate(fractions):
            d = f - mean
            squares = squares + np.where(included[i], d * d, 0.0)
        std = np.where(many, np.sqrt(squares / np.maximum(count, 1)), std)
    scores: np.ndarray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return scores
