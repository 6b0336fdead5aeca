"""The scheduler: cluster events in, one scheduling cycle at a time, binding cycles in the background.

The Scheduler is assembled from its parts, each in its own module and read on its own:
scheduler.handlers (what a backend reports: the cache and queue kept current),
scheduler.cycle (one scheduling cycle: the node choice of scheduler.nodechoice, then assume,
Reserve, Permit, or PostFilter and the one failure path), scheduler.binding (binding cycles as
asyncio tasks), scheduler.groupcycle and scheduler.burstcycle (a pod group's and a burst's
cycles), scheduler.observer (what every cycle leaves behind). This module builds them, swaps
configuration generations between two cycles, runs the loop against a real clock, and answers
what a backend may read.

The scheduler is what scheduler.backend.SchedulerPort declares to a backend; plugins see only their
profile's framework (the handle), never this class.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.cache.podgroups import member_key
from kubesched.config.dump import configuration_digest
from kubesched.config.types import SchedulerConfig
from kubesched.devices.manager import DraManager
from kubesched.framework.batching import OpportunisticBatch
from kubesched.framework.events import CONFIGURATION_CHANGE
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.services import Services
from kubesched.framework.shared import SharedObjects
from kubesched.framework.status import Status
from kubesched.framework.waiting import PodAtPermit
from kubesched.infra import features
from kubesched.infra.clock import Clock, first_set
from kubesched.observe.metrics import DurationHistogram, SchedulerMetrics
from kubesched.observe.record import Recorder
from kubesched.observe.tracing import Tracer
from kubesched.plugins.registry import in_tree_registry
from kubesched.queue.bursts import BurstPolicy, burst_key
from kubesched.queue.scheduling_queue import Nominator, QueuedPodInfo, SchedulingQueue
from kubesched.scheduler.backend import ClusterBackend
from kubesched.scheduler.binding import BindingCycles
from kubesched.scheduler.burstcycle import BurstCycle
from kubesched.scheduler.cycle import SchedulingCycle
from kubesched.scheduler.explain import explain_pod
from kubesched.scheduler.generation import Generation, build_generation
from kubesched.scheduler.groupcycle import GroupCycle
from kubesched.scheduler.handlers import EventHandlers
from kubesched.scheduler.nodechoice import Nominations
from kubesched.scheduler.observer import CycleObserver, Stats
from kubesched.scheduler.shadow import ShadowRunner

log = logging.getLogger(__name__)


def _queue_sort(gen: Generation) -> Callable[[QueuedPodInfo], Any]:
    """The queue's sort key: the first live profile's QueueSort (configuration made them agree)."""
    first = next(iter(gen.frameworks.values()))
    if first.queue_sort is None:
        raise ValueError(f"profile {first.name} has no queueSort plugin")
    return first.queue_sort.sort_key


def _registrations(gen: Generation) -> dict[str, Any]:
    return {name: fwk.events_by_plugin() for name, fwk in gen.frameworks.items()}


class Scheduler(EventHandlers, SchedulingCycle):
    def __init__(
        self,
        config: SchedulerConfig,
        backend: ClusterBackend,
        clock: Clock,
        *,
        registry: Registry | None = None,
        seed: int | None = None,
        recorder: Recorder | None = None,
        metrics: SchedulerMetrics | None = None,
        shared: Iterable[object] = (),
        tracer: Tracer | None = None,
    ) -> None:
        """`shared` holds objects the plugins share that the backend provides in advance (the
        simulator's Prometheus, say: see framework.shared)."""
        self.config = config
        self.backend = backend
        self.clock = clock
        self.tracer = tracer or Tracer(None)
        self.cache = Cache()
        # DynamicResources' claims, slices and classes (the classes are the cache's, by name).
        self.dra = DraManager(classes=self.cache.device_classes.classes)
        self.dra.claims.listeners.append(self.claim_changed)
        self.recorder = recorder or Recorder()
        self.metrics = metrics or SchedulerMetrics()
        self.rng = np.random.default_rng(seed)
        self.nominator = Nominator()
        self.nominations = Nominations(self.nominator, self.cache)
        # The nominations assume_and_reserve dropped, by pod uid, until the pod is forgotten or bound.
        self.nominated_before_assume: dict[str, str] = {}
        self.waiting: dict[str, PodAtPermit] = {}
        self._batches: weakref.WeakKeyDictionary[Framework, OpportunisticBatch] = weakref.WeakKeyDictionary()
        self.in_flight: dict[str, QueuedPodInfo] = {}  # assumed pods whose binding cycle runs
        self.background: set[asyncio.Task[None]] = set()
        self.stats = Stats()
        self.wakeup = asyncio.Event()
        self.shared = SharedObjects(shared)
        backend.connect(self)
        services = Services(
            cache=self.cache,
            clock=clock,
            nominator=self.nominator,
            waiting=self.waiting,
            cluster=backend,
            spawn=self.spawn,
            metrics=self.metrics,
            shared=self.shared,
            cluster_event=self._cluster_event,
            record_preemption=self.record_preemption,
            activate=self._activate,
            pending_pods=self._pending_pods_infos,
            dra=self.dra,
        )
        self.services = services
        self.registry = registry or in_tree_registry()
        self.generation = build_generation(1, config, self.registry, services, digest=configuration_digest(config))
        self._built = 1  # generations built: each new one gets the next number, a rollback none
        self.frameworks: dict[str, Framework] = self.generation.frameworks  # the live profiles
        self._set_tracing(self.generation)
        # GenericWorkload: pods naming a PodGroup are scheduled as a group (groupcycle).
        self.groups_on = features.current().generic_workload
        self.queue = SchedulingQueue(
            clock,
            sort_key=_queue_sort(self.generation),
            pre_enqueue=self._pre_enqueue,
            registrations=_registrations(self.generation),
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            on_change=self.wakeup.set,
            group_of=member_key if self.groups_on else None,
            group_known=lambda key: self.cache.groups.group(key) is not None,
            burst_of=self._burst_of,
        )
        self.shadows = ShadowRunner(self.metrics, seed)
        self.observer = CycleObserver(
            clock=clock,
            table=lambda: self.cache.table,
            recorder=self.recorder,
            metrics=self.metrics,
            cycle_seconds=self.stats.cycle_seconds,
            tracer=self.tracer,
            shadows=self.shadows,
            nominations=self.nominations,
            annotate=backend.set_annotations,
        )
        self.binder = BindingCycles(
            queue=self.queue,
            cache=self.cache,
            clock=clock,
            backend=backend,
            metrics=self.metrics,
            observer=self.observer,
            counts=self.stats,
            waiting=self.waiting,
            in_flight=self.in_flight,
            fail=self.handle_failure,
            move=self._move,
        )
        self.group_cycle = GroupCycle(self)
        self.burst_cycle = BurstCycle(self)
        self.metrics.add_gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
            "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler "
            "attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never "
            "attempted to schedule because they are gated.",
            ["queue"],
            self._pending_pods,
        )
        self.metrics.add_counter_source(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            lambda: {key: float(n) for key, n in self.queue.incoming.items()},
        )

    # --- configuration generations: a reload or a rollback, between two scheduling cycles ---------

    def build_generation(self, config: SchedulerConfig, registry: Registry, *, digest: str, origin: str) -> Generation:
        """A generation of `config` built beside the running one, sharing its cache, queue hooks and
        shared objects; unchanged plugin instances carry over. Not yet in force: see activate."""
        self._built += 1
        gen = build_generation(self._built, config, registry, self.services, self.generation, digest=digest, origin=origin)
        _queue_sort(gen)  # refuses a generation without one before anything changes
        return gen

    def activate(self, gen: Generation) -> Generation:
        """Puts `gen` in force and returns the generation it replaces. Called between two
        scheduling cycles (the loop and this run on one thread). The cache, the queue and every
        pod in it, pods held at Permit and binding cycles in flight stay as they are: a binding
        cycle finishes with the framework that started it. Pending pods of a profile that is gone
        leave the queue; pods waiting in the pool or gated are retried under the new
        configuration, which may judge them differently."""
        old = self.generation
        gen.adopt()
        self.generation, self.config, self.frameworks = gen, gen.config, gen.frameworks
        self._set_tracing(gen)
        self.queue.reconfigure(_queue_sort(gen), _registrations(gen), gen.config.pod_initial_backoff_seconds,
                               gen.config.pod_max_backoff_seconds)
        if set(old.frameworks) - set(gen.frameworks):
            for qpi in self.queue.pending():
                if qpi.pi.scheduler_name not in self.frameworks:
                    self.queue.delete(qpi.pi.uid)
                    self.nominator.remove(qpi.pi.uid)
        self.queue.move_all(CONFIGURATION_CHANGE)
        self.wakeup.set()
        return old

    def _set_tracing(self, gen: Generation) -> None:
        for fwk in gen.frameworks.values():
            fwk.tracing = self.tracer.enabled

    def _activate(self, uids: Iterable[str]) -> None:
        self.queue.activate(uids)

    def _pending_pods_infos(self) -> Iterator[PodInfo]:
        return (qpi.pi for qpi in self.queue.pods.values())


    def _pending_pods(self) -> dict[tuple[str, ...], float]:
        counts = self.queue.counts()
        return {
            ("active",): float(counts.active),
            ("backoff",): float(counts.backoff),
            ("unschedulable",): float(counts.unschedulable),
            ("gated",): float(counts.gated),
        }


    # --- hooks the queue calls -----------------------------------------------------------------

    def _burst_of(self, pi: PodInfo) -> BurstPolicy | None:
        """The pod's burst (queue.bursts), when its profile places bursts jointly."""
        fwk = self.frameworks.get(pi.scheduler_name)
        settings = fwk.bursts if fwk is not None else None
        if settings is None:
            return None
        key = burst_key(pi)
        return BurstPolicy(key, settings.window, settings.limit) if key is not None else None

    def _pre_enqueue(self, pi: PodInfo) -> Status | None:
        fwk = self.frameworks.get(pi.scheduler_name)
        return fwk.run_pre_enqueue(pi) if fwk is not None else None


    # --- running against a real clock ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, pace: Callable[[asyncio.Event], Awaitable[None]] | None = None) -> None:
        """Schedules pods as they become active until `stop` is set (the kube backend's loop).
        `pace`, awaited after each cycle, returns when the backend can take more writes (or
        `stop` is set)."""
        self.tracer.start_export()
        while not stop.is_set():
            if not self.schedule_one():
                self.wakeup.clear()
                await first_set(self.wakeup, stop)
            else:
                await asyncio.sleep(0)
                if pace is not None:
                    await pace(stop)

    def record_preemption(self, victims: Sequence[PodInfo], pdb_violations: int = 0, preemptor: str = "pod") -> None:
        """Called by PostFilter plugins that evict pods: stats and metrics (the decision record
        takes the victims from the PostFilter result)."""
        self.stats.preemption_attempts += 1
        self.stats.victims += len(victims)
        self.metrics.preemption(len(victims), pdb_violations, preemptor)

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        """Runs a side effect (a victim's deletion, a status patch) in the background, tracked so
        that draining waits for it and a failure is logged rather than lost."""
        self.track(asyncio.get_running_loop().create_task(coro), what)

    def track(self, task: asyncio.Task[None], what: str = "background task") -> None:
        """Tracks a side effect a backend started itself, as `spawn` does."""
        self.background.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self.background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed: %s", what, t.exception())

        task.add_done_callback(done)

    async def drain_bindings(self) -> None:
        """Waits until every binding cycle and background side effect that can make progress now
        has finished. A pod still held at Permit is not waited for: only an allow, a reject or
        its timeout releases it, and in virtual time the timeout fires only once the caller
        advances the clock; nor is a binding cycle paused on a virtual clock (Clock.sleep: a
        PreBind polling for a driver's answer), for the same reason."""
        while True:
            busy = [*self.binder.busy(), *self.background]
            if all(task.done() or task in self.clock.sleepers for task in busy):
                return
            await self.clock.settle(busy)

    async def close(self) -> None:
        """Releases what the plugins' shared objects hold open (Prometheus connections), and
        sends the spans still buffered."""
        await self.shared.close()
        await self.tracer.close()

    # --- what a backend may read (scheduler.backend.SchedulerPort) ---------------------------------------------

    @property
    def busy(self) -> bool:
        return bool(self.background)

    @property
    def pending(self) -> SchedulingQueue:
        return self.queue

    @property
    def profile_names(self) -> list[str]:
        return list(self.frameworks)

    @property
    def cycle_seconds(self) -> DurationHistogram:
        return self.stats.cycle_seconds

    def counts(self) -> tuple[int, int]:
        return len(self.cache.table), len(self.queue.pods)

    def waiting_pods(self) -> list[PodAtPermit]:
        return list(self.waiting.values())

    def explain(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The explanation of a pod's placement (scheduler.explain's JSON form): its latest decision
        record and a fresh dry-run cycle on the current cache. None if no such pod is known."""
        return explain_pod(self, namespace, name)

    def shadow_summary(self) -> dict[str, dict[str, int]]:
        return self.shadows.summary()

    def decision_history(self, limit: int = 100) -> list[dict[str, Any]]:
        """The most recent decision records, newest first, at most `limit`."""
        recent = list(self.recorder.recent)[-limit:] if limit > 0 else []
        return [r.as_dict() for r in reversed(recent)]

    def pending_reason(self, uid: str, key: str) -> tuple[str, bool]:
        qpi = self.queue.pods.get(uid)
        if qpi is not None and qpi.gated_by is not None:
            return qpi.gated_by.message(), True
        record = self.recorder.latest.get(key)
        return (record.message if record is not None else "not attempted"), False
