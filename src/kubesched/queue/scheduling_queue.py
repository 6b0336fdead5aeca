"""kube-scheduler's scheduling queue: activeQ, backoffQ, the unschedulable pool and gated pods.

- activeQ pops in the order of the profile's QueueSort plugin.
- A pod that failed goes to backoffQ (1 s doubling to 10 s by default) if a cluster
  event arrived while it was being scheduled, else to the unschedulable pool.
- The pool is drained by cluster events that the rejecting plugins registered for
  (EnqueueExtensions), or after `max_in_unschedulable` seconds.
- Pods rejected by PreEnqueue (scheduling gates) wait, gated, until they change.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.podinfo import PodInfo
from kubesched.clock import Clock, Timer
from kubesched.framework.interface import ClusterEvent, Status

DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pi: PodInfo
    timestamp: float  # when it (re)entered the queue: the sort's tie-breaker
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: frozenset[str] = frozenset()
    gated_by: Status | None = None
    backoff_expiry: float = 0.0
    where: str = ""  # "active", "backoff", "unschedulable", "gated", "" (in flight)
    version: int = 0
    entered_pool: float = 0.0
    pool_cycle: int = 0  # the scheduling cycle whose failure put it in the unschedulable pool


@dataclass(slots=True)
class QueueCounts:
    active: int
    backoff: int
    unschedulable: int
    gated: int


class SchedulingQueue:
    def __init__(
        self,
        clock: Clock,
        sort_key: Callable[[QueuedPodInfo], Any],
        pre_enqueue: Callable[[PodInfo], Status | None],
        events_by_plugin: dict[str, list[ClusterEvent]],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.clock = clock
        self._sort_key = sort_key
        self._pre_enqueue = pre_enqueue
        self._events_by_plugin = events_by_plugin
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._on_change = on_change or (lambda: None)
        self._seq = itertools.count()
        self.pods: dict[str, QueuedPodInfo] = {}  # every pending pod we own, by uid
        self._active: list[tuple[Any, int, int, QueuedPodInfo]] = []
        self._backoff: list[tuple[float, int, int, QueuedPodInfo]] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        self._pool_buckets: dict[frozenset[str], dict[str, QueuedPodInfo]] = {}
        self._counts = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._backoff_timer: Timer | None = None
        self._backoff_timer_at = float("inf")
        self._pool_timer: Timer | None = None
        self.incoming: dict[tuple[str, str], int] = {}  # (queue, event) -> pods, for metrics
        self._interest_cache: dict[tuple[frozenset[str], ClusterEvent], bool] = {}

    # --- state changes ---------------------------------------------------------------------------

    def _set_where(self, qpi: QueuedPodInfo, where: str, event: str = "") -> None:
        if qpi.where:
            self._counts[qpi.where] -= 1
            if qpi.where == "unschedulable":
                self._unschedulable.pop(qpi.pi.uid, None)
                bucket = self._pool_buckets.get(qpi.unschedulable_plugins)
                if bucket is not None:
                    bucket.pop(qpi.pi.uid, None)
                    if not bucket:
                        del self._pool_buckets[qpi.unschedulable_plugins]
            elif qpi.where == "gated":
                self._gated.pop(qpi.pi.uid, None)
        qpi.where = where
        qpi.version += 1
        if where:
            self._counts[where] += 1
            key = (where, event)
            self.incoming[key] = self.incoming.get(key, 0) + 1

    def _to_active(self, qpi: QueuedPodInfo, event: str) -> None:
        self._set_where(qpi, "active", event)
        heapq.heappush(self._active, (self._sort_key(qpi), next(self._seq), qpi.version, qpi))
        self._on_change()

    def _to_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        self._set_where(qpi, "backoff", event)
        heapq.heappush(self._backoff, (qpi.backoff_expiry, next(self._seq), qpi.version, qpi))
        self._arm_backoff_timer(qpi.backoff_expiry)

    def _to_pool(self, qpi: QueuedPodInfo, event: str) -> None:
        self._set_where(qpi, "unschedulable", event)
        qpi.entered_pool = self.clock.now()
        self._unschedulable[qpi.pi.uid] = qpi
        self._pool_buckets.setdefault(qpi.unschedulable_plugins, {})[qpi.pi.uid] = qpi
        if self._pool_timer is None:
            self._pool_timer = self.clock.call_at(qpi.entered_pool + self.max_in_unschedulable, self._flush_pool)

    def _requeue(self, qpi: QueuedPodInfo, event: str) -> None:
        if qpi.backoff_expiry > self.clock.now():
            self._to_backoff(qpi, event)
        else:
            self._to_active(qpi, event)

    def _admit(self, qpi: QueuedPodInfo, event: str) -> None:
        status = self._pre_enqueue(qpi.pi)
        if status is not None:
            qpi.gated_by = status
            self._set_where(qpi, "gated", event)
            self._gated[qpi.pi.uid] = qpi
            return
        qpi.gated_by = None
        self._requeue(qpi, event)

    # --- pods arriving, changing, leaving --------------------------------------------------------

    def add(self, pi: PodInfo) -> None:
        if pi.uid in self.pods:
            self.update(pi)
            return
        qpi = QueuedPodInfo(pi, timestamp=self.clock.now())
        self.pods[pi.uid] = qpi
        self._admit(qpi, "PodAdd")

    def update(self, pi: PodInfo) -> None:
        qpi = self.pods.get(pi.uid)
        if qpi is None:
            self.add(pi)
            return
        qpi.pi = pi
        if qpi.where == "gated":
            self._admit(qpi, "PodUpdate")
        elif qpi.where == "unschedulable":
            # The pod itself changed: it may fit now (kube re-evaluates updated pods).
            self._requeue(qpi, "PodUpdate")
        elif qpi.where == "active":
            self._to_active(qpi, "PodUpdate")  # re-sort; the stale heap entry is skipped by version

    def delete(self, uid: str) -> QueuedPodInfo | None:
        qpi = self.pods.pop(uid, None)
        if qpi is not None:
            self._set_where(qpi, "")
        return qpi

    def contains(self, uid: str) -> bool:
        return uid in self.pods

    # --- the scheduling loop's side ---------------------------------------------------------------

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None when activeQ is empty. The pod stays known
        (in flight) until `done` or `add_unschedulable`."""
        while self._active:
            _, _, version, qpi = heapq.heappop(self._active)
            if qpi.where != "active" or qpi.version != version:
                continue
            self._set_where(qpi, "")
            qpi.attempts += 1
            if qpi.initial_attempt_timestamp is None:
                qpi.initial_attempt_timestamp = self.clock.now()
            self.scheduling_cycle += 1
            return qpi
        return None

    def __len__(self) -> int:
        return self._counts["active"]

    def done(self, uid: str) -> None:
        """The pod was assumed onto a node: it leaves the queue."""
        self.pods.pop(uid, None)

    def add_unschedulable(self, qpi: QueuedPodInfo, plugins: Iterable[str], pod_cycle: int) -> None:
        """A pod that failed its cycle comes back: to backoff if the cluster moved meanwhile."""
        if qpi.pi.uid not in self.pods or qpi.where:
            return  # deleted or re-added while in flight
        qpi.unschedulable_plugins = frozenset(plugins)
        qpi.timestamp = self.clock.now()
        qpi.backoff_expiry = qpi.timestamp + self.backoff_duration(qpi)
        if self._move_request_cycle >= pod_cycle or not qpi.unschedulable_plugins:
            self._to_backoff(qpi, "ScheduleAttemptFailure")
        else:
            qpi.pool_cycle = pod_cycle
            self._to_pool(qpi, "ScheduleAttemptFailure")

    def requeue(self, qpi: QueuedPodInfo, plugins: Iterable[str], pod_cycle: int) -> None:
        """A failed attempt comes back, whether its pod is still counted here (a failed scheduling
        cycle) or had left the queue (a failed binding cycle): kube's AddUnschedulableIfNotPresent."""
        uid = qpi.pi.uid
        current = self.pods.setdefault(uid, qpi)
        if current is not qpi:
            return  # the pod came back meanwhile (an update): that entry stands
        self.add_unschedulable(qpi, plugins, pod_cycle)

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        if self.initial_backoff <= 0:
            return 0.0
        duration = self.initial_backoff * (2 ** min(max(qpi.attempts - 1, 0), 32))
        return float(min(duration, self.max_backoff))

    # --- moving pods back ------------------------------------------------------------------------

    def move_on_event(self, event: ClusterEvent) -> int:
        """A cluster event: pods in the pool whose rejecting plugins care move back.

        The pool is bucketed by the set of rejecting plugins, so the cost is one check per
        distinct set plus the pods that actually move, not one check per waiting pod."""
        self._move_request_cycle = self.scheduling_cycle
        if not self._unschedulable:
            return 0
        moving: list[QueuedPodInfo] = []
        for plugins, bucket in self._pool_buckets.items():
            if self._interested(plugins, event):
                moving.extend(bucket.values())
        label = event.label
        for qpi in moving:
            self._requeue(qpi, label)
        return len(moving)

    def _interested(self, plugins: frozenset[str], event: ClusterEvent) -> bool:
        key = (plugins, event)
        hit = self._interest_cache.get(key)
        if hit is None:
            hit = not plugins or any(
                registered.covers(event) for name in plugins for registered in self._events_by_plugin.get(name, ())
            )
            self._interest_cache[key] = hit
        return hit

    def activate(self, uids: Iterable[str]) -> None:
        for uid in uids:
            qpi = self.pods.get(uid)
            if qpi is not None and qpi.where in ("unschedulable", "backoff"):
                self._to_active(qpi, "ForceActivate")

    def _arm_backoff_timer(self, when: float) -> None:
        if when >= self._backoff_timer_at:
            return
        if self._backoff_timer is not None:
            self._backoff_timer.cancel()
        self._backoff_timer_at = when
        self._backoff_timer = self.clock.call_at(when, self._flush_backoff)

    def _flush_backoff(self) -> None:
        self._backoff_timer = None
        self._backoff_timer_at = float("inf")
        now = self.clock.now()
        while self._backoff:
            expiry, _, version, qpi = self._backoff[0]
            if qpi.where != "backoff" or qpi.version != version:
                heapq.heappop(self._backoff)
                continue
            if expiry > now:
                self._arm_backoff_timer(expiry)
                break
            heapq.heappop(self._backoff)
            self._to_active(qpi, "BackoffComplete")

    def _flush_pool(self) -> None:
        """Pods that sat in the pool longer than the limit get another try (kube: 5 min)."""
        self._pool_timer = None
        now = self.clock.now()
        oldest_left = None
        for qpi in list(self._unschedulable.values()):
            if now - qpi.entered_pool >= self.max_in_unschedulable:
                self._requeue(qpi, "UnschedulableTimeout")
            elif oldest_left is None or qpi.entered_pool < oldest_left:
                oldest_left = qpi.entered_pool
        if oldest_left is not None:
            self._pool_timer = self.clock.call_at(oldest_left + self.max_in_unschedulable, self._flush_pool)

    # --- for the simulator: retries that cannot change anything -------------------------------

    @property
    def pool_timer(self) -> Timer | None:
        """The timer of the pool's next timeout flush, if any pod waits in the pool."""
        return self._pool_timer

    def retry_would_repeat(self) -> bool:
        """True when no cluster event came since any pooled pod's failed cycle: a retry by
        timeout would meet exactly the state that rejected it (the simulator's cluster reports
        every change as an event; a real cluster's safety net is why kube retries at all)."""
        return all(qpi.pool_cycle > self._move_request_cycle for qpi in self._unschedulable.values())

    def defer_pool_flush(self, until: float) -> None:
        """Moves the pool's next timeout flush to `until` (pods then due are retried then)."""
        if self._pool_timer is not None:
            self._pool_timer.cancel()
        self._pool_timer = self.clock.call_at(until, self._flush_pool) if self._unschedulable else None

    # --- introspection ------------------------------------------------------------------------------

    def counts(self) -> QueueCounts:
        c = self._counts
        return QueueCounts(c["active"], c["backoff"], c["unschedulable"], c["gated"])

    def pending(self) -> list[QueuedPodInfo]:
        return list(self.pods.values())

    def gated(self) -> list[QueuedPodInfo]:
        return list(self._gated.values())

    def has_timed_work(self) -> bool:
        """Pods that will become active by time alone (backoff), as opposed to by events."""
        return self._counts["backoff"] > 0


@dataclass(slots=True)
class Nominator:
    """Pods nominated to a node by preemption, waiting for the victims to go."""

    by_node: dict[str, dict[str, PodInfo]] = field(default_factory=dict)
    node_of: dict[str, str] = field(default_factory=dict)

    def nominate(self, pi: PodInfo, node: str | None) -> None:
        self.remove(pi.uid)
        if node:
            self.by_node.setdefault(node, {})[pi.uid] = pi
            self.node_of[pi.uid] = node

    def remove(self, uid: str) -> None:
        node = self.node_of.pop(uid, None)
        if node is not None:
            pods = self.by_node.get(node)
            if pods is not None:
                pods.pop(uid, None)
                if not pods:
                    del self.by_node[node]

    def pods_on(self, node: str) -> list[PodInfo]:
        return list(self.by_node.get(node, {}).values())

    def __bool__(self) -> bool:
        return bool(self.node_of)
