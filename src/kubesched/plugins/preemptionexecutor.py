"""What preemption does once it has chosen (kube's preemption/executor.go, with
SchedulerAsyncPreemption): the victims are deleted in the background, and the preemptor waits at
PreEnqueue until they are going.

- Victims already terminating, or whose deletion is under way, are not deleted twice; a victim
  still waiting at Permit is rejected there instead (it is not running yet: rejecting it frees
  the node), with a Preempted event.
- Every victim but the last is deleted at once, then the last. Until the last is gone or
  terminating, PreEnqueue holds the preemptor back (`gate`), so that each deletion it waits for
  does not send it round the scheduling cycle again.
- If a deletion fails, the preemptors are activated: no deletion event may come to release them.
- Until its deletion completes a victim is still in the cache and counts as terminating, as kube's
  victims in graceful deletion do (`deleting_now`); a preemptor whose nomination is not in its
  status yet is known to wait on its node (`waiting_on_node`).

Pod groups are not held at PreEnqueue (kube holds them): a group's entity in kubesched's queue
carries no rejecting plugins, so the gate would be its only one and its hint skips; the group
post-filter's "ongoing preemption" check answers its attempts while the deletions run instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import Code, Handle, Status

PREEMPTED_REASON = "Preempted"
WAITING_POD_MESSAGE = "preempted"
# kube's PreEnqueue while a preemption's deletions are under way.
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


class Executor:
    """The deletions of one preemption plugin (`plugin`: its name, in rejections and statuses)."""

    def __init__(self, handle: Handle, plugin: str) -> None:
        self.handle = handle
        self.plugin = plugin
        # The node of each victim being deleted, and the node each preemptor waits on with its
        # count of pending deletions.
        self.deleting: dict[str, str] = {}
        self.waiting_on: dict[str, tuple[str, int]] = {}
        # Preemptions whose deletions are under way, by preemptor uid: the last victim's uid once
        # only it is left (kube's preempting set and lastVictimsPendingPreemption).
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
        of the preemptor PreEnqueue holds until then (None: none is held)."""
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
        done = False
        try:
            *first, last = victims
            results = await asyncio.gather(*(self._delete(lead, v, message) for v in first), return_exceptions=True)
            failed = next((r for r in results if isinstance(r, BaseException)), None)
            if failed is not None:
                raise failed
            if gate is not None:
                self.preempting[gate] = last.uid
            await self._delete(lead, last, message)
            done = True
        finally:
            if gate is not None:
                self.preempting.pop(gate, None)
            if not done:
                self.handle.activate(preemptors)

    async def _delete(self, preemptor_uid: str, victim: PodInfo, message: str) -> None:
        try:
            await self.handle.delete_pod(victim, message)
        finally:
            self.deleting.pop(victim.uid, None)
            node, pending = self.waiting_on.get(preemptor_uid, ("", 1))
            if pending <= 1:
                self.waiting_on.pop(preemptor_uid, None)
            else:
                self.waiting_on[preemptor_uid] = (node, pending - 1)

    def gate(self, pi: PodInfo) -> Status | None:
        """kube's PreEnqueue under async preemption: a pod whose victims are still being deleted
        waits, until the last victim is gone or terminating."""
        if pi.uid not in self.preempting:
            return None
        last = self.preempting[pi.uid]
        if last is not None:
            placed = self.handle.cache.placed.get(last)
            if placed is None or placed.info.pod.metadata.deletion_timestamp:
                return None  # its deletion went through: the preemption is over
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_PREEMPTION,), self.plugin)
