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
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.api.objects import LabelSelector
from kubesched.api.podinfo import PodInfo
from kubesched.api.selectors import Requirement, Selector, SelectorError, compile_label_selector
from kubesched.api.storage import (
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    MIGRATED_PLUGINS_ANNOTATION,
    NOT_SUPPORTED_PROVISIONER,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_AVAILABLE,
    VOLUME_BINDING_WAIT,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    StorageWriteError,
    TopologySelectorTerm,
    bind_volume_to_claim,
    claim_class,
    claim_fully_bound,
    claim_request,
    ephemeral_claim_error,
    quantity,
    quantity_value,
    resource_version_newer,
    volume_bound_to_claim,
    volume_class,
    with_annotation,
)
from kubesched.cache import labels
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.storage import AssumeError, StorageIndex, pod_volumes
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Plugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins import resourcescoring as rs
from kubesched.plugins.nodeaffinity import Term, parse_node_selector
from kubesched.plugins.noderesourcesfit import UtilizationShapePoint

NAME = "VolumeBinding"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
POLL_INTERVAL = 1.0  # kube's binder checks the bindings once a second

# Bits of a row's filter code, in kube's order of reasons; codes from _ERROR on name an error.
_NODE_CONFLICT, _BIND_CONFLICT, _NOT_ENOUGH_SPACE, _PV_NOT_EXIST = 1, 2, 4, 8
_REASONS = ((_NODE_CONFLICT, ERR_REASON_NODE_CONFLICT), (_BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
            (_NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE), (_PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST))
_ERROR = 16


# --- args ----------------------------------------------------------------------------------------


def _default_shape() -> list[UtilizationShapePoint]:
    return [UtilizationShapePoint(utilization=0, score=rs.MAX_CUSTOM_PRIORITY_SCORE),
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
        for i in range(1, len(shape)):
            if shape[i - 1].utilization >= shape[i].utilization:
                raise ValueError(f"shape[{i}].utilization: Invalid value: {shape[i].utilization}: "
                                 "values must be sorted in increasing order")
        for i, p in enumerate(shape):
            if not 0 <= p.utilization <= rs.MAX_UTILIZATION:
                raise ValueError(f"shape[{i}].utilization: Invalid value: {p.utilization}: not in valid range [0, 100]")
            if not 0 <= p.score <= rs.MAX_CUSTOM_PRIORITY_SCORE:
                raise ValueError(f"shape[{i}].score: Invalid value: {p.score}: not in valid range [0, 10]")
        return shape


# --- node affinity of PVs and topology of classes -------------------------------------------------


def pv_terms(pv: PersistentVolume) -> tuple[Term, ...] | None:
    """The PV's required node affinity, parsed; None when it has none (every node matches)."""
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return None
    return parse_node_selector(affinity.required)


def _term_matches_labels(term: Term, node_labels: dict[str, str]) -> bool:
    if term.errors or (not term.labels and not term.fields):
        return False
    if not all(req.matches(node_labels) for req in term.labels):
        return False
    # kube checks a PV against a node made of the labels alone: its fields read "".
    return all((f.value == "") == (f.operator == "In") for f in term.fields)


def check_node_affinity(pv: PersistentVolume, node_labels: dict[str, str]) -> bool:
    """component-helpers' CheckNodeAffinity (True: no error)."""
    terms = pv_terms(pv)
    return terms is None or any(_term_matches_labels(t, node_labels) for t in terms)


def _terms_mask(table: NodeTable, terms: tuple[Term, ...]) -> np.ndarray:
    size = table.size
    out = np.zeros(size, dtype=bool)
    for term in terms:
        if term.errors or (not term.labels and not term.fields):
            continue
        if not all((f.value == "") == (f.operator == "In") for f in term.fields):
            continue
        mask = np.ones(size, dtype=bool)
        for req in term.labels:
            mask &= labels.requirement_mask(table, req)
        out |= mask
    return out


def topology_mask(table: NodeTable, terms: Sequence[TopologySelectorTerm]) -> np.ndarray:
    """kube's MatchTopologySelectorTerms over every row: no terms match everything; an empty or
    invalid term (a requirement without values) matches nothing; requirements are `key In values`."""
    size = table.size
    if not terms:
        return np.ones(size, dtype=bool)
    out = np.zeros(size, dtype=bool)
    for term in terms:
        reqs = term.match_label_expressions
        if not reqs or any(not r.values for r in reqs):
            continue
        mask = np.ones(size, dtype=bool)
        for r in reqs:
            mask &= labels.requirement_mask(table, Requirement(r.key, "In", frozenset(r.values)))
        out |= mask
    return out


def topology_matches(terms: Sequence[TopologySelectorTerm], node_labels: dict[str, str]) -> bool:
    if not terms:
        return True
    for term in terms:
        reqs = term.match_label_expressions
        if reqs and all(r.values and node_labels.get(r.key) in r.values for r in reqs):
            return True
    return False


MAX_CACHED_MASKS = 20_000


class _Masks:
    """Node masks of PVs' node affinity and capacities' topology, kept while the nodes stay the same
    (one per object, replaced when its resourceVersion changes; bounded, so a long run stays flat)."""

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._masks: dict[tuple[str, str], tuple[str, np.ndarray]] = {}

    def _get(self, table: NodeTable, key: tuple[str, str], version: str) -> np.ndarray | None:
        fresh = (id(table), table.node_generation, table.size)
        if fresh != self._key or len(self._masks) > MAX_CACHED_MASKS:
            self._key, self._masks = fresh, {}
        held = self._masks.get(key)
        return held[1] if held is not None and held[0] == version else None

    def pv(self, table: NodeTable, pv: PersistentVolume) -> np.ndarray:
        key, version = ("pv", pv.metadata.name), pv.metadata.resource_version
        mask = self._get(table, key, version)
        if mask is None:
            terms = pv_terms(pv)
            mask = np.ones(table.size, dtype=bool) if terms is None else _terms_mask(table, terms)
            self._masks[key] = (version, mask)
        return mask

    def capacity(self, table: NodeTable, cap: CSIStorageCapacity, selector: Selector | None) -> np.ndarray:
        key = ("capacity", f"{cap.metadata.namespace}/{cap.metadata.name}")
        version = cap.metadata.resource_version
        mask = self._get(table, key, version)
        if mask is None:
            mask = np.zeros(table.size, dtype=bool) if selector is None else _selector_mask(table, selector)
            self._masks[key] = (version, mask)
        return mask


def _selector_mask(table: NodeTable, selector: Selector) -> np.ndarray:
    if selector.nothing:
        return np.zeros(table.size, dtype=bool)
    mask = np.ones(table.size, dtype=bool)
    for req in selector.requirements:
        mask &= labels.requirement_mask(table, req)
    return mask


def _capacity_selector(cap: CSIStorageCapacity) -> Selector | None:
    """The capacity's node topology as a selector; None: no topology (available nowhere) or one
    that does not parse (kube logs it and treats the node as without access)."""
    if cap.node_topology is None:
        return None
    try:
        return compile_label_selector(cap.node_topology, none_matches_nothing=False)
    except SelectorError:
        return None


def capacity_limit(cap: CSIStorageCapacity) -> Decimal | None:
    """kube's volumeLimit: maximumVolumeSize when set, else capacity; None when neither."""
    raw = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
    if raw is None:
        return None
    return quantity({"q": raw}, "q")


# --- what PreFilter and Filter find ----------------------------------------------------------------


@dataclass(slots=True)
class PodClaims:
    """kube's PodVolumeClaims: the pod's claims sorted by what binding needs."""

    bound: list[PersistentVolumeClaim]
    delayed: list[PersistentVolumeClaim]  # unbound, WaitForFirstConsumer
    volumes: dict[str, list[PersistentVolume]]  # class -> its PVs (assumed versions included)


@dataclass(slots=True)
class Binding:
    pv: PersistentVolume
    pvc: PersistentVolumeClaim


@dataclass(slots=True)
class Provision:
    pvc: PersistentVolumeClaim
    capacity: CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """The volumes to bind (static) and to provision (dynamic) on one node."""

    bindings: list[Binding] = field(default_factory=list)
    provisions: list[Provision] = field(default_factory=list)


@dataclass(slots=True)
class _Found:
    """Filter's findings for every row, from which one node's PodVolumes are read back."""

    table: NodeTable
    volumes: list[PersistentVolume]  # PV registry: chosen[...] holds indices into it
    matched: list[tuple[PersistentVolumeClaim, np.ndarray]]  # claim -> chosen PV per row (-1: none)
    provisions: list[tuple[PersistentVolumeClaim, np.ndarray]]  # claim -> rows provisioning it
    capacities: list[CSIStorageCapacity]  # registry for capacity_of
    capacity_of: dict[int, np.ndarray]  # provision index -> capacity registry index per row (-1: none)

    def for_row(self, row: int) -> PodVolumes:
        out = PodVolumes()
        for pvc, chosen in self.matched:
            idx = int(chosen[row])
            if idx >= 0:
                out.bindings.append(Binding(self.volumes[idx], pvc))
        for i, (pvc, rows) in enumerate(self.provisions):
            if rows[row]:
                cap_rows = self.capacity_of.get(i)
                cap_idx = int(cap_rows[row]) if cap_rows is not None else -1
                out.provisions.append(Provision(pvc, self.capacities[cap_idx] if cap_idx >= 0 else None))
        return out


@dataclass(slots=True)
class _State:
    claims: PodClaims | None  # None: the pod has no claims
    found: _Found | None = None
    has_static: bool = False
    has_capacity: bool = False
    all_bound: bool = False
    reserved: PodVolumes | None = None  # the assumed volumes of the reserved node
    reserved_node: str = ""


# --- the plugin ------------------------------------------------------------------------------------


class VolumeBinding(
    Plugin, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions
, SignPlugin):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = VolumeBindingArgs

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.volumes(pi)]

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, dict):
            args = VolumeBindingArgs.model_validate(args)
        super().__init__(args or VolumeBindingArgs(), handle)
        self.bind_timeout = float(self.args.bind_timeout_seconds)
        self.lookup = rs.shape_lookup([(p.utilization, p.score) for p in self.args.shape])
        self._masks = _Masks()

    def _storage(self) -> StorageIndex:
        assert self.handle is not None, "VolumeBinding needs the framework handle"
        return self.handle.cache.storage

    # --- PreFilter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.pod.spec.volumes:
            return None, SKIP  # most pods: no state, Reserve and PreBind have nothing to do
        volumes = pod_volumes(pi)
        if not volumes.claims:
            return None, SKIP  # no state: Reserve and PreBind have nothing to do (kube: allBound)
        storage = self._storage()
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
        claims, immediate, error = self._pod_claims(pi)
        if error is not None:
            return None, Status.error(error, plugin=NAME)
        assert claims is not None
        if immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE, plugin=NAME)
        state.write(NAME, _State(claims))
        return None, None

    def _pod_claims(self, pi: PodInfo) -> tuple[PodClaims | None, bool, str | None]:
        """kube's GetPodVolumeClaims: (claims, whether an unbound immediate one exists, error)."""
        storage = self._storage()
        bound: list[PersistentVolumeClaim] = []
        delayed: list[PersistentVolumeClaim] = []
        immediate = False
        for claim in pod_volumes(pi).claims:
            key = f"{pi.namespace}/{claim.claim}"
            pvc = storage.get_pvc(key)
            if pvc is None:
                return None, False, f'error getting PVC "{key}": persistentvolumeclaims "{key}" not found'
            if claim.ephemeral:
                problem = ephemeral_claim_error(pi.pod, pvc)
                if problem:
                    return None, False, problem
            if claim_fully_bound(pvc):
                bound.append(pvc)
                continue
            delay, error = self._delay_binding(pvc)
            if error is not None:
                return None, False, error
            if delay and not pvc.spec.volume_name:
                delayed.append(pvc)
            else:
                immediate = True  # pre-bound claims count as immediate: the PV controller binds them
        volumes = {claim_class(pvc): storage.list_pvs(claim_class(pvc)) for pvc in delayed}
        return PodClaims(bound, delayed, volumes), immediate, None

    def _delay_binding(self, pvc: PersistentVolumeClaim) -> tuple[bool, str | None]:
        """IsDelayBindingMode: the claim's class exists and waits for the first consumer."""
        class_name = claim_class(pvc)
        if not class_name:
            return False, None
        sc = self._storage().storage_class(class_name)
        if sc is None:
            return False, None
        if sc.volume_binding_mode is None:
            return False, f'VolumeBindingMode not set for StorageClass "{class_name}"'
        return sc.volume_binding_mode == VOLUME_BINDING_WAIT, None

    # --- Filter ----------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        s = state.read(NAME)
        if not isinstance(s, _State):
            verdict = (Code.ERROR, (f"reading {NAME!r} from cycleState: not found",))
            return FilterResult(np.ones(table.size, dtype=np.uint8), lambda _c: verdict)
        if s.claims is None:
            return None
        codes, errors = self._find(s, table)
        if not (codes[: table.size].astype(bool) & table.present[: table.size]).any():
            return None

        def describe(code: int) -> tuple[Code, tuple[str, ...]]:
            if code >= _ERROR:
                return Code.ERROR, (errors[code - _ERROR],)
            return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reason for bit, reason in _REASONS if code & bit)

        return FilterResult(codes, describe)

    def _find(self, s: _State, table: NodeTable) -> tuple[np.ndarray, list[str]]:
        """kube's FindPodVolumes for every row: per-row reason bits (or an error code), with the
        matches and provisions kept in the state for Score and Reserve."""
        claims = s.claims
        assert claims is not None
        storage = self._storage()
        size = table.size
        present = table.present[:size]
        errors: list[str] = []
        codes = np.zeros(size, dtype=np.int32)

        # Bound claims: their PVs' node affinity, up to the first PV that does not exist.
        bound_ok = np.ones(size, dtype=bool)
        pv_missing: np.ndarray | None = None
        for pvc in claims.bound:
            pv = storage.get_pv(pvc.spec.volume_name)
            if pv is None:
                pv_missing = bound_ok.copy()
                break
            bound_ok &= self._masks.pv(table, pv)
        codes[~bound_ok] |= _NODE_CONFLICT
        if pv_missing is not None:
            codes[pv_missing] |= _PV_NOT_EXIST

        found = _Found(table, [], [], [], [], {})
        s.found = found
        s.has_static = s.has_capacity = False
        if not claims.delayed:
            return codes, errors

        # Claims a node was already selected for fit that node only (kube's fast path).
        scope = present.copy()
        for pvc in claims.delayed:
            selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                row = table.index.get(selected)
                keep = np.zeros(size, dtype=bool)
                if row is not None:
                    keep[row] = True
                scope &= keep
        codes[present & ~scope] |= _BIND_CONFLICT
        if not scope.any():
            return codes, errors

        # Static binding: the smallest fitting PV per claim, smallest claims first.
        to_match = sorted((p for p in claims.delayed if ANN_SELECTED_NODE not in p.metadata.annotations),
                          key=claim_request)
        taken: dict[int, np.ndarray] = {}  # PV registry index -> rows where an earlier claim took it
        registry: dict[tuple[str, str], int] = {}
        for pvc in to_match:
            chosen, error = self._match(pvc, claims, table, scope, taken, registry, found.volumes)
            if error is not None:
                errors.append(error)
                codes[scope] = _ERROR + len(errors) - 1
                return codes, errors
            found.matched.append((pvc, chosen))
            for idx in np.unique(chosen[chosen >= 0]).tolist():
                hit = chosen == idx
                taken[idx] = hit if idx not in taken else taken[idx] | hit
        if any((chosen >= 0).any() for _, chosen in found.matched):
            s.has_static = True

        # Dynamic provisioning for the claims left (and those with a selected node), in kube's
        # order: the selected ones first, then the unmatched in matching order. A row stops at its
        # first claim that cannot be provisioned.
        pending: list[tuple[PersistentVolumeClaim, np.ndarray]] = [
            (p, scope) for p in claims.delayed if ANN_SELECTED_NODE in p.metadata.annotations
        ]
        pending.extend((pvc, scope & (chosen < 0)) for pvc, chosen in found.matched)
        open_rows = scope.copy()  # rows whose provisioning has not failed yet
        for pvc, rows in pending:
            active = rows & open_rows
            if not active.any():
                continue
            verdict = self._provisionable(pvc, table, active, found)
            if isinstance(verdict, str):
                errors.append(verdict)
                codes[active] = _ERROR + len(errors) - 1
                open_rows &= ~active
                continue
            no_provision, short, ok, cap_rows = verdict
            codes[no_provision] |= _BIND_CONFLICT
            codes[short] |= _NOT_ENOUGH_SPACE
            open_rows &= ~(no_provision | short)
            found.provisions.append((pvc, ok))
            if cap_rows is not None:
                found.capacity_of[len(found.provisions) - 1] = cap_rows
                s.has_capacity = True
        return codes, errors

    def _match(
        self, pvc: PersistentVolumeClaim, claims: PodClaims, table: NodeTable, scope: np.ndarray,
        taken: dict[int, np.ndarray], registry: dict[tuple[str, str], int], volumes: list[PersistentVolume],
    ) -> tuple[np.ndarray, str | None]:
        """kube's FindMatchingVolume for one claim on every row in `scope`: the registry index of
        the PV chosen per row, -1 for none."""
        size = table.size
        chosen = np.full(size, -1, dtype=np.int64)
        selector: Selector | None = None
        if pvc.spec.selector is not None:
            try:
                selector = compile_label_selector(pvc.spec.selector, none_matches_nothing=False)
            except SelectorError as exc:
                return chosen, f"error creating internal label selector for claim: {pvc.key}: {exc}"
        requested = claim_request(pvc)
        requested_class = claim_class(pvc)
        claim_mode = pvc.spec.volume_mode or "Filesystem"
        claim_vac = pvc.spec.volume_attributes_class_name or ""
        prebound: list[int] = []
        unbound: list[tuple[Decimal, int, int]] = []
        for order, pv in enumerate(claims.volumes.get(requested_class, ())):
            if pv.spec.claim_ref is not None and not volume_bound_to_claim(pv, pvc):
                continue
            size_pv = quantity(pv.spec.capacity)
            if size_pv < requested:
                continue
            if (pv.spec.volume_mode or "Filesystem") != claim_mode:
                continue
            if (pv.spec.volume_attributes_class_name or "") != claim_vac:
                continue
            if pv.metadata.deletion_timestamp:
                continue
            key = (pv.metadata.name, pv.metadata.resource_version)
            idx = registry.get(key)
            if idx is None:
                idx = registry[key] = len(volumes)
                volumes.append(pv)
            if volume_bound_to_claim(pv, pvc):
                prebound.append(idx)
                continue
            if pv.status.phase != VOLUME_AVAILABLE:
                continue
            if selector is not None and not selector.matches(pv.metadata.labels):
                continue
            if volume_class(pv) != requested_class:
                continue
            if not set(pvc.spec.access_modes) <= set(pv.spec.access_modes):
                continue
            unbound.append((size_pv, order, idx))
        undecided = scope.copy()
        for idx in prebound:
            rows = undecided if idx not in taken else undecided & ~taken[idx]
            if not rows.any():
                continue
            # A PV pre-bound to the claim decides: that PV where its affinity admits the node,
            # no match where it does not.
            chosen[rows & self._masks.pv(table, volumes[idx])] = idx
            undecided &= ~rows
            if not undecided.any():
                return chosen, None
        for _size, _order, idx in sorted(unbound):
            rows = undecided & self._masks.pv(table, volumes[idx])
            if idx in taken:
                rows &= ~taken[idx]
            if rows.any():
                chosen[rows] = idx
                undecided &= ~rows
                if not undecided.any():
                    break
        return chosen, None

    def _provisionable(
        self, pvc: PersistentVolumeClaim, table: NodeTable, active: np.ndarray, found: _Found
    ) -> str | tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """kube's checkVolumeProvisions for one claim over the `active` rows: an error, or (rows
        where it cannot be provisioned, rows short of capacity, rows where it can, the capacity
        registry index per row when capacity is tracked)."""
        class_name = claim_class(pvc)
        if not class_name:
            return f'no class for claim "{pvc.key}"'
        storage = self._storage()
        sc = storage.storage_class(class_name)
        if sc is None:
            return f'failed to find storage class "{class_name}"'
        nothing = np.zeros(table.size, dtype=bool)
        provisioner = sc.provisioner
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return active, nothing, nothing, None
        topo = topology_mask(table, sc.allowed_topologies)
        no = active & ~topo
        candidates = active & topo
        # Capacity tracking, for CSI drivers that opt in and claims that request a size.
        driver = storage.csidriver(provisioner)
        request = pvc.spec.resources.requests.get("storage")
        if request is None or driver is None or not driver.spec.storage_capacity:
            return no, nothing, candidates, None
        size_bytes = quantity_value(pvc.spec.resources.requests)
        cap_rows = np.full(table.size, -1, dtype=np.int64)
        undecided = candidates.copy()
        for key in sorted(storage.capacities):
            cap = storage.capacities[key]
            limit = capacity_limit(cap)
            if cap.storage_class_name != sc.metadata.name or limit is None or limit < size_bytes:
                continue
            rows = undecided & self._masks.capacity(table, cap, _capacity_selector(cap))
            if rows.any():
                cap_rows[rows] = len(found.capacities)
                found.capacities.append(cap)
                undecided &= ~rows
        return no, undecided, candidates & ~undecided, cap_rows

    # --- Score -----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        s = state.read(NAME)
        # Scores would all be 0 without static bindings or tracked capacity: skipping is the same.
        if not isinstance(s, _State) or s.found is None or not (s.has_static or s.has_capacity):
            return SKIP
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        s = state.read(NAME)
        n = rows.size
        if not isinstance(s, _State) or s.found is None:
            return np.zeros(n, dtype=np.int64)
        found = s.found
        # Per storage class: requested and capacity summed over the row's static bindings.
        requested: dict[str, np.ndarray] = {}
        capacity: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        static = np.zeros(n, dtype=bool)
        for pvc, chosen in found.matched:
            picks = chosen[rows]
            has = picks >= 0
            if not has.any():
                continue
            static |= has
            want = quantity_value(pvc.spec.resources.requests)
            for idx in np.unique(picks[has]).tolist():
                pv = found.volumes[idx]
                cls = pv.spec.storage_class_name
                hit = picks == idx
                req = requested.setdefault(cls, np.zeros(n, dtype=np.int64))
                cap = capacity.setdefault(cls, np.zeros(n, dtype=np.int64))
                req[hit] += want
                cap[hit] += quantity_value(pv.spec.capacity)
                present.setdefault(cls, np.zeros(n, dtype=bool))[hit] = True
        # Rows without static bindings: the capacity of the volumes to provision, per class.
        dyn_req: dict[str, np.ndarray] = {}
        dyn_cap: dict[str, np.ndarray] = {}
        dyn_present: dict[str, np.ndarray] = {}
        for i, (pvc, prov_rows) in enumerate(found.provisions):
            cap_rows = found.capacity_of.get(i)
            if cap_rows is None:
                continue
            picks = np.where(prov_rows[rows] & ~static, cap_rows[rows], -1)
            has = picks >= 0
            if not has.any():
                continue
            cls = pvc.spec.storage_class_name or ""
            req = dyn_req.setdefault(cls, np.zeros(n, dtype=np.int64))
            cap = dyn_cap.setdefault(cls, np.zeros(n, dtype=np.int64))
            dyn_present.setdefault(cls, np.zeros(n, dtype=bool))[has] = True
            req[has] += quantity_value(pvc.spec.resources.requests)
            for idx in np.unique(picks[has]).tolist():
                raw = found.capacities[idx].capacity
                cap[picks == idx] = quantity_value({"q": raw}, "q") if raw is not None else 0  # kube assigns, not adds
        total = np.zeros(n, dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        for groups in ((requested, capacity, present), (dyn_req, dyn_cap, dyn_present)):
            for cls, req in groups[0].items():
                cap = groups[1][cls]
                where = groups[2][cls]
                safe = np.maximum(cap, 1)
                util = np.where((cap == 0) | (req > cap), rs.MAX_UTILIZATION, req * rs.MAX_UTILIZATION // safe)
                total += np.where(where, self.lookup[np.clip(util, 0, rs.MAX_UTILIZATION)], 0)
                count += where
        # math.Round of the mean: half away from zero (scores are non-negative).
        safe = np.maximum(count, 1)
        q, r = np.divmod(total, safe)
        return np.where(count > 0, q + (2 * r >= safe), 0).astype(np.int64)

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
        if self._all_bound(pi):
            s.all_bound = True
            return None
        storage = self._storage()
        assumed = PodVolumes()
        try:
            for binding in volumes.bindings:
                new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
                if dirty:
                    storage.assume_pv(new_pv)
                assumed.bindings.append(Binding(new_pv, binding.pvc))
            for provision in volumes.provisions:
                claim = with_annotation(provision.pvc, ANN_SELECTED_NODE, node)
                storage.assume_pvc(claim)
                assumed.provisions.append(Provision(claim))
        except AssumeError as exc:
            self._revert(assumed)
            s.reserved = None
            return Status.error(str(exc))
        s.reserved = assumed
        s.all_bound = False
        return None

    def _all_bound(self, pi: PodInfo) -> bool:
        """arePodVolumesBound: every claim of the pod fully bound (assumed versions count)."""
        storage = self._storage()
        for claim in pod_volumes(pi).claims:
            pvc = storage.get_pvc(f"{pi.namespace}/{claim.claim}")
            if pvc is None or not claim_fully_bound(pvc):
                return False
            if claim.ephemeral and ephemeral_claim_error(pi.pod, pvc):
                return False
        return True

    def _revert(self, volumes: PodVolumes) -> None:
        storage = self._storage()
        for binding in volumes.bindings:
            storage.restore_pv(binding.pv)
        for provision in volumes.provisions:
            storage.restore_pvc(provision.pvc)

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        s = state.read(NAME)
        if isinstance(s, _State) and s.reserved is not None:
            self._revert(s.reserved)

    # --- PreBind ---------------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, _State) or s.all_bound:
            return None
        volumes = s.reserved
        if volumes is None or s.reserved_node != node:
            return Status.error(f'no pod volume found for node "{node}"')
        assert self.handle is not None
        error = await self._write(volumes)
        if error is not None:
            return Status.error(error)
        return await self._wait(pi, node, volumes)

    async def _write(self, volumes: PodVolumes) -> str | None:
        """kube's bindAPIUpdate: the PVs bound to their claims, then the claims to provision
        annotated; what was not written is restored in the storage index."""
        assert self.handle is not None
        done_bindings = done_provisions = 0
        try:
            for i, binding in enumerate(volumes.bindings):
                volumes.bindings[i] = Binding(await self.handle.update_persistent_volume(binding.pv), binding.pvc)
                done_bindings += 1
            for i, provision in enumerate(volumes.provisions):
                volumes.provisions[i] = Provision(await self.handle.update_persistent_volume_claim(provision.pvc))
                done_provisions += 1
        except StorageWriteError as exc:
            self._revert(PodVolumes(volumes.bindings[done_bindings:], volumes.provisions[done_provisions:]))
            return str(exc)
        return None

    async def _wait(self, pi: PodInfo, node: str, volumes: PodVolumes) -> Status | None:
        """Until every claim is bound (kube's checkBindings), a check fails, or the bind timeout."""
        assert self.handle is not None
        clock = self.handle.clock
        storage = self._storage()
        deadline = clock.now() + self.bind_timeout
        loop = asyncio.get_running_loop()
        while True:
            if self.bind_timeout <= 0:
                return Status.error("binding volumes: context deadline exceeded")
            done, error = self._check(pi, node, volumes)
            if error is not None:
                return Status.error(f"binding volumes: {error}")
            if done:
                return None
            now = clock.now()
            if now >= deadline:
                return Status.error("binding volumes: context deadline exceeded")
            woken: asyncio.Future[None] = loop.create_future()

            def wake(fut: asyncio.Future[None] = woken) -> None:
                if not fut.done():
                    fut.set_result(None)

            unsubscribe = storage.subscribe(wake)
            timer = clock.call_at(min(now + POLL_INTERVAL, deadline), wake)
            try:
                await woken
            finally:
                timer.cancel()
                unsubscribe()

    def _check(self, pi: PodInfo, node_name: str, volumes: PodVolumes) -> tuple[bool, str | None]:
        """kube's checkBindings against the informers' objects: (all bound, error)."""
        assert self.handle is not None
        cache = self.handle.cache
        storage = cache.storage
        row = cache.table.index.get(node_name)
        if row is None:
            return False, f'failed to get node "{node_name}": node "{node_name}" not found'
        node_labels = cache.table.node_labels[row]
        if cache.node_of(pi.uid) is None:
            return False, f'pod does not exist any more: pod "{pi.pod.metadata.name}" not found'
        for binding in volumes.bindings:
            pv = storage.pv(binding.pv.metadata.name)
            if pv is None:
                return False, f'failed to check binding: persistentvolumes "{binding.pv.metadata.name}" not found'
            pvc = storage.pvc(binding.pvc.key)
            if pvc is None:
                return False, f'failed to check binding: persistentvolumeclaims "{binding.pvc.key}" not found'
            if resource_version_newer(binding.pv.metadata.resource_version, pv.metadata.resource_version):
                return False, None
            if not check_node_affinity(pv, node_labels):
                return False, (f'pv "{pv.metadata.name}" node affinity doesn\'t match node "{node_name}": '
                               "no matching NodeSelectorTerms")
            if pv.spec.claim_ref is None or not pv.spec.claim_ref.uid:
                return False, f'ClaimRef got reset for pv "{pv.metadata.name}"'
            if not claim_fully_bound(pvc):
                return False, None
        for provision in volumes.provisions:
            claim = provision.pvc
            pvc = storage.pvc(claim.key)
            if pvc is None:
                return False, f'failed to check provisioning pvc: persistentvolumeclaims "{claim.key}" not found'
            if resource_version_newer(claim.metadata.resource_version, pvc.metadata.resource_version):
                return False, None
            if not pvc.metadata.annotations:
                return False, f'selectedNode annotation reset for PVC "{pvc.metadata.name}"'
            if pvc.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
                return False, f'provisioning failed for PVC "{pvc.metadata.name}"'
            if pvc.spec.volume_name:
                pv = storage.pv(pvc.spec.volume_name)
                if pv is None:
                    return False, None
                if not check_node_affinity(pv, node_labels):
                    return False, (f'pv "{pv.metadata.name}" node affinity doesn\'t match node "{node_name}": '
                                   "no matching NodeSelectorTerms")
            if not claim_fully_bound(pvc):
                return False, None
        return True, None

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
        if new is None or new.metadata.namespace != pi.namespace:
            return QueueingHint.QueueSkip
        if any(claim.claim == new.metadata.name for claim in pod_volumes(pi).claims):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

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


__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "LabelSelector",
    "VolumeBinding",
    "VolumeBindingArgs",
    "check_node_affinity",
    "topology_matches",
]
