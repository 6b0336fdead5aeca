"""A long run must not grow: pods by the ten thousand created and deleted through the real
scheduler on the simulated cluster, with resident memory and every per-pod structure watched.

The normal suite churns SOAK_PODS = 20,000 pods (about 20 s); `make soak` sets
KUBESCHED_SOAK_PODS=200000. Memory is RSS read from /proc/self/statm after a full collection,
sampled every tenth of the run; the end may exceed the level after warm-up (a fifth of the run)
by at most RSS_MARGIN_FRACTION of it plus RSS_MARGIN_BYTES (allocator slack, numpy's caches).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections import deque
from dataclasses import dataclass, field

import msgspec
import pytest

from builders import make_node, make_pod
from kubesched.api.objects import Namespace, ObjectMeta, Pod
from kubesched.backends.kube import events
from kubesched.backends.kube.events import EventRecorder
from kubesched.backends.kube.informers import NamespaceHandler, PodHandler
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.manifests import load_objects
from kubesched.cache.nodetable import NodeTable
from kubesched.config.parse import default_config
from kubesched.infra.clock import VirtualClock
from kubesched.scheduler.core import Scheduler
from kubesched.usage.args import PrometheusArgs
from kubesched.usage.queries import Series
from kubesched.usage.service import UsageService
from unit.usage.fakeprom import FakePrometheus

SOAK_PODS = int(os.environ.get("KUBESCHED_SOAK_PODS", "20000"))
NODES = 50
LIVE = 1500  # pods alive at once: 150 of the 200 cpus the nodes have
WAVE = 500
WARM_UP_FRACTION = 0.2  # by then the fixed windows (recent cycles, metric buffers) are full
RSS_MARGIN_FRACTION = 0.03
RSS_MARGIN_BYTES = 3 * 1024 * 1024


def rss_bytes() -> int:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Churn:
    """The scheduler on a simulated cluster, fed pods in waves; the oldest pods beyond LIVE go,
    most deleted, some by finishing (phase Succeeded), as a busy cluster's would."""

    clock: VirtualClock = field(default_factory=VirtualClock)
    live: deque[str] = field(default_factory=deque)
    created: int = 0
    rss: list[tuple[int, int]] = field(default_factory=list)  # (pods created, bytes)

    def __post_init__(self) -> None:
        self.sim = SimCluster(self.clock)
        self.sched = Scheduler(default_config(), self.sim, self.clock, seed=1)
        self.sim.scheduler = self.sched
        self.sim.keep_events = 100
        loaded = load_objects(
            [
                make_node(f"n{i}").without("ephemeral-storage").label({"topology.kubernetes.io/zone": f"z{i % 3}"}).manifest()
                for i in range(NODES)
            ]
            + [
                make_pod("fits").req(cpu="100m", memory="100Mi").label(app="web").manifest(),
                # Never fits: it waits in the unschedulable pool until it is deleted.
                make_pod("stuck").req(cpu="100m", memory="100Mi").label(app="batch").spec(nodeSelector={"disk": "none"}).manifest(),
                make_pod("spread")
                .req(cpu="100m", memory="100Mi")
                .label(app="spread")
                .spec(
                    topologySpreadConstraints=[
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": {"app": "spread"}},
                        }
                    ]
                )
                .manifest(),
            ]
        )
        for n in loaded.nodes:
            self.sched.on_node_add(n)
        self.templates = [sp.pod for sp in loaded.pods]

    def make(self, i: int) -> Pod:
        kind = 1 if i % 20 == 7 else 2 if i % 5 == 3 else 0
        t = self.templates[kind]
        # A label value of its own per pod: the pod index's label map must shrink back too.
        labels = {**t.metadata.labels, "serial": str(i)}
        meta = msgspec.structs.replace(t.metadata, name=f"p{i}", uid=f"uid-{i}", labels=labels)
        return msgspec.structs.replace(t, metadata=meta)

    async def settle(self) -> None:
        self.clock.advance_to(self.clock.now() + 5.0)
        self.clock.run_due()
        await self.sched.drain_bindings()
        while self.sched.schedule_one():
            pass
        await self.sched.drain_bindings()

    def remove(self, uid: str) -> None:
        """The pod goes from the cluster; what the simulator notes per pod for a run's results
        (creation and bind times, durations) goes with it, as a long run cannot keep those."""
        n = int(uid.rsplit("-", 1)[1])
        if n % 4 == 0 and uid in self.sim.pods and self.sim.pods[uid].spec.node_name:
            self.sim.complete(uid)  # ends as Succeeded: the scheduler forgets it on the phase
        self.sim.pods.pop(uid, None)
        for per_pod in (self.sim.created_at, self.sim.bound_at, self.sim.durations, self.sim.ran_on):
            per_pod.pop(uid, None)
        self.sched.on_pod_delete(uid)  # the watch's delete: a no-op for a pod already forgotten

    async def run(self, total: int) -> None:
        samples = {int(total * k / 10) for k in range(1, 11)} | {int(total * WARM_UP_FRACTION)}
        while self.created < total:
            for _ in range(min(WAVE, total - self.created)):
                self.sim.create_pod(self.make(self.created))
                self.live.append(f"uid-{self.created}")
                self.created += 1
            await self.settle()
            while len(self.live) > LIVE:
                self.remove(self.live.popleft())
            await self.settle()
            if any(self.created - WAVE < s <= self.created for s in samples):
                self.rss.append((self.created, rss_bytes()))


def test_soak_memory_and_state_stay_flat() -> None:
    churn = Churn()
    asyncio.run(churn.run(SOAK_PODS))
    sched, sim = churn.sched, churn.sim
    # Everything the scheduler keeps per pod is bounded by the pods alive, not by those seen.
    assert sched.stats.scheduled + sched.stats.unschedulable >= SOAK_PODS * 0.9
    assert len(sim.pods) <= LIVE
    assert len(sched.recorder.latest) <= LIVE and len(sched.recorder._key_of) <= LIVE
    assert len(sched.queue.pods) <= LIVE and len(sched.cache.placed) <= LIVE and len(sched.cache.pods) <= LIVE
    assert len(sched.cache.pods._by_label) <= 4 * LIVE
    assert not sched.in_flight and not sched.binder.tasks and not sched.waiting and not sched.background
    assert sched.stats.cycle_seconds.count >= SOAK_PODS and len(sched.stats.cycle_seconds._counts) == 1024
    assert len(sched.recorder.recent) <= 1000
    warm = next(b for n, b in churn.rss if n >= SOAK_PODS * WARM_UP_FRACTION)
    end = churn.rss[-1][1]
    mib = 1024 * 1024
    figures = ", ".join(f"{n}: {b / mib:.1f}" for n, b in churn.rss)
    print(f"\nsoak: {SOAK_PODS} pods, RSS MiB by pods created: {figures}; warm-up {warm / mib:.1f}, end {end / mib:.1f}")
    assert end <= warm * (1 + RSS_MARGIN_FRACTION) + RSS_MARGIN_BYTES, figures


def test_a_deleted_pod_leaves_no_decision_record() -> None:
    churn = Churn()

    async def go() -> None:
        for i in range(40):  # kinds 0, 1 (stuck) and 2 (spread)
            churn.sim.create_pod(churn.make(i))
        await churn.settle()
        assert len(churn.sched.recorder.latest) == 40
        for i in range(40):
            churn.remove(f"uid-{i}")  # bound, pending in the pool, and finished (i % 4 == 0)
        await churn.settle()

    asyncio.run(go())
    assert churn.sched.recorder.latest == {}
    assert churn.sched.recorder._key_of == {}
    assert not churn.sched.queue.pods and not churn.sched.cache.placed


def test_a_finished_pod_leaves_no_decision_record_and_a_pending_one_keeps_its_message() -> None:
    churn = Churn()

    async def go() -> None:
        for i in (0, 7):  # 0 fits, 7 never does
            churn.sim.create_pod(churn.make(i))
        await churn.settle()
        churn.sim.complete("uid-0")
        await churn.settle()

    asyncio.run(go())
    assert set(churn.sched.recorder.latest) == {"default/p7"}
    assert churn.sched.recorder.latest["default/p7"].message.startswith("0/50 nodes are available")


# --- the kube backend's and the usage provider's per-object state --------------------------------


class _NoClient:
    async def post(self, *args: object, **kwargs: object) -> dict[str, object]:
        return {}

    async def send(self, *args: object, **kwargs: object) -> None:
        return None


def _recorder(monkeypatch: pytest.MonkeyPatch, clock: list[float]) -> EventRecorder:
    monkeypatch.setattr(events.time, "time", lambda: clock[0])
    return EventRecorder(_NoClient(), "kubesched", "test")  # type: ignore[arg-type]


def test_event_series_repeat_within_the_window_then_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    rec = _recorder(monkeypatch, now)
    a, b = make_pod("a").info(), make_pod("b").info()
    rec.record(a, "Warning", "FailedScheduling", "0/3 nodes are available")
    now[0] += 60
    rec.record(a, "Warning", "FailedScheduling", "0/3 nodes are available")
    assert [s.count for s in rec.series.values()] == [2]  # one series, counted twice
    now[0] += events.SERIES_WINDOW - 1
    rec.record(b, "Warning", "FailedScheduling", "0/3 nodes are available")
    rec.finish(now[0] + 1)
    assert [k[0] for k in rec.series] == [b.uid]  # a's went quiet six minutes ago: ended, forgotten
    assert set(rec._keys_of) == {b.uid}


def test_event_series_of_a_deleted_pod_are_forgotten_and_their_number_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    rec = _recorder(monkeypatch, now)
    pods = [make_pod(f"p{i}").info() for i in range(50)]
    for pi in pods:
        rec.record(pi, "Warning", "FailedScheduling", "no")
        rec.record(pi, "Normal", "Scheduled", "yes")
    for pi in pods:
        rec.forget_pod(pi.uid)
    assert rec.series == {} and rec._keys_of == {}
    monkeypatch.setattr(events, "MAX_SERIES", 10)
    for pi in pods:
        rec.record(pi, "Warning", "FailedScheduling", "no")
    assert len(rec.series) == 10 and [k[0] for k in rec.series] == [pi.uid for pi in pods[-10:]]
    assert sum(len(keys) for keys in rec._keys_of.values()) == 10


def test_informers_forget_deleted_namespaces_and_report_deleted_pods() -> None:
    churn = Churn()
    gone: list[str] = []
    for i in range(100):  # a namespace per CI run
        ns = Namespace(metadata=ObjectMeta(name=f"ci-{i}", labels={"run": str(i)}))
        NamespaceHandler(churn.sched).on_add(ns)
        NamespaceHandler(churn.sched).on_delete(ns)
    assert churn.sched.cache.namespace_labels == {}
    p = churn.make(1)
    handler = PodHandler(churn.sched, gone.append)
    handler.on_add(p)
    handler.on_delete(p)
    assert gone == [p.metadata.uid] and not churn.sched.queue.pods


async def test_usage_values_of_deleted_nodes_are_dropped() -> None:
    prom = FakePrometheus()
    service = UsageService(VirtualClock(), lambda coro, what: None, lambda a: prom)
    provider = service.provider(PrometheusArgs())
    cpu = Series("cpu")
    provider.require(cpu)
    table = NodeTable()
    for i in range(200):  # nodes replaced one by one, each reporting usage while it lives
        table.upsert_node(make_node(f"n{i}").exactly(cpu="4").obj())
        if i >= 2:
            table.remove_node(f"n{i - 2}")
            prom.values["cpu"].pop(f"n{i - 2}")
        prom.set("cpu", **{f"n{i}": 0.5})
        await provider.refresh()
        provider.column(cpu, table)
    await provider.refresh()
    assert set(provider.series[cpu].values) == {"n198", "n199"} == set(provider.series[cpu].fetched)
    # A node still there but missing from an answer keeps its aging value, as before.
    prom.values["cpu"].pop("n199")
    await provider.refresh()
    assert set(provider.series[cpu].values) == {"n198", "n199"}
