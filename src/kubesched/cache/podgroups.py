"""What the scheduler knows of each PodGroup (scheduling.k8s.io/v1beta1): the object, and its
member pods by state (kube's pod group state in the scheduler cache).

A member is a non-terminal pod naming the group in `spec.schedulingGroup.podGroupName`, in the
group's namespace: pending (in the queue), assumed (placed by this scheduler, binding) or bound.
GangScheduling's quorum counts them: all of them for PreEnqueue, assumed and bound ones for
PlacementFeasible and Permit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodInfo

PENDING, ASSUMED, BOUND = "pending", "assumed", "bound"


def group_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def member_key(pi: PodInfo) -> str | None:
    """The `namespace/name` of the PodGroup the pod names, or None."""
    sg = pi.pod.spec.scheduling_group
    if sg is None or not sg.pod_group_name:
        return None
    return group_key(pi.namespace, sg.pod_group_name)


@dataclass(slots=True)
class GroupState:
    group: PodGroup | None = None
    members: dict[str, str] = field(default_factory=dict)  # uid -> PENDING | ASSUMED | BOUND
    infos: dict[str, PodInfo] = field(default_factory=dict)

    def all_count(self) -> int:
        return len(self.members)

    def scheduled_count(self) -> int:
        return sum(1 for state in self.members.values() if state != PENDING)

    def pending(self) -> list[PodInfo]:
        return [self.infos[uid] for uid, state in self.members.items() if state == PENDING]

    def scheduled(self) -> list[PodInfo]:
        return [self.infos[uid] for uid, state in self.members.items() if state != PENDING]


class PodGroupIndex:
    def __init__(self) -> None:
        self.states: dict[str, GroupState] = {}
        self._key_of: dict[str, str] = {}  # member uid -> group key

    def group(self, key: str) -> PodGroup | None:
        state = self.states.get(key)
        return state.group if state is not None else None

    def state(self, key: str) -> GroupState | None:
        return self.states.get(key)

    # --- PodGroup objects --------------------------------------------------------------------

    def set_group(self, pg: PodGroup) -> PodGroup | None:
        """Adds or replaces the object; returns the one it replaces."""
        state = self.states.setdefault(pg.key, GroupState())
        old, state.group = state.group, pg
        return old

    def remove_group(self, key: str) -> PodGroup | None:
        state = self.states.get(key)
        if state is None:
            return None
        old, state.group = state.group, None
        self._drop_if_empty(key, state)
        return old

    # --- members ----------------------------------------------------------------------------

    def set_member(self, pi: PodInfo, status: str) -> None:
        """The pod is a member in this state (a pending pod queued, assumed or bound)."""
        key = member_key(pi)
        if key is None:
            return
        before = self._key_of.get(pi.uid)
        if before is not None and before != key:
            self.remove_member(pi.uid)  # cannot happen (the field is immutable), but stay consistent
        state = self.states.setdefault(key, GroupState())
        state.members[pi.uid] = status
        state.infos[pi.uid] = pi
        self._key_of[pi.uid] = key

    def unassume(self, pi: PodInfo) -> None:
        """An assumption was forgotten: the pod is pending again (if it is still a member)."""
        key = self._key_of.get(pi.uid)
        state = self.states.get(key) if key is not None else None
        if state is not None and state.members.get(pi.uid) == ASSUMED:
            state.members[pi.uid] = PENDING

    def remove_member(self, uid: str) -> None:
        key = self._key_of.pop(uid, None)
        if key is None:
            return
        state = self.states.get(key)
        if state is None:
            return
        state.members.pop(uid, None)
        state.infos.pop(uid, None)
        self._drop_if_empty(key, state)

    def key_of(self, uid: str) -> str | None:
        return self._key_of.get(uid)

    def _drop_if_empty(self, key: str, state: GroupState) -> None:
        if state.group is None and not state.members:
            del self.states[key]
