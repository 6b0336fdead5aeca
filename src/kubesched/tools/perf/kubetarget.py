"""A workload on a real kube-apiserver, with a scheduler process (kubesched or kube-scheduler) doing
the scheduling, and this process playing scheduler_perf's client: it creates, updates and deletes
the workload's objects through the API, and learns which pods are bound from a watch, as
upstream's informer-fed collector does.

As upstream's clients do: the pods of a batch are POSTed concurrently, 30 in flight
(ParallelizeUntil(30)); what they need (their namespace, their PVCs and PVs) is created before
them; a PVC's and a PV's status are written through the status subresource after the create (as
CreatePodWithPersistentVolume's UpdateStatus calls: a create resets status); updateAny replaces
the object, then its status. Deletes use a zero grace period (no kubelet runs to confirm a
graceful one). Request bodies are encoded in `prepare`, before the measured window. The client's
rate limit is scheduler_perf's: 5000 QPS, burst 5000."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

import msgspec

from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Node
from kubesched.client import ApiClient, ApiError, Reflector
from kubesched.tools.devcluster.schedulers import SchedulerProcess
from kubesched.tools.perf.claimalloc import ClaimAllocation
from kubesched.tools.perf.executor import PodIndex, Usage
from kubesched.tools.perf.objects import Obj
from kubesched.tools.perf.workloads import WorkloadError

QPS = 5000.0  # scheduler_perf's client (mustSetupCluster)
BURST = 5000
IN_FLIGHT = 30  # upstream's ParallelizeUntil(ctx, 30, ...)
ATTEMPT_METRIC = "scheduler_scheduling_attempt_duration_seconds"
SYNC_TIMEOUT = 60.0
# Kinds created first in a batch, in this order; other kinds follow in the order they first
# appear, pods last (they may name a PVC of the batch).
_FIRST = ("Namespace",)
_STATUS_AFTER_CREATE = frozenset({"PersistentVolumeClaim", "PersistentVolume"})

T = TypeVar("T")
DRA_PATH = "/apis/resource.k8s.io/v1"


class _Items(msgspec.Struct, Generic[T]):
    """A list response's items, typed."""

    items: list[T] = msgspec.field(default_factory=list)


# --- what the watch decodes of a pod ---------------------------------------------------------------


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] | None = None


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _Condition(msgspec.Struct):
    type: str = ""


class _Status(msgspec.Struct):
    conditions: list[_Condition] | None = None


class WatchedPod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)
    status: _Status = msgspec.field(default_factory=_Status)


def _key(obj: Obj) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


class _Resources:
    """kind -> REST path, from the apiserver's discovery (as upstream's RESTMapper), cached."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client
        self._known: dict[tuple[str, str], tuple[str, str, bool]] = {}  # (apiVersion, kind) -> (base, plural, namespaced)
        self._fetched: set[str] = set()

    async def collection(self, obj: Obj) -> str:
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        if (api_version, kind) not in self._known and api_version not in self._fetched:
            await self._discover(api_version)
        found = self._known.get((api_version, kind))
        if found is None:
            raise WorkloadError(f"the apiserver does not serve {kind} in {api_version or 'no apiVersion'}")
        base, plural, namespaced = found
        if namespaced:
            if not namespace:
                raise WorkloadError(f"a {kind} needs a namespace (it is namespaced)")
            return f"{base}/namespaces/{namespace}/{plural}"
        return f"{base}/{plural}"

    async def _discover(self, api_version: str) -> None:
        self._fetched.add(api_version)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            doc = await self.client.get(base)
        except ApiError as exc:
            if exc.status == 404:
                return
            raise WorkloadError(f"discovery of {api_version}: {exc}") from None
        for r in (doc or {}).get("resources") or ():
            if "/" not in r.get("name", ""):
                self._known[(api_version, r["kind"])] = (base, r["name"], bool(r.get("namespaced")))


async def _each(items: Iterable[T], limit: int, fn: Callable[[T], Awaitable[None]]) -> None:
    """fn(item) for every item, at most `limit` at a time; the first failure cancels the rest."""
    it = iter(items)

    async def worker() -> None:
        for item in it:  # one iterator shared by the workers: each item is taken once
            await fn(item)

    async with asyncio.TaskGroup() as tg:
        for _ in range(limit):
            tg.create_task(worker())


def _first(exc: BaseException) -> BaseException:
    """The first failure in a task group's exception group."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


class KubeTarget:
    """executor.Target on a real apiserver; `scheduler` is the process whose usage and metrics count."""

    def __init__(self, client: ApiClient, scheduler: SchedulerProcess, label: str, *, in_flight: int = IN_FLIGHT) -> None:
        self.label = label
        self.pods = PodIndex()
        self.client = client
        self.scheduler = scheduler
        self.in_flight = max(1, in_flight)
        self._bodies: dict[tuple[str, str, str], bytes] = {}
        self._deleted: set[tuple[str, str]] = set()  # pods this target deleted: later events of theirs are stale
        self._resources = _Resources(client)
        self.watch: Reflector[WatchedPod] = Reflector(client, "/api/v1/pods", WatchedPod, self, name="perf pods")
        self._watch_task: asyncio.Task[None] | None = None

    # --- the pod watch -------------------------------------------------------------------------------

    async def start(self, timeout: float = SYNC_TIMEOUT) -> None:
        """Lists the pods, then watches from the list's resourceVersion (re-listing on expiry)."""
        self._watch_task = asyncio.create_task(self.watch.run())
        try:
            await asyncio.wait_for(self.watch.synced.wait(), timeout)
        except TimeoutError:
            raise WorkloadError(f"the pod watch did not list within {timeout:.0f} s") from None

    async def stop(self) -> None:
        if self._watch_task is not None:
            self._watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch_task
            self._watch_task = None

    def on_add(self, obj: WatchedPod) -> None:
        self._observe(obj)

    def on_update(self, old: WatchedPod, new: WatchedPod) -> None:
        self._observe(new)

    def on_delete(self, obj: WatchedPod) -> None:
        self.pods.forget(obj.metadata.namespace, obj.metadata.name)

    def _observe(self, pod: WatchedPod) -> None:
        meta = pod.metadata
        if (meta.namespace, meta.name) in self._deleted:
            return
        attempted = any(c.type == "PodScheduled" for c in pod.status.conditions or ())
        self.pods.observe(meta.namespace, meta.name, dict(meta.labels or {}), pod.spec.node_name, attempted)

    # --- Target ----------------------------------------------------------------------------------------

    def prepare(self, objs: Sequence[Obj]) -> None:
        for obj in objs:
            self._bodies[_key(obj)] = msgspec.json.encode(obj)

    async def create(self, objs: Sequence[Obj]) -> None:
        if not objs:
            return
        by_kind: dict[str, list[Obj]] = {}
        for obj in objs:
            by_kind.setdefault(str(obj.get("kind", "")), []).append(obj)
        order = [k for k in _FIRST if k in by_kind] + [k for k in by_kind if k not in _FIRST and k != "Pod"]
        if "Pod" in by_kind:
            order.append("Pod")
        for kind in order:
            group = by_kind[kind]
            await self._resources.collection(group[0])  # discovery once, before the concurrent requests
            try:
                await _each(group, min(self.in_flight, len(group)), self._create_one)
            except BaseExceptionGroup as eg:
                raise _first(eg) from None

    async def _create_one(self, obj: Obj) -> None:
        kind, namespace, name = key = _key(obj)
        path = await self._resources.collection(obj)
        body = self._bodies.pop(key, None) or msgspec.json.encode(obj)
        try:
            created = await self.client.request("POST", path, body=body)
        except ApiError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                return  # a retried POST whose first attempt went through
            raise WorkloadError(f"creating {kind} {_name(namespace, name)}: {exc}") from None
        if kind in _STATUS_AFTER_CREATE and obj.get("status"):
            current = msgspec.json.decode(created)
            current["status"] = obj["status"]
            try:
                await self.client.request("PUT", f"{path}/{name}/status", body=current)
            except ApiError as exc:
                raise WorkloadError(f"writing the status of {kind} {_name(namespace, name)}: {exc}") from None

    async def delete(self, obj: Obj) -> None:
        kind, namespace, name = _key(obj)
        if kind == "Pod":
            self._deleted.add((namespace, name))
        path = await self._resources.collection(obj)
        try:
            await self.client.request("DELETE", f"{path}/{name}", params={"gracePeriodSeconds": "0"})
        except ApiError as exc:
            if exc.status != 404:
                raise WorkloadError(f"deleting {kind} {_name(namespace, name)}: {exc}") from None

    async def update(self, obj: Obj, subresources: Sequence[str]) -> None:
        kind, namespace, name = _key(obj)
        path = f"{await self._resources.collection(obj)}/{name}"
        strict = {"fieldValidation": "Strict"}  # as upstream: a template the server would drop fields of is an error
        try:
            await self.client.request("PUT", "/".join([path, *subresources]), params=strict, body=obj)
            await self.client.request("PUT", f"{path}/status", params=strict, body=obj)
        except ApiError as exc:
            raise WorkloadError(f"updating {kind} {_name(namespace, name)}: {exc}") from None

    async def allocate_claims(self, namespace: str) -> int:
        """claimalloc's run over what the API server lists now, each allocation written through the
        claim's status subresource (upstream's UpdateStatus) on the version listed."""
        try:
            classes = await self.client.get_typed(f"{DRA_PATH}/deviceclasses", _Items[DeviceClass])
            slices = await self.client.get_typed(f"{DRA_PATH}/resourceslices", _Items[ResourceSlice])
            nodes = await self.client.get_typed("/api/v1/nodes", _Items[Node])
            body = await self.client.request("GET", f"{DRA_PATH}/resourceclaims")
        except ApiError as exc:
            raise WorkloadError(f"allocResourceClaims: listing the cluster's DRA objects: {exc}") from None
        claims = self.client.decoder(_Items[ResourceClaim]).decode(body)
        raw: dict[tuple[str, str], dict[str, Any]] = {
            (str(item["metadata"].get("namespace")), str(item["metadata"]["name"])): item for item in msgspec.json.decode(body)["items"]}
        run = ClaimAllocation({dc.metadata.name: dc for dc in classes.items}, slices.items, claims.items, nodes.items)
        allocated = 0
        for claim, allocation in run.each(namespace):
            meta = claim.metadata
            obj = raw[(meta.namespace, meta.name)]
            obj["status"] = {**(obj.get("status") or {}), "allocation": msgspec.to_builtins(allocation)}
            path = f"{DRA_PATH}/namespaces/{meta.namespace}/resourceclaims/{meta.name}/status"
            try:
                stored = await self.client.request("PUT", path, body=obj)
            except ApiError as exc:
                raise WorkloadError(f"allocResourceClaims: update claim status with allocation of {meta.namespace}/{meta.name}: "
                                    f"{exc}") from None
            run.written(self.client.decoder(ResourceClaim).decode(stored))
            allocated += 1
        return allocated

    def usage(self) -> Usage:
        u = self.scheduler.usage()
        return Usage(u.cpu_seconds, u.rss_peak_bytes)

    def attempt_seconds(self) -> list[tuple[float, float]]:
        try:
            return self.scheduler.histogram(ATTEMPT_METRIC)
        except (OSError, RuntimeError) as exc:
            raise WorkloadError(f"reading {ATTEMPT_METRIC} from {self.scheduler.kind}: {exc}") from None


def _name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name
