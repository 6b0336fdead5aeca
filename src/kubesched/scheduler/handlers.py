"""The scheduler's event handlers (kube's eventhandlers.go): what a backend reports about the
cluster goes into the cache and the queue, and a change that may help pods rejected earlier moves
them back to be tried (the queueing hints of the plugins that rejected them decide).

Methods of the Scheduler (scheduler.core), kept apart so the scheduling loop reads on its own;
the attributes they use are declared below and set by Scheduler.__init__.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesched.api.customresources import CustomResource, watched_by
from kubesched.api.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Namespace, Node, Pod
from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodError, PodInfo, make_pod_info
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.selectors import Selector
from kubesched.cache.podgroups import PENDING, group_key
from kubesched.framework.events import (
    ASSIGNED_POD,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
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

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache
    from kubesched.devices.manager import DraManager
    from kubesched.framework.runtime import Framework
    from kubesched.framework.waiting import PodAtPermit
    from kubesched.infra.clock import Clock
    from kubesched.observe.record import Recorder
    from kubesched.queue.scheduling_queue import Nominator, QueuedPodInfo, SchedulingQueue

log = logging.getLogger(__name__)


class EventHandlers:
    cache: Cache
    dra: DraManager
    queue: SchedulingQueue
    nominator: Nominator
    clock: Clock
    recorder: Recorder
    frameworks: dict[str, Framework]
    waiting: dict[str, PodAtPermit]
    in_flight: dict[str, QueuedPodInfo]
    nominated_before_assume: dict[str, str]
    groups_on: bool

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

    def on_pdb(self, pdb: PodDisruptionBudget) -> None:
        """A PodDisruptionBudget added or updated (its status too: the disruption controller's
        count is what preemption reads). No pod moves: kube registers no event for budgets."""
        self.cache.pdbs.set(pdb)

    def on_pdb_delete(self, namespace: str, name: str) -> None:
        self.cache.pdbs.remove(namespace, name)

    def on_storage_delete(self, resource: str, old: Any) -> None:
        self.cache.storage.delete(resource, old)
        self._move(ClusterEvent(resource, ActionType.Delete), old, None)

    def on_device_class(self, dc: DeviceClass) -> None:
        """A DeviceClass added or updated: the extended resources DRA serves may change (what
        DynamicResources and NodeResourcesFit read), then the pods a hint admits move."""
        old = self.cache.device_classes.set(dc)
        self._move(ClusterEvent(DEVICE_CLASS, ActionType.Add if old is None else ActionType.Update), old, dc)

    def on_device_class_delete(self, name: str) -> None:
        old = self.cache.device_classes.remove(name)
        if old is not None:
            self._move(ClusterEvent(DEVICE_CLASS, ActionType.Delete), old, None)

    def on_resource_claim(self, claim: ResourceClaim) -> None:
        """A ResourceClaim added or updated: the claim tracker keeps it unless what it holds (an
        object assumed after the scheduler's own write) is as new, and tells `claim_changed`."""
        self.dra.on_claim(claim)

    def on_resource_claim_delete(self, namespace: str, name: str) -> None:
        self.dra.on_claim_delete(namespace, name)

    def claim_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        """The claim tracker's event (the informer's change, or a claim assumed after the
        scheduler's write or restored): the pods a hint admits move."""
        action = ActionType.Add if old is None else ActionType.Delete if new is None else ActionType.Update
        self._move(ClusterEvent(RESOURCE_CLAIM, action), old, new)

    def on_resource_slice(self, rs: ResourceSlice) -> None:
        old = self.dra.on_slice(rs)
        self._move(ClusterEvent(RESOURCE_SLICE, ActionType.Add if old is None else ActionType.Update), old, rs)

    def on_resource_slice_delete(self, name: str) -> None:
        old = self.dra.on_slice_delete(name)
        if old is not None:
            self._move(ClusterEvent(RESOURCE_SLICE, ActionType.Delete), old, None)

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
