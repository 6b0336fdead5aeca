"""kube-scheduler's scheduling queue (v1.37): activeQ, backoffQ, the unschedulable pool and gated pods.

- activeQ pops in the order of the profile's QueueSort plugin. When it is empty, the pod first
  due in backoffQ pops instead (SchedulerPopFromBackoffQ), unless it failed with an error.
- A pod that failed goes to the unschedulable pool, unless an event that arrived while it was
  being scheduled may help it (the rejecting plugins' queueing hints say so): then it waits out
  its backoff (1 s doubling to 10 s by default, expiries rounded down to whole seconds).
- The pool is drained by cluster events whose hints say they may help, or after
  `max_in_unschedulable` seconds.
- Pods rejected by PreEnqueue (scheduling gates) wait, gated, until an event the gating plugin
  registered for comes and a rejecting plugin's hint accepts it (their own update, usually).
- kubesched's bursts (queue.bursts): with a profile that places them jointly, activeQ keeps an
  index of each burst's pods so the scheduler takes a burst whole (`take_burst`), and new pods
  of a burst may wait a window for their siblings, "gathering" (counted as active).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.podinfo import PodInfo
from kubesched.framework.events import (
    BACKOFF_COMPLETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    TARGET_POD,
    ClusterEvent,
    pod_changes,
)
from kubesched.framework.status import Status
from kubesched.infra.clock import Clock, Timer
from kubesched.queue.bursts import BurstOf, BurstPolicy, Gathering
from kubesched.queue.groups import (
    GROUP_PREFIX,
    INCOMPLETE,
    MEMBER,
    PENDING,
    GroupAttempt,
    GroupKnown,
    GroupOf,
    group_backoff_cap,
    lead,
    member_order,
)
from kubesched.queue.hints import HintMap, Registrations, Strategy

DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
BACKOFF_WINDOW = 1.0  # backoff expiries are rounded down to this; backoffQ is flushed on its ticks


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pi: PodInfo
    timestamp: float  # when it (re)entered the queue: the sort's tie-breaker
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0  # failed attempts that were rejections: the backoff's exponent
    consecutive_errors: int = 0  # failed attempts in a row that were errors: the exponent then
    unschedulable_plugins: frozenset[str] = frozenset()
    gated_by: Status | None = None
    backoff_expiry: float | None = None  # computed when first needed after a failure
    where: str = ""  # "active", "backoff", "unschedulable", "gated", "" (in flight); a group member's: groups.MEMBER...
    version: int = 0
    entered_pool: float = 0.0
    pool_cycle: int = 0  # the scheduling cycle whose failure put it in the unschedulable pool
    ident: str = ""  # the pod's uid; a group's "podgroup/<namespace>/<name>"
    group: str = ""  # a member's PodGroup, namespace/name
    burst: BurstPolicy | None = None  # its burst (queue.bursts) while in activeQ or gathering

    def __post_init__(self) -> None:
        if not self.ident:
            self.ident = self.pi.uid


@dataclass(slots=True, eq=False)
class QueuedGroup(QueuedPodInfo):
    """A PodGroup's members, queued and popped as one (queue.groups). `pi` is the member tried
    first: its priority and name order the entity among the pods (a group's priority is its
    members', which the group cycle checks)."""

    members: dict[str, QueuedPodInfo] = field(default_factory=dict)

    def ordered(self) -> list[QueuedPodInfo]:
        return sorted(self.members.values(), key=member_order)


@dataclass(slots=True)
class QueueCounts:
    active: int
    backoff: int
    unschedulable: int
    gated: int


PoolKey = tuple[str, frozenset[str]]  # (profile, rejecting plugins)


class SchedulingQueue:
    def __init__(
        self,
        clock: Clock,
        sort_key: Callable[[QueuedPodInfo], Any],
        pre_enqueue: Callable[[PodInfo], Status | None],
        registrations: Mapping[str, Registrations],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        on_change: Callable[[], None] | None = None,
        group_of: GroupOf | None = None,
        group_known: GroupKnown | None = None,
        burst_of: BurstOf | None = None,
    ) -> None:
        """`registrations`: per profile (schedulerName), each plugin's registered events with hints.
        `group_of`: the PodGroup (namespace/name) a pod is a member of, or None (GenericWorkload
        off: always None); `group_known`: whether that PodGroup exists; `burst_of`: a pod's burst
        (queue.bursts), or None."""
        self.clock = clock
        self._sort_key = sort_key
        self._pre_enqueue = pre_enqueue
        self.hints = HintMap(registrations)
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._on_change = on_change or (lambda: None)
        self._seq = itertools.count()
        self.pods: dict[str, QueuedPodInfo] = {}  # every pending pod we own, by uid
        self._active: list[tuple[Any, int, int, QueuedPodInfo]] = []
        self._backoff: list[tuple[float, Any, int, int, QueuedPodInfo]] = []  # poppable when activeQ is empty
        self._error_backoff: list[tuple[float, int, int, QueuedPodInfo]] = []  # failed with an error
        self._error_backoff_count = 0
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        # Pooled and gated pods grouped by profile and rejecting plugins: an event costs one
        # check per group plus the pods whose plugins have hints to ask.
        self._buckets: dict[PoolKey, dict[str, QueuedPodInfo]] = {}
        self._counts = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0, "gathering": 0}
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._backoff_timer: Timer | None = None
        self._backoff_timer_at = float("inf")
        self._pool_timer: Timer | None = None
        self.incoming: dict[tuple[str, str], int] = {}  # (queue, event) -> pods, for metrics
        # Events seen while pods are in flight (popped, not yet bound or back): a failed pod is
        # judged by those that came after it was popped (kube's inFlightEvents).
        self._events: list[tuple[ClusterEvent, Any, Any]] = []
        self._events_base = 0  # the absolute index of _events[0]
        self._in_flight: dict[str, int] = {}  # uid -> absolute index of the first event it did not see
        # Pod groups (queue.groups): entities by group, members waiting for their PodGroup or
        # for their group's cycle to end, and the groups being scheduled.
        self._group_of: GroupOf = group_of or (lambda pi: None)
        self._group_known: GroupKnown = group_known or (lambda key: False)
        self._entities: dict[str, QueuedGroup] = {}
        self._incomplete: dict[str, dict[str, QueuedPodInfo]] = {}
        self._arrived: dict[str, dict[str, QueuedPodInfo]] = {}
        self._in_flight_groups: set[str] = set()
        # Bursts (queue.bursts): activeQ's pods by burst, and new pods gathering for theirs.
        self._burst_of: BurstOf = burst_of or (lambda pi: None)
        self._burst_active: dict[object, dict[str, QueuedPodInfo]] = {}
        self._gathering: dict[object, Gathering] = {}

    # --- state changes ---------------------------------------------------------------------------

    def _bucket_key(self, qpi: QueuedPodInfo) -> PoolKey:
        return (qpi.pi.scheduler_name, qpi.unschedulable_plugins)

    def _set_where(self, qpi: QueuedPodInfo, where: str, event: str = "") -> None:
        if qpi.where:
            self._counts[qpi.where] -= 1
            if qpi.where in ("unschedulable", "gated"):
                (self._unschedulable if qpi.where == "unschedulable" else self._gated).pop(qpi.ident, None)
                key = self._bucket_key(qpi)
                bucket = self._buckets.get(key)
                if bucket is not None:
                    bucket.pop(qpi.ident, None)
                    if not bucket:
                        del self._buckets[key]
            elif qpi.where == "backoff" and self._error_heap(qpi):
                self._error_backoff_count -= 1
            elif qpi.where in ("active", "gathering") and qpi.burst is not None:
                self._unindex_burst(qpi)
        qpi.where = where
        qpi.version += 1
        if where:
            self._counts[where] += 1
            if event:  # a move kube counts (an update in place is none)
                self.incoming[(where, event)] = self.incoming.get((where, event), 0) + 1

    def _park(self, qpi: QueuedPodInfo, where: str, event: str) -> None:
        self._set_where(qpi, where, event)
        (self._unschedulable if where == "unschedulable" else self._gated)[qpi.ident] = qpi
        self._buckets.setdefault(self._bucket_key(qpi), {})[qpi.ident] = qpi

    @staticmethod
    def _error_heap(qpi: QueuedPodInfo) -> bool:
        """Whether its backoff is the error heap's, never popped early: a pod that failed with an
        error, and every group (kube fills no rejecting plugins in for a group)."""
        return not qpi.unschedulable_plugins or isinstance(qpi, QueuedGroup)

    def _gate(self, qpi: QueuedPodInfo, event: str) -> bool:
        """Runs PreEnqueue; a rejected pod is parked as gated, its gating plugin a rejector. A
        group is gated whole when any member is."""
        if isinstance(qpi, QueuedGroup):
            status = next((st for m in qpi.ordered() if (st := self._pre_enqueue(m.pi)) is not None), None)
        else:
            status = self._pre_enqueue(qpi.pi)
        if status is None:
            qpi.gated_by = None
            return False
        if qpi.where:
            self._set_where(qpi, "")
        qpi.gated_by = status
        if status.plugin and not isinstance(qpi, QueuedGroup):
            # A group's entity keeps none (kube asks each member's rejectors, and a group's are
            # none): its gating plugin's events alone decide what moves it (move_on_event).
            qpi.unschedulable_plugins = qpi.unschedulable_plugins | {status.plugin}
        self._park(qpi, "gated", event)
        return True

    def _to_active(self, qpi: QueuedPodInfo, event: str, *, check_gates: bool = True) -> None:
        if check_gates and self._gate(qpi, event):
            return
        self._set_where(qpi, "active", event)
        heapq.heappush(self._active, (self._sort_key(qpi), next(self._seq), qpi.version, qpi))
        if not isinstance(qpi, QueuedGroup) and not qpi.group:
            qpi.burst = self._burst_of(qpi.pi)
            if qpi.burst is not None:
                self._burst_active.setdefault(qpi.burst.key, {})[qpi.ident] = qpi
        self._on_change()

    def _to_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        if self._gate(qpi, event):
            return
        self._set_where(qpi, "backoff", event)
        expiry = self._backoff_expiry(qpi)
        if not self._error_heap(qpi):
            heapq.heappush(self._backoff, (expiry, self._sort_key(qpi), next(self._seq), qpi.version, qpi))
            self._on_change()  # an idle scheduler may pop it at once
        else:
            self._error_backoff_count += 1
            heapq.heappush(self._error_backoff, (expiry, next(self._seq), qpi.version, qpi))
        self._arm_backoff_timer(expiry + BACKOFF_WINDOW)

    def _to_pool(self, qpi: QueuedPodInfo, event: str) -> None:
        if qpi.where == "unschedulable":
            return
        if qpi.where:
            self._set_where(qpi, "")
        qpi.entered_pool = self.clock.now()
        self._park(qpi, "unschedulable", event)
        if self._pool_timer is None:
            self._pool_timer = self.clock.call_at(qpi.entered_pool + self.max_in_unschedulable, self._flush_pool)

    def _requeue(self, qpi: QueuedPodInfo, strategy: Strategy, event: str) -> None:
        """Moves a pod as a hint's strategy says (kube's requeueEntityWithQueueingStrategy), gated
        pods too (moving to activeQ or backoffQ runs PreEnqueue again)."""
        if strategy is Strategy.SKIP:
            self._to_pool(qpi, event)
        elif self.backing_off(qpi):
            self._to_backoff(qpi, event)
        else:
            self._to_active(qpi, event)

    # --- backoff ---------------------------------------------------------------------------------------

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        count = qpi.consecutive_errors or qpi.unschedulable_count
        if count == 0 or self.max_backoff <= 0:
            return 0.0
        cap = group_backoff_cap(self.max_backoff, len(qpi.members)) if isinstance(qpi, QueuedGroup) else self.max_backoff
        return float(min(self.initial_backoff * (2 ** min(count - 1, 32)), cap))

    def _backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        if qpi.backoff_expiry is None:
            qpi.backoff_expiry = math.floor((qpi.timestamp + self.backoff_duration(qpi)) / BACKOFF_WINDOW) * BACKOFF_WINDOW
        return qpi.backoff_expiry

    def backing_off(self, qpi: QueuedPodInfo) -> bool:
        """Whether the pod's backoff lasts into the current window (kube's isPodBackingoff)."""
        if self.max_backoff <= 0 or not (qpi.consecutive_errors or qpi.unschedulable_count):
            return False
        window = math.floor(self.clock.now() / BACKOFF_WINDOW) * BACKOFF_WINDOW
        return self._backoff_expiry(qpi) >= window

    # --- pods arriving, changing, leaving --------------------------------------------------------

    def add(self, pi: PodInfo) -> None:
        if pi.uid in self.pods:
            self.update(pi)
            return
        qpi = QueuedPodInfo(pi, timestamp=self.clock.now())
        self.pods[pi.uid] = qpi
        key = self._group_of(pi)
        if key is not None:
            qpi.group = key
            self._add_member(qpi, "UnscheduledPodAdd")
            return
        burst = self._burst_of(pi)
        if burst is not None and burst.window > 0 and not self._gate(qpi, "UnscheduledPodAdd"):
            self._gather(qpi, burst)
            return
        self._to_active(qpi, "UnscheduledPodAdd")

    def update(self, pi: PodInfo) -> None:
        """The pending pod changed (kube's PriorityQueue.Update): re-sorted where it waits; in the
        pool or gated, moved if a rejecting plugin's hint says the change may help."""
        qpi = self.pods.get(pi.uid)
        if qpi is None:
            self.add(pi)
            return
        old, qpi.pi = qpi.pi, pi
        where = qpi.where
        if qpi.group or where == "gathering":
            return  # updated in place: a member's group entity, a gathering burst, is tried as it is
        if where == "":
            if self._in_flight:  # judged when its attempt ends, with the cluster's events
                self._events.extend((event, old, pi) for event in pod_changes(pi, old, TARGET_POD))
            return
        if where in ("active", "backoff"):
            self._set_where(qpi, "")
            if where == "active":
                self._to_active(qpi, "", check_gates=False)
            else:
                self._to_backoff(qpi, "")
            return
        for event in pod_changes(pi, old, TARGET_POD):
            if self.hints.strategy(pi, qpi.unschedulable_plugins, event, old, pi) is not Strategy.SKIP:
                self._requeue(qpi, Strategy.AFTER_BACKOFF, event.label)  # PreEnqueue again: it may stay gated
                return

    def delete(self, uid: str) -> QueuedPodInfo | None:
        qpi = self.pods.pop(uid, None)
        if qpi is not None:
            if qpi.group:
                self._remove_member(qpi)
            else:
                self._set_where(qpi, "")
        self.done(uid)
        return qpi

    def contains(self, uid: str) -> bool:
        return uid in self.pods

    # --- the scheduling loop's side ---------------------------------------------------------------

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None when activeQ and backoffQ are empty. The pod stays
        known, in flight, until `done` or `add_unschedulable`."""
        qpi = self._pop_valid(self._active, "active")
        if qpi is None:
            qpi = self._pop_valid(self._backoff, "backoff")
            if qpi is None:
                return None
            self.incoming[("active", POP_FROM_BACKOFF_Q)] = self.incoming.get(("active", POP_FROM_BACKOFF_Q), 0) + 1
        self._start(qpi)
        return qpi

    def take_burst(self, lead: QueuedPodInfo) -> list[QueuedPodInfo]:
        """The rest of the popped pod's burst waiting in activeQ, in queue order, each popped as
        `pop` pops (queue.bursts): the scheduler places them together with it."""
        burst = lead.burst
        peers = self._burst_active.get(burst.key) if burst is not None else None
        if not peers or burst is None:
            return []
        taken = sorted(peers.values(), key=self._sort_key)[: max(burst.limit - 1, 0)]
        for qpi in taken:
            self._start(qpi)
        return taken

    def _start(self, qpi: QueuedPodInfo) -> None:
        """A pod (or group) leaves activeQ or backoffQ for its attempt: in flight from now."""
        self._set_where(qpi, "")
        qpi.attempts += 1
        now = self.clock.now()
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now
        if isinstance(qpi, QueuedGroup):
            self._in_flight_groups.add(qpi.group)
            for member in qpi.members.values():
                member.attempts += 1
                if member.initial_attempt_timestamp is None:
                    member.initial_attempt_timestamp = now
        self.scheduling_cycle += 1
        self._in_flight[qpi.ident] = self._events_base + len(self._events)

    @staticmethod
    def _pop_valid(heap: list[Any], want: str) -> QueuedPodInfo | None:
        """Pops the first live entry of a heap whose entries end in (version, qpi)."""
        while heap:
            entry = heapq.heappop(heap)
            qpi: QueuedPodInfo = entry[-1]
            if qpi.where == want and qpi.version == entry[-2]:
                return qpi
        return None

    def __len__(self) -> int:
        """Pods ready to pop: activeQ, and backoffQ's pods that did not fail with an error."""
        return self._counts["active"] + self._counts["backoff"] - self._error_backoff_count

    def assumed(self, uid: str) -> None:
        """The pod was assumed onto a node: it is no longer pending (though still in flight)."""
        qpi = self.pods.pop(uid, None)
        if qpi is not None and qpi.group:
            qpi.where = ""  # a member gone to binding: in flight until bound or back

    def done(self, uid: str) -> None:
        """The pod's attempt is over (bound, back in the queue, or gone): events that arrive
        from now on no longer concern it (kube's Done)."""
        if self._in_flight.pop(uid, None) is None:
            return
        if not self._in_flight:
            self._events_base += len(self._events)
            self._events.clear()
            return
        oldest = min(self._in_flight.values())
        if oldest > self._events_base:
            del self._events[: oldest - self._events_base]
            self._events_base = oldest

    def _events_since_pop(self, uid: str) -> list[tuple[ClusterEvent, Any, Any]]:
        start = self._in_flight.get(uid)
        return [] if start is None else self._events[start - self._events_base :]

    def add_unschedulable(self, qpi: QueuedPodInfo, plugins: Iterable[str], pod_cycle: int) -> None:
        """A pod that failed its cycle comes back (kube's AddUnschedulableIfNotPresent): to the
        pool, or to backoff if an event while it was in flight may help it."""
        uid = qpi.pi.uid
        if uid not in self.pods or qpi.where:
            self.done(uid)
            return  # deleted or re-added while in flight
        if qpi.group:  # a member failed after its group's cycle (in binding): it rejoins its group
            qpi.unschedulable_plugins = frozenset(plugins)
            qpi.timestamp = self.clock.now()
            self.done(uid)
            self._add_member(qpi, SCHEDULE_ATTEMPT_FAILURE)
            return
        qpi.unschedulable_plugins = frozenset(plugins)
        if qpi.unschedulable_plugins:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors = 0
        else:
            qpi.consecutive_errors += 1
        qpi.timestamp = self.clock.now()
        qpi.backoff_expiry = None
        strategy = Strategy.AFTER_BACKOFF if not qpi.unschedulable_plugins else Strategy.SKIP
        if strategy is Strategy.SKIP:
            for event, old, new in self._events_since_pop(uid):
                if self.hints.strategy(qpi.pi, qpi.unschedulable_plugins, event, old, new) is not Strategy.SKIP:
                    strategy = Strategy.AFTER_BACKOFF
                    break
        self.done(uid)
        qpi.pool_cycle = pod_cycle
        self._requeue(qpi, strategy, SCHEDULE_ATTEMPT_FAILURE)

    def requeue(self, qpi: QueuedPodInfo, plugins: Iterable[str], pod_cycle: int) -> None:
        """A failed attempt comes back, whether its pod is still counted here (a failed scheduling
        cycle) or had left the queue (a failed binding cycle): kube's AddUnschedulableIfNotPresent."""
        uid = qpi.pi.uid
        current = self.pods.setdefault(uid, qpi)
        if current is not qpi:
            self.done(uid)
            return  # the pod came back meanwhile (an update): that entry stands
        self.add_unschedulable(qpi, plugins, pod_cycle)

    # --- moving pods back ------------------------------------------------------------------------

    def move_on_event(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> int:
        """A cluster event: pooled (and gated) pods that a rejecting plugin's hint says it may help
        move back (kube's MoveAllToActiveOrBackoffQueue). Returns how many moved."""
        self._move_request_cycle = self.scheduling_cycle
        if not self.hints.of_interest(event):
            return 0
        moving: list[QueuedPodInfo] = []
        for (profile, plugins), bucket in self._buckets.items():
            regs = self.hints.relevant(profile, plugins, event)
            if not regs and plugins and not event.wildcard:
                continue
            everyone = not plugins or any(r.hint is None for r in regs)
            for qpi in bucket.values():
                if pre_check is not None and not pre_check(qpi.pi):
                    continue
                gate = qpi.gated_by
                if gate is not None and gate.plugin and not self.hints.registered(profile, gate.plugin, event):
                    continue  # an event its gating plugin did not register for leaves it gated (kube)
                if everyone or self.hints.strategy(qpi.pi, plugins, event, old, new) is not Strategy.SKIP:
                    moving.append(qpi)
        for qpi in moving:
            self._requeue(qpi, Strategy.AFTER_BACKOFF, event.label)
        if self._in_flight:
            self._events.append((event, old, new))
        return len(moving)

    def reconfigure(
        self,
        sort_key: Callable[[QueuedPodInfo], Any],
        registrations: Mapping[str, Registrations],
        initial_backoff: float,
        max_backoff: float,
    ) -> None:
        """A new configuration generation: its queue sort, its plugins' events and hints, its
        backoff. Pods keep their place and history; the heaps are re-sorted when the key or the
        backoff changed (the same QueueSort instance carried over is the same key)."""
        self.hints = HintMap(registrations)
        self._reindex_bursts()
        backoff_changed = (initial_backoff, max_backoff) != (self.initial_backoff, self.max_backoff)
        if backoff_changed:
            self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
            for qpi in self.pods.values():
                qpi.backoff_expiry = None
        if sort_key == self._sort_key and not backoff_changed:
            return
        self._sort_key = sort_key
        live = [e for e in self._active if e[-1].where == "active" and e[-1].version == e[-2]]
        self._active = [(sort_key(e[-1]), e[1], e[2], e[3]) for e in live]
        heapq.heapify(self._active)
        backoff = [e for e in self._backoff if e[-1].where == "backoff" and e[-1].version == e[-2]]
        self._backoff = [(self._backoff_expiry(e[-1]), sort_key(e[-1]), e[2], e[3], e[4]) for e in backoff]
        heapq.heapify(self._backoff)
        errors = [e for e in self._error_backoff if e[-1].where == "backoff" and e[-1].version == e[-2]]
        self._error_backoff = [(self._backoff_expiry(e[-1]), e[1], e[2], e[3]) for e in errors]
        heapq.heapify(self._error_backoff)
        firsts: list[float] = [heap[0][0] for heap in (self._backoff, self._error_backoff) if heap]
        if firsts:
            self._arm_backoff_timer(min(firsts) + BACKOFF_WINDOW)

    def move_all(self, event: ClusterEvent) -> int:
        """Every pooled and gated pod goes back to activeQ or backoffQ, PreEnqueue run again (kube's
        MoveAllToActiveOrBackoffQueue for an event every plugin is taken to care about): after a
        configuration change, what rejected them may no longer be configured."""
        self._move_request_cycle = self.scheduling_cycle
        moving = [*self._unschedulable.values(), *self._gated.values()]
        for qpi in moving:
            self._requeue(qpi, Strategy.AFTER_BACKOFF, event.label)
        if self._in_flight:
            self._events.append((event, None, None))
        return len(moving)

    # --- pod groups (queue.groups) -------------------------------------------------------------------

    def _add_member(self, qpi: QueuedPodInfo, event: str) -> None:
        """A member arrives (or comes back after its binding failed): it waits for its PodGroup,
        for its group's cycle to end, joins the group's entity where that waits, or starts one."""
        key = qpi.group
        uid = qpi.pi.uid
        if not self._group_known(key):
            qpi.where = INCOMPLETE
            self._incomplete.setdefault(key, {})[uid] = qpi
            return
        if key in self._in_flight_groups:
            qpi.where = PENDING
            self._arrived.setdefault(key, {})[uid] = qpi
            return
        qpi.where = MEMBER
        entity = self._entities.get(key)
        if entity is not None and entity.where:
            entity.members[uid] = qpi
            self._relead(entity)
            where = entity.where
            if where in ("active", "backoff"):  # re-sorted where it waits, PreEnqueue not run again
                self._set_where(entity, "")
                if where == "active":
                    self._to_active(entity, "", check_gates=False)
                else:
                    self._set_where(entity, "backoff")
                    heapq.heappush(self._error_backoff, (self._backoff_expiry(entity), next(self._seq), entity.version, entity))
                    self._error_backoff_count += 1
            return
        entity = QueuedGroup(qpi.pi, qpi.timestamp, ident=GROUP_PREFIX + key, group=key, members={uid: qpi},
                             initial_attempt_timestamp=qpi.initial_attempt_timestamp)
        self._entities[key] = entity
        self._to_active(entity, event)

    @staticmethod
    def _relead(entity: QueuedGroup) -> None:
        if entity.members:
            entity.pi = lead(entity.members.values()).pi

    def _remove_member(self, qpi: QueuedPodInfo) -> None:
        key, uid = qpi.group, qpi.pi.uid
        for holding in (self._incomplete, self._arrived):
            waiting = holding.get(key)
            if waiting is not None and waiting.pop(uid, None) is not None and not waiting:
                del holding[key]
        entity = self._entities.get(key)
        if entity is None or entity.members.pop(uid, None) is None:
            return
        if entity.members:
            self._relead(entity)
        elif entity.where:  # an entity being scheduled is settled by group_attempted
            self._set_where(entity, "")
            del self._entities[key]

    def group_added(self, key: str) -> None:
        """Its PodGroup arrived: members that waited for it are queued (kube: then the PodGroup
        Add event may release a gated entity)."""
        for qpi in list(self._incomplete.pop(key, {}).values()):
            self._add_member(qpi, "PodGroupAdd")

    def group_deleted(self, key: str) -> None:
        """Its PodGroup is gone: the members wait for it again."""
        entity = self._entities.get(key)
        members = list(entity.members.values()) if entity is not None else []
        members += list(self._arrived.pop(key, {}).values())
        if entity is not None and entity.where:
            self._set_where(entity, "")
            del self._entities[key]
        for qpi in members:
            qpi.where = INCOMPLETE
            self._incomplete.setdefault(key, {})[qpi.pi.uid] = qpi

    def group_attempted(self, entity: QueuedGroup, attempt: GroupAttempt) -> None:
        """A PodGroup cycle ended (kube's AddAttemptedPodGroupIfNeeded): the members it did not send
        to binding, and those that arrived meanwhile, make the entity that is queued again."""
        key = entity.group
        self._in_flight_groups.discard(key)
        self.done(entity.ident)
        if self._entities.get(key) is entity:
            del self._entities[key]
        back = {uid: self.pods[uid] for q in attempt.back if (uid := q.pi.uid) in self.pods and self.pods[uid] is q}
        for uid, plugins in attempt.rejectors.items():
            if uid in back:
                back[uid].unschedulable_plugins = plugins
        arrived = self._arrived.pop(key, {})
        members = {**back, **{uid: q for uid, q in arrived.items() if self.pods.get(uid) is q}}
        if not members:
            return
        if not self._group_known(key):
            for qpi in members.values():
                qpi.where = INCOMPLETE
                self._incomplete.setdefault(key, {})[qpi.pi.uid] = qpi
            return
        for qpi in members.values():
            qpi.where = MEMBER
        again = QueuedGroup(lead(members.values()).pi, entity.timestamp, ident=entity.ident, group=key, members=members,
                            initial_attempt_timestamp=entity.initial_attempt_timestamp, attempts=entity.attempts,
                            unschedulable_count=entity.unschedulable_count, consecutive_errors=entity.consecutive_errors)
        self._entities[key] = again
        now = self.clock.now()
        if attempt.outcome == "success":
            again.unschedulable_count = again.consecutive_errors = 0
            if not any(uid in back for uid in members):
                again.timestamp = now
        elif attempt.outcome == "unschedulable":
            again.unschedulable_count += 1
            again.consecutive_errors = 0
            again.timestamp = now
        else:
            again.consecutive_errors += 1
            again.timestamp = now
        if self.backing_off(again):
            self._to_backoff(again, SCHEDULE_ATTEMPT_FAILURE)
        else:
            self._to_active(again, SCHEDULE_ATTEMPT_FAILURE)

    def activate(self, uids: Iterable[str]) -> None:
        """Pods a plugin asks to retry now (kube's Activate): out of the pool, backoff or the
        gated (PreEnqueue runs again); a group member's whole entity."""
        for uid in uids:
            qpi: QueuedPodInfo | None = self.pods.get(uid)
            if qpi is not None and qpi.where == MEMBER:
                qpi = self._entities.get(qpi.group)
            if qpi is not None and qpi.where in ("unschedulable", "backoff", "gated"):
                self._set_where(qpi, "")
                self._to_active(qpi, EVENT_FORCE_ACTIVATE.label)

    # --- bursts (queue.bursts) ---------------------------------------------------------------------

    def _gather(self, qpi: QueuedPodInfo, burst: BurstPolicy) -> None:
        """A new pod of a burst waits for its siblings: until the window of the burst's first
        pod ends, or the burst is full."""
        qpi.burst = burst
        gathering = self._gathering.get(burst.key)
        if gathering is None:
            gathering = self._gathering[burst.key] = Gathering()
            gathering.timer = self.clock.call_at(self.clock.now() + burst.window,
                                                 lambda: self._release_gathering(burst.key))
        self._set_where(qpi, "gathering")
        gathering.pods[qpi.ident] = qpi
        if len(gathering.pods) >= burst.limit:
            self._release_gathering(burst.key)

    def _release_gathering(self, key: object) -> None:
        gathering = self._gathering.pop(key, None)
        if gathering is None:
            return
        if gathering.timer is not None:
            gathering.timer.cancel()
        for qpi in list(gathering.pods.values()):
            assert isinstance(qpi, QueuedPodInfo)
            self._set_where(qpi, "")
            self._to_active(qpi, "UnscheduledPodAdd")

    def release_gatherings(self) -> None:
        """Every gathering burst to activeQ now."""
        for key in list(self._gathering):
            self._release_gathering(key)

    def _reindex_bursts(self) -> None:
        """A new configuration: gathering bursts go to activeQ, and activeQ's pods are indexed by
        their bursts as it now defines them (or not at all)."""
        self.release_gatherings()
        self._burst_active.clear()
        for qpi in self.pods.values():
            if qpi.where != "active" or qpi.group:
                continue
            qpi.burst = self._burst_of(qpi.pi)
            if qpi.burst is not None:
                self._burst_active.setdefault(qpi.burst.key, {})[qpi.ident] = qpi

    def _unindex_burst(self, qpi: QueuedPodInfo) -> None:
        assert qpi.burst is not None
        key = qpi.burst.key
        if qpi.where == "gathering":
            gathering = self._gathering.get(key)
            if gathering is not None:
                gathering.pods.pop(qpi.ident, None)
            return
        peers = self._burst_active.get(key)
        if peers is not None:
            peers.pop(qpi.ident, None)
            if not peers:
                del self._burst_active[key]

    def _arm_backoff_timer(self, when: float) -> None:
        if when >= self._backoff_timer_at:
            return
        if self._backoff_timer is not None:
            self._backoff_timer.cancel()
        self._backoff_timer_at = when
        self._backoff_timer = self.clock.call_at(when, self._flush_backoff)

    def _flush_backoff(self) -> None:
        """A window's tick: pods whose backoff ended before this window go to activeQ."""
        self._backoff_timer = None
        self._backoff_timer_at = float("inf")
        window = math.floor(self.clock.now() / BACKOFF_WINDOW) * BACKOFF_WINDOW
        heaps: tuple[list[Any], ...] = (self._backoff, self._error_backoff)
        for heap in heaps:
            while heap:
                entry = heap[0]
                expiry, version, qpi = entry[0], entry[-2], entry[-1]
                if qpi.where != "backoff" or qpi.version != version:
                    heapq.heappop(heap)
                    continue
                if expiry >= window:
                    self._arm_backoff_timer(expiry + BACKOFF_WINDOW)
                    break
                heapq.heappop(heap)
                self._set_where(qpi, "")
                self._to_active(qpi, BACKOFF_COMPLETE, check_gates=False)

    def _flush_pool(self) -> None:
        """Pods that sat in the pool longer than the limit get another try (kube: 5 min)."""
        self._pool_timer = None
        now = self.clock.now()
        oldest_left = None
        label = EVENT_UNSCHEDULABLE_TIMEOUT.label
        for qpi in list(self._unschedulable.values()):
            if now - qpi.entered_pool >= self.max_in_unschedulable:
                self._requeue(qpi, Strategy.AFTER_BACKOFF, label)
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
        return QueueCounts(c["active"] + c["gathering"], c["backoff"], c["unschedulable"], c["gated"])

    def pending(self) -> list[QueuedPodInfo]:
        return list(self.pods.values())

    def gated(self) -> list[QueuedPodInfo]:
        return list(self._gated.values())

    def has_timed_work(self) -> bool:
        """Pods that will become active by time alone (backoff, a burst's window), as opposed to by events."""
        return self._counts["backoff"] > 0 or self._counts["gathering"] > 0


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

    def nominated_node(self, uid: str) -> str | None:
        return self.node_of.get(uid)

    def __bool__(self) -> bool:
        return bool(self.node_of)
