"""Pod groups in the scheduling queue (kube v1.37's queueing of PodGroups, GenericWorkload).

The members of a PodGroup are queued inside one entity, a QueuedGroup, that sits in activeQ,
backoffQ or the unschedulable pool like a pod and is popped whole for one PodGroup scheduling
cycle. Three holding places besides (kube's incompletePodGroupPods and pendingPodGroupPods):

- a member whose PodGroup is not known yet waits, no PreEnqueue run, until the PodGroup arrives;
- a member arriving while its group's entity is being scheduled waits until that cycle ends,
  then joins the entity rebuilt from the members that came back;
- an entity is gated as a whole when PreEnqueue gates any member.

After a cycle (`group_attempted`): the members that did not go to binding come back with the
ones that arrived meanwhile; none, and the entity is gone. Otherwise a cycle that placed the
group goes back to activeQ at once (members left over), an unschedulable one backs off (its
UnschedulableCount), an erroring one too (its error count). A group's backoff is capped at
podMaxBackoffSeconds x sqrt(members), and a group is never popped before its backoff ends:
an unschedulable group retries on its backoff, it does not wait in the pool for an event.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kubesched.api.podinfo import PodInfo


class Queued(Protocol):
    """What ordering a group's members reads of them (scheduling_queue.QueuedPodInfo)."""

    pi: PodInfo
    attempts: int
    timestamp: float


Q = TypeVar("Q", bound=Queued)

GROUP_PREFIX = "podgroup/"
# Where a member is when not in an entity's heap position (QueuedPodInfo.where of members).
MEMBER, INCOMPLETE, PENDING = "member", "incomplete", "pending"


def member_order(qpi: Queued) -> tuple[int, int, float, str]:
    """The order a group's members are tried in: priority, attempts (more first), queue time, name."""
    return (-qpi.pi.priority, -qpi.attempts, qpi.timestamp, qpi.pi.pod.metadata.name)


def group_backoff_cap(max_backoff: float, members: int) -> float:
    return max_backoff * math.sqrt(members) if members > 1 else max_backoff


@dataclass(slots=True)
class GroupAttempt:
    """How a PodGroup cycle ended for the queue: the root status code ("success",
    "unschedulable" or "error") and the members that go back (the others went to binding)."""

    outcome: str
    back: Sequence[Queued] = ()
    rejectors: dict[str, frozenset[str]] = field(default_factory=dict)  # uid -> rejecting plugins


def lead(members: Iterable[Q]) -> Q:
    return min(members, key=member_order)


GroupOf = Callable[[PodInfo], str | None]
GroupKnown = Callable[[str], bool]
