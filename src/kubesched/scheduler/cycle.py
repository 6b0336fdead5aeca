"""One scheduling cycle (kube's schedule_one.go), read top to bottom:

`schedule_one` pops the next pod (or pod group, or burst) from activeQ. A pod's cycle chooses a
node (scheduler.nodechoice: PreFilter, Filter, Score, select), and then either assumes the pod on
it, runs Reserve and Permit and starts its binding cycle in the background (scheduler.binding),
or, when no node fits, runs PostFilter (preemption) and fails the attempt. Every failed attempt,
from either cycle, ends in `handle_failure`. What the cycle leaves behind (its decision record,
trace, metrics, published results, shadow decisions) is the observer's (scheduler.observer).

Methods of the Scheduler (scheduler.core); the attributes they use are declared below.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.batching import OpportunisticBatch
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status, fit_error_message
from kubesched.framework.types import Diagnosis
from kubesched.framework.waiting import PodAtPermit
from kubesched.infra import features
from kubesched.queue.scheduling_queue import QueuedGroup
from kubesched.scheduler.binding import BindingCycles, permit_failure, rejector
from kubesched.scheduler.nodechoice import NodeChoice, Nominations, choose_node
from kubesched.scheduler.observer import Cycle, CycleObserver, Stats, note_choice

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.cache.cache import Cache
    from kubesched.framework.runtime import Framework
    from kubesched.infra.clock import Clock
    from kubesched.observe.record import DecisionRecord
    from kubesched.queue.scheduling_queue import Nominator, QueuedPodInfo, SchedulingQueue
    from kubesched.scheduler.backend import ClusterBackend
    from kubesched.scheduler.burstcycle import BurstCycle
    from kubesched.scheduler.generation import Generation
    from kubesched.scheduler.groupcycle import GroupCycle


class SchedulingCycle:
    cache: Cache
    queue: SchedulingQueue
    nominator: Nominator
    nominations: Nominations
    clock: Clock
    backend: ClusterBackend
    frameworks: dict[str, Framework]
    generation: Generation
    observer: CycleObserver
    stats: Stats
    rng: np.random.Generator
    waiting: dict[str, PodAtPermit]
    in_flight: dict[str, QueuedPodInfo]
    nominated_before_assume: dict[str, str]
    binder: BindingCycles
    group_cycle: GroupCycle
    burst_cycle: BurstCycle
    _batches: weakref.WeakKeyDictionary[Framework, OpportunisticBatch]

    def schedule_one(self) -> bool:
        """Schedules the next pod (or pod group, or burst) in activeQ, if any. Returns False when
        activeQ is empty."""
        qpi = self.queue.pop()
        if qpi is None:
            return False
        if isinstance(qpi, QueuedGroup):
            self.group_cycle.run(qpi)
            return True
        fwk = self.frameworks.get(qpi.pi.scheduler_name)
        if fwk is not None and fwk.bursts is not None and qpi.burst is not None:
            siblings = self.queue.take_burst(qpi)
            if siblings:
                self.burst_cycle.run(fwk, [qpi, *siblings])
                return True
        self.schedule_queued(qpi)
        return True

    def profile_for(self, qpi: QueuedPodInfo) -> Framework | None:
        """The pod's profile, or None when it is no longer to be scheduled (its profile is gone, it
        is being deleted, or it is on a node already): it leaves the queue."""
        pi = qpi.pi
        fwk = self.frameworks.get(pi.scheduler_name)
        if fwk is None or pi.pod.metadata.deletion_timestamp or self.cache.node_of(pi.uid) is not None:
            self.queue.delete(pi.uid)
            return None
        return fwk

    def begin_cycle(self, fwk: Framework, qpi: QueuedPodInfo) -> Cycle:
        shadows = self.generation.shadows.get(fwk.name, ()) if self.generation.shadows else ()
        return self.observer.begin(fwk, qpi, self.queue.scheduling_cycle, shadows)

    def schedule_queued(self, qpi: QueuedPodInfo) -> None:
        """One pod's scheduling cycle, from PreFilter to Permit, binding started in the background."""
        fwk = self.profile_for(qpi)
        if fwk is None:
            return
        cycle = self.begin_cycle(fwk, qpi)
        choice = self.schedule_pod(fwk, cycle.state, qpi.pi, cycle.record)
        self.finish_cycle(cycle, qpi, choice)

    def finish_cycle(self, cycle: Cycle, qpi: QueuedPodInfo, choice: NodeChoice) -> None:
        """What follows the choice of a node: the pod assumed there, reserved, permitted and bound
        in the background; or PostFilter and the failure."""
        fwk, state, record, pod_cycle = cycle.fwk, cycle.state, cycle.record, self.queue.scheduling_cycle
        self.observer.decided(cycle, choice)
        if choice.node is not None:
            self._assume_and_bind(fwk, state, qpi, record, choice.node, pod_cycle)
        elif choice.failure is not None:
            self.handle_failure(fwk, qpi, record, choice.failure, rejector(choice.failure), pod_cycle)
        else:
            diagnosis = choice.found.diagnosis
            status = self._post_filter(fwk, state, qpi.pi, record, diagnosis)
            self.handle_failure(fwk, qpi, record, status, diagnosis.unschedulable_plugins, pod_cycle)
        self.observer.end(cycle)

    def schedule_pod(self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord,
                     within: np.ndarray | None = None) -> NodeChoice:
        """kube's schedulePod: a node for the pod (among the rows `within`, for a group's member or a
        burst's planned node), its rejections and scores recorded. A pod's own cycle uses the
        profile's OpportunisticBatching state."""
        batch = self._batch(fwk) if within is None and features.current().opportunistic_batching else None
        choice = choose_node(fwk, state, pi, self.nominations, self.rng, within=within, batch=batch,
                             cycle=self.queue.scheduling_cycle)
        note_choice(record, choice, self.cache.table)
        return choice

    def schedule_member(
        self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, within: np.ndarray | None = None
    ) -> NodeChoice:
        """One member's placement in a PodGroup cycle: the pod's own cycle up to the chosen node
        (no PostFilter: a member never preempts on its own) among the nodes `within` its group's
        placement, its rejections recorded."""
        choice = self.schedule_pod(fwk, state, pi, record, within)
        self.observer.member_chosen(fwk, record)
        return choice

    def fail_attempt(self, fwk: Framework, qpi: QueuedPodInfo, record: DecisionRecord, status: Status) -> None:
        """A group member's failed attempt, reported as any pod's; its group takes it back to the queue."""
        self.handle_failure(fwk, qpi, record, status, (), self.queue.scheduling_cycle, requeue=False)

    def _batch(self, fwk: Framework) -> OpportunisticBatch:
        """The profile's OpportunisticBatching state (a new generation's framework starts afresh)."""
        batch = self._batches.get(fwk)
        if batch is None:
            batch = self._batches[fwk] = OpportunisticBatch(fwk)
        return batch

    def _post_filter(
        self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, diagnosis: Diagnosis
    ) -> Status:
        """The pod fits nowhere: PostFilter (preemption) may make room. Returns the failure to
        report, kube's FitError message."""
        result, status = fwk.run_post_filter(state, pi, diagnosis)
        if status is not None and status.reasons:
            diagnosis.post_filter_msg = status.message()
        if result is not None and result.victims:
            record.victims = tuple(v.key for v in result.victims)
        if result is not None and result.nominated_node is not None:
            # A node nominates; "" clears an earlier nomination that preemption gave up on.
            record.nominated = result.nominated_node or None
            fwk.nominate(pi, result.nominated_node or None)
        message = fit_error_message(
            diagnosis.num_nodes, diagnosis.reasons.items(), diagnosis.pre_filter_msg, diagnosis.post_filter_msg
        )
        return Status(Code.UNSCHEDULABLE, (message,))

    # --- failure: one path for every attempt that does not end in a bound pod --------------------------

    def handle_failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        record: DecisionRecord,
        status: Status,
        rejected_by: Iterable[str],
        pod_cycle: int,
        *,
        reserved: tuple[CycleState, str] | None = None,
        requeue: bool = True,
    ) -> None:
        """Ends a failed attempt, from either cycle (kube's handleSchedulingFailure, with
        handleBindingCycleError's undo first when the pod was already assumed on a node):
        Unreserve and forget the assumption, record the outcome, post the FailedScheduling event,
        set the PodScheduled condition, and put the pod back in the queue: with backoff, or in the
        unschedulable pool until an event one of the rejecting plugins registered for."""
        pi = qpi.pi
        if reserved is not None:
            state, node = reserved
            self.unreserve_and_forget(fwk, state, pi, node)
        message = status.message()
        if status.code == Code.ERROR:
            record.result, reason = "error", "SchedulerError"
            self.stats.errors += 1
        else:
            record.result, reason = "unschedulable", "Unschedulable"
            self.stats.unschedulable += 1
        record.message = message
        self.backend.record_event(pi, "Warning", "FailedScheduling", message)
        self.backend.set_unschedulable(pi, message, reason)
        if requeue:
            self.queue.requeue(qpi, rejected_by, pod_cycle)

    # --- assume, reserve, permit, then bind in the background -------------------------------------------

    def _assume_and_bind(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str, pod_cycle: int
    ) -> None:
        status = self.assume_and_reserve(fwk, state, qpi.pi, record, node)
        if status is None:
            self.permit_and_bind(fwk, state, qpi, record, node, pod_cycle)
        else:
            self.handle_failure(fwk, qpi, record, permit_failure(status), rejector(status), pod_cycle, reserved=(state, node))

    def assume_and_reserve(self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, node: str) -> Status | None:
        """The pod counts on the node from now on (kube's assume), and Reserve runs; a failure is
        returned for the caller to undo (Unreserve, forget) and report."""
        record.chosen = node
        self.cache.assume(pi, node)
        # kube's assume drops the pod's nomination: the pod now holds its room itself, and a pod
        # counted both assumed and nominated would be counted twice by the pods after it (a
        # group's next members). Undoing the assumption brings the nomination back (`forget`).
        nominated = self.nominator.node_of.get(pi.uid)
        if nominated is not None:
            self.nominator.remove(pi.uid)
            self.nominated_before_assume[pi.uid] = nominated
        return fwk.run_reserve(state, pi, node)

    def unreserve_and_forget(self, fwk: Framework, state: CycleState, pi: PodInfo, node: str) -> None:
        """Undoes `assume_and_reserve` (kube's unreserveAndForget): Unreserve runs, the cache
        forgets the pod, and the nomination the assumption dropped comes back."""
        fwk.run_unreserve(state, pi, node)
        self.cache.forget(pi)
        nominated = self.nominated_before_assume.pop(pi.uid, None)
        if nominated is not None:
            self.nominator.nominate(pi, nominated)

    def permit_and_bind(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str, pod_cycle: int
    ) -> None:
        """Permit for a pod assumed and reserved, then its binding cycle in the background; a
        Permit rejection fails the attempt (Unreserve, forget, requeue)."""
        pi = qpi.pi
        status, waits = fwk.run_permit(state, pi, node)
        if status is not None:
            status = permit_failure(status)
            self.handle_failure(fwk, qpi, record, status, rejector(status), pod_cycle, reserved=(state, node))
            return
        record.result = "scheduled"
        self.queue.assumed(pi.uid)
        self.nominator.remove(pi.uid)
        self.nominated_before_assume.pop(pi.uid, None)
        self.in_flight[pi.uid] = qpi
        if waits:
            self.waiting[pi.uid] = PodAtPermit(pi.uid, node, waits, self.clock)
        self.binder.start(fwk, state, qpi, record, node)
