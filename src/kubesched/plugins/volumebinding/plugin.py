"""VolumeBinding: a pod's PersistentVolumeClaims, bound and unbound, as kube-scheduler's
VolumeBinding plugin and volume binder handle them.

- PreFilter sorts the pod's claims (persistentVolumeClaim and generic ephemeral volumes): a
  missing, lost or deleting claim rejects the pod; an unbound claim of a class that binds
  Immediately (or of no class) rejects it with `pod has unbound immediate PersistentVolumeClaims`
  until the PV controller binds it; claims bound, and claims whose WaitForFirstConsumer class lets
  the scheduler choose, go on to Filter. A pod without claims skips everything.
- Filter, for every node at once: a bound claim's PV must admit the node by its node affinity
  (`node(s) didn't match PersistentVolume's node affinity`; a PV that does not exist:
  `node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)`); an unbound claim
  needs an available PV of its class, size (the smallest that fits), access modes, volume mode,
  selector and node affinity (a PV pre-bound to the claim wins), or else dynamic provisioning:
  a provisioner, the class's allowedTopologies admitting the node, and enough CSIStorageCapacity
  when the driver asks for capacity tracking (`node(s) did not have enough free storage`); a
  claim already annotated with a selected node only fits that node. Failing all of it:
  `node(s) didn't find available persistent volumes to bind`.
- Score (StorageCapacityScoring, on by default in v1.37): the shape of the chosen static PVs'
  utilization per class (by default fuller PVs score lower), or of the CSIStorageCapacity of the
  volumes to provision.
- Reserve assumes the chosen PVs bound (claimRef) and the claims to provision annotated with
  `volume.kubernetes.io/selected-node`, in the storage index, so the next cycles see them taken;
  Unreserve restores them. PreBind writes them through the API (as kube's binder's updates) and
  waits until the PV controller has bound every claim, or bindTimeoutSeconds (600) pass.

Per-node work is numpy over the node table: one boolean mask per PV's node affinity (cached until
nodes change), one per class topology; Python runs per PV and per claim, never per node, and only
for pods with claims.

The package is split as kube's volumebinding plugin is: this module is the plugin (its args,
reasons and extension points), binder.py the volume binder (what each node would bind or
provision, assuming, writing and waiting), scorer.py StorageCapacityScoring, masks.py the node
masks of PVs and capacities, explain.py what `kubesched explain` adds to the plugin's reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import (
    CLAIM_LOST,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    MIGRATED_PLUGINS_ANNOTATION,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    StorageClass,
    ephemeral_claim_error,
)
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.storage import AssumeError, pod_volumes
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterMisses,
    FilterPlugin,
    Plugin,
    PreBindPlugin,
    PreFilterMisses,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.helper.shape import MAX_CUSTOM_PRIORITY_SCORE, UtilizationShapePoint, check_shape, shape_lookup
from kubesched.plugins.helper.volumes import claim_of_pod
from kubesched.plugins.volumebinding import explain
from kubesched.plugins.volumebinding.binder import (
    ERROR,
    REASONS,
    Binder,
    Found,
    PodClaims,
    PodVolumes,
)
from kubesched.plugins.volumebinding.masks import capacity_limit
from kubesched.plugins.volumebinding.scorer import capacity_scores

NAME = "VolumeBinding"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT_SECONDS = 600


# --- args ----------------------------------------------------------------------------------------


def _default_shape() -> list[UtilizationShapePoint]:
    return [UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
            UtilizationShapePoint(utilization=100, score=0)]


class VolumeBindingArgs(BaseModel):
    """kube's VolumeBindingArgs: how long PreBind waits for the PV controller, and the scoring
    shape of StorageCapacityScoring (utilization 0..100 -> score 0..10)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    bind_timeout_seconds: int = Field(default=DEFAULT_BIND_TIMEOUT_SECONDS, alias="bindTimeoutSeconds")
    shape: list[UtilizationShapePoint] = Field(default_factory=_default_shape)

    @field_validator("bind_timeout_seconds")
    @classmethod
    def _check_timeout(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"bindTimeoutSeconds: Invalid value: {value}: invalid BindTimeoutSeconds, should not be a "
                             "negative value")
        return value

    @field_validator("shape", mode="before")
    @classmethod
    def _null_shape(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("shape")
    @classmethod
    def _check_shape(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        if not shape:
            return _default_shape()  # kube defaults an empty shape
        check_shape(shape)
        return shape


@dataclass(slots=True)
class _State:
    claims: PodClaims | None  # None: the pod has no claims
    found: Found | None = None
    all_bound: bool = False
    reserved: PodVolumes | None = None  # the assumed volumes of the reserved node
    reserved_node: str = ""


# --- the plugin ------------------------------------------------------------------------------------


class VolumeBinding(
    Plugin, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions,
    SignPlugin, FilterMisses, PreFilterMisses,
):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = VolumeBindingArgs

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.volumes(pi)]

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, dict):
            args = VolumeBindingArgs.model_validate(args)
        super().__init__(args or VolumeBindingArgs(), handle)
        self.bind_timeout = float(self.args.bind_timeout_seconds)
        self.lookup = shape_lookup([(p.utilization, p.score) for p in self.args.shape])
        self.binder = Binder(handle, NAME)

    # --- PreFilter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.pod.spec.volumes:
            return None, SKIP  # most pods: no state, Reserve and PreBind have nothing to do
        volumes = pod_volumes(pi)
        if not volumes.claims:
            return None, SKIP  # no state: Reserve and PreBind have nothing to do (kube: allBound)
        storage = self.binder.storage
        # podHasPVCs: every claim exists (the lister's view), is not lost or deleting, and an
        # ephemeral volume's claim belongs to the pod.
        for claim in volumes.claims:
            pvc = storage.pvc(f"{pi.namespace}/{claim.claim}")
            if pvc is None:
                if claim.ephemeral:
                    return None, Status.unresolvable(
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim.claim}"',
                        plugin=NAME)
                return None, Status.unresolvable(f'persistentvolumeclaim "{claim.claim}" not found', plugin=NAME)
            if pvc.status.phase == CLAIM_LOST:
                return None, Status.unresolvable(
                    f'persistentvolumeclaim "{pvc.metadata.name}" bound to non-existent persistentvolume '
                    f'"{pvc.spec.volume_name}"', plugin=NAME)
            if pvc.metadata.deletion_timestamp:
                return None, Status.unresolvable(f'persistentvolumeclaim "{pvc.metadata.name}" is being deleted',
                                                 plugin=NAME)
            if claim.ephemeral:
                problem = ephemeral_claim_error(pi.pod, pvc)
                if problem:
                    return None, Status.unresolvable(problem, plugin=NAME)
        claims, immediate, error = self.binder.pod_claims(pi)
        if error is not None:
            return None, Status.error(error, plugin=NAME)
        assert claims is not None
        if immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE, plugin=NAME)
        state.write(NAME, _State(claims))
        return None, None

    # --- Filter ----------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        s = state.read(NAME)
        if not isinstance(s, _State):
            verdict = (Code.ERROR, (f"reading {NAME!r} from cycleState: not found",))
            return FilterResult(np.ones(table.size, dtype=np.uint8), lambda _c: verdict)
        if s.claims is None:
            return None
        codes, errors, s.found = self.binder.find(s.claims, table)
        if not (codes[: table.size].astype(bool) & table.present[: table.size]).any():
            return None

        def describe(code: int) -> tuple[Code, tuple[str, ...]]:
            if code >= ERROR:
                return Code.ERROR, (errors[code - ERROR],)
            return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reason for bit, reason in REASONS if code & bit)

        return FilterResult(codes, describe)

    # --- what the pod lacks (explanations) --------------------------------------------------------

    def pre_filter_detail(self, state: CycleState, pi: PodInfo, status: Status) -> str:
        """Which claims are unbound and why, when PreFilter refused the pod for them."""
        if ERR_UNBOUND_IMMEDIATE not in status.reasons:
            return ""
        return explain.unbound_immediate(self.binder, pi)

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Every node is as far as the next: only the cluster's storage can change the answer."""
        return np.ones(rows.size)

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        s = state.read(NAME)
        if not isinstance(s, _State) or s.claims is None or s.found is None or s.found.table is not table:
            return ""
        return explain.on_node(self.binder, s.claims, s.found, row)

    # --- Score -----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        s = state.read(NAME)
        # Scores would all be 0 without static bindings or tracked capacity: skipping is the same.
        if not isinstance(s, _State) or s.found is None or not (s.found.has_static or s.found.has_capacity):
            return SKIP
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        s = state.read(NAME)
        if not isinstance(s, _State) or s.found is None:
            return np.zeros(rows.size, dtype=np.int64)
        return capacity_scores(s.found, rows, self.lookup)

    # --- Reserve / Unreserve ---------------------------------------------------------------------

    def reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, _State):
            return None  # a pod without claims
        s.reserved, s.reserved_node = None, node
        if s.claims is None or s.found is None:
            s.all_bound = True
            return None
        row = s.found.table.index.get(node)
        if row is None:
            s.all_bound = True
            return None
        volumes = s.found.for_row(row)
        s.reserved = volumes
        if self.binder.all_bound(pi):
            s.all_bound = True
            return None
        try:
            s.reserved = self.binder.assume(volumes, node)
        except AssumeError as exc:
            s.reserved = None
            return Status.error(str(exc))
        s.all_bound = False
        return None

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        s = state.read(NAME)
        if isinstance(s, _State) and s.reserved is not None:
            self.binder.revert(s.reserved)

    # --- PreBind ---------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, _State) or s.all_bound:
            return SKIP  # no volume to bind (a pod without claims has no state)
        if s.reserved is None or s.reserved_node != node:
            return Status.error(f'no pod volume found for node "{node}"')
        return None

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, _State) or s.all_bound:
            return None
        volumes = s.reserved
        if volumes is None or s.reserved_node != node:
            return Status.error(f'no pod volume found for node "{node}"')
        assert self.handle is not None
        return await self.binder.bind(pi, node, volumes, self.bind_timeout)

    # --- events ----------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A missing or misconfigured class (allowedTopologies) may be fixed.
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, ActionType.Add | ActionType.Update),
                                 self.is_schedulable_after_storage_class_change),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.Add | ActionType.Update),
                                 self.is_schedulable_after_claim_change),
            ClusterEventWithHint(ClusterEvent(PERSISTENT_VOLUME, ActionType.Add | ActionType.Update)),
            # Labels decide PVs' node affinity and classes' allowed topologies.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeLabel)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.Add | ActionType.Update),
                                 self.is_schedulable_after_csinode_change),
            ClusterEventWithHint(ClusterEvent(CSI_DRIVER, ActionType.Update), self.is_schedulable_after_csidriver_change),
            ClusterEventWithHint(ClusterEvent(CSI_STORAGE_CAPACITY, ActionType.Add | ActionType.Update),
                                 self.is_schedulable_after_capacity_change),
        ]

    @staticmethod
    def is_schedulable_after_claim_change(
        pi: PodInfo, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> QueueingHint:
        return claim_of_pod(pi, new, ephemeral=True)

    @staticmethod
    def is_schedulable_after_storage_class_change(
        pi: PodInfo, old: StorageClass | None, new: StorageClass | None
    ) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.Queue
        return QueueingHint.Queue if old.allowed_topologies != new.allowed_topologies else QueueingHint.QueueSkip

    @staticmethod
    def is_schedulable_after_csinode_change(pi: PodInfo, old: CSINode | None, new: CSINode | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.Queue
        before = old.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)
        after = new.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)
        return QueueingHint.Queue if before != after else QueueingHint.QueueSkip

    @staticmethod
    def is_schedulable_after_csidriver_change(pi: PodInfo, old: CSIDriver | None, new: CSIDriver | None) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.Queue
        for volume in pi.pod.spec.volumes:
            if volume.csi is None or volume.csi.driver != new.metadata.name:
                continue
            if old.spec.storage_capacity and not new.spec.storage_capacity:
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    @staticmethod
    def is_schedulable_after_capacity_change(
        pi: PodInfo, old: CSIStorageCapacity | None, new: CSIStorageCapacity | None
    ) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.Queue
        before, after = capacity_limit(old), capacity_limit(new)
        if after is not None and (before is None or after > before):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

