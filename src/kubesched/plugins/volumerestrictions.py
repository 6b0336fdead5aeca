"""VolumeRestrictions: volumes that cannot be shared, as kube-scheduler's VolumeRestrictions.

- Inline disks: a GCE persistent disk (unless every pod mounts it read-only), an AWS EBS volume,
  an iSCSI IQN or an RBD image (same monitor, pool and image; unless all read-only) already used
  by a pod on a node keeps the pod off that node: `node(s) had no available disk`.
- ReadWriteOncePod claims: a claim with that access mode already used by a pod on any node
  keeps the pod off every node (`node(s) unavailable due to PersistentVolumeClaim with
  ReadWriteOncePod access mode already in-use by another pod`); preemption may help, so PreFilter
  keeps a count that AddPod/RemovePod maintain.

Pods without such volumes skip Filter. Disk conflicts are found through the storage index's
placed pods that carry volumes, never by walking every pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Pod, Volume
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import PERSISTENT_VOLUME_CLAIM, READ_WRITE_ONCE_POD, PersistentVolumeClaim
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.storage import StorageIndex, pod_volumes
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, SignPlugin
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.helper.volumes import claim_of_pod, pod_of, storage_index

NAME = "VolumeRestrictions"
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
DEFAULT_RBD_POOL = "rbd"

_DISK, _RWOP = 1, 2
_VERDICTS = {
    _DISK: (Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,)),
    _RWOP: (Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,)),
}


@dataclass(slots=True)
class _State:
    """PreFilter's: the pod's ReadWriteOncePod claims, and how many placed pods reference them."""

    rwop_claims: frozenset[str]
    conflicting: int

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicting)

    def refs(self, pod: Pod) -> int:
        return sum(
            1 for v in pod.spec.volumes
            if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in self.rwop_claims
        )


def volume_conflict(volume: Volume, pod: Pod) -> bool:
    """kube's isVolumeConflict: whether `volume` clashes with one of `pod`'s volumes."""
    for other in pod.spec.volumes:
        gce, ogce = volume.gce_persistent_disk, other.gce_persistent_disk
        if gce is not None and ogce is not None and gce.pd_name == ogce.pd_name and not (gce.read_only and ogce.read_only):
            return True
        aws, oaws = volume.aws_elastic_block_store, other.aws_elastic_block_store
        if aws is not None and oaws is not None and aws.volume_id == oaws.volume_id:
            return True
        iscsi, oiscsi = volume.iscsi, other.iscsi
        if iscsi is not None and oiscsi is not None and iscsi.iqn == oiscsi.iqn and not (iscsi.read_only and oiscsi.read_only):
            return True
        rbd, orbd = volume.rbd, other.rbd
        if (
            rbd is not None
            and orbd is not None
            and set(rbd.monitors) & set(orbd.monitors)
            and (rbd.pool or DEFAULT_RBD_POOL) == (orbd.pool or DEFAULT_RBD_POOL)
            and rbd.image == orbd.image
            and not (rbd.read_only and orbd.read_only)
        ):
            return True
    return False


class VolumeRestrictions(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.volumes(pi)]

    def _storage(self) -> StorageIndex:
        return storage_index(self.handle, NAME)

    # --- PreFilter and its extensions ------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.pod.spec.volumes:
            return None, SKIP  # most pods: nothing to derive
        volumes = pod_volumes(pi)
        if not volumes.matters:
            return None, SKIP
        storage = self._storage()
        rwop: set[str] = set()
        for claim in volumes.pvc_names:
            pvc = storage.pvc(f"{pi.namespace}/{claim}")
            if pvc is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{claim}" not found', plugin=NAME)
            if READ_WRITE_ONCE_POD in pvc.spec.access_modes:
                rwop.add(pvc.metadata.name)
        conflicting = sum(1 for claim in rwop if storage.claim_used_by_pods(f"{pi.namespace}/{claim}"))
        if not volumes.disks and conflicting == 0:
            return None, SKIP
        state.write(NAME, _State(frozenset(rwop), conflicting))
        return None, None

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        s = state.read(NAME)
        if isinstance(s, _State):
            s.conflicting += s.refs(added.pod)
        return None

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        s = state.read(NAME)
        if isinstance(s, _State):
            s.conflicting -= s.refs(removed.pod)
        return None

    def local_to_row(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> bool:
        s = state.read(NAME)  # a ReadWriteOncePod conflict refuses every node
        return isinstance(s, _State) and s.refs(added.pod) == 0

    def cannot_help_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        return True  # another pod can only add a ReadWriteOncePod conflict

    # --- Filter ----------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        s = state.read(NAME)
        if not isinstance(s, _State):
            return FilterResult(np.ones(table.size, dtype=np.uint8), lambda _c: (
                Code.ERROR, (f'cannot read "PreFilter{NAME}" from cycleState',)))
        codes: np.ndarray | None = None
        if s.conflicting > 0:
            codes = np.full(table.size, _RWOP, dtype=np.uint8)
        disks = pod_volumes(pi).disks
        if disks:
            index = table.index
            for node, pods in self._storage().volume_pods.items():
                row = index.get(node)
                if row is None:
                    continue
                # The table's pods decide (preemption's trials remove victims there).
                there = [p for uid, p in pods.items() if pod_volumes(p).disks and uid in table.pods[row]]
                if any(volume_conflict(v, p.pod) for v in disks for p in there):
                    if codes is None:
                        codes = np.zeros(table.size, dtype=np.uint8)
                    codes[row] = _DISK  # checked before the claim: it wins on that node
        if codes is None:
            return None
        return FilterResult(codes, _VERDICTS.__getitem__)

    # --- events ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A pod leaving a node releases its disks and claims (pods' volumes are immutable).
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.Delete), self.is_schedulable_after_assigned_pod_deleted),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add)),
            # The claim must exist for its access modes to be read.
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.Add), self.is_schedulable_after_claim_added),
        ]

    @staticmethod
    def is_schedulable_after_claim_added(pi: PodInfo, old: Any, new: PersistentVolumeClaim | None) -> QueueingHint:
        return claim_of_pod(pi, new, ephemeral=False)

    @staticmethod
    def is_schedulable_after_assigned_pod_deleted(pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        deleted = pod_of(old)
        if deleted is None:
            return QueueingHint.Queue
        if deleted.metadata.namespace != pi.namespace:
            return QueueingHint.QueueSkip
        if any(volume_conflict(v, deleted) for v in pod_volumes(pi).disks):
            return QueueingHint.Queue
        claims = set(pod_volumes(pi).pvc_names)
        for v in deleted.spec.volumes:
            if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in claims:
                return QueueingHint.Queue
        return QueueingHint.QueueSkip
