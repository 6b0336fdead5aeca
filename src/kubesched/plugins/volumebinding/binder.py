"""The volume binder (kube's volumebinding binder.go): a pod's claims sorted by what binding needs,
the volumes each node would bind or provision, assuming them at Reserve, and writing them and
waiting for the PV controller at PreBind.

`find` answers for every row of the node table at once: one boolean mask per PV's node affinity
and per class topology (masks.py), Python per PV and per claim, never per node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.api.selectors import Selector, SelectorError, compile_label_selector
from kubesched.api.storage import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_AVAILABLE,
    VOLUME_BINDING_WAIT,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageWriteError,
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
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.storage import AssumeError, StorageIndex, pod_volumes
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.plugins.helper.nodeselector import terms_match, topology_mask
from kubesched.plugins.helper.volumes import storage_index
from kubesched.plugins.volumebinding.masks import NodeMasks, capacity_limit, pv_terms

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
POLL_INTERVAL = 1.0  # kube's binder checks the bindings once a second

# Bits of a row's code, in kube's order of reasons; codes from ERROR on name an error.
NODE_CONFLICT, BIND_CONFLICT, NOT_ENOUGH_SPACE, PV_NOT_EXIST = 1, 2, 4, 8
REASONS = ((NODE_CONFLICT, ERR_REASON_NODE_CONFLICT), (BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
           (NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE), (PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST))
ERROR = 16


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """component-helpers' CheckNodeAffinity (True: no error): the PV's node affinity against a
    node made of the labels alone."""
    terms = pv_terms(pv)
    return terms is None or terms_match(terms, node_labels)


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
class Found:
    """Filter's findings for every row, from which one node's PodVolumes are read back."""

    table: NodeTable
    volumes: list[PersistentVolume] = field(default_factory=list)  # PV registry: chosen[...] indexes it
    matched: list[tuple[PersistentVolumeClaim, np.ndarray]] = field(default_factory=list)  # chosen PV per row (-1: none)
    provisions: list[tuple[PersistentVolumeClaim, np.ndarray]] = field(default_factory=list)  # rows provisioning it
    capacities: list[CSIStorageCapacity] = field(default_factory=list)  # registry for capacity_of
    capacity_of: dict[int, np.ndarray] = field(default_factory=dict)  # provision -> capacity index per row (-1: none)
    has_static: bool = False  # some row binds a PV
    has_capacity: bool = False  # some provision has tracked capacity

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


# (rows where a claim cannot be provisioned, rows short of capacity, rows where it can, the
# capacity registry index per row when capacity is tracked)
Provisionable = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


class Binder:
    """The binder of one VolumeBinding plugin (`plugin`: its name, in messages)."""

    def __init__(self, handle: Handle | None, plugin: str) -> None:
        self.handle = handle
        self.plugin = plugin
        self.masks = NodeMasks()

    @property
    def storage(self) -> StorageIndex:
        return storage_index(self.handle, self.plugin)

    # --- the pod's claims (PreFilter) ----------------------------------------------------------------

    def pod_claims(self, pi: PodInfo) -> tuple[PodClaims | None, bool, str | None]:
        """kube's GetPodVolumeClaims: (claims, whether an unbound immediate one exists, error)."""
        storage = self.storage
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
            delay, error = self.delay_binding(pvc)
            if error is not None:
                return None, False, error
            if delay and not pvc.spec.volume_name:
                delayed.append(pvc)
            else:
                immediate = True  # pre-bound claims count as immediate: the PV controller binds them
        volumes = {claim_class(pvc): storage.list_pvs(claim_class(pvc)) for pvc in delayed}
        return PodClaims(bound, delayed, volumes), immediate, None

    def delay_binding(self, pvc: PersistentVolumeClaim) -> tuple[bool, str | None]:
        """IsDelayBindingMode: the claim's class exists and waits for the first consumer."""
        class_name = claim_class(pvc)
        if not class_name:
            return False, None
        sc = self.storage.storage_class(class_name)
        if sc is None:
            return False, None
        if sc.volume_binding_mode is None:
            return False, f'VolumeBindingMode not set for StorageClass "{class_name}"'
        return sc.volume_binding_mode == VOLUME_BINDING_WAIT, None

    # --- every node's volumes (Filter) ----------------------------------------------------------------

    def find(self, claims: PodClaims, table: NodeTable) -> tuple[np.ndarray, list[str], Found]:
        """kube's FindPodVolumes for every row: per-row reason bits (or an error code), the errors
        those codes name, and the matches and provisions that Score and Reserve read."""
        storage = self.storage
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
            bound_ok &= self.masks.pv(table, pv)
        codes[~bound_ok] |= NODE_CONFLICT
        if pv_missing is not None:
            codes[pv_missing] |= PV_NOT_EXIST

        found = Found(table)
        if not claims.delayed:
            return codes, errors, found

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
        codes[present & ~scope] |= BIND_CONFLICT
        if not scope.any():
            return codes, errors, found

        # Static binding: the smallest fitting PV per claim, smallest claims first.
        to_match = sorted((p for p in claims.delayed if ANN_SELECTED_NODE not in p.metadata.annotations),
                          key=claim_request)
        taken: dict[int, np.ndarray] = {}  # PV registry index -> rows where an earlier claim took it
        registry: dict[tuple[str, str], int] = {}
        for pvc in to_match:
            chosen, error = self._match(pvc, claims, table, scope, taken, registry, found.volumes)
            if error is not None:
                errors.append(error)
                codes[scope] = ERROR + len(errors) - 1
                return codes, errors, found
            found.matched.append((pvc, chosen))
            for idx in np.unique(chosen[chosen >= 0]).tolist():
                hit = chosen == idx
                taken[idx] = hit if idx not in taken else taken[idx] | hit
        if any((chosen >= 0).any() for _, chosen in found.matched):
            found.has_static = True

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
            verdict = self.provisionable(pvc, table, active, found)
            if isinstance(verdict, str):
                errors.append(verdict)
                codes[active] = ERROR + len(errors) - 1
                open_rows &= ~active
                continue
            no_provision, short, ok, cap_rows = verdict
            codes[no_provision] |= BIND_CONFLICT
            codes[short] |= NOT_ENOUGH_SPACE
            open_rows &= ~(no_provision | short)
            found.provisions.append((pvc, ok))
            if cap_rows is not None:
                found.capacity_of[len(found.provisions) - 1] = cap_rows
                found.has_capacity = True
        return codes, errors, found

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
            chosen[rows & self.masks.pv(table, volumes[idx])] = idx
            undecided &= ~rows
            if not undecided.any():
                return chosen, None
        for _size, _order, idx in sorted(unbound):
            rows = undecided & self.masks.pv(table, volumes[idx])
            if idx in taken:
                rows &= ~taken[idx]
            if rows.any():
                chosen[rows] = idx
                undecided &= ~rows
                if not undecided.any():
                    break
        return chosen, None

    def provisionable(self, pvc: PersistentVolumeClaim, table: NodeTable, active: np.ndarray,
                      found: Found) -> str | Provisionable:
        """kube's checkVolumeProvisions for one claim over the `active` rows: an error, or (rows
        where it cannot be provisioned, rows short of capacity, rows where it can, the capacity
        registry index per row when capacity is tracked); tracked capacities join `found`."""
        class_name = claim_class(pvc)
        if not class_name:
            return f'no class for claim "{pvc.key}"'
        storage = self.storage
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
            rows = undecided & self.masks.capacity(table, cap)
            if rows.any():
                cap_rows[rows] = len(found.capacities)
                found.capacities.append(cap)
                undecided &= ~rows
        return no, undecided, candidates & ~undecided, cap_rows

    # --- Reserve / Unreserve ----------------------------------------------------------------------

    def all_bound(self, pi: PodInfo) -> bool:
        """arePodVolumesBound: every claim of the pod fully bound (assumed versions count)."""
        storage = self.storage
        for claim in pod_volumes(pi).claims:
            pvc = storage.get_pvc(f"{pi.namespace}/{claim.claim}")
            if pvc is None or not claim_fully_bound(pvc):
                return False
            if claim.ephemeral and ephemeral_claim_error(pi.pod, pvc):
                return False
        return True

    def assume(self, volumes: PodVolumes, node: str) -> PodVolumes:
        """kube's AssumePodVolumes: the chosen PVs bound to their claims and the claims to provision
        annotated with the node, in the storage index; the assumed objects. Raises AssumeError
        (with nothing left assumed) when an object is not the version the informer holds."""
        storage = self.storage
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
        except AssumeError:
            self.revert(assumed)
            raise
        return assumed

    def revert(self, volumes: PodVolumes) -> None:
        """kube's RevertAssumedPodVolumes."""
        storage = self.storage
        for binding in volumes.bindings:
            storage.restore_pv(binding.pv)
        for provision in volumes.provisions:
            storage.restore_pvc(provision.pvc)

    # --- PreBind ------------------------------------------------------------------------------------

    async def bind(self, pi: PodInfo, node: str, volumes: PodVolumes, timeout: float) -> Status | None:
        """kube's BindPodVolumes: write the assumed objects, then wait until the PV controller has
        bound every claim, a check fails, or `timeout` seconds pass."""
        error = await self._write(volumes)
        if error is not None:
            return Status.error(error)
        return await self._wait(pi, node, volumes, timeout)

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
            self.revert(PodVolumes(volumes.bindings[done_bindings:], volumes.provisions[done_provisions:]))
            return str(exc)
        return None

    async def _wait(self, pi: PodInfo, node: str, volumes: PodVolumes, timeout: float) -> Status | None:
        """Until every claim is bound (kube's checkBindings), a check fails, or the bind timeout."""
        assert self.handle is not None
        clock = self.handle.clock
        storage = self.storage
        deadline = clock.now() + timeout
        loop = asyncio.get_running_loop()
        while True:
            if timeout <= 0:
                return Status.error("binding volumes: context deadline exceeded")
            done, error = self.check(pi, node, volumes)
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

    def check(self, pi: PodInfo, node_name: str, volumes: PodVolumes) -> tuple[bool, str | None]:
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
                return False, _affinity_mismatch(pv, node_name)
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
                    return False, _affinity_mismatch(pv, node_name)
            if not claim_fully_bound(pvc):
                return False, None
        return True, None


def _affinity_mismatch(pv: PersistentVolume, node_name: str) -> str:
    return f'pv "{pv.metadata.name}" node affinity doesn\'t match node "{node_name}": no matching NodeSelectorTerms'
