"""Runs one scheduler_perf workload's ops against a target (the simulator, or a real apiserver with
a scheduler process), and measures as scheduler_perf measures.

The ops run in order, as upstream's executor runs them: createPods waits until its pods are
scheduled unless skipWaitToCompletion, barriers wait for pods scheduled (or attempted), churn and
rate-limited deletes go on in the background, collectors sample scheduling throughput once a
second from the pods seen bound. A target keeps the PodIndex current from what it observes (the
simulator's binds, the apiserver's watch); everything else here is the same for every target."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesched.tools.perf import families, objects
from kubesched.tools.perf.objects import Obj, Templates, labels_match
from kubesched.tools.perf.workloads import (
    AllocResourceClaims,
    Barrier,
    Churn,
    CreateAny,
    CreateNamespaces,
    CreateNodes,
    CreatePodGroups,
    CreatePods,
    CreateResourceClaims,
    DeletePods,
    Op,
    Sleep,
    StartCollecting,
    StopCollecting,
    TestCase,
    Unsupported,
    UpdateAny,
    Workload,
    WorkloadError,
)

SAMPLE_SECONDS = 1.0  # scheduler_perf's throughputSampleInterval
DEFAULT_WAIT = 600.0  # upstream waits this long for a createPods op's pods
CREATE_BATCH = 500  # objects handed to a target at once


@dataclass(slots=True)
class PodState:
    labels: dict[str, str]
    node: str = ""
    attempted: bool = False  # has a PodScheduled condition (upstream's isAttempted)


class PodIndex:
    """The pods of the run as the target last observed them, by namespace and name, and who to tell
    when one is first seen bound."""

    def __init__(self) -> None:
        self.by_namespace: dict[str, dict[str, PodState]] = {}
        self.scheduled: dict[str, int] = {}  # namespace -> pods bound there now
        self.on_scheduled: list[Callable[[str, PodState], None]] = []

    def observe(self, namespace: str, name: str, labels: dict[str, str], node: str, attempted: bool) -> None:
        pods = self.by_namespace.setdefault(namespace, {})
        state = pods.get(name)
        if state is None:
            state = pods[name] = PodState(labels)
        newly = node and not state.node
        if bool(node) != bool(state.node):
            self.scheduled[namespace] = self.scheduled.get(namespace, 0) + (1 if node else -1)
        state.labels, state.node, state.attempted = labels, node, attempted or bool(node)
        if newly:
            for listener in self.on_scheduled:
                listener(namespace, state)

    def forget(self, namespace: str, name: str) -> None:
        state = self.by_namespace.get(namespace, {}).pop(name, None)
        if state is not None and state.node:
            self.scheduled[namespace] -= 1

    def select(self, namespaces: Sequence[str], selector: dict[str, str]) -> list[PodState]:
        spaces = namespaces or list(self.by_namespace)
        return [s for ns in spaces for s in self.by_namespace.get(ns, {}).values() if labels_match(s.labels, selector)]

    def names(self, namespace: str, selector: dict[str, str]) -> list[str]:
        return [n for n, s in self.by_namespace.get(namespace, {}).items() if labels_match(s.labels, selector)]


@dataclass
class Usage:
    """What the scheduler process has used so far."""

    cpu_seconds: float  # user + system
    rss_peak_bytes: int


class Target(Protocol):
    """Where a workload runs. Objects come as API dicts, in creation order."""

    label: str
    pods: PodIndex

    async def create(self, objs: Sequence[Obj]) -> None: ...

    def prepare(self, objs: Sequence[Obj]) -> None:
        """Objects about to be created: the target does its per-object work (conversion, encoding)
        now, before the measured window, as scheduler_perf's clients do on cores of their own."""

    async def delete(self, obj: Obj) -> None:
        """Deletes the object named by obj's apiVersion, kind, namespace and name."""

    async def update(self, obj: Obj, subresources: Sequence[str]) -> None:
        """Replaces the object (and its status), as upstream's updateAny does."""

    async def allocate_claims(self, namespace: str) -> int:
        """upstream's allocResourceClaims (claimalloc.py) on the target's objects; the number of
        claims it allocated."""

    def usage(self) -> Usage: ...

    def attempt_seconds(self) -> list[tuple[float, float]]:
        """scheduler_scheduling_attempt_duration_seconds so far, as cumulative (upper bound, count) buckets."""


@dataclass
class Throughput:
    """One collector's figures: scheduler_perf's SchedulingThroughput data item, and the plain rate."""

    name: str
    pods: int = 0  # scheduled while collecting
    seconds: float = 0.0  # from the collector's start to the last pod seen scheduled
    samples: list[float] = field(default_factory=list)  # per-interval pods/s, upstream's

    @property
    def average(self) -> float:
        """upstream's Average; the plain rate when the run was too short for a sample."""
        if self.samples:
            return sum(self.samples) / len(self.samples)
        return self.pods / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, p: int) -> float:
        if not self.samples:
            return self.average
        ordered = sorted(self.samples)
        return ordered[math.ceil(len(ordered) * p / 100) - 1]


class _Collector:
    """upstream's throughputCollector: each second, the pods newly seen bound over the time since the
    last sample; the first sample is skipped (creation and sampling start apart), an interval with no
    new pod is folded into the next one and counted once per second it spanned."""

    def __init__(self, index: PodIndex, name: str, namespaces: Sequence[str], selector: dict[str, str]) -> None:
        self.figures = Throughput(name)
        self.namespaces, self.selector = set(namespaces), selector
        self.index = index
        self.scheduled = 0
        self.started = time.perf_counter()
        self.last: float | None = None
        index.on_scheduled.append(self._seen)
        self.task = asyncio.create_task(self._sample())

    def _seen(self, namespace: str, state: PodState) -> None:
        if (not self.namespaces or namespace in self.namespaces) and labels_match(state.labels, self.selector):
            self.scheduled += 1
            self.last = time.perf_counter()

    async def _sample(self) -> None:
        started, count, at, skipped = False, 0, time.perf_counter(), 0
        while True:
            await asyncio.sleep(SAMPLE_SECONDS - (time.perf_counter() - at) % SAMPLE_SECONDS)
            now, scheduled = time.perf_counter(), self.scheduled
            if scheduled == 0:
                continue
            if not started:
                started, count, at = True, scheduled, now
                continue
            if scheduled == count:
                skipped += 1
                continue
            rate = (scheduled - count) / (now - at)
            self.figures.samples.extend([rate] * (skipped + 1))
            count, at, skipped = scheduled, now, 0

    async def stop(self) -> Throughput:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        self.index.on_scheduled.remove(self._seen)
        self.figures.pods = self.scheduled
        if self.last is not None:
            self.figures.seconds = self.last - self.started
        return self.figures


@dataclass
class WorkloadResult:
    case: str
    workload: str
    target: str
    threshold: float
    throughput: list[Throughput] = field(default_factory=list)
    attempt_ms: dict[str, float] = field(default_factory=dict)  # p50/p90/p99 of attempt durations while measuring
    attempts: int = 0  # scheduling attempts while measuring (a scheduler that retries more pays for it)
    cpu_seconds: float = 0.0  # the scheduler's, while measuring
    rss_peak_mib: float = 0.0
    skipped: list[str] = field(default_factory=list)  # ops not run, each with why
    wall_seconds: float = 0.0

    @property
    def pods_per_second(self) -> float:
        return self.throughput[0].average if self.throughput else 0.0

    @property
    def measured_pods(self) -> int:
        return sum(t.pods for t in self.throughput)

    @property
    def cpu_per_1000_pods(self) -> float:
        return self.cpu_seconds / self.measured_pods * 1000 if self.measured_pods else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case, "workload": self.workload, "target": self.target, "threshold": self.threshold,
            "pods_per_second": round(self.pods_per_second, 1), "measured_pods": self.measured_pods,
            "throughput": [{"name": t.name, "pods": t.pods, "seconds": round(t.seconds, 3), "average": round(t.average, 1),
                            "perc50": round(t.percentile(50), 1), "perc90": round(t.percentile(90), 1),
                            "perc99": round(t.percentile(99), 1), "samples": len(t.samples)} for t in self.throughput],
            "attempt_ms": self.attempt_ms, "attempts": self.attempts, "cpu_seconds": round(self.cpu_seconds, 3),
            "cpu_seconds_per_1000_pods": round(self.cpu_per_1000_pods, 3), "rss_peak_mib": round(self.rss_peak_mib, 1),
            "skipped": self.skipped, "wall_seconds": round(self.wall_seconds, 3),
        }


def refusal(case: TestCase, w: Workload, ops: Sequence[Op], supported_gates: Callable[[dict[str, bool]], str | None]) -> str | None:
    """Why kubesched cannot run this workload (an essential op it lacks, a feature it lacks), or None."""
    for op in ops:
        if isinstance(op, Unsupported) and op.essential:
            return f"op {op.index} {op.name}: {op.reason}"
    return supported_gates(case.gates_for(w))


class Executor:
    def __init__(self, case: TestCase, workload: Workload, target: Target, *, wait_seconds: float = DEFAULT_WAIT,
                 progress: Callable[[str], None] | None = None) -> None:
        self.case, self.workload, self.target = case, workload, target
        self.wait_seconds = wait_seconds
        self.progress = progress or (lambda _: None)
        self.templates = Templates()
        self.namer = objects.Namer()
        self.namespaces: set[str] = set()
        # Namespace -> pods created there without waiting, as upstream's numPodsScheduledPerNamespace
        # (every namespace made gets an entry; a Scheduled barrier removes the ones it waited for).
        self.pending: dict[str, int] = {}
        self.background: list[asyncio.Task[None]] = []
        self.collector: _Collector | None = None
        self.window: tuple[Usage, list[tuple[float, float]]] | None = None
        self.result = WorkloadResult(case.name, workload.name, target.label, workload.threshold)
        self.nodes: list[Obj] = []  # every node the createNodes ops made, as created
        self.node_update = families.node_update(case, workload)

    async def run(self, ops: Sequence[Op]) -> WorkloadResult:
        started = time.perf_counter()
        try:
            for op in ops:
                self.progress(f"op {op.index} {op.opcode}")
                await self._run(op)
            if self.collector is not None:
                await self._stop_collecting()
        finally:
            for task in self.background:
                task.cancel()
            await asyncio.gather(*self.background, return_exceptions=True)
        self.result.wall_seconds = time.perf_counter() - started
        self.result.rss_peak_mib = self.target.usage().rss_peak_bytes / 2**20
        return self.result

    async def _run(self, op: Op) -> None:
        if isinstance(op, Unsupported):
            self.result.skipped.append(f"op {op.index} {op.name}: {op.reason}")
        elif isinstance(op, CreateNodes):
            batch: list[Obj] = []
            for node, extra in objects.nodes(op, self.templates, self.namer):
                self.nodes.append(node)
                batch += [node, *extra]
                if len(batch) >= CREATE_BATCH:
                    await self.target.create(batch)
                    batch = []
            await self.target.create(batch)
            if self.node_update is not None:
                for updated in self.node_update(self.nodes):
                    await self.target.update(updated, ())
        elif isinstance(op, CreateNamespaces):
            template = self.templates.render(op.template, {}) if op.template is not None else None
            for i in range(op.count):
                await self._namespace(f"{op.prefix}-{i}", template)
        elif isinstance(op, CreatePods):
            await self._create_pods(op)
        elif isinstance(op, Barrier):
            await self._barrier(op)
        elif isinstance(op, DeletePods):
            names = self.target.pods.names(op.namespace, dict(op.selector))
            task = asyncio.create_task(self._delete_pods(op.namespace, names, op.per_second))
            if op.skip_wait:
                self.background.append(task)
            else:
                await task
        elif isinstance(op, Churn):
            await self._namespace(op.namespace)
            self.background.append(asyncio.create_task(self._churn(op)))
        elif isinstance(op, Sleep):
            await asyncio.sleep(op.seconds)
        elif isinstance(op, CreatePodGroups):
            await self._namespace(op.namespace)
            groups = []
            for i in range(op.count):
                pg = objects.typed("PodGroup", self.templates.render(op.template, {**op.params, "Index": i}))
                # Upstream decodes the template into the typed PodGroup and creates it through the
                # v1beta1 client: the template's own apiVersion (v1alpha3 in v1.37.2's) plays no part.
                pg.update({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup"})
                pg.setdefault("metadata", {})["namespace"] = op.namespace
                self.namer.name(pg, op.namespace)
                groups.append(pg)
            await self.target.create(groups)
        elif isinstance(op, CreateAny):
            if op.namespace:
                await self._namespace(op.namespace)
            made = []
            for i in range(op.count):
                obj = self.templates.render(op.template, {**op.params, "Index": i, "Count": op.count})
                if op.namespace:
                    obj.setdefault("metadata", {})["namespace"] = op.namespace
                self.namer.name(obj, op.namespace)
                made.append(obj)
            await self.target.create(made)
        elif isinstance(op, UpdateAny):
            await self._update_any(op)
        elif isinstance(op, CreateResourceClaims):
            await self._create_resource_claims(op)
        elif isinstance(op, AllocResourceClaims):
            allocated = await self.target.allocate_claims(op.namespace)
            self.progress(f"op {op.index} allocResourceClaims: {allocated} claims allocated")
        elif isinstance(op, StartCollecting):
            self._start_collecting(op.name or f"op{op.index}", op.namespaces, dict(op.selector))
        elif isinstance(op, StopCollecting):
            await self._stop_collecting()

    async def _namespace(self, name: str, template: Obj | None = None) -> None:
        if name not in self.namespaces:
            self.namespaces.add(name)
            self.pending.setdefault(name, 0)
            await self.target.create([objects.namespace(name, template)])

    def _start_collecting(self, name: str, namespaces: Sequence[str], selector: dict[str, str]) -> None:
        if self.collector is not None:
            raise WorkloadError("metrics collection is overlapping: a second collector was started before the first stopped")
        self.window = (self.target.usage(), self.target.attempt_seconds())
        self.collector = _Collector(self.target.pods, name, namespaces, selector)

    async def _stop_collecting(self) -> None:
        if self.collector is None or self.window is None:
            raise WorkloadError("stopCollectingMetrics without startCollectingMetrics")
        self.result.throughput.append(await self.collector.stop())
        self.collector = None
        before, buckets = self.window
        after = self.target.usage()
        self.result.cpu_seconds += after.cpu_seconds - before.cpu_seconds
        now = self.target.attempt_seconds()
        self.result.attempt_ms = attempt_percentiles(buckets, now)
        self.result.attempts += attempt_count(buckets, now)

    async def _create_pods(self, op: CreatePods) -> None:
        await self._namespace(op.namespace)
        made = list(objects.pods(op, self.templates, self.namer))
        batches, batch = [], []
        for pod, before in made:
            batch += [*before, pod]
            if len(batch) >= CREATE_BATCH:
                batches.append(batch)
                batch = []
        batches.append(batch)
        for b in batches:
            self.target.prepare(b)
        if op.collect_metrics:
            self._start_collecting(f"op{op.index}", [op.namespace], {})
        if op.steady_state:
            await self._steady(op, made)
        else:
            for b in batches:
                await self.target.create(b)
            if op.skip_wait:
                self.pending[op.namespace] = self.pending.get(op.namespace, 0) + op.count
            else:
                await self._wait(lambda: self.target.pods.scheduled.get(op.namespace, 0) >= op.count,
                                 f"{op.count} pods of op {op.index} scheduled in {op.namespace}")
        if op.collect_metrics:
            await self._stop_collecting()

    async def _steady(self, op: CreatePods, made: list[tuple[Obj, list[Obj]]]) -> None:
        """upstream's steady state: count pods exist; each one seen bound is deleted and replaced."""
        deadline = time.perf_counter() + op.duration
        queue: asyncio.Queue[str] = asyncio.Queue()

        def seen(namespace: str, state: PodState) -> None:
            if namespace == op.namespace:
                for name, s in self.target.pods.by_namespace.get(namespace, {}).items():
                    if s is state:
                        queue.put_nowait(name)
                        return

        self.target.pods.on_scheduled.append(seen)
        try:
            first = [pod for pod, _ in made]
            await self.target.create(first)
            template = first[0] if first else None
            while template is not None and time.perf_counter() < deadline:
                try:
                    name = await asyncio.wait_for(queue.get(), timeout=max(0.0, deadline - time.perf_counter()))
                except TimeoutError:
                    break
                await self.target.delete({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": op.namespace, "name": name}})
                self.target.pods.forget(op.namespace, name)
                fresh = {**template, "metadata": {**template["metadata"], "name": None}}
                fresh["metadata"]["generateName"] = "pod-"
                self.namer.name(fresh, op.namespace)
                await self.target.create([fresh])
        finally:
            self.target.pods.on_scheduled.remove(seen)

    async def _barrier(self, op: Barrier) -> None:
        """As upstream: each namespace (default: every one known) waits until as many of its pods
        matching the selector are scheduled (or attempted) as were created there without waiting."""
        spaces = list(op.namespaces) or list(self.pending)
        for ns in spaces:
            if ns not in self.pending:
                raise WorkloadError(f"op {op.index} barrier: unknown namespace {ns}")
        selector, attempted = dict(op.selector), op.stage == "Attempted"

        def done() -> bool:
            for ns in spaces:
                states = self.target.pods.select([ns], selector)
                if sum(1 for s in states if s.node or (attempted and s.attempted)) < self.pending[ns]:
                    return False
            return True

        await self._wait(done, f"pods of {', '.join(spaces) or 'every namespace'} {op.stage.lower()}", poll=0.05)
        if not attempted:
            if op.namespaces:
                for ns in spaces:
                    del self.pending[ns]
            else:
                self.pending.clear()

    async def _wait(self, condition: Callable[[], bool], what: str, poll: float = 0.005) -> None:
        """Until `condition` holds (checked every `poll` seconds: a barrier's check walks every pod)."""
        deadline = time.perf_counter() + self.wait_seconds
        while not condition():
            if time.perf_counter() > deadline:
                raise WorkloadError(f"timed out after {self.wait_seconds:.0f} s waiting for {what}")
            await asyncio.sleep(poll)

    async def _delete_pods(self, namespace: str, names: list[str], per_second: int) -> None:
        for name in names:
            if per_second > 0:
                await asyncio.sleep(1.0 / per_second)
            await self.target.delete({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace, "name": name}})
            self.target.pods.forget(namespace, name)

    async def _churn(self, op: Churn) -> None:
        """upstream's churn: every interval, each template's object created (create mode, up to
        `number` rounds) or, in recreate mode, created and deleted in turn over `number` slots."""
        bases = [self.templates.render(path, {}) for path in op.templates]
        slots: list[list[Obj | None]] = [[None] * max(op.number, 1) for _ in bases]
        rounds = 0
        while op.mode == "recreate" or op.number == 0 or rounds < op.number:
            await asyncio.sleep(op.interval)
            for i, base in enumerate(bases):
                if op.mode == "recreate":
                    slot = rounds % op.number
                    old = slots[i][slot]
                    if old is not None:
                        await self.target.delete(old)
                        slots[i][slot] = None
                        continue
                obj = {**base, "metadata": dict(base.get("metadata") or {})}
                if obj.get("kind") not in ("Node", "Namespace", "PriorityClass", "PersistentVolume", "StorageClass", "CSINode"):
                    obj["metadata"]["namespace"] = op.namespace
                self.namer.name(obj, op.namespace)
                await self.target.create([obj])
                if op.mode == "recreate":
                    slots[i][rounds % op.number] = obj
            rounds += 1

    async def _create_resource_claims(self, op: CreateResourceClaims) -> None:
        """`count` copies of the file's claim; as upstream, a claim with a fixed name can be created once."""
        await self._namespace(op.namespace)
        base = objects.plain_object(op.template)
        if base.get("kind") != "ResourceClaim":
            raise WorkloadError(f"op {op.index} createResourceClaims: {op.template} holds a {base.get('kind')}, not a ResourceClaim")
        name = (base.get("metadata") or {}).get("name")
        if name and op.count > 1:
            raise WorkloadError(f'op {op.index} createResourceClaims: create claim: resourceclaims.resource.k8s.io "{name}" '
                                "already exists (the file names its claim, and the op creates more than one)")
        made = []
        for _ in range(op.count):
            claim = {**base, "metadata": {**(base.get("metadata") or {}), "namespace": op.namespace}}
            self.namer.name(claim, op.namespace)
            made.append(claim)
        await self.target.create(made)

    async def _update_any(self, op: UpdateAny) -> None:
        for i in range(op.count):
            if op.per_second > 0:
                await asyncio.sleep(1.0 / op.per_second)
            obj = self.templates.render(op.template, {"Index": i, "Count": op.count})
            if op.namespace:
                obj.setdefault("metadata", {})["namespace"] = op.namespace
            await self.target.update(obj, op.subresources)


def attempt_count(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> int:
    """Attempts between two cumulative bucket readings (the +Inf bucket's growth)."""
    if not after:
        return 0
    return int(after[-1][1] - dict(before).get(after[-1][0], 0.0))


def attempt_percentiles(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> dict[str, float]:
    """p50/p90/p99 (ms) of the attempts between two cumulative bucket readings, interpolated within a
    bucket as Prometheus's histogram_quantile does."""
    counts = dict(before)
    delta = [(le, c - counts.get(le, 0.0)) for le, c in after]
    total = delta[-1][1] if delta else 0.0
    out: dict[str, float] = {}
    if total <= 0:
        return out
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        rank, lower, below = q * total, 0.0, 0.0
        for le, c in delta:
            if c >= rank:
                if math.isinf(le):
                    value = lower
                else:
                    value = lower + (le - lower) * ((rank - below) / (c - below) if c > below else 0.0)
                out[name] = round(value * 1000, 3)
                break
            lower, below = le, c
    return out
