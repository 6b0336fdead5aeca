"""The small fakes unit tests run plugins and the runtime against: a cache holding given objects,
a handle, recorded cluster writes, a Framework's collaborators."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from kubesched.api.objects import Node, Pod
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.cache.cache import Cache
from kubesched.framework.services import Services
from kubesched.framework.shared import SharedObjects
from kubesched.infra.clock import Clock, VirtualClock
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.queue.scheduling_queue import Nominator


def cache_with(nodes: list[Node], pods: list[Pod] = ()) -> Cache:  # type: ignore[assignment]
    """A cache holding the nodes and the given pods (which must carry spec.nodeName)."""
    c = Cache()
    for n in nodes:
        c.add_node(n)
    for p in pods:
        assert p.spec.node_name, f"pod {p.key} has no nodeName"
        c.add_pod(make_pod_info(p))
    return c


class UnitHandle:
    """Unit-test stand-in for the framework handle: the cache, its table and a fixed clock.
    Tests of whole profiles use the real runtime instead."""

    def __init__(self, cache: Cache, now: float = 0.0) -> None:
        self.cache = cache
        self._now = now

    @property
    def table(self):  # type: ignore[no-untyped-def]
        return self.cache.table

    def now(self) -> float:
        return self._now


class RecordedWrites:
    """Unit-test stand-in for a backend's cluster writes (framework.services.ClusterWrites): it
    binds and deletes nothing, and keeps what it was asked."""

    def __init__(self) -> None:
        self.binds: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.events: list[tuple[str, str, str, str]] = []
        self.nominated: dict[str, str | None] = {}
        self.annotated: dict[str, dict[str, str]] = {}
        self.extended_claim_writes: list[tuple[str, Any]] = []  # DRA-served extended resources' claim
        self.volume_writes: list[tuple[str, str]] = []
        self.claim_writes: list[tuple[str, Any]] = []

    async def bind(self, pi: PodInfo, node: str) -> None:
        self.binds.append((pi.key, node))

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        self.deleted.append(pi.key)

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self.events.append((pi.key, type_, reason, message))

    def set_nominated_node(self, pi: PodInfo, node: str | None) -> None:
        self.nominated[pi.key] = node

    def set_annotations(self, pi: PodInfo, annotations: dict[str, str]) -> None:
        self.annotated[pi.key] = dict(annotations)

    async def create_resource_claim(self, claim: Any) -> Any:
        self.extended_claim_writes.append(("create", claim))
        return claim

    async def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        self.extended_claim_writes.append(("delete", (namespace, name, uid)))

    async def set_extended_resource_claim_status(self, pi: PodInfo, status: Any) -> None:
        self.extended_claim_writes.append(("pod status", (pi.key, status)))

    async def update_persistent_volume(self, pv: Any) -> Any:
        self.volume_writes.append(("PersistentVolume", pv.metadata.name))
        return pv

    async def update_persistent_volume_claim(self, pvc: Any) -> Any:
        self.volume_writes.append(("PersistentVolumeClaim", pvc.metadata.name))
        return pvc

    async def get_resource_claim(self, namespace: str, name: str) -> Any:
        raise LookupError(f"ResourceClaim {namespace}/{name}: RecordedWrites keeps none")

    async def update_resource_claim(self, claim: Any) -> Any:
        self.claim_writes.append(("update", claim))
        return claim

    async def update_resource_claim_status(self, claim: Any) -> Any:
        self.claim_writes.append(("status", claim))
        return claim

    async def unreserve_resource_claim(self, claim: Any, pod_uid: str) -> None:
        self.claim_writes.append(("unreserve", claim))


def unit_services(cache: Cache, clock: Clock | None = None) -> Services:
    """The collaborators a Framework is built from, for unit tests of the runtime: real ones
    (nominator, shared objects, metrics) around RecordedWrites; background work runs as tasks."""

    def spawn(coro: Coroutine[Any, Any, None], what: str) -> None:
        asyncio.get_running_loop().create_task(coro)

    return Services(
        cache=cache,
        clock=clock or VirtualClock(),
        nominator=Nominator(),
        waiting={},
        cluster=RecordedWrites(),
        spawn=spawn,
        metrics=SchedulerMetrics(),
        shared=SharedObjects(),
        cluster_event=lambda event: None,
        record_preemption=lambda victims, pdb_violations, preemptor: None,
    )
