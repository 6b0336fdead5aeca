"""The kube backend's side effects: binds, victims' deletion, pod status and events.

Everything here runs off the scheduling cycle. Writes that concern one pod are
applied in the order the scheduler asked for them (a status patch saying the pod
is unschedulable can never land after the bind that placed it), and a failed
write is logged and counted, never raised into the scheduler.

Since the cycle does not wait for its writes, a pod retried faster than the API server answers
would queue a status patch per attempt. As kube-scheduler's asynchronous API dispatcher does, a
write still waiting is replaced by a newer one of the same kind (only the last PodScheduled=False
matters), and a bind drops the PodScheduled=False patches still waiting for it (the binding
itself marks the pod scheduled). A failure that nominates a node writes the nomination and the
condition in one status patch, as kube's updatePod does, and a bind never drops that one: a
preemptor shows why it waited, as it does under kube-scheduler.

kube-scheduler (its asynchronous API calls are off by default in v1.37) sends a failed pod's
status patch before it takes the next pod, so the API server paces its retries. kubesched does
not wait for a write, so a storm of failures (pods sent back by every node update while nodes
trickle in, each failure a patch) could outrun the API server and slow everything it serves:
the loop instead waits, between cycles, while WRITE_BACKLOG_HIGH pods have writes not done, until
WRITE_BACKLOG_LOW are left (`room_for_writes`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from kubesched.api.dra import ResourceClaim, ResourceClaimWriteError
from kubesched.api.objects import PodCondition
from kubesched.api.podgroups import Condition, PodGroup
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim, StorageWriteError
from kubesched.backends.kube.events import EventRecorder, micro_time
from kubesched.client import ApiClient, ApiError
from kubesched.devices.extendedclaim import without_delete_protection
from kubesched.framework.status import Code, Status
from kubesched.infra.clock import first_set

if TYPE_CHECKING:
    from kubesched.api.objects import PodExtendedResourceClaimStatus
    from kubesched.scheduler.backend import SchedulerPort

log = logging.getLogger(__name__)

STRATEGIC_MERGE = "application/strategic-merge-patch+json"


def pod_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


MERGE_PATCH = "application/merge-patch+json"


STATUS_PATCH = "patching the pod's status"  # PodScheduled=False and nominatedNodeName, one patch
WRITE_BACKLOG_HIGH = 128  # pods with writes not done at which the scheduling loop waits
WRITE_BACKLOG_LOW = 64  # ... until this few are left
_CLAIM_UPDATE_TRIES = 5  # client-go's retry.DefaultRetry steps


@dataclass(slots=True)
class _PodWrites:
    """One pod's writes: those not sent yet, by kind in the order last asked, and the task sending them."""

    waiting: dict[str, Callable[[], Awaitable[None]]] = field(default_factory=dict)
    sender: asyncio.Task[None] | None = None
    status: dict[str, Any] = field(default_factory=dict)  # the waiting status patch's fields


class KubeBackend:
    def __init__(self, client: ApiClient, events: EventRecorder) -> None:
        self.client = client
        self.events = events
        self.scheduler: SchedulerPort | None = None
        self._writes: dict[str, _PodWrites] = {}  # pod uid -> its writes under way
        self.binds = 0
        self.bind_conflicts = 0
        self.write_failures = 0
        self.writes_superseded = 0  # writes replaced by a newer one (or a bind) before they were sent
        self.paced = 0  # times the scheduling loop waited for writes to drain
        self._room = asyncio.Event()
        self._room.set()

    def connect(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    # --- ordering of writes to one pod ------------------------------------------------------------

    def _then(self, pi: PodInfo, what: str, write: Callable[[], Awaitable[None]]) -> None:
        """Sends `write` after the pod's earlier writes; one of the same kind not sent yet is replaced."""
        writes = self._writes.get(pi.uid)
        if writes is None:
            writes = self._writes[pi.uid] = _PodWrites()
        if writes.waiting.pop(what, None) is not None:
            self.writes_superseded += 1
        writes.waiting[what] = write
        if writes.sender is None:
            writes.sender = asyncio.get_running_loop().create_task(self._send(pi, writes), name=f"writes of pod {pi.key}")
            if self.scheduler is not None:
                self.scheduler.track(writes.sender)

    async def _send(self, pi: PodInfo, writes: _PodWrites) -> None:
        try:
            while writes.waiting:
                what = next(iter(writes.waiting))
                write = writes.waiting.pop(what)
                try:
                    await write()
                except ApiError as exc:
                    if exc.status == 404:
                        writes.waiting.clear()
                        return  # the pod is gone: nothing left to update
                    self.write_failures += 1
                    log.warning("%s for pod %s failed: %s", what, pi.key, exc)
        finally:
            if self._writes.get(pi.uid) is writes:
                del self._writes[pi.uid]
            if len(self._writes) <= WRITE_BACKLOG_LOW:
                self._room.set()

    async def room_for_writes(self, stop: asyncio.Event) -> None:
        """Returns at once unless WRITE_BACKLOG_HIGH pods have writes not done; then once
        WRITE_BACKLOG_LOW are left, or `stop` is set."""
        if len(self._writes) < WRITE_BACKLOG_HIGH:
            return
        self.paced += 1
        self._room.clear()
        await first_set(self._room, stop)

    async def _settled(self, uid: str, superseded: tuple[str, ...] = ()) -> None:
        """Returns once the pod's writes asked for so far are sent, dropping those of the kinds
        `superseded` that are still waiting."""
        writes = self._writes.get(uid)
        if writes is None:
            return
        for what in superseded:
            if writes.waiting.pop(what, None) is not None:
                self.writes_superseded += 1
        if writes.sender is not None:
            await asyncio.wait({writes.sender})

    # --- ClusterBackend -------------------------------------------------------------------------------

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        """POST the pods/binding subresource. The Binding carries the pod's uid, so a pod
        deleted and recreated under the same name is never bound by mistake."""
        writes = self._writes.get(pi.uid)
        nominates = writes is not None and STATUS_PATCH in writes.waiting and bool(writes.status.get("nominatedNodeName"))
        await self._settled(pi.uid, superseded=() if nominates else (STATUS_PATCH,))
        meta = pi.pod.metadata
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            await self.client.send("POST", pod_path(meta.namespace, meta.name) + "/binding", body)
        except ApiError as exc:
            return await self._bind_failed(pi, node, exc)
        self.binds += 1
        return None

    async def _bind_failed(self, pi: PodInfo, node: str, exc: ApiError) -> Status | None:
        meta = pi.pod.metadata
        if exc.status == 404:
            # Deleted meanwhile: the watch brings the deletion; nothing to retry.
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"binding rejected: {exc.message}",), "DefaultBinder")
        if exc.status == 409:
            self.bind_conflicts += 1
            # A retried POST whose first try went through also answers 409: look before failing.
            try:
                current = await self.client.get(pod_path(meta.namespace, meta.name))
            except ApiError:
                current = None
            if isinstance(current, dict):
                same_pod = current.get("metadata", {}).get("uid") == meta.uid
                bound_to = current.get("spec", {}).get("nodeName", "")
                if same_pod and bound_to == node:
                    self.binds += 1
                    return None
            # Bound elsewhere (by someone else) or replaced: the watch tells the cache where.
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"binding rejected: {exc.message}",), "DefaultBinder")
        return Status(Code.ERROR, (f"binding rejected: {exc}",), "DefaultBinder")

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        """Evicts a preemption victim as kube-scheduler does: a DisruptionTarget condition
        first (so its controller knows why), then the delete, preconditioned on its uid."""
        meta = pi.pod.metadata
        name = self.scheduler_name(pi)
        # A pod group's preemption says so (kube: "... a higher priority podgroup").
        preemptor = "podgroup" if reason.startswith("Preempted by podgroup ") else "pod"
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{name}: preempting to accommodate a higher priority {preemptor}",
            "lastTransitionTime": micro_time()[:19] + "Z",
        }
        try:
            await self.client.send("PATCH", pod_path(meta.namespace, meta.name) + "/status",
                                   {"status": {"conditions": [condition]}}, content_type=STRATEGIC_MERGE)
            await self.client.send("DELETE", pod_path(meta.namespace, meta.name),
                                   {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": meta.uid}})
        except ApiError as exc:
            if exc.status in (404, 409):  # already gone, or replaced by a new pod of that name
                return
            raise
        self.events.record(pi, "Normal", "Preempted", reason, controller=name)

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self.events.record(pi, type_, reason, message, controller=self.scheduler_name(pi))

    def set_unschedulable(self, pi: PodInfo, message: str, reason: str = "Unschedulable") -> None:
        """PodScheduled=False with the reason and the kube-format message; skipped when the pod
        already says exactly that (kube does not rewrite an unchanged condition)."""
        was = next((c for c in pi.pod.status.conditions if c.type == "PodScheduled" and c.status == "False"), None)
        if was is not None and was.reason == reason and was.message == message:
            return
        # The condition's status stays False: kube keeps its lastTransitionTime.
        since = was.last_transition_time if was is not None else None
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": since or micro_time()[:19] + "Z",
        }
        # Remembered at once (as set_nominated_node does): an attempt before the watch brings the
        # patched pod back does not patch the same words again.
        status = pi.pod.status
        status.conditions = [*(c for c in status.conditions if c.type != "PodScheduled"),
                             PodCondition(type="PodScheduled", status="False", reason=reason, message=message,
                                          last_transition_time=condition["lastTransitionTime"])]

        self._patch_status(pi, {"conditions": [condition]})

    def set_nominated_node(self, pi: PodInfo, node: str | None) -> None:
        if (pi.pod.status.nominated_node_name or None) == node:
            return
        pi.pod.status.nominated_node_name = node or ""
        self._patch_status(pi, {"nominatedNodeName": node})

    def _patch_status(self, pi: PodInfo, fields: dict[str, Any]) -> None:
        """A strategic-merge patch of the pod's status with `fields`, after the pod's writes under
        way; merged into the status patch still waiting, if there is one (the later value of a
        field wins), so a failure's nomination and condition go out together."""
        writes = self._writes.get(pi.uid)
        if writes is not None and STATUS_PATCH in writes.waiting:
            self.writes_superseded += bool(fields.keys() & writes.status.keys())
            writes.status.update(fields)
            return
        meta = pi.pod.metadata
        body = dict(fields)

        async def write() -> None:
            await self.client.send("PATCH", pod_path(meta.namespace, meta.name) + "/status",
                                   {"metadata": {"uid": meta.uid}, "status": body}, content_type=STRATEGIC_MERGE)

        self._then(pi, STATUS_PATCH, write)
        self._writes[pi.uid].status = body

    def set_pod_group_condition(self, pg: PodGroup, condition: Condition) -> None:
        """A strategic-merge patch of the PodGroup's status subresource with one condition (its
        conditions merge by type, as kube-scheduler writes PodGroupInitiallyScheduled)."""
        meta = pg.metadata
        # Every field written, an empty message too: the merge keeps any field a patch leaves out.
        written = {"type": condition.type, "status": condition.status, "reason": condition.reason,
                   "message": condition.message, "lastTransitionTime": condition.last_transition_time}
        body = {"status": {"conditions": [written]}}
        path = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{meta.namespace}/podgroups/{meta.name}/status"

        async def write() -> None:
            try:
                await self.client.send("PATCH", path, body, content_type=STRATEGIC_MERGE)
            except ApiError as exc:
                if exc.status != 404:  # a PodGroup deleted meanwhile has no status to write
                    self.write_failures += 1
                    log.warning("writing the status of PodGroup %s failed: %s", pg.key, exc)

        task = asyncio.get_running_loop().create_task(write(), name=f"podgroup status {pg.key}")
        if self.scheduler is not None:
            self.scheduler.track(task)

    def set_annotations(self, pi: PodInfo, annotations: dict[str, str]) -> None:
        meta = pi.pod.metadata

        async def write() -> None:
            await self.client.send("PATCH", pod_path(meta.namespace, meta.name),
                                   {"metadata": {"uid": meta.uid, "annotations": annotations}}, content_type=STRATEGIC_MERGE)

        self._then(pi, "writing the scheduling result annotations", write)

    # --- the claim behind a pod's DRA-served extended resources (devices/extendedclaim.py) -----------

    @staticmethod
    def _claims_path(namespace: str) -> str:
        return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        body = msgspec.to_builtins(claim)
        body.update(apiVersion=claim.api_version, kind=claim.kind)
        try:
            stored = await self.client.post(self._claims_path(claim.metadata.namespace), body)
        except ApiError as exc:
            raise ResourceClaimWriteError(exc.message, conflict=exc.status == 409) from None
        created: ResourceClaim = msgspec.convert(stored, ResourceClaim, strict=False)
        return created

    async def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        """kube's deleteClaim: the delete-protection finalizer removed by an update (read again
        and retried on a conflict, five tries as client-go's DefaultRetry), then the delete, here
        on the uid's precondition; a claim already gone is no error."""
        path = f"{self._claims_path(namespace)}/{name}"
        try:
            for attempt in range(_CLAIM_UPDATE_TRIES):
                current: dict[str, Any] = await self.client.get(path)
                meta = current.get("metadata", {})
                if meta.get("uid") != uid:
                    break  # another claim by that name now: the precondition below refuses it
                finalizers = meta.get("finalizers") or []
                kept = without_delete_protection(finalizers)
                if kept == finalizers:
                    break
                meta["finalizers"] = kept
                try:
                    await self.client.put(path, current)
                    break
                except ApiError as exc:
                    if exc.status != 409 or attempt == _CLAIM_UPDATE_TRIES - 1:
                        raise
            await self.client.delete(path, body={"apiVersion": "v1", "kind": "DeleteOptions",
                                                 "preconditions": {"uid": uid}})
        except ApiError as exc:
            if exc.status != 404:
                raise ResourceClaimWriteError(exc.message, conflict=exc.status == 409) from None

    async def set_extended_resource_claim_status(self, pi: PodInfo, status: PodExtendedResourceClaimStatus) -> None:
        """A strategic-merge patch of the pod's status (kube's PatchPodStatus), awaited."""
        meta = pi.pod.metadata
        body = {"metadata": {"uid": meta.uid}, "status": {"extendedResourceClaimStatus": msgspec.to_builtins(status)}}
        try:
            await self.client.send("PATCH", pod_path(meta.namespace, meta.name) + "/status", body,
                                   content_type=STRATEGIC_MERGE)
        except ApiError as exc:
            raise ResourceClaimWriteError(exc.message, not_found=exc.status == 404) from None

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """The volume binder's PV update: claimRef and annotations, conditional on the
        resourceVersion (a merge patch carrying it fails with 409 as kube's Update does, and
        leaves the fields kubesched does not decode untouched)."""
        claim_ref = msgspec.to_builtins(pv.spec.claim_ref) if pv.spec.claim_ref is not None else None
        body = {
            "metadata": {"resourceVersion": pv.metadata.resource_version, "annotations": pv.metadata.annotations},
            "spec": {"claimRef": claim_ref},
        }
        try:
            stored = await self.client.patch(f"/api/v1/persistentvolumes/{pv.metadata.name}", body=body,
                                             content_type=MERGE_PATCH)
        except ApiError as exc:
            raise StorageWriteError(exc.message) from None
        result: PersistentVolume = msgspec.convert(stored, PersistentVolume, strict=False)
        return result

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """The volume binder's PVC update: its annotations (the selected node), conditional on
        the resourceVersion."""
        meta = pvc.metadata
        body = {"metadata": {"resourceVersion": meta.resource_version, "annotations": meta.annotations}}
        try:
            stored = await self.client.patch(f"/api/v1/namespaces/{meta.namespace}/persistentvolumeclaims/{meta.name}",
                                             body=body, content_type=MERGE_PATCH)
        except ApiError as exc:
            raise StorageWriteError(exc.message) from None
        result: PersistentVolumeClaim = msgspec.convert(stored, PersistentVolumeClaim, strict=False)
        return result

    # --- ResourceClaims (DynamicResources) -------------------------------------------------------------

    @staticmethod
    def _claim_path(namespace: str, name: str) -> str:
        return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"

    async def _claim_call(self, call: Awaitable[Any]) -> ResourceClaim:
        try:
            stored = await call
        except ApiError as exc:
            raise ResourceClaimWriteError(exc.message, conflict=exc.status == 409, not_found=exc.status == 404) from None
        result: ResourceClaim = msgspec.convert(stored, ResourceClaim, strict=False)
        return result

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim:
        return await self._claim_call(self.client.get(self._claim_path(namespace, name)))

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """The claim's finalizers, conditional on its resourceVersion (a merge patch carrying it
        fails with 409 as kube's Update does, and leaves every other field as stored)."""
        meta = claim.metadata
        body = {"metadata": {"resourceVersion": meta.resource_version, "finalizers": meta.finalizers}}
        return await self._claim_call(self.client.patch(self._claim_path(meta.namespace, meta.name), body=body,
                                                        content_type=MERGE_PATCH))

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """kube's UpdateStatus: the whole claim PUT to its status subresource (the API server
        takes the status only), conditional on the resourceVersion it carries."""
        meta = claim.metadata
        return await self._claim_call(self.client.put(self._claim_path(meta.namespace, meta.name) + "/status",
                                                      body=msgspec.to_builtins(claim)))

    async def unreserve_resource_claim(self, claim: ResourceClaim, pod_uid: str) -> None:
        """kube's Unreserve patch: a strategic merge deleting the pod's reservedFor entry, on the claim's uid."""
        meta = claim.metadata
        body = {"metadata": {"uid": meta.uid}, "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]}}
        await self._claim_call(self.client.patch(self._claim_path(meta.namespace, meta.name) + "/status", body=body,
                                                 content_type=STRATEGIC_MERGE))

    # --- helpers ---------------------------------------------------------------------------------------

    @staticmethod
    def scheduler_name(pi: PodInfo) -> str:
        return pi.pod.spec.scheduler_name or "default-scheduler"

    def stats(self) -> dict[str, Any]:
        return {"binds": self.binds, "bind_conflicts": self.bind_conflicts, "write_failures": self.write_failures,
                "writes_superseded": self.writes_superseded, "paced": self.paced}
