"""What preemption does once it has chosen (kube's preemption/executor.go, with
SchedulerAsyncPreemption): the victims are deleted in the background, and the preemptor waits at
PreEnqueue until they are going.

- Victims already terminating, or whose deletion is under way, are not deleted twice; a victim
  still waiting at Permit is rejected there instead (it is not running yet: rejecting it frees
  the node), with a Preempted event.
- Every victim but the last is deleted at once, then the last. Until the cache sees the last one
  gone or terminating, PreEnqueue holds the preemptor back (`gate`), so that each deletion it
  waits for does not send it round the scheduling cycle again. kube lets it go as soon as the last
  API call returns; kubesched waits for the watch to report it (the watch reports the pods in
  order, so the others were reported before): otherwise, with a thousand deletions whose events
  lag behind their API calls, the preemptor's next attempt finds its victims still running,
  preempts again, and the events that would release it from that second preemption have all come
  already.
- If a deletion fails, the preemptors are activated: no deletion event may come to release them.
- Until the cache sees its deletion a victim is still there and counts as terminating, as kube's
  victims in graceful deletion do (`deleting_now`), and is not deleted again; a preemptor whose
  nomination is not in its status yet is known to wait on its node (`waiting_on_node`).

A pod group's preemption holds every member at PreEnqueue (`gate_group`, by the PodGroup's uid),
as kube's does; the queue lets a gated group go on the events of its gating plugin, and on
`Handle.activate` of any member (a failed deletion).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kubesched.api.podinfo import PodInfo
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status

PREEMPTED_REASON = "Preempted"
WAITING_POD_MESSAGE = "preempted"
# kube's PreEnqueue while a preemption's deletions are under way.
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
WAITING_FOR_GROUP_PREEMPTION = "waiting for the preemption for this pod group to be finished"


class Executor:
    """The deletions of one preemption plugin (`plugin`: its name, in rejections and statuses)."""

    def __init__(self, handle: Handle, plugin: str) -> None:
        self.handle = handle
        self.plugin = plugin
        # The node of each victim being deleted (until the cache sees it going), and the node each
        # preemptor waits on with its count of pending deletions.
        self.deleting: dict[str, str] = {}
        self.waiting_on: dict[str, tuple[str, int]] = {}
        # Preemptions whose deletions are under way, by preemptor uid (a pod's, or a PodGroup's):
        # the last victim's uid once only it is left (kube's preempting set and
        # lastVictimsPendingPreemption).
        self.preempting: dict[str, str | None] = {}

    def deleting_now(self, pi: PodInfo) -> bool:
        return pi.uid in self.deleting

    def waiting_on_node(self, pi: PodInfo) -> str:
        """The node the preemptor's victims are being deleted from ("" if none)."""
        waiting = self.waiting_on.get(pi.uid)
        return waiting[0] if waiting is not None else ""

    def to_delete(self, victims: Sequence[PodInfo], waiting_message: str) -> list[PodInfo]:
        """The victims to delete through the API: those already going away are skipped, and a pod
        held at Permit is rejected there instead, with a Preempted event saying `waiting_message`."""
        handle = self.handle
        self._forget_seen()
        doomed: list[PodInfo] = []
        for victim in victims:
            if victim.pod.metadata.deletion_timestamp or victim.uid in self.deleting:
                continue
            waiting = handle.waiting_pod(victim.uid)
            if waiting is not None:
                waiting.reject(self.plugin, WAITING_POD_MESSAGE)
                handle.record_event(victim, "Normal", PREEMPTED_REASON, waiting_message)
                continue
            doomed.append(victim)
        return doomed

    def evict(self, gate: str | None, preemptors: Sequence[PodInfo], victims: list[PodInfo], node: str, message: str) -> None:
        """Deletes the victims in the background (PostFilter itself is synchronous), through the
        handle's `spawn`, so that the scheduler tracks and drains the deletions; `gate` is the uid
        of the preemptor, or of the PodGroup, that PreEnqueue holds until then (None: none is
        held)."""
        if not victims:
            return
        lead = preemptors[0]
        for victim in victims:
            self.deleting[victim.uid] = node
        _, pending = self.waiting_on.get(lead.uid, (node, 0))
        self.waiting_on[lead.uid] = (node, pending + len(victims))
        if gate is not None:
            self.preempting[gate] = None
        self.handle.spawn(self._evict_all(gate, lead.uid, [p.uid for p in preemptors], victims, message),
                          f"preemption: deleting {len(victims)} victims for {lead.key}")

    async def _evict_all(self, gate: str | None, lead: str, preemptors: list[str], victims: list[PodInfo], message: str) -> None:
        done = last_asked = False
        *first, last = victims
        try:
            results = await asyncio.gather(*(self._delete(lead, v, message) for v in first), return_exceptions=True)
            failed = next((r for r in results if isinstance(r, BaseException)), None)
            if failed is not None:
                raise failed
            if gate is not None:
                self.preempting[gate] = last.uid
            last_asked = True
            await self._delete(lead, last, message)
            done = True
        finally:
            if not last_asked:
                self._settle(lead, last, asked=False)  # after a failure the last is left (kube's too)
            # Done, the gate stays until the cache sees the last victim going (`_running`).
            if gate is not None and (not done or self._seen_going(last.uid)):
                self.preempting.pop(gate, None)
            if not done:
                self.handle.activate(preemptors)

    async def _delete(self, preemptor_uid: str, victim: PodInfo, message: str) -> None:
        asked = False
        try:
            await self.handle.delete_pod(victim, message)
            asked = True
        finally:
            self._settle(preemptor_uid, victim, asked)

    def _settle(self, preemptor_uid: str, victim: PodInfo, asked: bool) -> None:
        """A victim's deletion was asked for (`asked`), or failed or was never tried: it is tracked
        until the cache sees it going only in the first case, and no longer waited on."""
        if not asked or self._seen_going(victim.uid):
            self.deleting.pop(victim.uid, None)
        node, pending = self.waiting_on.get(preemptor_uid, ("", 1))
        if pending <= 1:
            self.waiting_on.pop(preemptor_uid, None)
        else:
            self.waiting_on[preemptor_uid] = (node, pending - 1)

    def gate(self, pi: PodInfo) -> Status | None:
        """kube's PreEnqueue under async preemption: a pod whose victims are still being deleted
        waits, until the last victim is gone or terminating."""
        if self._running(pi.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_PREEMPTION,), self.plugin)
        return None

    def gate_group(self, group_uid: str) -> Status | None:
        """The same for a member of a PodGroup (by the group's uid) whose preemption is under way."""
        if self._running(group_uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_GROUP_PREEMPTION,), self.plugin)
        return None

    def _running(self, preemptor: str) -> bool:
        if preemptor not in self.preempting:
            return False
        last = self.preempting[preemptor]
        if last is not None and self._seen_going(last):
            # Its deletion went through: the preemption is over, and the watch reported the others
            # before it.
            del self.preempting[preemptor]
            self._forget_seen()
            return False
        return True

    def _seen_going(self, uid: str) -> bool:
        """Whether the cache has seen the pod deleted or terminating."""
        placed = self.handle.cache.placed.get(uid)
        return placed is None or bool(placed.info.pod.metadata.deletion_timestamp)

    def _forget_seen(self) -> None:
        """Victims, and finished preemptions, whose deletions the cache has seen are no longer
        tracked (else both would keep every one whose state nobody asked about again)."""
        for uid in [uid for uid in self.deleting if self._seen_going(uid)]:
            del self.deleting[uid]
        for preemptor in [p for p, last in self.preempting.items() if last is not None and self._seen_going(last)]:
            del self.preempting[preemptor]
