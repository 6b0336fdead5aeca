"""Runs the real scheduler on a simulated cluster in virtual time and reports what happened.

Besides placements, a run measures what placement did to the cluster's real load: the usage
model (backends.sim.usagemodel) samples every node's utilization each scrape interval, and a
simulated Prometheus (backends.sim.queryendpoint) answers the scheduler's metric queries from
those scrapes, with the lag a real installation has.

Time jumps from one event to the next. Where only scrapes are due before the next timer (an
arrival, a completion, a retry, a metrics refresh), they are taken in one step: a quiet span of
a year costs what one event does (see UsageModel.catch_up). What a run may ask for (nodes,
pods, spans of virtual time, scrapes) is bounded by backends.sim.limits and checked before it
starts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from kubesched.api.podgroups import PodGroupStatus
from kubesched.api.xk8s import ElasticQuota
from kubesched.backends.sim import podviews
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.clusterinput import ClusterInput
from kubesched.backends.sim.disruption import DisruptionController
from kubesched.backends.sim.groupstats import group_stats
from kubesched.backends.sim.limits import check_cluster, check_refreshes
from kubesched.backends.sim.queryendpoint import SimPrometheus
from kubesched.backends.sim.quotas import QuotaLedger
from kubesched.backends.sim.resourceclaims import ResourceClaimController
from kubesched.backends.sim.usagemodel import UsageModel, varying_usage
from kubesched.config.types import SchedulerConfig
from kubesched.framework.registry import Registry
from kubesched.infra.clock import VirtualClock
from kubesched.observe.tracing import Tracer
from kubesched.plugins.registry import in_tree_registry
from kubesched.scheduler.backend import SchedulerPort
from kubesched.scheduler.core import Scheduler
from kubesched.scheduler.reload.controller import ReloadController
from kubesched.usage.service import UsageService, UsageTransport

YIELD_EVERY = 64  # scheduling cycles (or scrapes sampled at once) between chances for other tasks to run
YIELD_SECONDS = 0.1  # and at least this often in wall time, so a cancellation lands promptly
# Once no cluster change is left to come, pods still retrying (backoff, Permit timeouts,
# the pool's periodic flush) get this much more virtual time, then the run ends: in a real
# cluster they would retry forever, and nothing would change their fate.
SETTLE_SECONDS = 900.0
# More scheduling cycles than this per pod at one instant of virtual time means pods are spinning.
SPIN_CYCLES_PER_POD = 50
SPIN_MIN_PODS = 20


@dataclass
class SimResult:
    profile: str
    pods_total: int
    pods_scheduled: int
    pods_unschedulable: int
    pods_gated: int
    wall_seconds: float
    pods_per_second: float
    virtual_seconds: float
    cycles: int
    placements: dict[str, str | None]
    unschedulable: dict[str, str]
    preempted: list[str]
    cycle_ms_p50: float
    cycle_ms_p99: float
    events: dict[str, int] = field(default_factory=dict)
    # Real load (from the usage model's scrapes): node-seconds above 80% cpu, the p99 of
    # node cpu utilization over nodes x scrapes (percent), its spread across nodes (stddev,
    # percent, averaged over scrapes); and the p99 of our pods' pending time (created to bound,
    # or to the end of the run if never bound), in virtual seconds.
    hotspot_node_seconds: float = 0.0
    node_cpu_util_p99: float = 0.0
    node_cpu_util_stddev: float = 0.0
    pending_seconds_p99: float = 0.0
    # Pod groups (backends.sim.groupstats): gangs' partial pod-seconds, groups' wait to minCount.
    groups: dict[str, Any] = field(default_factory=dict)
    # The scenario's configuration changes as the reload controller took them (reload.controller:
    # applied, unchanged, refused, rolled_back, confirmed), in time order.
    reloads: list[dict[str, Any]] = field(default_factory=list)
    # Per shadow profile (kubesched.scheduler.shadow): how its decisions compared with the live ones.
    shadows: dict[str, dict[str, int]] = field(default_factory=dict)
    # With ElasticQuotas (backends.sim.quotas): tenants, pods that ran borrowing and for how long
    # (pod-seconds), and preemptions that gave a lender its min back.
    quota: dict[str, Any] = field(default_factory=dict)
    # Pods of the input bound by spec.nodeName to a node that does not exist (pod -> node): not
    # pods to place, and never run: they stay Pending (backends.sim.podviews).
    bound_to_missing_nodes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Simulation:
    def __init__(
        self,
        cluster: ClusterInput,
        config: SchedulerConfig,
        *,
        seed: int = 0,
        registry: Registry | None = None,
        progress: Callable[[int, int], None] | None = None,
        label: str = "",
        tracer: Tracer | None = None,
    ) -> None:
        self.input = cluster
        self.config = config
        self.seed = seed
        self.registry = registry
        self.progress = progress
        self.label = label
        self.tracer = tracer

    async def run(self) -> SimResult:
        """Runs the simulation; LimitError (before anything runs) if the input is over one of the
        simulator's limits (backends.sim.limits)."""
        check_cluster(self.input, SETTLE_SECONDS, varying_usage(self.input))
        clock = VirtualClock()
        sim = SimCluster(clock)
        settings = self.input.settings
        usage = UsageModel(
            clock,
            self.input.nodes,
            seed=self.seed,
            interval=settings.scrape_interval,
            background=self.input.background,
            pod_usage={
                sp.pod.metadata.uid: (sp.usage_cpu, sp.usage_memory)
                for sp in self.input.pods
                if sp.usage_cpu is not None or sp.usage_memory is not None
            },
        )
        prometheus = SimPrometheus(usage, clock, outages=settings.prometheus_outages)
        sim.usage = usage
        sched: SchedulerPort = Scheduler(
            self.config,
            sim,
            clock,
            registry=self.registry,
            seed=self.seed,
            shared=[UsageTransport(lambda args: prometheus)],
            tracer=self.tracer,
        )
        service = sched.shared.find(UsageService)
        check_refreshes(self.input, SETTLE_SECONDS, [p.args.refresh_interval for p in service.providers.values()] if service else [])
        self.scheduler, self.cluster, self.usage, self.prometheus = sched, sim, usage, prometheus
        # The scrape timers are the clock's own, not cluster changes: the run still ends when
        # only they are left.
        usage.start()
        if self.tracer is not None:
            self.tracer.start_export()
        self.reload = self._reloads(sim, sched) if self.input.config_changes else None
        self._load(sim, sched)
        owned = [p.pod for p in self.input.pods if not p.pod.spec.node_name and sched.responsible_for(p.pod)]
        total = len(owned)
        started = time.perf_counter()
        first_cycle = sched.queue.scheduling_cycle  # cycles: pods (a burst's each) and groups popped
        calls = 0
        yielded = started
        instant, instant_cycles = clock.now(), 0
        spin_limit = SPIN_CYCLES_PER_POD * max(len(self.input.pods), SPIN_MIN_PODS)
        while True:
            if time.perf_counter() - yielded > YIELD_SECONDS:
                # Nothing else is ready here (all was drained), so this changes nothing but lets
                # a cancellation (Ctrl-C) in, however few cycles the run has.
                await asyncio.sleep(0)
                yielded = time.perf_counter()
            clock.run_due()
            if sched.busy:
                # Work that timers started (metric refreshes) finishes at this instant of
                # virtual time, before the next scheduling cycle.
                await sched.drain_bindings()
            if clock.now() != instant:
                instant, instant_cycles = clock.now(), 0
            while sched.schedule_one():
                calls += 1
                instant_cycles += 1
                if calls % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
                    if self.progress is not None:
                        self.progress(sim.binds, total)
                if instant_cycles > spin_limit:
                    break
            await sched.drain_bindings()
            if instant_cycles > spin_limit:
                # Pods that keep failing and coming straight back (a gang that cannot fit, retried
                # at once by the siblings it activates): a real scheduler would spin until the next
                # cluster change, so time jumps there (or the run ends if none is coming).
                spin_to = sim.next_external()
                if spin_to is None:
                    break
                clock.advance_to(spin_to)
                continue
            if len(sched.queue):
                continue
            nxt = clock.next_time()
            if nxt is None:
                break
            settling = not sim.external_pending
            if settling and (
                not (sched.queue.has_timed_work() or sched.waiting_pods()) or nxt - sim.last_external > SETTLE_SECONDS
            ):
                break  # only pods that nothing will change are left
            pool = sched.queue.pool_timer
            if not sched.busy and pool is not None and clock.peek() is pool and sched.queue.retry_would_repeat():
                # The pool's 5-minute retry is due, but nothing happened since those pods failed:
                # every retry would fail the same way (kube's cycles are deterministic for a given
                # state), so it waits for the next other event. Placements and messages are the
                # same; only the count of failed attempts is lower.
                until = clock.next_time(skip=[t for t in (pool, usage.timer) if t is not None])
                if until is not None and until > clock.now():
                    sched.queue.defer_pool_flush(until)
                    continue
            if not sched.busy and clock.peek() is usage.timer:
                # Only scrapes are due before the next other timer: nothing else can happen
                # meanwhile, so they are taken at once and the clock jumps to the last of them
                # (stopping where the settle rule above would end the run).
                until = clock.next_time(skip=usage.timer)
                taken = usage.catch_up(until, (sim.last_external, SETTLE_SECONDS) if settling else None,
                                       budget=YIELD_EVERY)
                if taken is not None:
                    clock.advance_to(taken)
                    continue
            clock.advance_to(nxt)
        await self._release_permit_holds(sched)
        usage.stop()
        if self.reload is not None:
            self.reload.guard.stop()
        if self.tracer is not None:
            await self.tracer.close()  # the spans still buffered are sent before the result
        wall = time.perf_counter() - started
        if self.progress is not None:
            self.progress(sim.binds, total)
        return self._result(sched, sim, owned, wall, clock.now(), sched.queue.scheduling_cycle - first_cycle)

    def explain(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The scheduler's explanation of a pod after the run (scheduler.explain's JSON), with what
        the simulated cluster shows of it (backends.sim.podviews); None if the scheduler knows no
        such pod."""
        data = self.scheduler.explain(namespace, name)
        return self.as_the_cluster_shows(data) if data is not None else None

    def as_the_cluster_shows(self, explanation: dict[str, Any]) -> dict[str, Any]:
        """An explanation of this run's scheduler, with what the simulated cluster shows of its pod."""
        pod = self.cluster.pods.get(str(explanation.get("uid") or ""))
        return podviews.as_the_cluster_shows(explanation, pod, self.cluster.nodes)

    def _group_stats(self, sim: SimCluster, end: float) -> dict[str, Any]:
        if not self.input.pod_groups:
            return {}
        ended = {uid: sim.bound_at[uid] + sim.durations[uid] for uid in sim.ran_on if uid in sim.bound_at and uid in sim.durations}
        pods_by_key = {p.pod.key: p.pod for p in self.input.pods}
        for event in sim.events:
            if event.reason == "Preempted" and event.pod in pods_by_key:
                ended.setdefault(pods_by_key[event.pod].metadata.uid, event.time)
        stats = group_stats([p.pod for p in self.input.pods], {pg.key: pg for pg, _ in self.input.pod_groups},
                            sim.created_at, sim.bound_at, ended, end)
        return stats.as_dict()

    @staticmethod
    async def _release_permit_holds(sched: SchedulerPort) -> None:
        """Pods still held at Permit when the run ends are rejected, as their timeout would, so
        they leave nothing reserved on a node and report why they are not placed."""
        for waiting in sched.waiting_pods():
            plugin = min(waiting.pending, default="")
            waiting.reject(plugin, f"still waiting at Permit plugin {plugin} when the simulation ended")
        await sched.drain_bindings()

    def _reloads(self, sim: SimCluster, core: SchedulerPort) -> ReloadController:
        """The scenario's configuration changes, each at its time through the reload controller
        `kubesched run` uses; the SLO guard samples from the start, for its baseline."""
        registry = self.registry
        controller = ReloadController(
            core,
            registry_factory=(lambda: registry) if registry is not None else in_tree_registry,
            on_profiles_added=lambda names: _deliver_pending(sim, core, names),
        )
        controller.guard.start()
        for change in self.input.config_changes:
            sim.at(change.at, lambda c=change: controller.apply_text(c.text, c.origin))
        return controller

    def _load(self, sim: SimCluster, sched: SchedulerPort) -> None:
        for ns in self.input.namespaces:
            sched.on_namespace(ns)
        for kind, namespace, name, selector in self.input.workload_selectors:
            sched.set_workload_selector(kind, namespace, name, selector)
        for node in self.input.nodes:
            sched.on_node_add(node)
        sim.nodes = {node.metadata.name: node for node in self.input.nodes}
        if self.input.pdbs:
            sim.disruption = DisruptionController(self.input.scales, sim.clock.now, sim.publish_pdb)
            for pdb, arrival in self.input.pdbs:
                if arrival <= 0:
                    sim.add_pdb(pdb)
                else:
                    sim.at(arrival, lambda p=pdb: sim.add_pdb(p))
        for pg, arrival in self.input.pod_groups:
            if arrival <= 0:
                sim.add_pod_group(msgspec.structs.replace(pg, status=PodGroupStatus()))
            else:
                sim.at(arrival, lambda g=pg: sim.add_pod_group(msgspec.structs.replace(g, status=PodGroupStatus())))
        if any(isinstance(obj, ElasticQuota) for _, obj, _ in self.input.custom_objects):
            sim.quotas = QuotaLedger()
        for resource, obj, arrival in self.input.custom_objects:
            if arrival <= 0:
                sim.add_custom(resource, obj)
            else:
                sim.at(arrival, lambda r=resource, o=obj: sim.add_custom(r, o))
        for resource, obj, arrival in self.input.storage:
            if arrival <= 0:
                sim.add_storage(resource, obj)
            else:
                sim.at(arrival, lambda r=resource, o=obj: sim.add_storage(r, o))
        if self.input.devices or any(sp.pod.spec.resource_claims for sp in self.input.pods):
            sim.claims = ResourceClaimController(sim, upcoming={sp.pod.metadata.uid for sp in self.input.pods})
        for resource, obj, arrival in self.input.devices:
            if arrival <= 0:
                sim.add_device_object(resource, obj)
            else:
                sim.at(arrival, lambda r=resource, o=obj: sim.add_device_object(r, o))
        for sp in self.input.pods:
            uid = sp.pod.metadata.uid
            if sp.duration is not None:
                sim.durations[uid] = sp.duration
            if sp.arrival <= 0:
                sim.create_pod(sp.pod)
            else:
                sim.at(sp.arrival, lambda pod=sp.pod: sim.create_pod(pod))

    def _result(
        self, sched: SchedulerPort, sim: SimCluster, owned: list[Any], wall: float, virtual: float, cycles: int
    ) -> SimResult:
        placements: dict[str, str | None] = {}
        unschedulable: dict[str, str] = {}
        gated = 0
        preempted = set(sim.preempted)
        for pod in owned:
            key = pod.key
            uid = pod.metadata.uid
            current = sim.pods.get(uid)
            node = current.spec.node_name if current is not None else sim.ran_on.get(uid)
            placements[key] = node or None
            if node or key in preempted:
                continue
            message, is_gated = sched.pending_reason(uid, key)
            # A gated pod's message is the one its PodScheduled condition shows, as in a cluster.
            unschedulable[key] = podviews.pending_message(current, message) if is_gated else message
            gated += is_gated
        scheduled = sum(1 for v in placements.values() if v)
        durations = sched.cycle_seconds  # a histogram: quantiles within 1.1% of the exact ones
        pending = [
            sim.bound_at.get(pod.metadata.uid, virtual) - sim.created_at.get(pod.metadata.uid, virtual)
            for pod in owned
        ]
        load = sim.usage.summary() if sim.usage is not None else None

        def pct(q: float) -> float:
            return round(durations.quantile(q) * 1000, 4)

        return SimResult(
            profile=self.label or ",".join(sched.profile_names),
            pods_total=len(owned),
            pods_scheduled=scheduled,
            pods_unschedulable=len(unschedulable) - gated,
            pods_gated=gated,
            wall_seconds=round(wall, 4),
            pods_per_second=round(sim.binds / wall, 1) if wall > 0 else 0.0,
            virtual_seconds=round(virtual, 3),
            cycles=cycles,
            placements=placements,
            unschedulable=unschedulable,
            preempted=sorted(preempted),
            cycle_ms_p50=pct(0.50),
            cycle_ms_p99=pct(0.99),
            events=dict(sim.event_counts),
            hotspot_node_seconds=load.hotspot_node_seconds if load else 0.0,
            node_cpu_util_p99=load.node_cpu_util_p99 if load else 0.0,
            node_cpu_util_stddev=load.node_cpu_util_stddev if load else 0.0,
            pending_seconds_p99=round(float(np.percentile(pending, 99)), 3) if pending else 0.0,
            reloads=[r.as_dict() for r in self.reload.history] if self.reload is not None else [],
            shadows=sched.shadow_summary(),
            groups=self._group_stats(sim, virtual),
            quota=sim.quotas.summary(virtual) if sim.quotas is not None else {},
            bound_to_missing_nodes=podviews.bound_to_missing_nodes(sim.pods.values(), sim.nodes),
        )


def _deliver_pending(sim: SimCluster, sched: SchedulerPort, profiles: set[str]) -> None:
    """Profiles a configuration change added: their pending pods, ignored so far, are delivered."""
    for pod in list(sim.pods.values()):
        if not pod.spec.node_name and (pod.spec.scheduler_name or "default-scheduler") in profiles:
            sched.on_pod_add(pod)
