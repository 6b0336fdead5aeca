"""The scheduler: cluster events in, one scheduling cycle at a time, binding cycles in the background.

Read top to bottom: event handlers keep the cache and queue current; `schedule_one`
pops a pod and runs PreFilter, Filter, PostFilter, PreScore, Score, Reserve and
Permit synchronously; `_binding_cycle` then waits for Permit, runs PreBind, Bind and
PostBind as an asyncio task while the next pod is already being scheduled. Every
failed attempt, in either cycle, ends in `_fail`.

The scheduler is what backends.base.SchedulerPort declares to a backend; plugins see
only their profile's framework (the handle), never this class.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.customresources import CustomResource, watched_by
from kubesched.api.objects import Namespace, Node, Pod
from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodError, PodInfo, make_pod_info
from kubesched.api.selectors import Selector
from kubesched.backends.base import ClusterBackend
from kubesched.cache.cache import Cache
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.podgroups import PENDING, group_key, member_key
from kubesched.config.dump import configuration_digest
from kubesched.config.parse import SchedulerConfig
from kubesched.framework.batching import Candidates, OpportunisticBatch, ranked
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.detail import SUCCESS, CycleDetail
from kubesched.framework.events import (
    ASSIGNED_POD,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    CONFIGURATION_CHANGE,
    NODE_ADD,
    NODE_DELETE,
    PODGROUP_ADD,
    PODGROUP_DELETE,
    PODGROUP_UPDATE,
    UNSCHEDULED_POD_ADD,
    ActionType,
    ClusterEvent,
    node_changes,
    pod_changes,
)
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework, ScoreOutcome
from kubesched.framework.services import Services
from kubesched.framework.shared import SharedObjects
from kubesched.framework.status import Code, Status, fit_error_message
from kubesched.framework.types import Diagnosis
from kubesched.framework.waiting import PodAtPermit
from kubesched.infra import features, gcpolicy
from kubesched.infra.clock import Clock, first_set
from kubesched.observe.metrics import TIE, DurationHistogram, SchedulerMetrics
from kubesched.observe.record import DecisionRecord, Recorder, TopScores
from kubesched.observe.tracing import CycleTrace, Tracer
from kubesched.plugins.registry import in_tree_registry
from kubesched.queue.bursts import BurstPolicy, burst_key
from kubesched.queue.scheduling_queue import Nominator, QueuedGroup, QueuedPodInfo, SchedulingQueue
from kubesched.scheduler.burstcycle import BurstCycle
from kubesched.scheduler.explain import explain_pod
from kubesched.scheduler.feasibility import find_feasible
from kubesched.scheduler.generation import Generation, build_generation
from kubesched.scheduler.groupcycle import GroupCycle
from kubesched.scheduler.shadow import ShadowRunner

log = logging.getLogger(__name__)

PLUGIN_METRICS_EVERY = 10  # cycles per cycle whose plugins are timed one by one (kube samples 10%)
TOP_NODES_RECORDED = 3

@dataclass(slots=True)
class Stats:
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    bind_failures: int = 0
    preemption_attempts: int = 0
    victims: int = 0
    # A histogram, not a list: a list gains an entry every cycle of a run that lasts months.
    cycle_seconds: DurationHistogram = field(default_factory=DurationHistogram)


def _late_results(fwk: Framework, status: Status | None) -> dict[str, dict[str, str]]:
    """The binding cycle's results by extension point, in kube-scheduler-simulator's words."""
    if status is not None and status.code != Code.SUCCESS:
        failed = {status.plugin or "unknown": status.message()}
        return {"bind": failed}
    binder = fwk.binders[0].name if fwk.binders else ""
    return {
        "reserve": {p.name: SUCCESS for p in fwk.reserve},
        "permit": {p.name: SUCCESS for p in fwk.permit},
        "permit-timeout": {p.name: "0s" for p in fwk.permit},
        "prebind": {p.name: SUCCESS for p in fwk.pre_bind},
        "bind": {binder: SUCCESS} if binder else {},
    }


def _decided_by(record: DecisionRecord) -> str | None:
    """The Score plugin that decided the cycle's winner (metrics.TIE for a tie), or None."""
    if record.scored_top is None or record.chosen is None:
        return None
    margin, plugin = record.scored_top.margin(record.chosen)
    if margin is None:
        return None
    return plugin if margin > 0 and plugin is not None else TIE


def _best_few(totals: np.ndarray, ties: np.ndarray, k: int) -> np.ndarray:
    """Indices of k highest totals, best first, lowest index first among equals; `ties`: the
    indices of the highest. (argpartition is slow on the many equal totals a uniform cluster gives.)"""
    top = ties[:k].copy()
    while top.size < k:
        below = totals < totals[top[-1]]
        nxt = np.flatnonzero(below & (totals == totals[below].max()))
        top = np.concatenate((top, nxt[: k - top.size]))
    return top


def _queue_sort(gen: Generation) -> Callable[[QueuedPodInfo], Any]:
    """The queue's sort key: the first live profile's QueueSort (configuration made them agree)."""
    first = next(iter(gen.frameworks.values()))
    if first.queue_sort is None:
        raise ValueError(f"profile {first.name} has no queueSort plugin")
    return first.queue_sort.sort_key


def _registrations(gen: Generation) -> dict[str, Any]:
    return {name: fwk.events_by_plugin() for name, fwk in gen.frameworks.items()}


def _permit_failure(status: Status) -> Status:
    """A Reserve or Permit rejection as kube reports it: a FitError over the one node the pod was
    assumed on ("0/1 nodes are available: 1 <reason>."); an error stays as it is."""
    if not status.rejected:
        return status
    return Status(status.code, (fit_error_message(1, [(r, 1) for r in status.reasons]),), status.plugin)


def _rejector(status: Status) -> list[str]:
    """The plugin a rejection names, for the queue's choice of events that may help (none for an error)."""
    return [status.plugin] if status.plugin and status.code != Code.ERROR else []


@dataclass(slots=True)
class ScheduleResult:
    """What one attempt to place a pod found (kube's ScheduleResult or its error): a node, or
    the failure. With a diagnosis, Filters rejected every node and PostFilter may still help."""

    node: str | None = None
    failure: Status | None = None
    diagnosis: Diagnosis | None = None


class Scheduler:
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
        self._traces: dict[str, CycleTrace] = {}  # sampled pods whose binding cycle is still to report
        self._details: dict[str, CycleDetail] = {}  # results to publish when the binding cycle ends
        self.cache = Cache()
        self.recorder = recorder or Recorder()
        self.metrics = metrics or SchedulerMetrics()
        self.rng = np.random.default_rng(seed)
        self.nominator = Nominator()
        # The nominations assume_and_reserve dropped, by pod uid, until the pod is forgotten or bound.
        self.nominated_before_assume: dict[str, str] = {}
        self.waiting: dict[str, PodAtPermit] = {}
        self._batches: weakref.WeakKeyDictionary[Framework, OpportunisticBatch] = weakref.WeakKeyDictionary()
        self.in_flight: dict[str, QueuedPodInfo] = {}  # assumed pods whose binding cycle runs
        self.current_record: DecisionRecord | None = None
        self.bindings: dict[str, asyncio.Task[None]] = {}  # binding cycles by pod uid
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
        self.group_cycle = GroupCycle(self)
        self.burst_cycle = BurstCycle(self)
        self.shadows = ShadowRunner(self.metrics, seed)
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

    def _cluster_event(self, event: ClusterEvent) -> None:
        self._move(event, None, None)

    def _move(
        self, event: ClusterEvent, old: Any, new: Any, pre_check: Callable[[PodInfo], bool] | None = None
    ) -> None:
        """A cluster change: pods in the unschedulable pool that a rejecting plugin's queueing
        hint says it may help move back (kube's MoveAllToActiveOrBackoffQueue). `old` and `new`
        are the object before and after (PodInfo for pods, the API object otherwise)."""
        self.queue.move_on_event(event, old, new, pre_check)

    def _nomination_gone(self, pi: PodInfo) -> None:
        """A pod nominated to a node no longer is (deleted, or nominated elsewhere): the room it
        held may fit pods of no higher priority, as if an assigned pod were deleted. `pi` is the
        pod as it was, still showing its nominated node."""
        self._move(ASSIGNED_POD_DELETE, pi, None, lambda other: other.priority <= pi.priority)

    def _pending_pods(self) -> dict[tuple[str, ...], float]:
        counts = self.queue.counts()
        return {
            ("active",): float(counts.active),
            ("backoff",): float(counts.backoff),
            ("unschedulable",): float(counts.unschedulable),
            ("gated",): float(counts.gated),
        }

    # --- event handlers: what the backend reports ---------------------------------------------------

    def responsible_for(self, pod: Pod) -> bool:
        return (pod.spec.scheduler_name or "default-scheduler") in self.frameworks

    def _pod_info(self, pod: Pod) -> PodInfo | None:
        try:
            return make_pod_info(pod)
        except PodError as exc:
            log.error("ignoring pod: %s", exc)
            return None

    def on_pod_add(self, pod: Pod) -> None:
        self.on_pod_update(pod)

    def on_pod_update(self, pod: Pod) -> None:
        uid = pod.metadata.uid or pod.key
        if pod.status.phase in ("Succeeded", "Failed") or (pod.metadata.deletion_timestamp and pod.spec.node_name):
            # Terminal (or terminating) pods no longer hold their node's resources for scheduling.
            self.on_pod_delete(uid)
            return
        pi = self._pod_info(pod)
        if pi is None:
            return
        if pod.spec.node_name:
            placed = self.cache.placed.get(uid)
            self.queue.delete(uid)
            self.nominator.remove(uid)
            self.cache.add_pod(pi)
            if placed is None or placed.assumed:
                self._move(ASSIGNED_POD_ADD, None, pi)
            else:
                for event in pod_changes(pi, placed.info, ASSIGNED_POD):
                    self._move(event, placed.info, pi)
        elif self.responsible_for(pod) and not self.cache.is_assumed(uid):
            old = self.queue.pods.get(uid)
            if self.groups_on:
                self.cache.groups.set_member(pi, PENDING)
            self.queue.add(pi)
            self._renominate(pi, old.pi.pod.status.nominated_node_name if old is not None else "")
            if self.groups_on and old is None:
                # kube, with GenericWorkload: every pending pod added is an event (a gang's last member releases it).
                self._move(UNSCHEDULED_POD_ADD, None, pi)

    def _renominate(self, pi: PodInfo, was: str) -> None:
        """Takes the nominated node the pod's status names (a nomination made in memory and not
        in the status yet is kept, as kube keeps it); one the status drops or changes frees the
        room it held."""
        nominated = pi.pod.status.nominated_node_name
        if nominated:
            self.nominator.nominate(pi, nominated)
        if was and was != nominated:
            self._nomination_gone(pi.seen_as(nominated_node_name=was))

    def refresh_pending_pod(self, pod: Pod) -> None:
        """A pending pod whose status alone changed (often our own PodScheduled patch): keep
        the fresh status, but do not move the pod in the queue, as kube-scheduler does not."""
        qpi = self.queue.pods.get(pod.metadata.uid or pod.key)
        if qpi is None:
            self.on_pod_update(pod)
            return
        was = qpi.pi.pod.status.nominated_node_name
        qpi.pi.pod.status = pod.status
        qpi.pi.pod.metadata.resource_version = pod.metadata.resource_version
        self._renominate(qpi.pi, was)

    def on_pod_bound(self, pi: PodInfo, node: str) -> None:
        """A backend that knows the bound object is the scheduled one reports the bind with
        the PodInfo it was given, sparing a re-derivation."""
        pi.pod.spec.node_name = node
        self.queue.delete(pi.uid)
        self.nominator.remove(pi.uid)
        self.cache.add_pod(pi)
        self._move(ASSIGNED_POD_ADD, None, pi)

    def on_pod_delete(self, uid: str) -> None:
        """The pod was deleted or reached a terminal phase: nothing about it is kept."""
        self.in_flight.pop(uid, None)
        self.nominated_before_assume.pop(uid, None)
        self.recorder.forget(uid)
        pending = self.queue.delete(uid)
        self.nominator.remove(uid)
        waiting = self.waiting.get(uid)
        if waiting is not None:
            waiting.reject("", "pod deleted while waiting at Permit")
        removed = self.cache.remove_pod(uid)
        if removed is not None:
            self._move(ASSIGNED_POD_DELETE, removed, None)
        elif pending is not None and pending.pi.pod.status.nominated_node_name:
            self._nomination_gone(pending.pi)

    def on_node_add(self, node: Node) -> None:
        self._apply_node(node, None)

    def on_node_update(self, node: Node) -> None:
        row = self.cache.table.index.get(node.metadata.name)
        self._apply_node(node, self.cache.table.nodes[row] if row is not None else None)

    def _apply_node(self, node: Node, old: Node | None) -> None:
        try:
            self.cache.add_node(node)
        except ValueError as exc:
            log.error("ignoring node: %s", exc)
            return
        for event in [NODE_ADD] if old is None else node_changes(node, old):
            self._move(event, old, node)

    def on_node_delete(self, name: str) -> None:
        row = self.cache.table.index.get(name)
        if row is not None:
            self._move(NODE_DELETE, self.cache.table.nodes[row], None)
        self.cache.remove_node(name)

    def on_namespace(self, ns: Namespace) -> None:
        # kube-scheduler reports no namespace events to its queue: a namespaceSelector that now
        # matches is seen at the pod's next attempt.
        self.cache.set_namespace(ns.metadata.name, ns.metadata.labels)

    def on_namespace_delete(self, name: str) -> None:
        self.cache.remove_namespace(name)

    def on_storage_update(self, resource: str, old: Any, new: Any) -> None:
        """A storage object (PersistentVolumeClaim, PersistentVolume, storage.k8s.io/StorageClass,
        CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment) added (`old` None) or updated:
        the cache's storage index takes it, then the pods a volume plugin's hint admits move."""
        self.cache.storage.apply(resource, new)
        self._move(ClusterEvent(resource, ActionType.Add if old is None else ActionType.Update), old, new)

    def on_pod_group(self, pg: PodGroup) -> None:
        """A PodGroup added or updated: members waiting for it are queued, and the event may
        release a group gated at PreEnqueue (GangScheduling's hints)."""
        old = self.cache.groups.set_group(pg)
        if old is None:
            self.queue.group_added(pg.key)
            self._move(PODGROUP_ADD, None, pg)
        else:
            self._move(PODGROUP_UPDATE, old, pg)

    def refresh_pod_group(self, pg: PodGroup) -> None:
        """A PodGroup whose status alone changed (usually our own condition): kept, no event."""
        if self.cache.groups.group(pg.key) is not None:
            self.cache.groups.set_group(pg)

    def on_pod_group_delete(self, namespace: str, name: str) -> None:
        key = group_key(namespace, name)
        old = self.cache.groups.remove_group(key)
        if old is not None:
            self.queue.group_deleted(key)
            self._move(PODGROUP_DELETE, old, None)

    def on_storage_delete(self, resource: str, old: Any) -> None:
        self.cache.storage.delete(resource, old)
        self._move(ClusterEvent(resource, ActionType.Delete), old, None)

    def on_custom_object(self, resource: str, old: Any, new: Any) -> None:
        """A custom object (api.customresources: `resource` is `<plural>.<version>.<group>`) added
        (`old` None) or updated: the cache's index takes it, then the pods a hint admits move."""
        self.cache.custom.apply(resource, new, self.clock.now())
        self._move(ClusterEvent(resource, ActionType.Add if old is None else ActionType.Update), old, new)

    def on_custom_delete(self, resource: str, old: Any) -> None:
        self.cache.custom.delete(resource, old)
        self._move(ClusterEvent(resource, ActionType.Delete), old, None)

    def custom_resources(self) -> list[CustomResource]:
        """The custom resources the profiles' plugins read; from now on only these are expected."""
        out = watched_by(p for fwk in self.frameworks.values() for p in fwk.instances.values())
        self.cache.custom.watched = frozenset(cr.resource for cr in out)
        return out

    def set_workload_selector(self, kind: str, namespace: str, name: str, selector: Selector) -> None:
        self.cache.set_workload_selector(kind, namespace, name, selector)

    def remove_workload_selector(self, kind: str, namespace: str, name: str) -> None:
        self.cache.remove_workload_selector(kind, namespace, name)

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

    # --- the scheduling cycle ---------------------------------------------------------------------------

    def schedule_one(self) -> bool:
        """Schedules the next pod (or pod group) in activeQ, if any. Returns False when activeQ is empty."""
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

    def schedule_queued(self, qpi: QueuedPodInfo, planned: int = -1, burst: int = 0) -> None:
        """One pod's scheduling cycle, from PreFilter to Permit, binding started in the background.
        `planned`: the node row a burst's joint plan chose for it (burstcycle): the pod goes there
        if every Filter passes there, else through the whole cycle as any pod."""
        pi = qpi.pi
        fwk = self.frameworks.get(pi.scheduler_name)
        if fwk is None or pi.pod.metadata.deletion_timestamp or self.cache.node_of(pi.uid) is not None:
            self.queue.delete(pi.uid)
            return
        started = time.perf_counter()
        pod_cycle = self.queue.scheduling_cycle
        fwk.plugin_metrics = self.metrics if pod_cycle % PLUGIN_METRICS_EVERY == 1 else None
        trace = fwk.trace = self.tracer.start() if self.tracer.enabled else None
        detail = fwk.detail = CycleDetail() if fwk.records_detail else None
        placed = self._planned(fwk, qpi, planned, burst) if planned >= 0 else None
        if placed is not None:
            state, record, result = placed
        else:
            if planned >= 0 and detail is not None:  # the verdicts of the one node tried are not this cycle's
                detail = fwk.detail = CycleDetail()
            state = CycleState()
            record = DecisionRecord(pi.key, fwk.name, qpi.attempts, self.clock.now(), len(self.cache.table), pi.uid)
            self.current_record = record
            result = self._schedule_pod(fwk, state, pi, record)
        shadows = self.generation.shadows.get(fwk.name) if self.generation.shadows else None
        shadow_seconds = 0.0
        if shadows and (result.failure is None or result.failure.code != Code.ERROR):
            decided, shadow_seconds = self.shadows.decide(
                fwk.name, shadows, pi, result.node, functools.partial(self.nominated_ahead, pi)
            )
            record.shadow = tuple(decided)
        if result.node is not None:
            self._assume_and_bind(fwk, state, qpi, record, result.node, pod_cycle)
        elif result.diagnosis is not None:
            status = self._post_filter(fwk, state, pi, record, result.diagnosis)
            self._fail(fwk, qpi, record, status, result.diagnosis.unschedulable_plugins, pod_cycle)
        else:
            assert result.failure is not None
            self._fail(fwk, qpi, record, result.failure, _rejector(result.failure), pod_cycle)
        self.metrics.outcome(fwk.name, record.rejections, _decided_by(record))
        if detail is not None:
            self._publish(fwk, pi, detail, record)
        if trace is not None:
            fwk.trace = None
            self.tracer.finish(trace, record, time.perf_counter())
            if record.result == "scheduled":
                self._traces[pi.uid] = trace
        record.duration = time.perf_counter() - started
        if shadows:
            self.shadows.live_cycle(fwk.name, shadows, record.duration - shadow_seconds)
        self.stats.cycle_seconds.observe(record.duration)
        if record.result != "scheduled":  # a scheduled pod's attempt ends when its binding does
            self.metrics.attempt(record.result, fwk.name, record.duration)
        self.recorder.add(record)
        gcpolicy.cycle_done()

    def _planned(self, fwk: Framework, qpi: QueuedPodInfo, row: int, burst: int
                 ) -> tuple[CycleState, DecisionRecord, ScheduleResult] | None:
        """The pod tried on the one node its burst's plan chose (every Filter run there); its
        state, record and result when it passes there, else None (the whole cycle runs afresh)."""
        pi = qpi.pi
        table = self.cache.table
        if row >= table.size:
            return None
        only = np.zeros(table.size, dtype=bool)
        only[row] = True
        state = CycleState()
        record = DecisionRecord(pi.key, fwk.name, qpi.attempts, self.clock.now(), len(table), pi.uid)
        self.current_record = record
        result = self._schedule_pod(fwk, state, pi, record, only)
        if result.node is None or result.node != table.name_of(row):
            return None
        record.jointly = burst
        return state, record, result

    def schedule_member(
        self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, within: np.ndarray | None = None
    ) -> ScheduleResult:
        """One member's placement in a PodGroup cycle: the pod's own cycle up to the chosen node
        (no PostFilter: a member never preempts on its own) among the nodes `within` its group's
        placement, its rejections recorded."""
        self.current_record = record
        result = self._schedule_pod(fwk, state, pi, record, within)
        self.metrics.outcome(fwk.name, record.rejections, _decided_by(record))
        return result

    def fail_attempt(self, fwk: Framework, qpi: QueuedPodInfo, record: DecisionRecord, status: Status) -> None:
        """A group member's failed attempt, reported as any pod's; its group takes it back to the queue."""
        self._fail(fwk, qpi, record, status, (), self.queue.scheduling_cycle, requeue=False)

    def _schedule_pod(
        self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, within: np.ndarray | None = None
    ) -> ScheduleResult:
        # OpportunisticBatching for a pod's own cycle (a group's members and a plan's pinned pods
        # take the whole path); `batched` remembers the choice for the next pod of the same signature.
        batch = self._batch(fwk) if within is None and features.current().opportunistic_batching else None
        signature = batch.sign(pi) if batch is not None else None
        cycle = self.queue.scheduling_cycle
        hinted: list[int | None] = [None]

        def hint(st: CycleState) -> int | None:
            assert batch is not None
            hinted[0] = batch.hint(st, pi, signature, cycle)
            return hinted[0]

        def batched(node: str, others: Candidates | None = None) -> ScheduleResult:
            if batch is not None:
                batch.store(signature, hinted[0], self.cache.table.row_of(node), others, cycle)
            return ScheduleResult(node=node)

        found = find_feasible(fwk, state, pi, functools.partial(self.nominated_ahead, pi), within,
                              hint if batch is not None else None)
        if found.hinted is not None:
            record.feasible = 1
            record.chosen = self.cache.table.name_of(found.hinted)
            return batched(record.chosen)
        if found.prefilter_cut is not None:
            record.rejections.append(("PreFilter", *found.prefilter_cut))
        if found.failure is not None:
            return ScheduleResult(failure=found.failure)
        outcome = found.outcome
        if outcome is None:  # PreFilter refused the pod
            return ScheduleResult(diagnosis=found.diagnosis)
        record.rejections.extend(outcome.rejections)
        record.feasible = found.feasible
        if record.feasible == 0:
            return ScheduleResult(diagnosis=found.diagnosis)
        table = self.cache.table
        nominated = pi.pod.status.nominated_node_name or self.nominator.node_of.get(pi.uid)
        if nominated:
            row = table.index.get(nominated)
            if row is not None and outcome.alive[row]:
                record.chosen = nominated
                return batched(nominated)
        rows, _ = fwk.sample(outcome.alive, found.diagnosis.num_nodes)
        record.scored = int(rows.size)
        if rows.size == 1:
            return batched(table.name_of(int(rows[0])))
        scored = fwk.run_scores(state, pi, rows)
        if isinstance(scored, Status):
            return ScheduleResult(failure=scored)
        if batch is None or signature is None:
            return batched(self._select_host(table, scored, record))
        # kube v1.37 takes the head of its sorted score list; the rest is kept for the next pod.
        pick, others = ranked(scored, self.rng)
        return batched(self._select_host(table, scored, record, pick=pick), others)

    def _batch(self, fwk: Framework) -> OpportunisticBatch:
        """The profile's OpportunisticBatching state (a new generation's framework starts afresh)."""
        batch = self._batches.get(fwk)
        if batch is None:
            batch = self._batches[fwk] = OpportunisticBatch(fwk)
        return batch

    def nominated_ahead(self, pi: PodInfo, alive: np.ndarray) -> dict[int, list[PodInfo]]:
        """Pods nominated to the alive rows with priority >= the pod's: it must fit with them too,
        so a preemptor keeps the room it made."""
        if not self.nominator:
            return {}
        index = self.cache.table.index
        out: dict[int, list[PodInfo]] = {}
        for node, pods in self.nominator.by_node.items():
            row = index.get(node)
            if row is None or not alive[row]:
                continue
            ahead = [p for p in pods.values() if p.uid != pi.uid and p.priority >= pi.priority]
            if ahead:
                out[row] = ahead
        return out

    def _select_host(self, table: NodeTable, scored: ScoreOutcome, record: DecisionRecord, pick: int = -1) -> str:
        """The scored node with the highest total, ties at random (or the index `pick` of the
        rows, chosen already); the best few are recorded."""
        totals = scored.totals
        best = totals.max()
        ties = np.flatnonzero(totals == best)
        if pick < 0:
            pick = int(ties[0] if ties.size == 1 else ties[self.rng.integers(ties.size)])
        top = _best_few(totals, ties, min(TOP_NODES_RECORDED, totals.size))
        few = top.tolist()
        if pick not in few:
            top[-1] = few[-1] = pick
        # Each plugin's raw and weighted scores of the few nodes kept, read at those nodes only.
        raw = [a[top].tolist() for a in scored.raw]
        weighted = [w[top].tolist() for _, w in scored.by_plugin]
        record.scored_top = TopScores(
            nodes=[table.name_of(r) for r in scored.rows[top].tolist()],
            totals=totals[top].tolist(),
            plugins=tuple(name for name, _ in scored.by_plugin),
            weights=tuple(scored.weights),
            raw=[list(column) for column in zip(*raw, strict=True)] if raw else [[] for _ in few],
            weighted=[list(column) for column in zip(*weighted, strict=True)] if weighted else [[] for _ in few],
        )
        return table.name_of(int(scored.rows[pick]))

    def _publish(self, fwk: Framework, pi: PodInfo, detail: CycleDetail, record: DecisionRecord) -> None:
        """A profile that publishes its results: a failed attempt's now, a placed pod's when its
        binding cycle ends (with the binding's own results), as kube-scheduler-simulator does."""
        fwk.detail = None
        detail.selected_node = record.chosen or ""
        if record.result == "scheduled":
            self._details[pi.uid] = detail
        else:
            self.backend.set_annotations(pi, detail.annotations(self.cache.table))

    def _post_filter(
        self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, diagnosis: Diagnosis
    ) -> Status:
        """The pod fits nowhere: PostFilter (preemption) may make room. Returns the failure to
        report, kube's FitError message."""
        result, status = fwk.run_post_filter(state, pi, diagnosis)
        if status is not None and status.reasons:
            diagnosis.post_filter_msg = status.message()
        if result is not None and result.nominated_node is not None:
            # A node nominates; "" clears an earlier nomination that preemption gave up on.
            record.nominated = result.nominated_node or None
            fwk.nominate(pi, result.nominated_node or None)
        message = fit_error_message(
            diagnosis.num_nodes, diagnosis.reasons.items(), diagnosis.pre_filter_msg, diagnosis.post_filter_msg
        )
        return Status(Code.UNSCHEDULABLE, (message,))

    # --- failure: one path for every cycle that does not end in a bound pod ---------------------------------

    def _fail(
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

    # --- assume, reserve, permit, then bind in the background --------------------------------------------------------

    def _assume_and_bind(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str, pod_cycle: int
    ) -> None:
        status = self.assume_and_reserve(fwk, state, qpi.pi, record, node)
        if status is None:
            self.permit_and_bind(fwk, state, qpi, record, node, pod_cycle)
        else:
            self._fail(fwk, qpi, record, _permit_failure(status), _rejector(status), pod_cycle, reserved=(state, node))

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
            status = _permit_failure(status)
            self._fail(fwk, qpi, record, status, _rejector(status), pod_cycle, reserved=(state, node))
            return
        record.result = "scheduled"
        self.queue.assumed(pi.uid)
        self.nominator.remove(pi.uid)
        self.nominated_before_assume.pop(pi.uid, None)
        self.in_flight[pi.uid] = qpi
        if waits:
            self.waiting[pi.uid] = PodAtPermit(pi.uid, node, waits, self.clock)
        cycle = self._binding_cycle(fwk, state, qpi, record, node, time.perf_counter())
        task = asyncio.get_running_loop().create_task(cycle)
        self.bindings[pi.uid] = task
        task.add_done_callback(functools.partial(self._binding_done, pi.uid))

    def _binding_done(self, uid: str, task: asyncio.Task[None]) -> None:
        if self.bindings.get(uid) is task:  # a retry may already have started a new cycle
            del self.bindings[uid]

    async def _binding_cycle(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str, started: float
    ) -> None:
        pi = qpi.pi
        status: Status | None = None
        rejected_by: list[str] = []  # only a Permit rejection names plugins to wait for (kube's FitError)
        trace = self._traces.pop(pi.uid, None) if self._traces else None
        binding = self.tracer.binding_started(trace) if trace is not None else None
        try:
            waiting = self.waiting.get(pi.uid)
            if waiting is not None:
                status = await waiting.future
                self.waiting.pop(pi.uid, None)
                if status is not None:
                    rejected_by = _rejector(status)
                    status = _permit_failure(status)
            if status is None:
                status = await fwk.run_pre_bind(state, pi, node)
            if status is None:
                status = await fwk.run_bind(state, pi, node)
        except Exception as exc:  # a plugin or backend bug must not kill the scheduler
            log.exception("binding %s to %s failed", pi.key, node)
            status = Status.error(f"binding failed: {exc}")
        if binding is not None:
            failed = status is not None and status.code != Code.SUCCESS
            result = status.message()[:256] if status is not None and failed else "bound"
            self.tracer.binding(binding, time.perf_counter(), node, result)
        published = self._details.pop(pi.uid, None) if self._details else None
        if published is not None:
            self.backend.set_annotations(pi, published.annotations(self.cache.table, _late_results(fwk, status)))
        if status is None or status.code == Code.SUCCESS:
            self.queue.done(pi.uid)
            self.in_flight.pop(pi.uid, None)
            self.cache.finish_binding(pi)
            fwk.run_post_bind(state, pi, node)
            self.stats.scheduled += 1
            self.metrics.attempt("scheduled", fwk.name, time.perf_counter() - started)
            if qpi.initial_attempt_timestamp is not None:
                self.metrics.scheduled_after(qpi.attempts, self.clock.now() - qpi.initial_attempt_timestamp)
            self.backend.record_event(pi, "Normal", "Scheduled", f"Successfully assigned {pi.key} to {node}")
            return
        self.stats.bind_failures += 1
        self.metrics.attempt("error", fwk.name, time.perf_counter() - started)
        self.metrics.bind_failed(status.plugin or "unknown")
        if not status.reasons:
            status = Status(status.code, ("binding rejected",), status.plugin)
        # A pod deleted meanwhile is reported but not requeued (kube checks its informer cache).
        deleted = self.in_flight.pop(pi.uid, None) is None
        self._fail(
            fwk, qpi, record, status, rejected_by, self.queue.scheduling_cycle, reserved=(state, node), requeue=not deleted
        )
        self.queue.done(pi.uid)
        # kube moves the pods an assigned pod's deletion may help: the assumption is gone.
        undone = pi.seen_as(node_name=node)  # kube's event carries the assumed pod, on its node
        self._move(ASSIGNED_POD_DELETE, undone, None, lambda other: other.uid != pi.uid)

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

    def record_preemption(self, victims: Sequence[PodInfo]) -> None:
        """Called by PostFilter plugins that evict pods, for stats and the decision record."""
        self.stats.preemption_attempts += 1
        self.stats.victims += len(victims)
        self.metrics.preemption(len(victims))
        if self.current_record is not None:
            self.current_record.victims = tuple(v.key for v in victims)

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
        advances the clock."""
        while True:
            busy = [task for uid, task in self.bindings.items() if not self._held_at_permit(uid)]
            busy.extend(self.background)
            if not busy:
                return
            await asyncio.gather(*busy, return_exceptions=True)

    def _held_at_permit(self, uid: str) -> bool:
        waiting = self.waiting.get(uid)
        return waiting is not None and not waiting.future.done()

    async def close(self) -> None:
        """Releases what the plugins' shared objects hold open (Prometheus connections), and
        sends the spans still buffered."""
        await self.shared.close()
        await self.tracer.close()

    # --- what a backend may read (backends.base.SchedulerPort) ---------------------------------------------

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
        """The explanation of a pod's placement (observe.explain's JSON form): its latest decision
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
