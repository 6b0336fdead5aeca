"""A workload on the simulator: the whole kubesched scheduler in this process over the simulated
cluster, with no API server in between, so what is measured is the scheduling core's own cost.

Time is real here (unlike `simulate`'s virtual time): the cluster's clock follows the wall clock,
so backoffs, churn intervals and delete rates mean what they mean to scheduler_perf. The scheduler
runs as a task on the event loop, cycle after cycle, yielding every few cycles so the workload's
ops and collectors run beside it as they would beside a real scheduler. Objects arrive as API
dicts and go through the simulator's emulated API server (its validation and defaulting, with
scheduler_perf's admission settings: no Priority plugin). The simulated cluster runs the
resourceclaim controller, as scheduler_perf's setup does: claims from pods' templates, released and
deleted with their pods."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from kubesched.api.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, ResourceClaimWriteError
from kubesched.api.objects import Pod
from kubesched.api.podinfo import PodInfo
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.clusterinput import ClusterInput, ManifestError
from kubesched.backends.sim.manifests import load_objects
from kubesched.backends.sim.resourceclaims import ResourceClaimController
from kubesched.config.types import SchedulerConfig
from kubesched.framework.status import Status
from kubesched.infra.clock import VirtualClock
from kubesched.scheduler.core import Scheduler
from kubesched.tools.devcluster.schedulers import read_usage
from kubesched.tools.perf.claimalloc import ClaimAllocation
from kubesched.tools.perf.executor import PodIndex, Usage
from kubesched.tools.perf.objects import Obj
from kubesched.tools.perf.workloads import WorkloadError

YIELD_CYCLES = 32  # scheduling cycles between chances for the workload's own tasks to run
TICK_SECONDS = 0.05  # the longest the loop waits before it moves the clock again
# scheduler_perf's API server runs without these admission plugins.
ADMISSION_OFF = frozenset({"Priority", "TaintNodesByCondition", "ServiceAccount"})


def _reset_peak_rss() -> None:
    """Starts the process's VmHWM again from its current RSS (Linux's clear_refs 5); without it
    a workload would report the peak of any workload before it."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


class _Cluster(SimCluster):
    """The simulated cluster, telling the pod index of every bind and every attempt."""

    index: PodIndex

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        status = await super().bind(pi, node)
        if status is None:
            meta = pi.pod.metadata
            self.index.observe(meta.namespace, meta.name, meta.labels, node, True)
        return status

    def set_unschedulable(self, pi: PodInfo, message: str, reason: str = "Unschedulable") -> None:
        super().set_unschedulable(pi, message, reason)
        meta = pi.pod.metadata
        current = self.pods.get(pi.uid)
        if current is not None and not current.spec.node_name:
            self.index.observe(meta.namespace, meta.name, meta.labels, "", True)


class SimTarget:
    label = "kubesched (simulator)"

    def __init__(self, config: SchedulerConfig) -> None:
        self.pods = PodIndex()
        self.clock = VirtualClock()
        self.cluster = _Cluster(self.clock)
        self.cluster.index = self.pods
        self.cluster.claims = ResourceClaimController(self.cluster)
        self.scheduler = Scheduler(config, self.cluster, self.clock, seed=0)
        self._t0 = time.perf_counter()
        self._wake = asyncio.Event()
        self._shapes: dict[str, Pod] = {}  # a pod's JSON without its name -> the pod as admitted
        self._uids: dict[tuple[str, str, str], str] = {}  # (kind, namespace, name) -> uid of pods
        self._prepared: dict[tuple[str, str], Pod] = {}  # (namespace, name) -> the pod as admitted, not yet created
        self._task: asyncio.Task[None] | None = None
        self._cpu0 = time.process_time()
        _reset_peak_rss()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._pump())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._drain()
        await self.scheduler.close()

    # --- the scheduler's loop ---------------------------------------------------------------------

    def _tick(self) -> None:
        self.clock.advance_to(time.perf_counter() - self._t0)
        self.clock.run_due()

    def _until_next_timer(self) -> float:
        """Seconds until the clock's next timer is due, at most TICK_SECONDS."""
        nxt = self.clock.next_time()
        return TICK_SECONDS if nxt is None else max(0.0, min(TICK_SECONDS, nxt - self.clock.now()))

    async def _drain(self) -> None:
        """For stop: the scheduler's drain_bindings, then, while binding cycles are paused on the
        clock (DynamicResources' PreBind retrying a conflicting claim write), the clock goes on for
        them, as the pump would move it."""
        while True:
            await self.scheduler.drain_bindings()
            if not self.clock.sleepers:
                return
            await asyncio.sleep(self._until_next_timer())
            self._tick()

    async def _pump(self) -> None:
        sched = self.scheduler
        while True:
            self._tick()
            cycles = 0
            while sched.schedule_one():
                cycles += 1
                if cycles % YIELD_CYCLES == 0:
                    await sched.drain_bindings()
                    await asyncio.sleep(0)
                    self._tick()
            # Binding cycles paused on the clock are left to the ticks below (Clock.settle).
            await sched.drain_bindings()
            if cycles:
                await asyncio.sleep(0)
                continue
            self._wake.clear()
            timeout = self._until_next_timer()
            # Not asyncio.wait_for: cancelling it (stop) can leave its inner wait pending on 3.11.
            alarm = asyncio.get_running_loop().call_later(timeout, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                alarm.cancel()

    # --- Target ---------------------------------------------------------------------------------

    def prepare(self, objs: Sequence[Obj]) -> None:
        pods = [o for o in objs if o.get("kind") == "Pod"]
        for pod in self._typed_pods(pods):
            self._prepared[(pod.metadata.namespace, pod.metadata.name)] = pod

    async def create(self, objs: Sequence[Obj]) -> None:
        if not objs:
            return
        pods = [o for o in objs if o.get("kind") == "Pod"]
        others = [o for o in objs if o.get("kind") != "Pod"]
        if others:
            self._apply(self._admit(others))
        found = [self._prepared.pop((str(o["metadata"].get("namespace")), str(o["metadata"].get("name"))), None) for o in pods]
        typed = [t for t in found if t is not None]
        if len(typed) != len(pods):
            typed = self._typed_pods(pods)
        for pod in typed:
            self.cluster.create_pod(pod)
            meta = pod.metadata
            self._uids[("Pod", meta.namespace, meta.name)] = meta.uid
            created = self.cluster.pods[meta.uid]  # with what the API server wrote (a gated pod's condition)
            attempted = bool(pod.spec.node_name) or any(c.type == "PodScheduled" for c in created.status.conditions)
            self.pods.observe(meta.namespace, meta.name, meta.labels, pod.spec.node_name, attempted)
        self._wake.set()
        await asyncio.sleep(0)

    def _admit(self, objs: Sequence[Obj]) -> ClusterInput:
        try:
            return load_objects(objs, "scheduler_perf", disabled_admission=ADMISSION_OFF)
        except ManifestError as exc:
            raise WorkloadError(f"the simulator's API server refused an object: {exc}") from None

    def _typed_pods(self, pods: Sequence[Obj]) -> list[Pod]:
        """Pods as admitted; pods that differ only in name are admitted once and copied."""
        out = []
        for obj in pods:
            meta = obj.get("metadata") or {}
            shape = json.dumps({**obj, "metadata": {**meta, "name": ""}}, sort_keys=True, default=str)
            admitted = self._shapes.get(shape)
            if admitted is None:
                admitted = self._shapes[shape] = self._admit([obj]).pods[0].pod
            name = str(meta.get("name"))
            uid = f"perf-{meta.get('namespace')}-{name}"
            out.append(msgspec.structs.replace(admitted, metadata=msgspec.structs.replace(
                admitted.metadata, name=name, uid=uid, labels=dict(admitted.metadata.labels))))
        return out

    def _apply(self, cluster: ClusterInput) -> None:
        sched = self.scheduler
        for ns in cluster.namespaces:
            sched.on_namespace(ns)
        for kind, namespace, name, selector in cluster.workload_selectors:
            sched.set_workload_selector(kind, namespace, name, selector)
        for node in cluster.nodes:
            self.cluster.nodes[node.metadata.name] = node
            sched.on_node_add(node)
        for resource_name, obj, _ in cluster.storage:
            self.cluster.add_storage(resource_name, obj)
        for pg, _ in cluster.pod_groups:
            self.cluster.add_pod_group(pg)
        for resource_name, obj, _ in cluster.custom_objects:
            self.cluster.add_custom(resource_name, obj)
        for resource_name, obj, _ in cluster.devices:
            self.cluster.add_device_object(resource_name, obj)
        for sp in cluster.pods:  # pods that came with other kinds (none from scheduler_perf's ops)
            self.cluster.create_pod(sp.pod)

    async def delete(self, obj: Obj) -> None:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name")), str(meta.get("namespace") or "")
        if kind == "Pod":
            uid = self._uids.pop(("Pod", namespace, name), None)
            gone = self.cluster.pods.pop(uid, None) if uid is not None else None
            if uid is not None and gone is not None:
                self.scheduler.on_pod_delete(uid)
                if self.cluster.claims is not None:
                    self.cluster.claims.pod_deleted(gone)  # its claims released, and its own deleted
        elif kind == "Node":
            if self.cluster.nodes.pop(name, None) is not None:
                self.scheduler.on_node_delete(name)
        elif kind in ("Service", "ReplicaSet", "StatefulSet", "ReplicationController"):
            self.scheduler.remove_workload_selector(str(kind), namespace, name)
        else:
            raise WorkloadError(f"the simulator target cannot delete a {kind} (churn of that kind is not supported)")
        self._wake.set()
        await asyncio.sleep(0)

    async def update(self, obj: Obj, subresources: Sequence[str]) -> None:
        admitted = self._admit([obj])
        for node in admitted.nodes:
            self.cluster.nodes[node.metadata.name] = node
            self.scheduler.on_node_update(node)
        for sp in admitted.pods:
            uid = self._uids.get(("Pod", sp.pod.metadata.namespace, sp.pod.metadata.name))
            current = self.cluster.pods.get(uid or "")
            if current is None:
                raise WorkloadError(f"updateAny: pod {sp.pod.metadata.namespace}/{sp.pod.metadata.name} not found")
            new = msgspec.structs.replace(sp.pod, metadata=msgspec.structs.replace(sp.pod.metadata, uid=current.metadata.uid),
                                          spec=msgspec.structs.replace(sp.pod.spec, node_name=current.spec.node_name),
                                          status=current.status)
            self.cluster.pods[current.metadata.uid] = new
            self.scheduler.on_pod_update(new)
        self._wake.set()
        await asyncio.sleep(0)

    async def allocate_claims(self, namespace: str) -> int:
        store = self.cluster.devices
        classes = {dc.metadata.name: dc for dc in store.get(DEVICE_CLASS, {}).values()}
        run = ClaimAllocation(classes, store.get(RESOURCE_SLICE, {}).values(), store.get(RESOURCE_CLAIM, {}).values(),
                              self.cluster.nodes.values())
        allocated = 0
        for claim, allocation in run.each(namespace):
            status = msgspec.structs.replace(claim.status, allocation=allocation)
            try:
                stored = await self.cluster.update_resource_claim_status(msgspec.structs.replace(claim, status=status))
            except ResourceClaimWriteError as exc:
                raise WorkloadError(f"allocResourceClaims: update claim status with allocation: {exc}") from None
            run.written(stored)
            allocated += 1
            if allocated % YIELD_CYCLES == 0:
                await asyncio.sleep(0)  # the scheduler takes in the claims written so far
        self._wake.set()
        return allocated

    def usage(self) -> Usage:
        # The scheduler shares the process with the workload's object building. The peak is this
        # workload's when the kernel let us reset it (several workloads run in one process).
        try:
            peak = read_usage(os.getpid()).rss_peak_bytes
        except OSError:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        return Usage(time.process_time() - self._cpu0, peak)

    def attempt_seconds(self) -> list[tuple[float, float]]:
        return self.scheduler.cycle_seconds.cumulative()

