"""NodeVolumeLimits: a node attaches at most its CSINode's allocatable count of volumes per CSI
driver, as kube-scheduler's NodeVolumeLimits (CSILimits) counts them.

The pod's new volumes are its claims' CSI volumes (the bound PV's driver and handle; for an
unbound claim, its class's provisioner); volumes already used on the node by placed pods, and
those VolumeAttachments report attached there, count against the limit; a volume already on the
node is not counted twice. Over the limit: `node(s) exceed max volume count`. A CSIDriver with
preventPodSchedulingIfMissing keeps pods off nodes whose CSINode does not list it
(`<driver> CSI driver is not installed on the node`; VolumeLimitScaling, on in v1.37).

In-tree volumes migrated to CSI (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx, as PVs or inline
where the pod spec carries them) count under their CSI driver's name on nodes that have a
CSINode, with the in-tree volume's id as the handle.

Nodes without a CSINode have no limits: they are judged all at once. What the pods on each node
with a CSINode attach is kept between cycles (helper.attachedvolumes) and redone only for the nodes
a change touches, so a cycle's verdict is a few vector operations.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod, Volume
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import (
    CSI_NODE,
    PERSISTENT_VOLUME_CLAIM,
    VOLUME_ATTACHMENT,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    VolumeAttachment,
    claim_class,
    ephemeral_claim_error,
)
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.storage import StorageIndex, pod_volumes
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, SignPlugin
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.helper.attachedvolumes import AttachedVolumes, NodeCount, claim_read, class_read, volume_read
from kubesched.plugins.helper.volumes import claim_of_pod, pod_of, storage_index

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

# In-tree plugin -> the CSI driver it migrated to (csi-translation-lib), for the plugins whose
# migration kube-scheduler considers on.
IN_TREE_TO_CSI = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}


class _LookupError(Exception):
    """A claim the new pod needs cannot be read: kube stops the Filter with it."""

    def __init__(self, message: str, not_found: bool) -> None:
        super().__init__(message)
        self.not_found = not_found


def _pv_in_tree(pv: PersistentVolume) -> tuple[str, str] | None:
    """(CSI driver, handle) of a PV of a migrated in-tree plugin."""
    spec = pv.spec
    for source, plugin, key in (
        (spec.aws_elastic_block_store, "kubernetes.io/aws-ebs", "volumeID"),
        (spec.gce_persistent_disk, "kubernetes.io/gce-pd", "pdName"),
        (spec.azure_disk, "kubernetes.io/azure-disk", "diskURI"),
        (spec.cinder, "kubernetes.io/cinder", "volumeID"),
        (spec.portworx_volume, "kubernetes.io/portworx-volume", "volumeID"),
    ):
        if source is not None:
            return IN_TREE_TO_CSI[plugin], _ebs_id(str(source.get(key, ""))) if plugin.endswith("aws-ebs") else str(
                source.get(key, ""))
    return None


def _ebs_id(volume_id: str) -> str:
    """An EBS volume id as the CSI driver knows it ("aws://zone/vol-1" -> "vol-1")."""
    return volume_id.rsplit("/", 1)[-1] if volume_id.startswith("aws://") else volume_id


def _inline_in_tree(volume: Volume) -> tuple[str, str] | None:
    if volume.aws_elastic_block_store is not None:
        return IN_TREE_TO_CSI["kubernetes.io/aws-ebs"], _ebs_id(volume.aws_elastic_block_store.volume_id)
    if volume.gce_persistent_disk is not None:
        return IN_TREE_TO_CSI["kubernetes.io/gce-pd"], volume.gce_persistent_disk.pd_name
    return None


@dataclass(frozen=True, slots=True)
class _Limits:
    """A CSINode's volume limits per driver."""

    csinode: CSINode
    limits: dict[str, int]


class NodeVolumeLimits(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.volumes(pi)]

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        # Unbound claims are counted under a made-up handle (kube: a random prefix per plugin).
        self.random_prefix = uuid.uuid4().hex
        self._attached: AttachedVolumes | None = None

    def _storage(self) -> StorageIndex:
        return storage_index(self.handle, NAME)

    # --- PreFilter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.pod.spec.volumes:
            return None, SKIP  # most pods: nothing to derive
        volumes = pod_volumes(pi)
        if volumes.claims or any(_inline_in_tree(v) is not None for v in volumes.disks):
            return None, None
        return None, SKIP

    # --- counting --------------------------------------------------------------------------------

    def _attachable(self, pod: Pod, new_pod: bool, into: dict[str, str], reads: set[str] | None = None,
                    without_csinode: dict[str, str] | None = None) -> None:
        """kube's filterAttachableVolumes: the pod's CSI volumes as unique name -> driver, as counted
        on a node with a CSINode (`into`) and, in the same walk, on one without (`without_csinode`:
        there in-tree volumes are not migrated, so they do not count); `reads` collects the storage
        objects looked at (found or not)."""
        storage = self._storage()
        namespace = pod.metadata.namespace
        for volume in pod.spec.volumes:
            ephemeral = False
            if volume.persistent_volume_claim is not None:
                claim = volume.persistent_volume_claim.claim_name
            elif volume.ephemeral is not None:
                claim = f"{pod.metadata.name}-{volume.name}"
                ephemeral = True
            else:
                inline = _inline_in_tree(volume)
                if inline is not None:
                    into[f"{inline[0]}/{inline[1]}"] = inline[0]
                continue
            if not claim:
                raise _LookupError("PersistentVolumeClaim had no name", False)
            if reads is not None:
                reads.add(claim_read(f"{namespace}/{claim}"))
            pvc = storage.pvc(f"{namespace}/{claim}")
            if pvc is None:
                if new_pod:
                    raise _LookupError(f'looking up PVC {namespace}/{claim}: persistentvolumeclaim "{claim}" not found', True)
                continue
            if ephemeral:
                problem = ephemeral_claim_error(pod, pvc)
                if problem:
                    raise _LookupError(problem, False)
            (driver, handle), in_tree = self._driver_info(pvc, reads)
            if driver and handle:
                into[f"{driver}/{handle}"] = driver
                if without_csinode is not None and not in_tree:
                    without_csinode[f"{driver}/{handle}"] = driver

    def _driver_info(self, pvc: PersistentVolumeClaim, reads: set[str] | None) -> tuple[tuple[str, str], bool]:
        """The claim's (CSI driver, volume handle), ("", "") when it counts nowhere, and whether
        that comes from migrating an in-tree volume (counted only where the node has a CSINode)."""
        storage = self._storage()
        if pvc.spec.volume_name:
            if reads is not None:
                reads.add(volume_read(pvc.spec.volume_name))
            pv = storage.pv(pvc.spec.volume_name)
            if pv is not None:
                if pv.spec.csi is not None:
                    return (pv.spec.csi.driver, pv.spec.csi.volume_handle), False
                migrated = _pv_in_tree(pv)
                return (("", ""), False) if migrated is None else (migrated, True)
        # Unbound (or its PV is gone): counted by its class's provisioner.
        class_name = claim_class(pvc)
        if class_name and reads is not None:
            reads.add(class_read(class_name))
        sc = storage.storage_class(class_name) if class_name else None
        if sc is None:
            return ("", ""), False
        handle = f"{self.random_prefix}-{pvc.metadata.namespace}/{pvc.metadata.name}"
        provisioner = sc.provisioner
        if provisioner in IN_TREE_TO_CSI:
            return (IN_TREE_TO_CSI[provisioner], handle), True
        return (provisioner, handle), False

    def _prevents_missing(self, driver: str) -> bool:
        """Whether the driver's CSIDriver keeps pods off nodes whose CSINode does not list it."""
        csidriver = self._storage().csidriver(driver)
        return csidriver is not None and bool(csidriver.spec.prevent_pod_scheduling_if_missing)

    def _count_node(self, node: str, on_node: dict[str, Any]) -> NodeCount:
        """What the node's pods (those the table has on it: preemption's trials remove victims)
        and its VolumeAttachments attach, for a node whose CSINode sets limits."""
        storage = self._storage()
        count = NodeCount()
        try:
            for existing in storage.pods_with_volumes(node):
                if existing.uid in on_node:
                    self._attachable(existing.pod, False, count.uniques, count.reads)
        except _LookupError as exc:
            count.error = str(exc)
        for driver in count.uniques.values():
            count.counts[driver] = count.counts.get(driver, 0) + 1
        for va in storage.attachments_on(node):
            if va.spec.source.persistent_volume_name:
                count.reads.add(volume_read(va.spec.source.persistent_volume_name))
            found = self._attachment_volume(va)
            if found is not None and found[0] not in count.uniques:
                count.counts[found[1]] = count.counts.get(found[1], 0) + 1
        return count

    def _attachment_volume(self, va: VolumeAttachment) -> tuple[str, str] | None:
        if not va.spec.attacher or not va.spec.source.persistent_volume_name:
            return None
        pv = self._storage().pv(va.spec.source.persistent_volume_name)
        if pv is None or pv.spec.csi is None:
            return None
        return f"{va.spec.attacher}/{pv.spec.csi.volume_handle}", va.spec.attacher

    # --- Filter ----------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        if not pi.pod.spec.volumes:
            return None
        size = table.size
        present = table.present[:size]
        new: dict[str, str] = {}
        without: dict[str, str] = {}
        try:
            self._attachable(pi.pod, True, new, without_csinode=without)
        except _LookupError as exc:  # the same on every node
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if exc.not_found else Code.ERROR
            return FilterResult.reject(present, str(exc), code)
        if not new and not without:
            return None
        if self._attached is None:
            self._attached = AttachedVolumes(self._storage(), self._count_node)
        attached = self._attached
        attached.refresh(table)
        codes = np.zeros(size, dtype=np.int32)
        verdicts: dict[tuple[Code, tuple[str, ...]], int] = {}

        def mark(rows: np.ndarray, code: Code, reason: str) -> None:
            if rows.any():
                codes[rows] = verdicts.setdefault((code, (reason,)), len(verdicts) + 1)

        with_csinode = present & attached.has_csinode[:size]
        # Nodes without a CSINode have no limits, only the drivers' installation check.
        for driver in sorted(set(without.values())):
            if self._prevents_missing(driver):
                mark(present & ~with_csinode, Code.UNSCHEDULABLE, f"{driver} CSI driver is not installed on the node")
                break
        if new:
            self._judge_counted(new, attached, with_csinode, mark)
        if not verdicts:
            return None
        return FilterResult.from_reasons(codes, {v: k for k, v in verdicts.items()})

    def _judge_counted(self, new: dict[str, str], attached: AttachedVolumes, undecided: np.ndarray,
                       mark: Callable[[np.ndarray, Code, str], None]) -> None:
        """kube's Filter on the nodes with a CSINode, in its order: drivers not installed, then
        (where the CSINode sets limits) unresolvable pods on the node, then the counts."""
        size = len(undecided)
        undecided = undecided.copy()
        for driver in sorted(set(new.values())):
            if self._prevents_missing(driver):
                missing = undecided & ~attached.listed(driver)[:size]
                mark(missing, Code.UNSCHEDULABLE, f"{driver} CSI driver is not installed on the node")
                undecided &= ~missing
        undecided &= attached.has_limits[:size]
        for row, message in attached.errors.items():
            if row < size and undecided[row]:
                mark(np.arange(size) == row, Code.ERROR, message)
                undecided[row] = False
        wanted: dict[str, int] = {}
        for driver in new.values():
            wanted[driver] = wanted.get(driver, 0) + 1
        exceeded = np.zeros(size, dtype=bool)
        for driver, count in wanted.items():
            need = np.full(size, count, dtype=np.int64)
            for unique, d in new.items():  # a volume already on the node is not counted twice
                if d == driver:
                    for row in attached.holders.get(unique, ()):
                        if row < size:
                            need[row] -= 1
            limit = attached.limit(driver)[:size]
            exceeded |= (limit >= 0) & (need > 0) & (attached.count(driver)[:size] + need > limit)
        mark(undecided & exceeded, Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    # --- events ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Any new CSINode may bring room (no hint, as kube).
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.Add)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.Update), self.is_schedulable_after_csinode_updated),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.Delete), self.is_schedulable_after_assigned_pod_deleted),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.Add), self.is_schedulable_after_claim_added),
            ClusterEventWithHint(ClusterEvent(VOLUME_ATTACHMENT, ActionType.Delete),
                                 self.is_schedulable_after_attachment_deleted),
        ]

    @staticmethod
    def is_schedulable_after_csinode_updated(pi: PodInfo, old: CSINode | None, new: CSINode | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.Queue

        def limits(c: CSINode) -> dict[str, int]:
            return {d.name: (d.allocatable.count or 0) if d.allocatable is not None else 0 for d in c.spec.drivers}

        before = limits(old)
        for driver, limit in limits(new).items():
            if limit > before.get(driver, 0):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    @staticmethod
    def is_schedulable_after_assigned_pod_deleted(pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        deleted = pod_of(old)
        if deleted is None:
            return QueueingHint.Queue
        if not deleted.spec.volumes:
            return QueueingHint.QueueSkip
        if not deleted.spec.node_name and not deleted.status.nominated_node_name:
            return QueueingHint.QueueSkip
        for v in deleted.spec.volumes:
            if v.persistent_volume_claim is not None or v.ephemeral is not None or _inline_in_tree(v) is not None:
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    @staticmethod
    def is_schedulable_after_claim_added(pi: PodInfo, old: Any, new: PersistentVolumeClaim | None) -> QueueingHint:
        return claim_of_pod(pi, new, ephemeral=True)

    @staticmethod
    def is_schedulable_after_attachment_deleted(pi: PodInfo, old: VolumeAttachment | None, new: Any) -> QueueingHint:
        for v in pi.pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                return QueueingHint.Queue
            inline = _inline_in_tree(v)
            if inline is not None and old is not None and old.spec.attacher == inline[0]:
                return QueueingHint.Queue
        return QueueingHint.QueueSkip
