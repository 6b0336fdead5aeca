"""The storage objects the volume plugins read, kept current by the backend's storage events.

`StorageIndex` holds the cluster's PersistentVolumeClaims, PersistentVolumes, StorageClasses,
CSINodes, CSIDrivers, CSIStorageCapacities and VolumeAttachments as the informers last
delivered them, plus what kube's volume binder keeps beside its informers:

- an assume layer for PVs and PVCs (kube's passiveAssumeCache): Reserve assumes a PV bound to a
  claim, or a claim annotated with its selected node, before the API knows; the next cycles see
  the assumed object while the informer's object still has the resourceVersion it was assumed
  from; an informer update (a newer version) always wins, and Unreserve restores;
- which claims pods placed on nodes use (kube's snapshot StorageInfos.IsPVCUsedByPods), and the
  placed pods that carry volumes per node (what volume limits and disk conflicts count), kept by
  the cache's pod listener, so pods without volumes cost one attribute check;
- a generation, bumped on every change, a short journal of the latest changes (so a plugin
  keeping per-node answers redoes only the nodes a change touches), and callbacks for code
  waiting on a change (PreBind waiting for the PV controller).

`pod_volumes(pi)` is what the plugins derive once from a pod's spec.volumes.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Volume
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    ephemeral_claim_name,
    volume_class,
)

if TYPE_CHECKING:
    from kubesched.cache.nodetable import NodeTable

log = logging.getLogger(__name__)

VOLUMES_KEY = "Volumes"  # PodInfo.extra key of pod_volumes
JOURNAL_LENGTH = 4096
POD_LEFT_NODE = "PodLeftNode"  # journal entry of a pod with volumes leaving its node


# --- what a pod's volumes ask for ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A pod volume backed by a PVC: a persistentVolumeClaim source, or a generic ephemeral
    volume (whose claim is named `<pod>-<volume>`)."""

    volume: str
    claim: str
    ephemeral: bool


@dataclass(frozen=True, slots=True)
class PodVolumes:
    claims: tuple[PodClaim, ...]  # PVC-backed volumes, in spec order
    pvc_names: tuple[str, ...]  # claim names of persistentVolumeClaim sources only (kube's PodPVCKeys)
    disks: tuple[Volume, ...]  # inline GCE PD / AWS EBS / iSCSI / RBD volumes (disk conflicts)

    @property
    def matters(self) -> bool:
        return bool(self.claims or self.disks)


NO_VOLUMES = PodVolumes((), (), ())


def pod_volumes(pi: PodInfo) -> PodVolumes:
    """The pod's volumes as the volume plugins read them, derived once per PodInfo."""
    cached = pi.extra.get(VOLUMES_KEY)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    volumes = pi.pod.spec.volumes
    if not volumes:
        pi.extra[VOLUMES_KEY] = NO_VOLUMES
        return NO_VOLUMES
    claims: list[PodClaim] = []
    names: list[str] = []
    disks: list[Volume] = []
    for v in volumes:
        if v.persistent_volume_claim is not None:
            claims.append(PodClaim(v.name, v.persistent_volume_claim.claim_name, False))
            names.append(v.persistent_volume_claim.claim_name)
        elif v.ephemeral is not None:
            claims.append(PodClaim(v.name, ephemeral_claim_name(pi.pod, v.name), True))
        if v.gce_persistent_disk is not None or v.aws_elastic_block_store is not None or v.iscsi is not None \
                or v.rbd is not None:
            disks.append(v)
    out = PodVolumes(tuple(claims), tuple(names), tuple(disks)) if claims or disks else NO_VOLUMES
    pi.extra[VOLUMES_KEY] = out
    return out


class AssumeError(RuntimeError):
    """Assuming an object whose version is not the one the informer holds (kube's "out of sync")."""


Waiter = Callable[[], None]


class StorageIndex:
    def __init__(self, table: NodeTable) -> None:
        self._table = table
        self.pvcs: dict[str, PersistentVolumeClaim] = {}  # "namespace/name" -> informer object
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvs_by_class: dict[str, dict[str, None]] = {}  # class of the informer object -> PV names
        self.classes: dict[str, StorageClass] = {}
        self.csinodes: dict[str, CSINode] = {}
        self.csidrivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}  # "namespace/name"
        self.attachments: dict[str, VolumeAttachment] = {}
        self.attachments_by_node: dict[str, dict[str, None]] = {}
        self._assumed_pvs: dict[str, PersistentVolume] = {}
        self._assumed_pvcs: dict[str, PersistentVolumeClaim] = {}
        # Pods placed on nodes (bound or assumed) that have volumes the plugins count.
        self.claim_users: Counter[str] = Counter()  # "namespace/claim" -> pods referencing it
        self.volume_pods: dict[str, dict[str, PodInfo]] = {}  # node name -> uid -> pod
        self._placed: dict[str, tuple[str, PodInfo]] = {}  # uid -> (node, pod)
        self.generation = 0
        # (generation, resource, object) of the latest changes, oldest first; a reader that fell
        # further behind than its start treats everything as changed.
        self.journal: deque[tuple[int, str, Any]] = deque(maxlen=JOURNAL_LENGTH)
        self._waiters: dict[int, Waiter] = {}
        self._next_waiter = 0

    # --- events from the backend ----------------------------------------------------------------

    def apply(self, resource: str, obj: Any) -> None:
        """An object added or updated."""
        if resource == PERSISTENT_VOLUME_CLAIM:
            key = f"{obj.metadata.namespace}/{obj.metadata.name}"
            self.pvcs[key] = obj
            self._expire(self._assumed_pvcs, key, obj)
        elif resource == PERSISTENT_VOLUME:
            name = obj.metadata.name
            old = self.pvs.get(name)
            if old is not None and volume_class(old) != volume_class(obj):
                self._unindex_pv(old)
            self.pvs[name] = obj
            self.pvs_by_class.setdefault(volume_class(obj), {})[name] = None
            self._expire(self._assumed_pvs, name, obj)
        elif resource == STORAGE_CLASS:
            self.classes[obj.metadata.name] = obj
        elif resource == CSI_NODE:
            self.csinodes[obj.metadata.name] = obj
        elif resource == CSI_DRIVER:
            self.csidrivers[obj.metadata.name] = obj
        elif resource == CSI_STORAGE_CAPACITY:
            self.capacities[f"{obj.metadata.namespace}/{obj.metadata.name}"] = obj
        elif resource == VOLUME_ATTACHMENT:
            name = obj.metadata.name
            old_va = self.attachments.get(name)
            if old_va is not None:
                self._unindex_attachment(old_va)
            self.attachments[name] = obj
            self.attachments_by_node.setdefault(obj.spec.node_name, {})[name] = None
        else:
            return
        self._changed(resource, obj)

    def delete(self, resource: str, obj: Any) -> None:
        """An object deleted (`obj` is its last known state)."""
        meta = obj.metadata
        if resource == PERSISTENT_VOLUME_CLAIM:
            key = f"{meta.namespace}/{meta.name}"
            self.pvcs.pop(key, None)
            self._assumed_pvcs.pop(key, None)
        elif resource == PERSISTENT_VOLUME:
            old = self.pvs.pop(meta.name, None)
            if old is not None:
                self._unindex_pv(old)
            self._assumed_pvs.pop(meta.name, None)
        elif resource == STORAGE_CLASS:
            self.classes.pop(meta.name, None)
        elif resource == CSI_NODE:
            self.csinodes.pop(meta.name, None)
        elif resource == CSI_DRIVER:
            self.csidrivers.pop(meta.name, None)
        elif resource == CSI_STORAGE_CAPACITY:
            self.capacities.pop(f"{meta.namespace}/{meta.name}", None)
        elif resource == VOLUME_ATTACHMENT:
            old_va = self.attachments.pop(meta.name, None)
            if old_va is not None:
                self._unindex_attachment(old_va)
        else:
            return
        self._changed(resource, obj)

    def _unindex_pv(self, pv: PersistentVolume) -> None:
        names = self.pvs_by_class.get(volume_class(pv))
        if names is not None:
            names.pop(pv.metadata.name, None)
            if not names:
                del self.pvs_by_class[volume_class(pv)]

    def _unindex_attachment(self, va: VolumeAttachment) -> None:
        names = self.attachments_by_node.get(va.spec.node_name)
        if names is not None:
            names.pop(va.metadata.name, None)
            if not names:
                del self.attachments_by_node[va.spec.node_name]

    @staticmethod
    def _expire(assumed: dict[str, Any], key: str, obj: Any) -> None:
        """An informer update drops the assumed object unless it is a resync of the very version
        it was assumed from (kube's mayExpire)."""
        held = assumed.get(key)
        if held is not None and held.metadata.resource_version != obj.metadata.resource_version:
            del assumed[key]

    def _record(self, resource: str, obj: Any) -> None:
        self.generation += 1
        self.journal.append((self.generation, resource, obj))

    def _changed(self, resource: str, obj: Any) -> None:
        self._record(resource, obj)
        for waiter in list(self._waiters.values()):
            try:
                waiter()
            except Exception:  # a waiter's bug must not break event delivery
                log.exception("storage waiter failed")

    # --- waiting for changes -----------------------------------------------------------------------

    def subscribe(self, waiter: Waiter) -> Callable[[], None]:
        """Calls `waiter` after every change (storage objects, pods with volumes leaving nodes);
        returns the function that unsubscribes it."""
        token = self._next_waiter
        self._next_waiter += 1
        self._waiters[token] = waiter
        return lambda: self._waiters.pop(token, None)  # type: ignore[return-value]

    # --- reads: claims and volumes, assumed or as the informer has them -------------------------------

    def pvc(self, key: str) -> PersistentVolumeClaim | None:
        """The informer's claim (kube's PVC lister; the assume cache's GetAPIObj)."""
        return self.pvcs.get(key)

    def get_pvc(self, key: str) -> PersistentVolumeClaim | None:
        """The assumed claim while it is current, else the informer's (the assume cache's Get)."""
        obj = self.pvcs.get(key)
        if obj is None:
            return None
        held = self._assumed_pvcs.get(key)
        return held if held is not None and held.metadata.resource_version == obj.metadata.resource_version else obj

    def pv(self, name: str) -> PersistentVolume | None:
        return self.pvs.get(name)

    def get_pv(self, name: str) -> PersistentVolume | None:
        obj = self.pvs.get(name)
        if obj is None:
            return None
        held = self._assumed_pvs.get(name)
        return held if held is not None and held.metadata.resource_version == obj.metadata.resource_version else obj

    def list_pvs(self, storage_class: str) -> list[PersistentVolume]:
        """The PVs of a class (by the informer object's class), assumed versions in place, in name
        order (kube's index has no order; a fixed one keeps runs reproducible)."""
        names = self.pvs_by_class.get(storage_class)
        if not names:
            return []
        out = []
        for name in sorted(names):
            pv = self.get_pv(name)
            if pv is not None:
                out.append(pv)
        return out

    def assume_pv(self, pv: PersistentVolume) -> None:
        self._assume(self._assumed_pvs, self.pvs, pv.metadata.name, pv)

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self._assume(self._assumed_pvcs, self.pvcs, f"{pvc.metadata.namespace}/{pvc.metadata.name}", pvc)

    def _assume(self, assumed: dict[str, Any], store: dict[str, Any], key: str, obj: Any) -> None:
        stored = store.get(key)
        if stored is None:
            kind = "persistentvolumes" if store is self.pvs else "persistentvolumeclaims"
            raise AssumeError(f'{kind} "{key}" not found')
        if stored.metadata.resource_version != obj.metadata.resource_version:
            raise AssumeError(f'"{key}" is out of sync (stored: {stored.metadata.resource_version}, '
                              f"assume: {obj.metadata.resource_version})")
        assumed[key] = obj
        self._record(PERSISTENT_VOLUME if store is self.pvs else PERSISTENT_VOLUME_CLAIM, obj)

    def restore_pv(self, pv: PersistentVolume) -> None:
        self._restore(self._assumed_pvs, PERSISTENT_VOLUME, pv.metadata.name, pv)

    def restore_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self._restore(self._assumed_pvcs, PERSISTENT_VOLUME_CLAIM, f"{pvc.metadata.namespace}/{pvc.metadata.name}", pvc)

    def _restore(self, assumed: dict[str, Any], resource: str, key: str, obj: Any) -> None:
        held = assumed.get(key)
        if held is not None and held.metadata.resource_version == obj.metadata.resource_version:
            del assumed[key]
            self._record(resource, obj)

    def storage_class(self, name: str) -> StorageClass | None:
        return self.classes.get(name)

    def csinode(self, node: str) -> CSINode | None:
        return self.csinodes.get(node)

    def csidriver(self, name: str) -> CSIDriver | None:
        return self.csidrivers.get(name)

    def attachments_on(self, node: str) -> list[VolumeAttachment]:
        return [self.attachments[n] for n in self.attachments_by_node.get(node, ())]

    def claim_used_by_pods(self, key: str) -> bool:
        """Whether a pod placed on a node (bound or assumed) references the claim (kube's
        IsPVCUsedByPods, over persistentVolumeClaim volumes)."""
        return self.claim_users.get(key, 0) > 0

    # --- pods on nodes (the cache's PodListener) --------------------------------------------------------

    def pod_placed(self, pi: PodInfo, row: int, assumed: bool) -> None:
        if not pi.pod.spec.volumes:
            return
        volumes = pod_volumes(pi)
        if not (volumes.claims or volumes.disks) or pi.uid in self._placed:
            return
        node = self._table.name_of(row)
        self._placed[pi.uid] = (node, pi)
        self.volume_pods.setdefault(node, {})[pi.uid] = pi
        for name in volumes.pvc_names:
            self.claim_users[f"{pi.namespace}/{name}"] += 1

    def pod_removed(self, uid: str) -> None:
        entry = self._placed.pop(uid, None)
        if entry is None:
            return
        node, pi = entry
        pods = self.volume_pods.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self.volume_pods[node]
        for name in pod_volumes(pi).pvc_names:
            key = f"{pi.namespace}/{name}"
            self.claim_users[key] -= 1
            if self.claim_users[key] <= 0:
                del self.claim_users[key]
        self._changed(POD_LEFT_NODE, pi)

    def pods_with_volumes(self, node: str) -> list[PodInfo]:
        return list(self.volume_pods.get(node, {}).values())
