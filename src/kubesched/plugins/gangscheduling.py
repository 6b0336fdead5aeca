"""GangScheduling: a gang's pods are placed together or not at all (kube v1.37, GenericWorkload).

A pod joins a PodGroup with `spec.schedulingGroup.podGroupName`. The group is scheduled in one
PodGroup scheduling cycle (kubesched.scheduler.groupcycle); this plugin supplies its quorum:

- PreEnqueue holds a member until its PodGroup exists and, for a gang, until `minCount` members
  exist (pending, assumed or bound). The whole group waits gated; nothing is written (no event,
  no condition: kube only logs these).
- PlacementFeasible, before the members are tried and after each one: `minCount` cannot be met
  any more (Unschedulable), not yet (Wait), or met (Success). A basic group's minCount is 1.
- Permit holds a member until `minCount` members are assumed or bound (five minutes at most),
  and lets the others waiting go once they are.

Queueing hints, as kube's: a pending or assigned pod added to the same group, the PodGroup
added, or its gang minCount lowered, may release a gated group.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.podgroups import PODGROUP_RESOURCE, PodGroup
from kubesched.api.podinfo import PodInfo
from kubesched.cache.podgroups import member_key
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, UNSCHEDULED_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, PermitPlugin, PlacementFeasiblePlugin, Plugin, PreEnqueuePlugin
from kubesched.framework.status import Code, Status
from kubesched.plugins.helper.args import refuse_args

NAME = "GangScheduling"
PERMIT_TIMEOUT = 300.0  # kube's, fixed
WAITING_FOR_GROUP = 'waiting for pods\'s pod group "{}" to appear in scheduling queue'  # sic, as kube writes it
WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def cannot_be_satisfied(min_count: int, scheduled: int, remaining: int) -> str:
    return f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


def not_yet_satisfied(min_count: int, scheduled: int, remaining: int) -> str:
    return f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"


class GangScheduling(Plugin, PreEnqueuePlugin, PlacementFeasiblePlugin, PermitPlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        if handle is None:
            raise ValueError(f"{NAME} needs the scheduler's pod groups (a handle)")
        super().__init__(None, handle)
        self.handle: Handle = handle

    # --- queueing ---------------------------------------------------------------------------------

    def pre_enqueue(self, pi: PodInfo) -> Status | None:
        key = member_key(pi)
        if key is None:
            return None
        state = self.handle.cache.groups.state(key)
        group = state.group if state is not None else None
        if state is None or group is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_GROUP.format(key.split("/", 1)[1]),))
        if group.is_gang and state.all_count() < group.min_count:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_MEMBERS,))
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(UNSCHEDULED_POD, ActionType.Add), self._pod_added),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.Add), self._pod_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_RESOURCE, ActionType.Add), self._group_added),
            ClusterEventWithHint(ClusterEvent(PODGROUP_RESOURCE, ActionType.Update), self._group_updated),
        ]

    @staticmethod
    def _pod_added(pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        key = member_key(pi)
        if key is None or not isinstance(new, PodInfo):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue if member_key(new) == key else QueueingHint.QueueSkip

    @staticmethod
    def _group_added(pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        key = member_key(pi)
        return QueueingHint.Queue if key is not None and isinstance(new, PodGroup) and new.key == key else QueueingHint.QueueSkip

    @staticmethod
    def _group_updated(pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        key = member_key(pi)
        if key is None or not isinstance(new, PodGroup) or new.key != key or not isinstance(old, PodGroup):
            return QueueingHint.QueueSkip
        if not (old.is_gang and new.is_gang):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue if new.min_count < old.min_count else QueueingHint.QueueSkip

    # --- the PodGroup cycle's quorum -----------------------------------------------------------------

    def placement_feasible(self, group: PodGroup, scheduled: int, remaining: int) -> Status | None:
        min_count = group.min_count
        if remaining + scheduled < min_count:
            return Status(Code.UNSCHEDULABLE, (cannot_be_satisfied(min_count, scheduled, remaining),), NAME)
        if scheduled < min_count:
            return Status(Code.WAIT, (not_yet_satisfied(min_count, scheduled, remaining),), NAME)
        return None

    # --- Permit ---------------------------------------------------------------------------------------

    def permit(self, state: CycleState, pi: PodInfo, node: str) -> tuple[Status | None, float]:
        key = member_key(pi)
        groups = self.handle.cache.groups
        group_state = groups.state(key) if key is not None else None
        group = group_state.group if group_state is not None else None
        if group_state is None or group is None or not group.is_gang:
            return None, 0.0
        if group_state.scheduled_count() < group.min_count:
            return Status(Code.WAIT, (WAITING_AT_PERMIT,), NAME), PERMIT_TIMEOUT
        for other in group_state.scheduled():
            waiting = self.handle.waiting_pod(other.uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0.0
