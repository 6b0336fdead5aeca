"""What the kube backend watches, and how each watch event reaches the scheduler.

One Reflector per resource (list, then watch; see kubesched.client.watch). The
handlers translate events into the scheduler's on_* calls and drop the churn that
cannot change a scheduling decision: kubelet heartbeats on nodes, and status-only
updates of pending pods (kube-scheduler ignores those too, or its own
PodScheduled=False patch would requeue the pod it just gave up on).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import LabelSelector, Namespace, Node, Pod, SelectsByLabelSelector, SelectsByMap
from kubesched.api.podgroups import PODGROUPS, PodGroup
from kubesched.api.policy import PDBS, PodDisruptionBudget
from kubesched.api.selectors import SelectorError, compile_label_selector
from kubesched.api.storage import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    STORAGE_TYPES,
    VOLUME_ATTACHMENT,
)
from kubesched.client import ApiClient, Reflector
from kubesched.infra import features
from kubesched.scheduler.backend import SchedulerPort

log = logging.getLogger(__name__)

T = TypeVar("T")


def _without_version(obj: Any) -> Any:
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, resource_version=""))


class PodHandler:
    def __init__(self, scheduler: SchedulerPort, on_gone: Callable[[str], None] | None = None) -> None:
        self.scheduler = scheduler
        # Told the uid of each deleted pod (the event recorder forgets the pod's series).
        self.on_gone = on_gone

    def on_add(self, obj: Pod) -> None:
        self.scheduler.on_pod_add(obj)

    def on_update(self, old: Pod, new: Pod) -> None:
        if (not new.spec.node_name and not old.spec.node_name and _only_status_changed(old, new)
                and old.status.resource_claim_statuses == new.status.resource_claim_statuses):
            # Keep the freshest object (its conditions decide whether a status patch is
            # needed) without moving the pod in the queue. Not so when the resourceclaim
            # controller names a template's claim in the status: that update moves the pod
            # (kube's UpdatePodGeneratedResourceClaim, which DynamicResources waits for).
            self.scheduler.refresh_pending_pod(new)
            return
        self.scheduler.on_pod_update(new)

    def on_delete(self, obj: Pod) -> None:
        uid = obj.metadata.uid or obj.key
        self.scheduler.on_pod_delete(uid)
        if self.on_gone is not None:
            self.on_gone(uid)


def _only_status_changed(old: Pod, new: Pod) -> bool:
    if old.spec != new.spec:
        return False
    a, b = old.metadata, new.metadata
    return (
        a.labels == b.labels
        and a.annotations == b.annotations
        and a.deletion_timestamp == b.deletion_timestamp
        and a.owner_references == b.owner_references
        and a.uid == b.uid
    )


class NodeHandler:
    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: Node) -> None:
        self.scheduler.on_node_add(obj)

    def on_update(self, old: Node, new: Node) -> None:
        # The typed Node keeps only what scheduling reads, so a heartbeat (a new
        # lastHeartbeatTime, nothing else) compares equal once the version is ignored.
        if _without_version(old) == _without_version(new):
            return
        self.scheduler.on_node_update(new)

    def on_delete(self, obj: Node) -> None:
        self.scheduler.on_node_delete(obj.metadata.name)


class NamespaceHandler:
    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: Namespace) -> None:
        self.scheduler.on_namespace(obj)

    def on_update(self, old: Namespace, new: Namespace) -> None:
        if old.metadata.labels != new.metadata.labels:
            self.scheduler.on_namespace(new)

    def on_delete(self, obj: Namespace) -> None:
        # Its pods' deletions follow; namespaceSelectors stop matching it. Its labels go, or
        # a cluster that makes a namespace per CI run would keep every one ever made.
        self.scheduler.on_namespace_delete(obj.metadata.name)


class SelectorHandler(Generic[T]):
    """Services, ReplicationControllers, ReplicaSets and StatefulSets: PodTopologySpread's
    system default constraints spread a pod among the pods its owners select."""

    def __init__(self, scheduler: SchedulerPort, kind: str, selector_of: Callable[[T], LabelSelector | None]) -> None:
        self.scheduler = scheduler
        self.kind = kind
        self.selector_of = selector_of

    def on_add(self, obj: T) -> None:
        meta = obj.metadata  # type: ignore[attr-defined]
        raw = self.selector_of(obj)
        if raw is None:
            self.scheduler.remove_workload_selector(self.kind, meta.namespace, meta.name)
            return
        try:
            selector = compile_label_selector(raw)
        except SelectorError as exc:
            log.warning("ignoring the selector of %s %s/%s: %s", self.kind, meta.namespace, meta.name, exc)
            return
        self.scheduler.set_workload_selector(self.kind, meta.namespace, meta.name, selector)

    def on_update(self, old: T, new: T) -> None:
        self.on_add(new)

    def on_delete(self, obj: T) -> None:
        meta = obj.metadata  # type: ignore[attr-defined]
        self.scheduler.remove_workload_selector(self.kind, meta.namespace, meta.name)


class StorageHandler:
    """PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
    CSIStorageCapacities and VolumeAttachments: the volume plugins' objects, delivered with kube's
    event resource names; the volume plugins' queueing hints judge every change."""

    def __init__(self, scheduler: SchedulerPort, resource: str) -> None:
        self.scheduler = scheduler
        self.resource = resource

    def on_add(self, obj: Any) -> None:
        self.scheduler.on_storage_update(self.resource, None, obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.scheduler.on_storage_update(self.resource, old, new)

    def on_delete(self, obj: Any) -> None:
        self.scheduler.on_storage_delete(self.resource, obj)


class DeviceClassHandler:
    """DeviceClasses (resource.k8s.io/v1): the extended resources DRA serves, which the DRA guard
    reads (scheduler/draguard.py). Only a change of the spec concerns the scheduler."""

    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: DeviceClass) -> None:
        self.scheduler.on_device_class(obj)

    def on_update(self, old: DeviceClass, new: DeviceClass) -> None:
        if old.spec != new.spec:
            self.scheduler.on_device_class(new)

    def on_delete(self, obj: DeviceClass) -> None:
        self.scheduler.on_device_class_delete(obj.metadata.name)


class ResourceClaimHandler:
    """ResourceClaims (resource.k8s.io/v1), status included: the claim tracker's informer side
    (its assume cache decides whether an object is newer than the one the scheduler assumed)."""

    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: ResourceClaim) -> None:
        self.scheduler.on_resource_claim(obj)

    def on_update(self, old: ResourceClaim, new: ResourceClaim) -> None:
        self.scheduler.on_resource_claim(new)

    def on_delete(self, obj: ResourceClaim) -> None:
        self.scheduler.on_resource_claim_delete(obj.metadata.namespace, obj.metadata.name)


class ResourceSliceHandler:
    """ResourceSlices (resource.k8s.io/v1): the devices drivers publish, by pool and node."""

    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: ResourceSlice) -> None:
        self.scheduler.on_resource_slice(obj)

    def on_update(self, old: ResourceSlice, new: ResourceSlice) -> None:
        if _without_version(old) != _without_version(new):
            self.scheduler.on_resource_slice(new)

    def on_delete(self, obj: ResourceSlice) -> None:
        self.scheduler.on_resource_slice_delete(obj.metadata.name)


class PodGroupHandler:
    """PodGroups (scheduling.k8s.io/v1beta1, GenericWorkload): gang scheduling's groups."""

    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: PodGroup) -> None:
        self.scheduler.on_pod_group(obj)

    def on_update(self, old: PodGroup, new: PodGroup) -> None:
        # Its status is ours to write: only a change of the spec (minCount) concerns the queue.
        if old.spec != new.spec:
            self.scheduler.on_pod_group(new)
        else:
            self.scheduler.refresh_pod_group(new)

    def on_delete(self, obj: PodGroup) -> None:
        self.scheduler.on_pod_group_delete(obj.metadata.namespace, obj.metadata.name)


class PdbHandler:
    """PodDisruptionBudgets (policy/v1), status included: preemption reads disruptionsAllowed."""

    def __init__(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def on_add(self, obj: PodDisruptionBudget) -> None:
        self.scheduler.on_pdb(obj)

    def on_update(self, old: PodDisruptionBudget, new: PodDisruptionBudget) -> None:
        self.scheduler.on_pdb(new)

    def on_delete(self, obj: PodDisruptionBudget) -> None:
        self.scheduler.on_pdb_delete(obj.metadata.namespace, obj.metadata.name)


class CustomObjectHandler:
    """Custom resources (CRD-backed kinds) that the profiles' plugins read, each delivered with its
    event resource name (api.customresources); the plugins' hints judge every change."""

    def __init__(self, scheduler: SchedulerPort, resource: str) -> None:
        self.scheduler = scheduler
        self.resource = resource

    def on_add(self, obj: Any) -> None:
        self.scheduler.on_custom_object(self.resource, None, obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.scheduler.on_custom_object(self.resource, old, new)

    def on_delete(self, obj: Any) -> None:
        self.scheduler.on_custom_delete(self.resource, obj)


# Event resource -> (collection path, reflector name).
STORAGE_COLLECTIONS: dict[str, tuple[str, str]] = {
    PERSISTENT_VOLUME_CLAIM: ("/api/v1/persistentvolumeclaims", "persistentvolumeclaims"),
    PERSISTENT_VOLUME: ("/api/v1/persistentvolumes", "persistentvolumes"),
    STORAGE_CLASS: ("/apis/storage.k8s.io/v1/storageclasses", "storageclasses"),
    CSI_NODE: ("/apis/storage.k8s.io/v1/csinodes", "csinodes"),
    CSI_DRIVER: ("/apis/storage.k8s.io/v1/csidrivers", "csidrivers"),
    CSI_STORAGE_CAPACITY: ("/apis/storage.k8s.io/v1/csistoragecapacities", "csistoragecapacities"),
    VOLUME_ATTACHMENT: ("/apis/storage.k8s.io/v1/volumeattachments", "volumeattachments"),
}


DEVICE_CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
RESOURCE_CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
RESOURCE_SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def _service_selector(svc: SelectsByMap) -> LabelSelector | None:
    if not svc.spec.selector or svc.spec.type == "ExternalName":
        return None
    return LabelSelector(match_labels=dict(svc.spec.selector))


def _map_selector(obj: SelectsByMap) -> LabelSelector | None:
    return LabelSelector(match_labels=dict(obj.spec.selector)) if obj.spec.selector else None


def _label_selector(obj: SelectsByLabelSelector) -> LabelSelector | None:
    return obj.spec.selector


@dataclass
class Informers:
    reflectors: list[Reflector[Any]]

    @property
    def synced(self) -> bool:
        return all(r.synced.is_set() for r in self.reflectors)

    def stats(self) -> dict[tuple[str, ...], float]:
        out: dict[tuple[str, ...], float] = {}
        for r in self.reflectors:
            out[(r.name, "relist")] = float(r.relists)
            out[(r.name, "watch_restart")] = float(r.watch_restarts)
            out[(r.name, "decode_error")] = float(r.decode_errors)
        return out


def build_informers(client: ApiClient, scheduler: SchedulerPort, on_pod_gone: Callable[[str], None] | None = None) -> Informers:
    """Nodes first: pods then land on rows that exist (the cache copes either way)."""
    reflectors: list[Reflector[Any]] = [
        Reflector(client, "/api/v1/nodes", Node, NodeHandler(scheduler), name="nodes"),
        Reflector(client, "/api/v1/namespaces", Namespace, NamespaceHandler(scheduler), name="namespaces"),
        Reflector(client, "/api/v1/pods", Pod, PodHandler(scheduler, on_pod_gone), name="pods"),
        Reflector(client, "/api/v1/services", SelectsByMap, SelectorHandler(scheduler, "Service", _service_selector),
                  name="services"),
        Reflector(client, "/api/v1/replicationcontrollers", SelectsByMap,
                  SelectorHandler(scheduler, "ReplicationController", _map_selector), name="replicationcontrollers"),
        Reflector(client, "/apis/apps/v1/replicasets", SelectsByLabelSelector,
                  SelectorHandler(scheduler, "ReplicaSet", _label_selector), name="replicasets"),
        Reflector(client, "/apis/apps/v1/statefulsets", SelectsByLabelSelector,
                  SelectorHandler(scheduler, "StatefulSet", _label_selector), name="statefulsets"),
    ]
    # kube-scheduler's preemption evaluator lists PodDisruptionBudgets through an informer, always.
    reflectors.append(Reflector(client, PDBS, PodDisruptionBudget, PdbHandler(scheduler), name="poddisruptionbudgets"))
    # Storage before pods would be nicer, but the scheduler copes with either order: a pod whose
    # claim is not known yet is retried when the claim arrives (the volume plugins' hints).
    for resource, (path, name) in STORAGE_COLLECTIONS.items():
        reflectors.append(Reflector(client, path, STORAGE_TYPES[resource], StorageHandler(scheduler, resource), name=name))
    # As kube-scheduler with DynamicResourceAllocation (GA, locked on): resource.k8s.io/v1 is served.
    reflectors.append(Reflector(client, DEVICE_CLASSES, DeviceClass, DeviceClassHandler(scheduler), name="deviceclasses"))
    # Slices before claims, as classes: a claim's allocation names devices of slices already known.
    reflectors.append(Reflector(client, RESOURCE_SLICES, ResourceSlice, ResourceSliceHandler(scheduler),
                                name="resourceslices"))
    reflectors.append(Reflector(client, RESOURCE_CLAIMS, ResourceClaim, ResourceClaimHandler(scheduler),
                                name="resourceclaims"))
    if features.current().generic_workload:
        # As kube-scheduler with the gate: without the API served, this list never syncs and
        # the scheduler never becomes ready.
        reflectors.append(Reflector(client, PODGROUPS, PodGroup, PodGroupHandler(scheduler), name="podgroups"))
    # Custom resources only when a profile's plugin reads them: a cluster without their CRDs is not
    # asked (with them asked for and not served, the list never syncs and kubesched is not ready).
    for cr in scheduler.custom_resources():
        reflectors.append(Reflector(client, cr.path, cr.type, CustomObjectHandler(scheduler, cr.resource), name=cr.name))
    return Informers(reflectors)
