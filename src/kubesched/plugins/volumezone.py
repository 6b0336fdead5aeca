"""VolumeZone: a pod's bound PersistentVolumes that carry zone or region labels
(topology.kubernetes.io/zone, .../region, and their failure-domain.beta.kubernetes.io forms) keep
the pod to nodes labelled with one of those values, as kube-scheduler's VolumeZone does.

PreFilter reads the topology labels of the PVs behind the pod's persistentVolumeClaim volumes
(unbound claims of a WaitForFirstConsumer class are skipped: VolumeBinding places them); a pod
without such labels skips Filter. Filter then checks every node at once over the table's label
columns: a node without any zone or region label passes (a single-zone cluster), otherwise each
PV label must find the node's value (the GA key stands in for a beta one) among its values
(`a__b` lists several).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_BINDING_WAIT,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
)
from kubesched.cache.nodetable import ABSENT, NodeTable
from kubesched.cache.storage import StorageIndex, pod_volumes
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, SignPlugin
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.helper.volumes import claim_of_pod, storage_index

NAME = "VolumeZone"
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_GA = {LABEL_BETA_REGION: LABEL_REGION, LABEL_BETA_ZONE: LABEL_ZONE}
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv: str
    key: str
    values: frozenset[str]


def pv_topologies(pv: PersistentVolume) -> tuple[PVTopology, ...]:
    """The PV's zone and region labels (kube's getPVTopologies); a value that does not parse as a
    `__`-separated list of zones is ignored."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        zones = [z.strip() for z in value.split(MULTI_ZONE_DELIMITER)]
        if any(not z for z in zones):
            continue
        out.append(PVTopology(pv.metadata.name, key, frozenset(zones)))
    return tuple(out)


def _not_found(resource: str, name: str) -> Status:
    return Status.unresolvable(f'{resource} "{name}" not found', plugin=NAME)


class VolumeZone(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.volumes(pi)]

    def _storage(self) -> StorageIndex:
        return storage_index(self.handle, NAME)

    # --- PreFilter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.pod.spec.volumes:
            return None, SKIP  # most pods: nothing to derive
        names = pod_volumes(pi).pvc_names
        if not names:
            return None, SKIP
        topologies, status = self._topologies(pi, names)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state.write(NAME, topologies)
        return None, None

    def _topologies(self, pi: PodInfo, names: tuple[str, ...]) -> tuple[tuple[PVTopology, ...], Status | None]:
        storage = self._storage()
        out: list[PVTopology] = []
        for claim in names:
            if not claim:
                return (), Status.unresolvable("PersistentVolumeClaim had no name", plugin=NAME)
            pvc = storage.pvc(f"{pi.namespace}/{claim}")
            if pvc is None:
                return (), _not_found("persistentvolumeclaim", claim)
            pv_name = pvc.spec.volume_name
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return (), Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name", plugin=NAME)
                sc = storage.storage_class(class_name)
                if sc is None:
                    return (), _not_found("storageclass.storage.k8s.io", class_name)
                if sc.volume_binding_mode is None:
                    return (), Status.unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"', plugin=NAME)
                if sc.volume_binding_mode == VOLUME_BINDING_WAIT:
                    continue  # unbound and delayed: VolumeBinding decides
                return (), Status.unresolvable("PersistentVolume had no name", plugin=NAME)
            pv = storage.pv(pv_name)
            if pv is None:
                return (), _not_found("persistentvolume", pv_name)
            out.extend(pv_topologies(pv))
        return tuple(out), None

    # --- Filter ----------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        topologies = state.read(NAME)
        if topologies is None:
            # PreFilter did not run (a plugin-level test, say): work it out here, as kube falls back.
            names = pod_volumes(pi).pvc_names
            if not names:
                return None
            topologies, status = self._topologies(pi, names)
            if status is not None:
                verdict = (status.code, status.reasons)
                return FilterResult(np.ones(table.size, dtype=np.uint8), lambda _c: verdict)
            if not topologies:
                return None
        size = table.size
        constrained = np.zeros(size, dtype=bool)
        for key in TOPOLOGY_LABELS:
            constrained |= table.label_ids(key)[:size] != ABSENT
        ok = np.ones(size, dtype=bool)
        for topo in topologies:
            ok &= _label_in(table, topo.key, topo.values, _GA.get(topo.key))
        failed = constrained & ~ok
        if not (failed & table.present[:size]).any():
            return None
        return FilterResult.reject(failed, ERR_REASON_CONFLICT, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    # --- events ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A class that delays binding lets an unbound claim through (the mode is immutable, so
            # only new classes count).
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, ActionType.Add), self.is_schedulable_after_storage_class_added),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeLabel)),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.Add | ActionType.Update),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME, ActionType.Add | ActionType.Update), self.is_schedulable_after_volume_change
            ),
        ]

    @staticmethod
    def is_schedulable_after_claim_change(
        pi: PodInfo, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> QueueingHint:
        return claim_of_pod(pi, new, ephemeral=False)

    @staticmethod
    def is_schedulable_after_storage_class_added(pi: PodInfo, old: Any, new: StorageClass | None) -> QueueingHint:
        if new is None or new.volume_binding_mode != VOLUME_BINDING_WAIT:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    @staticmethod
    def is_schedulable_after_volume_change(
        pi: PodInfo, old: PersistentVolume | None, new: PersistentVolume | None
    ) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.Queue
        return QueueingHint.Queue if pv_topologies(old) != pv_topologies(new) else QueueingHint.QueueSkip


def _label_in(table: NodeTable, key: str, values: frozenset[str], fallback: str | None) -> np.ndarray:
    """Rows whose `key` label is one of `values`; rows without `key` read `fallback` instead."""
    size = table.size
    ids = table.label_ids(key)[:size]
    hit = _ids_in(table, key, ids, values)
    if fallback is None:
        return hit
    missing = ids == ABSENT
    if not missing.any():
        return hit
    ga = table.label_ids(fallback)[:size]
    return np.where(missing, _ids_in(table, fallback, ga, values), hit)


def _ids_in(table: NodeTable, key: str, ids: np.ndarray, values: frozenset[str]) -> np.ndarray:
    col = table.labels.get(key)
    wanted = [] if col is None else [col.vocab[v] for v in values if v in col.vocab]
    if not wanted:
        return np.zeros(ids.shape, dtype=bool)
    return np.isin(ids, wanted)
