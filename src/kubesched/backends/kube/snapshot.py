"""`kubesched explain` without a reachable leader: the cluster read once from the API into a
scheduler of our own, which then explains the pod with a dry run and is thrown away.

Nothing is written to the cluster: the backend below refuses every write, and no scheduling
cycle ever runs (informers only fill the cache and the queue).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kubesched.api.dra import ResourceClaim
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.backends.kube.informers import build_informers
from kubesched.client import ApiClient
from kubesched.client.config import ConnectionConfig
from kubesched.config.types import SchedulerConfig
from kubesched.framework.status import Status
from kubesched.infra.clock import RealClock
from kubesched.scheduler.backend import SchedulerPort
from kubesched.scheduler.core import Scheduler


class SnapshotError(RuntimeError):
    """The cluster could not be read in time; the message says which lists were missing."""


class ReadOnlyBackend:
    """A ClusterBackend for a scheduler that only explains: any write is a bug, and says so."""

    def connect(self, scheduler: SchedulerPort) -> None:
        pass

    def _refuse(self, what: str) -> None:
        raise RuntimeError(f"an explanation tried to {what}: the local dry run must not write to the cluster")

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        self._refuse(f"bind {pi.key}")
        return None

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        self._refuse(f"delete {pi.key}")

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self._refuse(f"post an event about {pi.key}")

    def set_nominated_node(self, pi: PodInfo, node: str | None) -> None:
        self._refuse(f"nominate {pi.key}")

    def set_annotations(self, pi: PodInfo, annotations: dict[str, str]) -> None:
        self._refuse(f"annotate {pi.key}")

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self._refuse("create a ResourceClaim")
        return claim

    async def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        self._refuse(f"delete ResourceClaim {namespace}/{name}")

    async def set_extended_resource_claim_status(self, pi: PodInfo, status: Any) -> None:
        self._refuse(f"set the extended resource claim status of {pi.key}")

    def set_unschedulable(self, pi: PodInfo, message: str, reason: str = "Unschedulable") -> None:
        self._refuse(f"set the condition of {pi.key}")

    def set_pod_group_condition(self, pg: Any, condition: Any) -> None:
        self._refuse(f"set the condition of PodGroup {pg.key}")

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        self._refuse("update a PersistentVolume")
        return pv

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        self._refuse("update a PersistentVolumeClaim")
        return pvc

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim:
        raise RuntimeError(f"an explanation tried to read ResourceClaim {namespace}/{name} from the API: "
                           "the local dry run reads its informers only")

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self._refuse("update a ResourceClaim")
        return claim

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        self._refuse("update the status of a ResourceClaim")
        return claim

    async def unreserve_resource_claim(self, claim: ResourceClaim, pod_uid: str) -> None:
        self._refuse("update the status of a ResourceClaim")


async def explain_from_api(
    connection: ConnectionConfig, config: SchedulerConfig, namespace: str, name: str, *, timeout: float = 60.0
) -> dict[str, Any] | None:
    """Lists what the scheduler watches, then explains pod `namespace/name` with a dry run of
    `config`'s profiles. None if the pod does not exist (or is not one of these profiles')."""
    cc = config.client_connection
    client = ApiClient(connection, qps=cc.qps, burst=cc.burst)
    sched: SchedulerPort = Scheduler(config, ReadOnlyBackend(), RealClock())
    informers = build_informers(client, sched)
    tasks = [asyncio.create_task(r.run(), name=f"list {r.name}") for r in informers.reflectors]
    try:
        waits = [asyncio.ensure_future(r.synced.wait()) for r in informers.reflectors]
        _, pending = await asyncio.wait(waits, timeout=timeout)
        for w in pending:
            w.cancel()
        if not informers.synced:
            missing = ", ".join(r.name for r in informers.reflectors if not r.synced.is_set())
            raise SnapshotError(f"could not list {missing} from the API server within {timeout:g}s")
        return sched.explain(namespace, name)
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await sched.close()
        await client.close()
