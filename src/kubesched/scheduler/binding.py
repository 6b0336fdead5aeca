"""Binding cycles (kube's bindingCycle): after a pod is assumed, reserved and permitted, its
binding runs as an asyncio task while the next pod is already being scheduled: wait for Permit
(a pod held there), PreBind, Bind, then PostBind. A failure anywhere undoes the assumption
through the scheduler's one failure path, and moves the pods the freed room may help.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from kubesched.framework.events import ASSIGNED_POD_DELETE, ClusterEvent
from kubesched.framework.status import Code, Status, fit_error_message
from kubesched.infra import features

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.cache.cache import Cache
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.runtime import Framework
    from kubesched.framework.waiting import PodAtPermit
    from kubesched.infra.clock import Clock
    from kubesched.observe.metrics import SchedulerMetrics
    from kubesched.observe.record import DecisionRecord
    from kubesched.queue.scheduling_queue import QueuedPodInfo, SchedulingQueue
    from kubesched.scheduler.backend import ClusterBackend
    from kubesched.scheduler.observer import CycleObserver, Stats

log = logging.getLogger(__name__)


class FailureHandler(Protocol):
    """The scheduler's one failure path (cycle.SchedulingCycle.handle_failure)."""

    def __call__(self, fwk: Framework, qpi: QueuedPodInfo, record: DecisionRecord, status: Status, rejected_by: Iterable[str],
                 pod_cycle: int, *, reserved: tuple[CycleState, str] | None = None, requeue: bool = True) -> None: ...


Move = Callable[[ClusterEvent, Any, Any, Callable[["PodInfo"], bool] | None], None]


def permit_failure(status: Status) -> Status:
    """A Reserve or Permit rejection as kube reports it: a FitError over the one node the pod was
    assumed on ("0/1 nodes are available: 1 <reason>."); an error stays as it is."""
    if not status.rejected:
        return status
    return Status(status.code, (fit_error_message(1, [(r, 1) for r in status.reasons]),), status.plugin)


def rejector(status: Status) -> list[str]:
    """The plugin a rejection names, for the queue's choice of events that may help (none for an error)."""
    return [status.plugin] if status.plugin and status.code != Code.ERROR else []


class BindingCycles:
    """The binding cycles in flight, by pod uid."""

    def __init__(
        self,
        *,
        queue: SchedulingQueue,
        cache: Cache,
        clock: Clock,
        backend: ClusterBackend,
        metrics: SchedulerMetrics,
        observer: CycleObserver,
        counts: Stats,
        waiting: dict[str, PodAtPermit],
        in_flight: dict[str, QueuedPodInfo],
        fail: FailureHandler,
        move: Move,
    ) -> None:
        self.queue = queue
        self.cache = cache
        self.clock = clock
        self.backend = backend
        self.metrics = metrics
        self.observer = observer
        self.counts = counts
        self.waiting = waiting
        self.in_flight = in_flight
        self.fail = fail
        self.move = move
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str) -> None:
        task = asyncio.get_running_loop().create_task(self._run(fwk, state, qpi, record, node, time.perf_counter()))
        self.tasks[qpi.pi.uid] = task
        task.add_done_callback(functools.partial(self._done, qpi.pi.uid))

    def _done(self, uid: str, task: asyncio.Task[None]) -> None:
        if self.tasks.get(uid) is task:  # a retry may already have started a new cycle
            del self.tasks[uid]

    def held_at_permit(self, uid: str) -> bool:
        waiting = self.waiting.get(uid)
        return waiting is not None and not waiting.future.done()

    def busy(self) -> list[asyncio.Task[None]]:
        """The binding cycles that can make progress now: not those of pods held at Permit, which
        only an allow, a reject or a timeout releases."""
        return [task for uid, task in self.tasks.items() if not self.held_at_permit(uid)]

    def _nominate_if_not_bound_at_once(self, fwk: Framework, state: CycleState, pi: PodInfo, node: str, waits: bool) -> Status | None:
        """kube's NominatedNodeNameForExpectation: when PreBind has work (its pre-flight) or Permit
        makes the pod wait, binding will take a while, so the pod's status names the node now
        (others, such as a cluster autoscaler, then count the pod there). A pre-flight error
        ends the binding cycle."""
        pre_flight = fwk.run_pre_bind_pre_flights(state, pi, node)
        if pre_flight is not None and pre_flight.code != Code.SKIP:
            return pre_flight
        if pre_flight is None or waits:
            self.backend.set_nominated_node(pi, node)
        return None

    async def _run(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str, started: float
    ) -> None:
        pi = qpi.pi
        status: Status | None = None
        rejected_by: list[str] = []  # only a Permit rejection names plugins to wait for (kube's FitError)
        binding = self.observer.binding_started(pi.uid)
        try:
            waiting = self.waiting.get(pi.uid)
            if features.current().nominated_node_name_for_expectation:
                status = self._nominate_if_not_bound_at_once(fwk, state, pi, node, waiting is not None)
            if status is None and waiting is not None:
                status = await waiting.future
                self.waiting.pop(pi.uid, None)
                if status is not None:
                    rejected_by = rejector(status)
                    status = permit_failure(status)
            if status is None:
                status = await fwk.run_pre_bind(state, pi, node)
            if status is None:
                status = await fwk.run_bind(state, pi, node)
        except Exception as exc:  # a plugin or backend bug must not kill the scheduler
            log.exception("binding %s to %s failed", pi.key, node)
            status = Status.error(f"binding failed: {exc}")
        self.observer.binding_ended(fwk, pi, node, status, binding)
        if status is None or status.code == Code.SUCCESS:
            self.queue.done(pi.uid)
            self.in_flight.pop(pi.uid, None)
            self.cache.finish_binding(pi)
            fwk.run_post_bind(state, pi, node)
            self.counts.scheduled += 1
            self.metrics.attempt("scheduled", fwk.name, time.perf_counter() - started)
            if qpi.initial_attempt_timestamp is not None:
                self.metrics.scheduled_after(qpi.attempts, self.clock.now() - qpi.initial_attempt_timestamp)
            self.backend.record_event(pi, "Normal", "Scheduled", f"Successfully assigned {pi.key} to {node}")
            return
        self.counts.bind_failures += 1
        self.metrics.attempt("error", fwk.name, time.perf_counter() - started)
        self.metrics.bind_failed(status.plugin or "unknown")
        if not status.reasons:
            status = Status(status.code, ("binding rejected",), status.plugin)
        # A pod deleted meanwhile is reported but not requeued (kube checks its informer cache).
        deleted = self.in_flight.pop(pi.uid, None) is None
        if not deleted:  # kube's binding-cycle failure clears the nomination (its own, or a preemption's)
            self.backend.set_nominated_node(pi, None)
        self.fail(fwk, qpi, record, status, rejected_by, self.queue.scheduling_cycle, reserved=(state, node), requeue=not deleted)
        self.queue.done(pi.uid)
        # kube moves the pods an assigned pod's deletion may help: the assumption is gone.
        undone = pi.seen_as(node_name=node)  # kube's event carries the assumed pod, on its node
        self.move(ASSIGNED_POD_DELETE, undone, None, lambda other: other.uid != pi.uid)
