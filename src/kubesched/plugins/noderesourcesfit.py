"""NodeResourcesFit: does the node have room for the pod's requests, and how full would it be.

Filter compares the pod's effective requests (PodInfo folds in init containers, sidecars
and overhead) with allocatable minus requested on every node at once, for each resource
the pod asks for plus the pod count. A node can fail on several resources; each failing
resource is one bit of the row's code, and a high bit marks rows where the pod asks for
more than the node has at all, which kube reports as UnschedulableAndUnresolvable because
no preemption can help there.

Queueing hints, as kube's (InPlacePodVerticalScaling on, its scheduler preemption off): a
bound or nominated pod's deletion always may help; a bound pod's scale-down may when it frees
some resource the pending pod asks for; the pending pod's own scale-down always may; an added
node may when the pod fits it empty; a node's allocatable change may when the pod fits it empty
and the node's pod count or the allocatable of some requested resource grew. Those node checks
are kube's Fits on an empty node, which ignores neither ignoredResources nor
ignoredResourceGroups (as kube's does not).

Extended resources backed by DRA (DRAExtendedResource, GA in v1.37.2; plugins/helper/
draresources.py): a resource a DeviceClass maps is not checked on a node whose allocatable has
none of it (DynamicResources serves it there), for the Filter, the node hints and explanations
alike; scoring counts the class's devices on such a node. A pod requesting such a resource is not
signed (its placement depends on devices, not on the node alone). A DeviceClass added or updated
may help a pod requesting the extended resource it now names (or, added, its implicit
`deviceclass.resource.kubernetes.io/<name>`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from kubesched.api.dra import DEVICE_CLASS, DEVICE_CLASS_PREFIX, DeviceClass
from kubesched.api.objects import Node
from kubesched.api.podinfo import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, PodInfo
from kubesched.api.quantity import describe_amount, resource_value
from kubesched.api.validation.meta import label_key
from kubesched.api.validation.resources import is_extended
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.rowmemo import RowMemo
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterMisses,
    FilterPlugin,
    PlacementScorePlugin,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    RowFilter,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, GroupPlacement, PreFilterResult, SignFragment
from kubesched.plugins.helper import resourcescoring as rs
from kubesched.plugins.helper.draresources import DeviceTotals, dra_totals, mapped_resources
from kubesched.plugins.helper.hints import checked_new
from kubesched.plugins.helper.shape import UtilizationShapePoint, check_shape, shape_lookup

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

TOO_MANY_PODS = "Too many pods"
# Bit of a row's code saying some resource exceeds the node's whole allocatable.
UNRESOLVABLE_BIT = 1 << 62
_CHECKS_KEPT = 1024  # distinct request sets whose checks are kept (emptied when full)
_MAX_CHECKS = 62

_MODEL = ConfigDict(extra="forbid", populate_by_name=True)


class RequestedToCapacityRatioParam(BaseModel):
    model_config = _MODEL

    shape: list[UtilizationShapePoint] = Field(default_factory=list)

    @field_validator("shape")
    @classmethod
    def _check_shape(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        if not shape:
            raise ValueError("shape: Required value: at least one point must be specified")
        check_shape(shape)
        return shape


class ScoringStrategy(BaseModel):
    model_config = _MODEL

    # No default: kube refuses a scoringStrategy without a type.
    type: str = ""
    resources: rs.ScoredResources = Field(default_factory=rs.default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = Field(
        default=None, alias="requestedToCapacityRatio"
    )

    @field_validator("resources")
    @classmethod
    def _check_resources(cls, resources: list[rs.ResourceSpec]) -> list[rs.ResourceSpec]:
        for i, r in enumerate(resources):
            if not 0 < r.weight <= 100:
                raise ValueError(f"resources[{i}].weight: Invalid value: {r.weight}: "
                                 f"resource weight of {r.name} not in valid range (0, 100]")
        return resources

    @model_validator(mode="after")
    def _check_type(self) -> ScoringStrategy:
        if self.type not in STRATEGIES:
            raise ValueError(f'type: Unsupported value: "{self.type}": supported values: '
                             + ", ".join(f'"{s}"' for s in STRATEGIES))
        if self.type == REQUESTED_TO_CAPACITY_RATIO and self.requested_to_capacity_ratio is None:
            raise ValueError("requestedToCapacityRatio: Required value: must be specified when type is "
                             "RequestedToCapacityRatio")
        if self.type != REQUESTED_TO_CAPACITY_RATIO and self.requested_to_capacity_ratio is not None:
            raise ValueError("requestedToCapacityRatio: Forbidden: must be nil when type is not "
                             "RequestedToCapacityRatio")
        return self


def _default_strategy() -> ScoringStrategy:
    return ScoringStrategy(type=LEAST_ALLOCATED)


class NodeResourcesFitArgs(BaseModel):
    model_config = _MODEL

    ignored_resources: list[str] = Field(default_factory=list, alias="ignoredResources")
    ignored_resource_groups: list[str] = Field(default_factory=list, alias="ignoredResourceGroups")
    scoring_strategy: ScoringStrategy = Field(default_factory=_default_strategy, alias="scoringStrategy")

    @field_validator("ignored_resources", "ignored_resource_groups", "scoring_strategy", mode="before")
    @classmethod
    def _null_is_unset(cls, value: object, info: ValidationInfo) -> object:
        # YAML `key:` or `key: null` means "not set" to kube, which then applies its default.
        if value is not None:
            return value
        return _default_strategy() if info.field_name == "scoring_strategy" else []

    @field_validator("ignored_resources")
    @classmethod
    def _check_ignored(cls, names: list[str]) -> list[str]:
        for i, name in enumerate(names):
            errors = label_key(name)
            if errors:
                raise ValueError(f"ignoredResources[{i}]: Invalid value: {json.dumps(name)}: {errors[0]}")
        return names

    @field_validator("ignored_resource_groups")
    @classmethod
    def _check_groups(cls, groups: list[str]) -> list[str]:
        for i, group in enumerate(groups):
            if "/" in group:
                raise ValueError(f"ignoredResourceGroups[{i}]: Invalid value: {json.dumps(group)}: "
                                 "resource group name can't contain '/'")
            errors = label_key(group)
            if errors:
                raise ValueError(f"ignoredResourceGroups[{i}]: Invalid value: {json.dumps(group)}: {errors[0]}")
        return groups


@dataclass(frozen=True, slots=True)
class _Checks:
    """The resources a pod must find room for, pod count first; immutable, so never cloned."""

    names: tuple[str, ...]
    amounts: np.ndarray  # int64, the pod's request per name (1 for the pod count)
    reasons: tuple[str, ...]
    # Per name, whether a DeviceClass maps it to DRA (None: none is), so that a node with none of
    # it allocatable leaves it to DynamicResources; set per cycle, the classes being what they are.
    dra: np.ndarray | None = None

    @property
    def key(self) -> tuple[tuple[str, ...], bytes, bytes]:
        """What a node's verdict depends on besides the node (the RowMemo key)."""
        return self.names, self.amounts.tobytes(), b"" if self.dra is None else self.dra.tobytes()

    def delegated(self, allocatable: np.ndarray) -> np.ndarray | None:
        """Per row and name, the checks DRA takes over (kube's shouldDelegateResourceToDRA): a
        mapped resource where the node has none allocatable. None when nothing is mapped."""
        if self.dra is None:
            return None
        out: np.ndarray = self.dra & (allocatable <= 0)
        return out


@dataclass(frozen=True, slots=True)
class _ScoreState:
    requests: np.ndarray  # the pod's request per scoring resource
    dra: rs.DraTotals | None = None  # devices standing for the DRA-served scored resources


def _reason(name: str) -> str:
    return TOO_MANY_PODS if name == PODS else f"Insufficient {name}"


# --- one node or one pod at a time (queueing hints) ----------------------------------------------------


def accounted_requests(pi: PodInfo) -> dict[str, int]:
    """The pod's non-zero requests kube's Fit accounts for: cpu, memory, ephemeral-storage and
    scalar resources (not the pod count, nor names kube does not track)."""
    return {
        name: value
        for name, value in pi.requests.items()
        if value > 0 and (name in (CPU, MEMORY, EPHEMERAL_STORAGE) or rs.is_scalar_resource(name))
    }


def node_allocatable(node: Node) -> dict[str, int]:
    """A node's allocatable as the scheduler reads it (millicores for cpu); raises on a quantity
    that does not parse, as the node table does."""
    return {name: resource_value(name, raw) for name, raw in node.status.allocatable.items()}


def fits_empty_node(requests: dict[str, int], allocatable: dict[str, int], dra: frozenset[str] = frozenset()) -> bool:
    """Whether a pod with these (accounted) requests fits the node with no pod on it (kube's
    isFit): room for one pod, and each request within the allocatable, but for the resources
    of `dra` (mapped by a DeviceClass) where the node has none. Nothing is ignored."""
    if allocatable.get(PODS, 0) < 1:
        return False
    return all(value <= allocatable.get(name, 0) or (name in dra and allocatable.get(name, 0) <= 0)
               for name, value in requests.items())


def requested_resources_increased(requests: dict[str, int], old: dict[str, int], new: dict[str, int],
                                  dra: frozenset[str] = frozenset()) -> bool:
    """Whether the node's pod count grew, or the allocatable of a resource the pod requests, or
    the node leaves a requested resource to DRA (kube's haveAnyRequestedResourcesIncreased)."""
    if new.get(PODS, 0) > old.get(PODS, 0):
        return True
    return any(new.get(name, 0) > old.get(name, 0) or (name in dra and new.get(name, 0) <= 0) for name in requests)


class NodeResourcesFit(
    Plugin, PreFilterPlugin, FilterPlugin, RowFilter, FilterMisses, PreScorePlugin, ScorePlugin, PlacementScorePlugin,
    EnqueueExtensions, SignPlugin,
):
    name = "NodeResourcesFit"
    Args = NodeResourcesFitArgs

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        if pi.dra_resources and mapped_resources(self.handle, pi.dra_resources):
            return None  # kube: "signature disabled when dra extended resources are used in the cluster"
        return [signers.resources(pi)]

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or self.Args(), handle)
        a: NodeResourcesFitArgs = self.args
        self.ignored = frozenset(a.ignored_resources)
        self.ignored_groups = frozenset(a.ignored_resource_groups)
        strategy = a.scoring_strategy
        self.strategy = strategy.type
        self.resource_names = tuple(r.name for r in strategy.resources)
        self.weights = tuple(r.weight for r in strategy.resources)
        self.scorer: rs.Scorer = rs.least_allocated
        if self.strategy == MOST_ALLOCATED:
            self.scorer = rs.most_allocated
        elif strategy.requested_to_capacity_ratio is not None:
            lookup = shape_lookup([(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape])
            self.scorer = functools.partial(rs.requested_to_capacity_ratio, lookup=lookup)
        self._state_key = "PreFilter" + self.name
        self._score_key = "PreScore" + self.name
        # The last nodes a hint parsed: one event asks the hint about every rejected pod.
        self._parsed_nodes: list[tuple[Node, dict[str, int]]] = []
        self._verdicts = RowMemo()
        self._checks_by_requests: dict[tuple[tuple[str, int], ...], _Checks] = {}
        self._scores = RowMemo()
        self._device_totals = DeviceTotals()

    # --- filter --------------------------------------------------------------------------

    def _ignored(self, name: str) -> bool:
        # Only extended resources can be ignored, as in kube.
        if not is_extended(name):
            return False
        return name in self.ignored or name.split("/", 1)[0] in self.ignored_groups

    def checks(self, pi: PodInfo) -> _Checks:
        """What the pod must fit, cached on the pod (per plugin instance: args may differ)."""
        cached = pi.extra.get(self.name)
        if cached is not None and cached[0] is self:
            result: _Checks = cached[1]
            return result
        # Pods of one owner request the same: their checks are one immutable object.
        same = tuple(pi.requests.items())
        found = self._checks_by_requests.get(same)
        if found is None:
            found = self._checks_of_requests(pi)
            if len(self._checks_by_requests) >= _CHECKS_KEPT:
                self._checks_by_requests.clear()
            self._checks_by_requests[same] = found
        pi.extra[self.name] = (self, found)
        return found

    def cycle_checks(self, pi: PodInfo) -> _Checks:
        """checks(pi), with the requested resources a DeviceClass maps now marked (kube asks its
        DeviceClassResolver in every Filter call; the answer holds for a cycle)."""
        checks = self.checks(pi)
        if not pi.dra_resources:
            return checks
        mapped = mapped_resources(self.handle, (n for n in pi.dra_resources if n in checks.names))
        if not mapped:
            return checks
        dra = np.fromiter((n in mapped for n in checks.names), dtype=bool, count=len(checks.names))
        dra.flags.writeable = False
        return dataclasses.replace(checks, dra=dra)

    def _checks_of_requests(self, pi: PodInfo) -> _Checks:
        names: list[str] = [PODS]
        for base in (CPU, MEMORY, EPHEMERAL_STORAGE):
            if pi.requests.get(base, 0) > 0:
                names.append(base)
        # Resource names kube does not account for (not scalar) are not checked at all.
        names.extend(
            sorted(
                n for n, v in pi.requests.items()
                if v > 0 and n not in (PODS, CPU, MEMORY, EPHEMERAL_STORAGE)
                and rs.is_scalar_resource(n) and not self._ignored(n)
            )
        )
        amounts = np.array([1 if n == PODS else pi.requests[n] for n in names], dtype=np.int64)
        amounts.flags.writeable = False
        return _Checks(tuple(names), amounts, tuple(_reason(n) for n in names))

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        checks = self.cycle_checks(pi)
        if len(checks.names) > _MAX_CHECKS:
            return None, Status.error(f"pod {pi.key} requests more than {_MAX_CHECKS - 1} distinct resources",
                                      self.name)
        state.write(self._state_key, checks)
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        checks = self._checks_of(state, pi, table)
        # A node's verdict depends on its row and the pod's checks alone: kept across cycles.
        codes = self._verdicts.values(table, checks.key, lambda rows: self._codes(checks, table, rows),
                                      lambda row: self._row_code(checks, table, row))
        if not np.count_nonzero(codes):
            return None
        return FilterResult(codes, _describer(checks.reasons))

    def filter_rows(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        checks = self._checks_of(state, pi, table)
        codes = self._codes(checks, table, rows)
        return FilterResult(codes, _describer(checks.reasons)) if np.count_nonzero(codes) else None

    def _checks_of(self, state: CycleState, pi: PodInfo, table: NodeTable) -> _Checks:
        checks: _Checks | None = state.read(self._state_key)
        if checks is None:
            checks = self.cycle_checks(pi)
        # Make sure every requested resource has a column (nodes lacking it allocate 0).
        table.request_vector(pi)
        return checks

    @staticmethod
    def _codes(checks: _Checks, table: NodeTable, rows: np.ndarray | slice) -> np.ndarray:
        """Each row's failure code (0: the pod fits): a bit per check the node fails, and
        UNRESOLVABLE_BIT when the node is too small for the pod even empty."""
        cols = np.fromiter((table.resource_index[name] for name in checks.names), dtype=np.intp,
                           count=len(checks.names))
        if isinstance(rows, slice):
            allocatable, requested = table.allocatable[rows, cols], table.requested[rows, cols]
        else:
            allocatable, requested = table.allocatable[np.ix_(rows, cols)], table.requested[np.ix_(rows, cols)]
        short = checks.amounts > allocatable - requested
        over = checks.amounts > allocatable
        delegated = checks.delegated(allocatable)
        if delegated is not None:
            short &= ~delegated
            over &= ~delegated
        failing = short.any(axis=1) & table.present[rows]
        if not failing.any():
            return np.zeros(len(failing), dtype=np.int64)
        bits = np.left_shift(np.int64(1), np.arange(len(cols), dtype=np.int64))
        codes: np.ndarray = short.astype(np.int64) @ bits
        # The pod count is never unresolvable: removing pods makes room.
        too_big = over[:, 1:].any(axis=1)
        codes |= np.where(too_big, UNRESOLVABLE_BIT, 0)
        codes[~failing] = 0
        return codes

    @staticmethod
    def _row_code(checks: _Checks, table: NodeTable, row: int) -> int:
        """_codes of one row, in plain Python (a few rows a cycle: numpy's per-call cost would
        dominate)."""
        if not table.present[row]:
            return 0
        allocatable, requested = table.allocatable[row].tolist(), table.requested[row].tolist()
        dra = checks.dra.tolist() if checks.dra is not None else None
        code, too_big = 0, False
        for i, (name, need) in enumerate(zip(checks.names, checks.amounts.tolist(), strict=True)):
            col = table.resource_index[name]
            if dra is not None and dra[i] and allocatable[col] <= 0:
                continue  # DynamicResources serves it on this node
            if need > allocatable[col] - requested[col]:
                code |= 1 << i
            if i and need > allocatable[col]:
                too_big = True
        return code | UNRESOLVABLE_BIT if code and too_big else code

    # --- what a rejected node lacks (explanations) ---------------------------------------------------

    def _room(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> tuple[_Checks, np.ndarray, np.ndarray]:
        """The checks, and per row and check the allocatable and the room left; a check DRA takes
        over on a row shows as room enough."""
        checks: _Checks | None = state.read(self._state_key)
        if checks is None:
            checks = self.cycle_checks(pi)
        table.request_vector(pi)
        cols = np.fromiter((table.resource_index[name] for name in checks.names), dtype=np.intp, count=len(checks.names))
        allocatable = table.allocatable[np.ix_(rows, cols)]
        free = allocatable - table.requested[np.ix_(rows, cols)]
        delegated = checks.delegated(allocatable)
        if delegated is not None:
            allocatable = np.where(delegated, checks.amounts, allocatable)
            free = np.where(delegated, checks.amounts, free)
        return checks, allocatable, free

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """The largest shortfall as a fraction of the node's allocatable; a node too small for the
        pod even when empty comes after every other (1000 more)."""
        checks, allocatable, free = self._room(state, pi, table, rows)
        short = np.maximum(checks.amounts - free, 0) / np.maximum(allocatable, 1)
        far = (checks.amounts[1:] > allocatable[:, 1:]).any(axis=1)
        worst = short.max(axis=1, initial=0.0)
        out: np.ndarray = np.where(far, 1000.0 + worst, worst)
        return out

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        checks, allocatable, free = self._room(state, pi, table, np.array([row]))
        parts = []
        for i, name in enumerate(checks.names):
            need, room, total = int(checks.amounts[i]), int(free[0, i]), int(allocatable[0, i])
            if need <= room:
                continue
            if name == PODS:
                parts.append(f"full: {total} pods allowed")
            elif need > total:
                parts.append(f"requests {describe_amount(name, need)} {name}, allocatable only {describe_amount(name, total)}")
            else:
                parts.append(f"needs {describe_amount(name, need - room)} more {name}")
        return "; ".join(parts)

    # --- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        state.write(self._score_key, self._score_state(pi, table))
        return None

    def _score_state(self, pi: PodInfo, table: NodeTable) -> _ScoreState:
        requests = rs.pod_scoring_requests(pi, self.resource_names, False)
        return _ScoreState(requests, dra_totals(self.handle, self._device_totals, table, self.resource_names))

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        s: _ScoreState | None = state.read(self._score_key)
        if s is None:
            s = self._score_state(pi, table)
        pod_requests = s.requests
        if s.dra is not None:
            # Devices and their allocations are no row's state: scored afresh.
            return rs.score_rows(table, rows, self.resource_names, self.weights, pod_requests, False, self.scorer, dra=s.dra)
        # A node's score depends on its row and the pod's scoring requests alone: kept across cycles.
        return self._scores.at(table, pod_requests.tobytes(), lambda where: rs.score_rows(
            table, where, self.resource_names, self.weights, pod_requests, False, self.scorer), rows)

    # --- a pod group's placements (kube v1.37, TopologyAwareWorkloadScheduling) -----------------------

    def score_placement(self, group: Any, placement: GroupPlacement, assigned: Sequence[tuple[PodInfo, int]], scheduled: int) -> int:
        """The placement as one node, bin-packed (kube scores placements MostAllocated whatever the
        Score strategy): what its nodes have requested plus what the group would add, over what
        they can hold together, per scoring resource, weighted."""
        table = self.handle.table if self.handle is not None else None
        if table is None:
            return 0
        rows = np.flatnonzero(placement.rows[: table.size])
        adding = sum((rs.pod_scoring_requests(pi, self.resource_names, False) for pi, _ in assigned),
                     np.zeros(len(self.resource_names), dtype=np.int64))
        items: list[rs.Item] = []
        for i, (weight, used, alloc) in rs.gather_indexed(table, rows, self.resource_names, self.weights, adding, False,
                                                          with_pod=False):
            total = int(used.sum()) + int(adding[i])
            items.append((weight, np.array([total], dtype=np.int64), np.array([int(alloc.sum())], dtype=np.int64)))
        return int(rs.most_allocated(items, 1)[0]) if items else 0

    # --- events and queueing hints ---------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.Delete), self.is_schedulable_after_assigned_pod_delete),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeAllocatable), self.is_schedulable_after_node_change
            ),
            # InPlacePodVerticalScaling (on by default): a resize down frees room, or shrinks the pod.
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.UpdatePodScaleDown), self.is_schedulable_after_assigned_pod_scale_down
            ),
            ClusterEventWithHint(
                ClusterEvent(TARGET_POD, ActionType.UpdatePodScaleDown), self.is_schedulable_after_target_pod_scale_down
            ),
            # DRAExtendedResource (GA): a class may come to map an extended resource the pod requests.
            ClusterEventWithHint(
                ClusterEvent(DEVICE_CLASS, ActionType.Add | ActionType.Update), self.is_schedulable_after_device_class_event
            ),
        ]

    def is_schedulable_after_device_class_event(self, pi: PodInfo, old: DeviceClass | None,
                                                new: DeviceClass | None) -> QueueingHint:
        """Queue when the class (added, or with another extendedResourceName) names a resource the
        pod requests: its extendedResourceName, or, added, its implicit name."""
        new = checked_new(self.name, DeviceClass, old, new)
        if old is not None:
            if (old.spec.extended_resource_name or "") == (new.spec.extended_resource_name or ""):
                return QueueingHint.QueueSkip
        elif DEVICE_CLASS_PREFIX + new.metadata.name in pi.requests:
            return QueueingHint.Queue
        if new.spec.extended_resource_name is not None and new.spec.extended_resource_name in pi.requests:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_assigned_pod_delete(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """Any bound or nominated pod that goes may leave room."""
        if not isinstance(old, PodInfo):
            raise TypeError(f"{self.name}: expected the deleted PodInfo, got {type(old).__name__}")
        if not old.node_name and not old.pod.status.nominated_node_name:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def is_schedulable_after_target_pod_scale_down(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """The pending pod itself asks for less now."""
        return QueueingHint.Queue

    def is_schedulable_after_assigned_pod_scale_down(
        self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """Queue when a bound pod now requests less of some resource the pending pod asks for."""
        if not isinstance(old, PodInfo) or not isinstance(new, PodInfo):
            raise TypeError(f"{self.name}: expected PodInfo objects, got {type(old).__name__} and {type(new).__name__}")
        if not new.node_name:
            return QueueingHint.QueueSkip
        for name in accounted_requests(pi):
            if old.requests.get(name, 0) > new.requests.get(name, 0):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when the pod fits the added node, or fits the updated node and the node's room
        for it grew."""
        new = checked_new(self.name, Node, old, new)
        requests = accounted_requests(pi)
        allocatable = self._allocatable(new)
        dra = mapped_resources(self.handle, pi.dra_resources) if pi.dra_resources else frozenset()
        if not fits_empty_node(requests, allocatable, dra):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        if requested_resources_increased(requests, self._allocatable(old), allocatable, dra):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def _allocatable(self, node: Node) -> dict[str, int]:
        for seen, parsed in self._parsed_nodes:
            if seen is node:
                return parsed
        parsed = node_allocatable(node)
        self._parsed_nodes = [(node, parsed), *self._parsed_nodes[:1]]
        return parsed


def _describer(reasons: tuple[str, ...]) -> Callable[[int], tuple[Code, tuple[str, ...]]]:
    memo: dict[int, tuple[Code, tuple[str, ...]]] = {}

    def describe(code: int) -> tuple[Code, tuple[str, ...]]:
        code = int(code)
        verdict = memo.get(code)
        if verdict is None:
            picked = tuple(r for j, r in enumerate(reasons) if code >> j & 1)
            status = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if code & UNRESOLVABLE_BIT else Code.UNSCHEDULABLE
            verdict = memo[code] = (status, picked)
        return verdict

    return describe
