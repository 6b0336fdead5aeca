"""Coscheduling: gang scheduling on scheduler-plugins' PodGroup (`scheduling.x-k8s.io/v1alpha1`), as
kubernetes-sigs/scheduler-plugins v0.34.7 does it (pkg/coscheduling), for clusters that already
use that API. Not in the default profile; enable it as scheduler-plugins documents:

    plugins:
      multiPoint: {enabled: [{name: Coscheduling}]}
      queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}

A pod joins the PodGroup named by its label `scheduling.x-k8s.io/pod-group`, in its namespace.
Members are scheduled one at a time, as any pod; Permit holds each until `minMember` of them are
assumed or bound, so the gang starts whole or not at all:

- QueueSort: higher priority first; then the group's time (when the scheduler first saw the
  PodGroup, or the group's last failure, which sends a failed group behind the others), a pod
  without a group using its first attempt's time; then `namespace/name` (members stay together).
- PreFilter (UnschedulableAndUnresolvable): the group in backoff; fewer pods with the label than
  minMember; too many of them scheduling-gated; with `minResources`, not enough free room in the
  cluster (every node's allocatable minus requests, the group's own pods not counted; passed
  checks are remembered for permitWaitingTimeSeconds).
- PostFilter: when too few members are assigned for the gang (more than podGroupRejectPercentage
  of minMember missing), the waiting members are rejected, the group backs off for
  podGroupBackoffSeconds (if set, and enough pods exist), and its failure time is recorded.
- Permit: Wait for scheduleTimeoutSeconds (else permitWaitingTimeSeconds), activating the
  siblings for the first member; once minMember are assigned, every waiting member is allowed.
- Unreserve: a member that fails after Permit rejects the members still waiting.

Messages are upstream's, word for word. Deliberate differences: the group's time is the time
this scheduler first saw it (its own clock, comparable with its pods' times) rather than the
PodGroup's creationTimestamp; sibling pods are the pods this scheduler knows (pending pods of its
profiles, and every pod placed on a node), not pods pending for other schedulers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kubesched.api.goquantity import GoQuantity, go_resource_list, parse, scheduler_quantity
from kubesched.api.podinfo import PODS, PodInfo
from kubesched.api.selectors import Requirement, Selector
from kubesched.api.xk8s import POD_GROUP_LABEL, PODGROUPS, CoschedulingPodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    PermitPlugin,
    Plugin,
    PostFilterPlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ReservePlugin,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import Diagnosis, PostFilterResult, PreFilterResult

NAME = "Coscheduling"
POD_GROUP_NOT_FOUND = "PodGroup not found"
NO_POD_GROUP = "can not find pod group"
OPTIMISTIC_REJECTION = "optimistic rejection in PostFilter"
UNRESERVE_REJECTION = "rejection in Unreserve"
MAX_PERMIT_TIMEOUT = 900.0  # kube's framework caps a Permit wait at 15 minutes
_DEFAULT_WAIT = 60.0  # util.DefaultWaitTime
_PERMITTED_DEFAULT_TTL = 3.0  # go-cache's default expiration of the permitted-groups cache


def failed_recently(group: str) -> str:
    return f"podGroup {group} failed recently"


def not_enough_siblings(pod: str, pods: int, min_member: int) -> str:
    return (f"pre-filter pod {pod} cannot find enough sibling pods, current pods number: {pods}, "
            f"minMember of group: {min_member}")


def gated_siblings(pod: str) -> str:
    return f"pre-filter pod {pod} cannot proceed due to gated pods in the same PodGroup"


def rejected_after_post_filter(group: str, pod: str) -> str:
    return f"PodGroup {group} gets rejected due to Pod {pod} is unschedulable even after PostFilter"


class CoschedulingArgs(BaseModel):
    """scheduler-plugins' CoschedulingArgs, with its defaults and validation."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    permit_waiting_time_seconds: int = Field(default=60, alias="permitWaitingTimeSeconds", strict=True)
    pod_group_backoff_seconds: int = Field(default=0, alias="podGroupBackoffSeconds", strict=True)
    pod_group_reject_percentage: int = Field(default=10, alias="podGroupRejectPercentage", strict=True)

    @model_validator(mode="after")
    def _validate(self) -> CoschedulingArgs:
        errors = []
        if self.permit_waiting_time_seconds < 0:
            errors.append(f"permitWaitingTimeSeconds: Invalid value: {self.permit_waiting_time_seconds}: must be greater than 0")
        if self.pod_group_backoff_seconds < 0:
            errors.append(f"podGroupBackoffSeconds: Invalid value: {self.pod_group_backoff_seconds}: must be greater than 0")
        if not 0 <= self.pod_group_reject_percentage <= 100:
            errors.append(f"podGroupRejectPercentage: Invalid value: {self.pod_group_reject_percentage}: "
                          "must be between 0 and 100")
        if errors:
            # kube's field.ErrorList.ToAggregate: one error alone, several in brackets.
            raise ValueError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return self


def group_name(pi: PodInfo) -> str:
    """The PodGroup the pod's label names ("" for none)."""
    return pi.labels.get(POD_GROUP_LABEL, "")


def full_name(pi: PodInfo) -> str:
    name = group_name(pi)
    return f"{pi.namespace}/{name}" if name else ""


class Coscheduling(Plugin, QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin,
                   EnqueueExtensions):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = CoschedulingArgs
    watches = (PODGROUPS,)

    def __init__(self, args: Any, handle: Handle) -> None:
        if isinstance(args, Mapping):
            args = CoschedulingArgs.model_validate(args)
        super().__init__(args or CoschedulingArgs(), handle)
        if not handle.cache.custom.watching(PODGROUPS.resource):
            raise ValueError(f"{NAME} reads {PODGROUPS.name}, which this kubesched does not watch (the watches "
                             "are chosen when it starts, from the profiles' plugins): restart kubesched to enable it")
        self.handle: Handle = handle
        a: CoschedulingArgs = self.args
        self.schedule_timeout = float(a.permit_waiting_time_seconds)
        self.backoff = float(a.pod_group_backoff_seconds)
        self.reject_threshold = a.pod_group_reject_percentage / 100.0
        # upstream's go-caches and sync.Map, keyed by namespace/name: expiry times on the handle's clock.
        self.permitted: dict[str, float] = {}  # groups that passed the minResources check
        self.backed_off: dict[str, float] = {}
        self.last_failed: dict[str, float] = {}

    # --- the group and its pods -------------------------------------------------------------------------

    def pod_group(self, pi: PodInfo) -> tuple[str, CoschedulingPodGroup | None]:
        """(namespace/name, the PodGroup) of the pod's group; ("", None) without the label."""
        name = group_name(pi)
        if not name:
            return "", None
        pg = self.handle.cache.custom.get(PODGROUPS.resource, pi.namespace, name)
        return f"{pi.namespace}/{name}", pg if isinstance(pg, CoschedulingPodGroup) else None

    def assigned(self, namespace: str, name: str) -> list[PodInfo]:
        """The group's pods assumed or bound on a node (upstream's assigned set)."""
        selector = Selector((Requirement(POD_GROUP_LABEL, "In", frozenset({name})),))
        return self.handle.cache.pods.matching(selector, {namespace})

    def siblings(self, namespace: str, name: str) -> list[PodInfo]:
        """Every pod with the group's label in its namespace that the scheduler knows: placed, or
        pending in its queue (upstream lists them from the pod informer)."""
        out = {pi.uid: pi for pi in self.assigned(namespace, name)}
        for pi in self.handle.pending_pods():
            if pi.namespace == namespace and pi.labels.get(POD_GROUP_LABEL) == name:
                out.setdefault(pi.uid, pi)
        return list(out.values())

    def _live(self, table: dict[str, float], key: str) -> bool:
        expiry = table.get(key)
        if expiry is None:
            return False
        if expiry <= self.handle.now():
            del table[key]
            return False
        return True

    # --- QueueSort ----------------------------------------------------------------------------------------

    def group_time(self, pi: PodInfo, fallback: float) -> float:
        """upstream's GetCreationTimestamp: the last failure of the group if one is recorded, else
        when the PodGroup was first seen; `fallback` (the pod's first attempt) without a group."""
        name = group_name(pi)
        if not name:
            return fallback
        key = f"{pi.namespace}/{name}"
        failed = self.last_failed.get(key)
        if failed is not None:
            return failed
        custom = self.handle.cache.custom
        pg = custom.get(PODGROUPS.resource, pi.namespace, name)
        seen = custom.first_seen(PODGROUPS.resource, pg) if pg is not None else None
        return fallback if seen is None else seen

    def sort_key(self, qpi: Any) -> tuple[int, float, str]:
        pi: PodInfo = qpi.pi
        first = qpi.initial_attempt_timestamp if qpi.initial_attempt_timestamp is not None else qpi.timestamp
        return (-pi.priority, self.group_time(pi, first), pi.key)

    # --- PreFilter ----------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        full, pg = self.pod_group(pi)
        if pg is None:
            return None, None
        if self._live(self.backed_off, full):
            return None, Status.unresolvable(failed_recently(full))
        name = pg.metadata.name
        pods = self.siblings(pi.namespace, name)
        min_member = pg.spec.min_member
        gap = min_member - len(pods)
        if gap > 0:
            return None, Status.unresolvable(not_enough_siblings(pi.pod.metadata.name, len(pods), min_member))
        for p in pods:
            if p.gated:
                gap += 1
            if gap > 0:
                return None, Status.unresolvable(gated_siblings(pi.pod.metadata.name))
        if pg.spec.min_resources is None or self._live(self.permitted, full):
            return None, None
        gap_text = self.resource_gap(pg)
        if gap_text is not None:
            return None, Status.unresolvable(f"resource gap: {gap_text}")
        self.permitted[full] = self.handle.now() + (self.schedule_timeout or _PERMITTED_DEFAULT_TTL)
        return None, None

    def resource_gap(self, pg: CoschedulingPodGroup) -> str | None:
        """upstream's CheckClusterResource: minResources (with `pods` = minMember) less each node's
        free room in turn, the group's own pods not counted; None once every resource is covered,
        else what is left, printed as Go prints the ResourceList."""
        wanted: dict[str, GoQuantity] = {name: parse(value) for name, value in (pg.spec.min_resources or {}).items()}
        wanted[PODS] = GoQuantity(pg.spec.min_member, 0, "DecimalSI")
        table = self.handle.table
        rows = table.rows()
        # The group's own pods do not take room from it: their requests go back to their nodes.
        own_rows = self.handle.cache.pods.row
        back: dict[int, np.ndarray] = {}
        for p in self.assigned(pg.metadata.namespace, pg.metadata.name):
            row = own_rows.get(p.uid)
            if row is not None:
                vec = table.request_vector(p)
                back[row] = back[row] + vec if row in back else vec
        for row in rows.tolist():
            free = table.allocatable[row] - table.requested[row]
            if row in back:
                free = free + back[row][: len(free)]
            for name in list(wanted):
                col = table.resource_index.get(name)
                base = name in ("cpu", "memory", "ephemeral-storage", PODS)
                if col is None or (not base and table.allocatable[row, col] == 0):
                    have = GoQuantity(0, 0, "")  # a resource the node does not list: a zero Quantity
                else:
                    binary = name in ("memory", "ephemeral-storage", PODS) or name.startswith("hugepages-")
                    have = scheduler_quantity(name, int(free[col]), binary)
                q = wanted[name]
                q.sub(have)
                if q.sign() <= 0:
                    del wanted[name]
            if not wanted:
                return None
        return go_resource_list(wanted)

    # --- PostFilter -----------------------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis) -> tuple[PostFilterResult | None, Status | None]:
        full, pg = self.pod_group(pi)
        if pg is None:
            return PostFilterResult(), Status.unschedulable(NO_POD_GROUP)
        min_member = pg.spec.min_member
        assigned = len(self.assigned(pi.namespace, pg.metadata.name))
        if assigned >= min_member:
            return PostFilterResult(), Status.unschedulable()
        missing = (min_member - assigned) / min_member if min_member else math.inf
        if missing <= self.reject_threshold:
            return PostFilterResult(), Status.unschedulable()
        self.reject_waiting(pi.namespace, pg.metadata.name, OPTIMISTIC_REJECTION)
        if self.backoff > 0 and len(self.siblings(pi.namespace, pg.metadata.name)) >= min_member \
                and not self._live(self.backed_off, full):  # go-cache's Add: a backoff running is not extended
            self.backed_off[full] = self.handle.now() + self.backoff
        self.permitted.pop(full, None)
        self.last_failed[full] = self.handle.now()
        return PostFilterResult(), Status.unschedulable(rejected_after_post_filter(full, pi.pod.metadata.name))

    def reject_waiting(self, namespace: str, name: str, message: str) -> None:
        """Rejects the group's pods held at Permit (they are assumed: the cache knows them)."""
        placed = self.handle.cache.placed
        for waiting in self.handle.waiting_pods():
            held = placed.get(waiting.uid)
            if held is not None and held.info.namespace == namespace and group_name(held.info) == name:
                waiting.reject(NAME, message)

    # --- Permit -------------------------------------------------------------------------------------------------

    def permit(self, state: CycleState, pi: PodInfo, node: str) -> tuple[Status | None, float]:
        full, pg = self.pod_group(pi)
        if not full:
            return None, 0.0
        if pg is None:
            return Status.unschedulable(POD_GROUP_NOT_FOUND), 0.0
        assigned = self.assigned(pi.namespace, pg.metadata.name)
        if not any(p.uid == pi.uid for p in assigned):
            assigned.append(pi)
        if len(assigned) >= pg.spec.min_member:
            self.last_failed.pop(full, None)
            for other in assigned:
                waiting = self.handle.waiting_pod(other.uid)
                if waiting is not None:
                    waiting.allow(NAME)
            return None, 0.0
        if len(assigned) == 1:
            # The first member assigned: its siblings waiting in the pool or in backoff go again.
            self.handle.activate(p.uid for p in self.siblings(pi.namespace, pg.metadata.name) if p.uid != pi.uid)
        return Status(Code.WAIT, (), NAME), min(self.wait_time(pg), MAX_PERMIT_TIMEOUT)

    def wait_time(self, pg: CoschedulingPodGroup) -> float:
        """upstream's choice: the group's scheduleTimeoutSeconds if set and not 0, else
        permitWaitingTimeSeconds if not 0, else 60 s; a group's explicit 0 keeps the args' value."""
        timeout = pg.spec.schedule_timeout_seconds
        if timeout is not None:
            wait = float(timeout)
        else:
            wait = self.schedule_timeout or _DEFAULT_WAIT
        return max(wait if wait != 0 else self.schedule_timeout, 0.0)

    # --- Reserve ----------------------------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        full, pg = self.pod_group(pi)
        if pg is None:
            return
        self.reject_waiting(pi.namespace, pg.metadata.name, UNRESERVE_REJECTION)
        self.permitted.pop(full, None)
        self.last_failed[full] = self.handle.now()

    # --- events ---------------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.Add)),
            ClusterEventWithHint(ClusterEvent(PODGROUPS.resource, ActionType.Add | ActionType.Update)),
        ]
