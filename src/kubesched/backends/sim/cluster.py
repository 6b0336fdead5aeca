"""The simulated cluster: the objects, and the side effects the scheduler asks for.

It plays the API server's part: a bind sets spec.nodeName and is reported back as a
pod update, a delete removes the pod and reports it, a pod with a run duration
succeeds when its time is up and frees its node. It also plays the kubelets' part for
the usage model (pods start using resources when bound, stop when they end) and notes
when each pod was created and bound, for pending times.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from kubesched.api.customresources import object_key
from kubesched.api.dra import (
    DEVICE_CLASS,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    ResourceClaim,
    ResourceClaimWriteError,
)
from kubesched.api.objects import Node, ObjectMeta, OwnerReference, Pod, PodCondition
from kubesched.api.podgroups import Condition, PodGroup, PodGroupStatus
from kubesched.api.podinfo import PodInfo
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    CLAIM_BOUND,
    NOT_SUPPORTED_PROVISIONER,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_AVAILABLE,
    VOLUME_BINDING_WAIT,
    VOLUME_BOUND,
    CSIPersistentVolumeSource,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeSpec,
    StorageClass,
    StorageWriteError,
    VolumeNodeAffinity,
    claim_class,
    claim_request,
    quantity,
    volume_bound_to_claim,
    volume_class,
)
from kubesched.api.xk8s import ElasticQuota
from kubesched.backends.sim.disruption import DisruptionController
from kubesched.backends.sim.quotas import QuotaLedger, preemptor_uid
from kubesched.backends.sim.resourceclaims import ResourceClaimController
from kubesched.framework.status import Code, Status
from kubesched.infra.clock import VirtualClock

if TYPE_CHECKING:
    from kubesched.api.objects import PodExtendedResourceClaimStatus
    from kubesched.backends.sim.usagemodel import UsageModel
    from kubesched.scheduler.backend import SchedulerPort


SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


@dataclass(slots=True)
class SimEvent:
    time: float
    pod: str
    type: str
    reason: str
    message: str


@dataclass
class SimCluster:
    clock: VirtualClock
    pods: dict[str, Pod] = field(default_factory=dict)  # uid -> current object
    durations: dict[str, float] = field(default_factory=dict)  # uid -> run time once bound
    ran_on: dict[str, str] = field(default_factory=dict)  # uid -> node, for pods that completed
    preempted: list[str] = field(default_factory=list)
    events: list[SimEvent] = field(default_factory=list)
    event_counts: Counter[str] = field(default_factory=Counter)
    keep_events: int = 5000
    scheduler: SchedulerPort | None = None
    binds: int = 0
    # Timers for future cluster changes (arrivals, completions): the run ends when none are left.
    external_pending: int = 0
    last_external: float = 0.0
    # Real resource usage of running pods, if modelled.
    usage: UsageModel | None = None
    created_at: dict[str, float] = field(default_factory=dict)  # uid -> virtual time of creation
    bound_at: dict[str, float] = field(default_factory=dict)  # uid -> virtual time of the bind
    # Storage objects by event resource and key ("namespace/name" or name), and the nodes (for the
    # PV controller's topology): the API server's and controllers' state of the simulated cluster.
    storage: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    resource_version: int = 1
    provisioned: int = 0
    # PodGroups (scheduling.k8s.io/v1beta1) by namespace/name, their status as the scheduler wrote it.
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)
    # Custom objects by event resource and key; tenant quotas as the cluster sees them (for the report).
    custom: dict[str, dict[str, Any]] = field(default_factory=dict)
    quotas: QuotaLedger | None = None
    # The disruption controller's part, when the input has PodDisruptionBudgets.
    disruption: DisruptionController | None = None
    # DRA objects (DeviceClasses, ResourceClaims, templates, slices) by event resource and key; the
    # scheduler writes claims (DynamicResources: allocation, reservedFor, the finalizer), and so
    # does the resourceclaim controller (`claims`).
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The resourceclaim controller's part, when the input has DRA objects or pods with claims.
    claims: ResourceClaimController | None = None
    _external_times: list[float] = field(default_factory=list)  # a heap: when each pending change is due
    _dirty: deque[tuple[str, str]] = field(default_factory=deque)  # storage objects the PV controller looks at next

    def _sched(self) -> SchedulerPort:
        assert self.scheduler is not None, "SimCluster has no scheduler connected"
        return self.scheduler

    def connect(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def at(self, when: float, action: object) -> None:
        self.external_pending += 1
        heapq.heappush(self._external_times, when)

        def fire() -> None:
            self.external_pending -= 1
            heapq.heappop(self._external_times)
            self.last_external = self.clock.now()
            action()  # type: ignore[operator]

        self.clock.call_at(when, fire)

    def next_external(self) -> float | None:
        """When the next cluster change (an arrival, a completion) is due, None if none is."""
        return self._external_times[0] if self._external_times else None

    # --- ClusterBackend ----------------------------------------------------------------------------

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        pod = self.pods.get(pi.uid)
        if pod is None:
            return Status(Code.ERROR, (f'pods "{pi.pod.metadata.name}" not found',))
        if pod.spec.node_name:
            return Status(Code.ERROR, (f"pod {pi.key} is already assigned to node {pod.spec.node_name!r}",))
        pod.spec.node_name = node
        pod.status.nominated_node_name = ""
        pod.status.conditions = [c for c in pod.status.conditions if c.type != "PodScheduled"]
        pod.status.conditions.append(PodCondition(type="PodScheduled", status="True"))
        pod.status.phase = "Running"
        self.binds += 1
        if self.disruption is not None:
            self.disruption.pod_changed(pod)
        self.bound_at[pi.uid] = self.clock.now()
        if self.quotas is not None:
            self.quotas.started(pod, self.clock.now())
        if self.usage is not None:
            self.usage.pod_started(pod, node, pi.requests if _plain(pod) else None)
        # The bound object is the same pod with a node: the scheduler reuses its PodInfo.
        self._sched().on_pod_bound(pi, node)
        duration = self.durations.get(pi.uid)
        if duration is not None:
            self.at(self.clock.now() + duration, lambda: self.complete(pi.uid))
        return None

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        if (gone := self.pods.pop(pi.uid, None)) is not None:
            if self.usage is not None:
                self.usage.pod_stopped(pi.uid)
            if self.quotas is not None:
                self.quotas.stopped(gone, self.clock.now(), self.pods.get(preemptor_uid(reason) or ""))
            self.preempted.append(pi.key)
            self.record_event(pi, "Normal", "Preempted", reason)
            if self.disruption is not None:
                self.disruption.pod_gone(gone)
            self._sched().on_pod_delete(pi.uid)
            if self.claims is not None:
                self.claims.pod_deleted(gone)

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self.note_event(pi.key, type_, reason, message)

    def note_event(self, pod_key: str, type_: str, reason: str, message: str) -> None:
        """An event on the pod `namespace/name`, from the scheduler or a controller."""
        self.event_counts[reason] += 1
        if len(self.events) < self.keep_events:
            self.events.append(SimEvent(self.clock.now(), pod_key, type_, reason, message))

    def set_unschedulable(self, pi: PodInfo, message: str, reason: str = "Unschedulable") -> None:
        pod = self.pods.get(pi.uid)
        if pod is None:
            return
        pod.status.conditions = [c for c in pod.status.conditions if c.type != "PodScheduled"]
        pod.status.conditions.append(
            PodCondition(type="PodScheduled", status="False", reason=reason, message=message)
        )

    def set_nominated_node(self, pi: PodInfo, node: str | None) -> None:
        pod = self.pods.get(pi.uid)
        if pod is not None:
            pod.status.nominated_node_name = node or ""

    def set_annotations(self, pi: PodInfo, annotations: dict[str, str]) -> None:
        pod = self.pods.get(pi.uid)
        if pod is not None:
            pod.metadata.annotations = {**pod.metadata.annotations, **annotations}

    def set_pod_group_condition(self, pg: PodGroup, condition: Condition) -> None:
        """The status write, then (the simulator's watch is instant) the updated object delivered."""
        stored = self.pod_groups.get(pg.key)
        if stored is not None:
            stored.status = PodGroupStatus(conditions=[*(c for c in stored.status.conditions if c.type != condition.type), condition])
            self._sched().refresh_pod_group(msgspec.structs.replace(stored))

    def add_custom(self, resource: str, obj: Any) -> None:
        """A custom object created (now, or at its arrival time): the scheduler is told."""
        self.custom.setdefault(resource, {})[object_key(obj)] = obj
        if self.quotas is not None and isinstance(obj, ElasticQuota):
            self.quotas.quota(obj)
        self._sched().on_custom_object(resource, None, obj)

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        """A PodDisruptionBudget created (now, or at its arrival time): its status computed, and
        the scheduler told of it and of every later change of its status."""
        assert self.disruption is not None, "SimCluster.disruption is set up with the input's budgets"
        self.disruption.add_budget(pdb)

    def publish_pdb(self, pdb: PodDisruptionBudget) -> None:
        self._sched().on_pdb(msgspec.structs.replace(pdb))
    def add_device_object(self, resource: str, obj: Any) -> None:
        """A DRA object created (now, or at its arrival time), with its own resourceVersion (the
        claim tracker's assume cache orders a claim's versions by it); the scheduler is told of
        classes, claims and slices, each its own copy as an informer's (templates are the
        resourceclaim controller's business, not the scheduler's)."""
        self.resource_version += 1
        obj = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(
            obj.metadata, resource_version=str(self.resource_version)))
        self.devices.setdefault(resource, {})[object_key(obj)] = obj
        if resource == DEVICE_CLASS:
            self._sched().on_device_class(obj)
        elif resource == RESOURCE_CLAIM:
            self._sched().on_resource_claim(msgspec.structs.replace(obj))
        elif resource == RESOURCE_SLICE:
            self._sched().on_resource_slice(msgspec.structs.replace(obj))
        if self.claims is not None and resource == RESOURCE_CLAIM:
            self.claims.claim_added(obj)
        elif self.claims is not None and resource == RESOURCE_CLAIM_TEMPLATE:
            self.claims.template_added(object_key(obj))

    # --- ResourceClaims as the API server writes them for DynamicResources ---------------------------

    def _stored_claim(self, namespace: str, name: str, version: str | None) -> ResourceClaim:
        """The stored claim; ResourceClaimWriteError as the API server words a 404 or a 409 when it
        is gone or (with a version) another version is stored."""
        current: ResourceClaim | None = self.devices.get(RESOURCE_CLAIM, {}).get(f"{namespace}/{name}")
        if current is None:
            raise ResourceClaimWriteError(f'resourceclaims.resource.k8s.io "{name}" not found', not_found=True)
        if version is not None and current.metadata.resource_version != version:
            raise ResourceClaimWriteError(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again", conflict=True)
        return current

    def _store_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """A new version of the claim, delivered to the scheduler as its watch would; returns it as stored."""
        self.resource_version += 1
        claim = msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
            claim.metadata, resource_version=str(self.resource_version)))
        self.devices.setdefault(RESOURCE_CLAIM, {})[object_key(claim)] = claim
        self._sched().on_resource_claim(msgspec.structs.replace(claim))
        return claim

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim:
        return self._stored_claim(namespace, name, None)

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """The claim's metadata written (its finalizers), on the current version only; spec and status stay."""
        meta = claim.metadata
        current = self._stored_claim(meta.namespace, meta.name, meta.resource_version)
        return self._store_claim(msgspec.structs.replace(current, metadata=msgspec.structs.replace(
            current.metadata, finalizers=list(meta.finalizers))))

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """The claim's status written (UpdateStatus), on the current version only; the rest stays."""
        meta = claim.metadata
        current = self._stored_claim(meta.namespace, meta.name, meta.resource_version)
        return self._store_claim(msgspec.structs.replace(current, status=claim.status))

    async def unreserve_resource_claim(self, claim: ResourceClaim, pod_uid: str) -> None:
        """The consumer with `pod_uid` removed from status.reservedFor (a patch: any version)."""
        meta = claim.metadata
        current = self._stored_claim(meta.namespace, meta.name, None)
        if current.metadata.uid != meta.uid:
            raise ResourceClaimWriteError(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{meta.name}": Precondition failed: '
                f"UID in precondition: {meta.uid}, UID in object meta: {current.metadata.uid}", conflict=True)
        kept = [ref for ref in current.status.reserved_for if ref.uid != pod_uid]
        if len(kept) != len(current.status.reserved_for):
            self._store_claim(msgspec.structs.replace(
                current, status=msgspec.structs.replace(current.status, reserved_for=kept)))

    def add_pod_group(self, pg: PodGroup) -> None:
        """A PodGroup created (now, or at its arrival time): the scheduler is told (its own copy,
        as an informer's)."""
        self.pod_groups[pg.key] = pg
        self._sched().on_pod_group(msgspec.structs.replace(pg))

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """The volume binder's PV update (claimRef, annotations) on the current version only."""
        name = pv.metadata.name
        current = self._current(PERSISTENT_VOLUME, name, pv.metadata.resource_version, "persistentvolumes")
        written = msgspec.structs.replace(
            current,
            metadata=msgspec.structs.replace(current.metadata, annotations=dict(pv.metadata.annotations)),
            spec=msgspec.structs.replace(current.spec, claim_ref=pv.spec.claim_ref),
        )
        stored: PersistentVolume = self._put(PERSISTENT_VOLUME, name, written)
        self.sync_volumes()
        return stored

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """The volume binder's PVC update (annotations: the selected node) on the current version only."""
        key = f"{pvc.metadata.namespace}/{pvc.metadata.name}"
        current = self._current(PERSISTENT_VOLUME_CLAIM, key, pvc.metadata.resource_version, "persistentvolumeclaims")
        written = msgspec.structs.replace(
            current, metadata=msgspec.structs.replace(current.metadata, annotations=dict(pvc.metadata.annotations)))
        stored: PersistentVolumeClaim = self._put(PERSISTENT_VOLUME_CLAIM, key, written)
        self.sync_volumes()
        return stored

    def _current(self, resource: str, key: str, version: str, plural: str) -> Any:
        current = self.storage.get(resource, {}).get(key)
        name = key.rsplit("/", 1)[-1]
        if current is None:
            raise StorageWriteError(f'{plural} "{name}" not found')
        if current.metadata.resource_version != version:
            raise StorageWriteError(f'Operation cannot be fulfilled on {plural} "{name}": the object has been modified; '
                                    "please apply your changes to the latest version and try again")
        return current

    # --- storage: the API server's objects and a stand-in PV controller ---------------------------------

    @staticmethod
    def _key(resource: str, obj: Any) -> str:
        meta = obj.metadata
        return f"{meta.namespace}/{meta.name}" if resource == PERSISTENT_VOLUME_CLAIM or meta.namespace else meta.name

    def add_storage(self, resource: str, obj: Any) -> None:
        """A storage object created (from the input, or by a controller); then the PV controller runs."""
        self._put(resource, self._key(resource, obj), obj)
        self.sync_volumes()

    def _put(self, resource: str, key: str, obj: Any) -> Any:
        """Stores a new version (its own resourceVersion) and tells the scheduler, as a watch would;
        returns it as stored."""
        self.resource_version += 1
        obj = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(
            obj.metadata, resource_version=str(self.resource_version)))
        objects = self.storage.setdefault(resource, {})
        old = objects.get(key)
        objects[key] = obj
        self._dirty.append((resource, key))
        self._sched().on_storage_update(resource, old, obj)
        return obj

    def sync_volumes(self) -> None:
        """The stand-in PV controller, run after every storage change until nothing changes: PVs
        become Available; a PV bound to a claim (by the scheduler, or pre-bound) binds the claim;
        claims of Immediate classes bind to the smallest fitting PV or are provisioned; claims of
        WaitForFirstConsumer classes are provisioned once the scheduler selected a node, with node
        affinity to that node's topology (the class's allowedTopologies keys, else its zone).
        Objects are looked at when they change (and unbound claims again when a volume of their
        class becomes Available), so a run with many claims stays linear."""
        while self._dirty:
            resource, key = self._dirty.popleft()
            if resource == PERSISTENT_VOLUME:
                self._sync_volume(key)
            elif resource == PERSISTENT_VOLUME_CLAIM:
                self._sync_claim(key)

    def _sync_volume(self, name: str) -> None:
        pv: PersistentVolume | None = self.storage.get(PERSISTENT_VOLUME, {}).get(name)
        if pv is None:
            return
        ref = pv.spec.claim_ref
        if ref is None:
            if pv.status.phase != VOLUME_AVAILABLE:
                self._put(PERSISTENT_VOLUME, name, _with_phase(pv, VOLUME_AVAILABLE))
                # Claims waiting for a volume of its class may bind now.
                for key, claim in sorted(self.storage.get(PERSISTENT_VOLUME_CLAIM, {}).items()):
                    if not claim.spec.volume_name and claim_class(claim) == volume_class(pv):
                        self._dirty.append((PERSISTENT_VOLUME_CLAIM, key))
            return
        claim = self.storage.get(PERSISTENT_VOLUME_CLAIM, {}).get(f"{ref.namespace}/{ref.name}")
        if claim is None or (ref.uid and ref.uid != claim.metadata.uid):
            return  # a claim that is gone: the volume stays as it is (Released in kube)
        if not ref.uid:
            spec = msgspec.structs.replace(pv.spec, claim_ref=msgspec.structs.replace(ref, uid=claim.metadata.uid))
            self._put(PERSISTENT_VOLUME, name, msgspec.structs.replace(pv, spec=spec))
            return
        if not claim.spec.volume_name or (claim.spec.volume_name == name
                                          and ANN_BIND_COMPLETED not in claim.metadata.annotations):
            self._bind_claim(claim, pv)
            self._dirty.append((PERSISTENT_VOLUME, name))  # then the volume's phase
        elif claim.spec.volume_name == name and pv.status.phase != VOLUME_BOUND:
            self._put(PERSISTENT_VOLUME, name, _with_phase(pv, VOLUME_BOUND))

    def _sync_claim(self, key: str) -> None:
        claim: PersistentVolumeClaim | None = self.storage.get(PERSISTENT_VOLUME_CLAIM, {}).get(key)
        if claim is None or claim.metadata.deletion_timestamp:
            return
        pvs: dict[str, PersistentVolume] = self.storage.get(PERSISTENT_VOLUME, {})
        if claim.spec.volume_name:
            pv = pvs.get(claim.spec.volume_name)
            if pv is not None and ANN_BIND_COMPLETED not in claim.metadata.annotations:
                if pv.spec.claim_ref is None and pv.status.phase == VOLUME_AVAILABLE:
                    self._bind_volume(pv, claim)  # a claim pre-bound to a free volume
                elif pv.spec.claim_ref is not None and volume_bound_to_claim(pv, claim):
                    self._dirty.append((PERSISTENT_VOLUME, pv.metadata.name))
            return
        sc = self.storage.get(STORAGE_CLASS, {}).get(claim_class(claim))
        if sc is not None and sc.volume_binding_mode == VOLUME_BINDING_WAIT:
            node = self.nodes.get(claim.metadata.annotations.get(ANN_SELECTED_NODE, ""))
            if node is not None and _provisions(sc):
                self._provision(claim, sc, node)
            return  # else the scheduler binds it, or selects a node
        found = _matching_volume(claim, list(pvs.values()))
        if found is not None:
            self._bind_volume(found, claim)
        elif sc is not None and _provisions(sc):
            self._provision(claim, sc, None)

    def _bind_volume(self, pv: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        ref = ObjectReference(kind="PersistentVolumeClaim", namespace=claim.metadata.namespace, name=claim.metadata.name,
                              uid=claim.metadata.uid, api_version="v1", resource_version=claim.metadata.resource_version)
        meta = msgspec.structs.replace(pv.metadata, annotations={**pv.metadata.annotations, ANN_BOUND_BY_CONTROLLER: "yes"})
        self._put(PERSISTENT_VOLUME, pv.metadata.name, msgspec.structs.replace(
            pv, metadata=meta, spec=msgspec.structs.replace(pv.spec, claim_ref=ref)))

    def _bind_claim(self, claim: PersistentVolumeClaim, pv: PersistentVolume) -> None:
        annotations = {**claim.metadata.annotations, ANN_BIND_COMPLETED: "yes"}
        if claim.spec.volume_name != pv.metadata.name:
            annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        bound = msgspec.structs.replace(
            claim,
            metadata=msgspec.structs.replace(claim.metadata, annotations=annotations),
            spec=msgspec.structs.replace(claim.spec, volume_name=pv.metadata.name),
            status=msgspec.structs.replace(claim.status, phase=CLAIM_BOUND, access_modes=list(pv.spec.access_modes),
                                           capacity=dict(pv.spec.capacity)),
        )
        self._put(PERSISTENT_VOLUME_CLAIM, f"{claim.metadata.namespace}/{claim.metadata.name}", bound)

    def _provision(self, claim: PersistentVolumeClaim, sc: StorageClass, node: Node | None) -> None:
        """A provisioner's new volume for the claim, pre-bound to it (the controller binds both next)."""
        self.provisioned += 1
        name = f"pvc-{claim.metadata.uid}"
        affinity = _provisioned_affinity(sc, node)
        pv = PersistentVolume(
            metadata=ObjectMeta(name=name, uid=f"pv-{claim.metadata.uid}",
                                annotations={ANN_DYNAMICALLY_PROVISIONED: sc.provisioner}),
            spec=PersistentVolumeSpec(
                capacity={"storage": claim.spec.resources.requests.get("storage", "0")},
                access_modes=list(claim.spec.access_modes),
                claim_ref=ObjectReference(kind="PersistentVolumeClaim", namespace=claim.metadata.namespace,
                                          name=claim.metadata.name, uid=claim.metadata.uid, api_version="v1",
                                          resource_version=claim.metadata.resource_version),
                persistent_volume_reclaim_policy=sc.reclaim_policy or "Delete",
                storage_class_name=sc.metadata.name,
                volume_mode=claim.spec.volume_mode or "Filesystem",
                node_affinity=affinity,
                csi=CSIPersistentVolumeSource(driver=sc.provisioner, volume_handle=name),
            ),
        )
        self._put(PERSISTENT_VOLUME, name, pv)

    def create_ephemeral_claims(self, pod: Pod) -> None:
        """The ephemeral volume controller: a claim `<pod>-<volume>` owned by the pod for each
        generic ephemeral volume that has none yet."""
        for volume in pod.spec.volumes:
            template = volume.ephemeral.volume_claim_template if volume.ephemeral is not None else None
            if template is None:
                continue
            name = f"{pod.metadata.name}-{volume.name}"
            key = f"{pod.metadata.namespace}/{name}"
            if key in self.storage.get(PERSISTENT_VOLUME_CLAIM, {}):
                continue
            meta = template.get("metadata") or {}
            claim = PersistentVolumeClaim(
                metadata=ObjectMeta(
                    name=name, namespace=pod.metadata.namespace, uid=f"ephemeral-{pod.metadata.uid}-{volume.name}",
                    labels=dict(meta.get("labels") or {}), annotations=dict(meta.get("annotations") or {}),
                    owner_references=[OwnerReference(api_version="v1", kind="Pod", name=pod.metadata.name,
                                                     uid=pod.metadata.uid, controller=True)],
                ),
                spec=msgspec.convert(template.get("spec") or {}, PersistentVolumeClaimSpec, strict=False),
            )
            claim.spec.volume_mode = claim.spec.volume_mode or "Filesystem"
            claim.status.phase = "Pending"
            self.add_storage(PERSISTENT_VOLUME_CLAIM, claim)

    # --- cluster changes -------------------------------------------------------------------------------

    def create_pod(self, pod: Pod) -> None:
        # Runs share the scenario's objects: copy the parts a run mutates.
        pod = msgspec.structs.replace(
            pod,
            spec=msgspec.structs.replace(pod.spec),
            status=msgspec.structs.replace(pod.status, conditions=list(pod.status.conditions)),
        )
        if pod.spec.scheduling_gates and not any(c.type == "PodScheduled" for c in pod.status.conditions):
            # What the API server writes on a pod created with scheduling gates.
            pod.status.conditions.append(PodCondition(
                type="PodScheduled", status="False", reason="SchedulingGated", message=SCHEDULING_GATED_MESSAGE
            ))
        self.pods[pod.metadata.uid] = pod
        self.created_at.setdefault(pod.metadata.uid, self.clock.now())
        if any(v.ephemeral is not None for v in pod.spec.volumes):
            self.create_ephemeral_claims(pod)
        if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed") and self.usage is not None:
            self.usage.pod_started(pod, pod.spec.node_name)
        if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed") and self.quotas is not None:
            self.quotas.started(pod, self.clock.now())
        if self.disruption is not None:
            self.disruption.pod_changed(pod)
        self._sched().on_pod_add(pod)
        if self.claims is not None:
            self.claims.pod_created(pod)

    def complete(self, uid: str) -> None:
        pod = self.pods.get(uid)
        if pod is None:
            return
        pod.status.phase = "Succeeded"
        self.ran_on[uid] = pod.spec.node_name
        if self.usage is not None:
            self.usage.pod_stopped(uid)
        if self.quotas is not None:
            self.quotas.stopped(pod, self.clock.now())
        if self.disruption is not None:
            self.disruption.pod_changed(pod)
        self._sched().on_pod_update(pod)
        if self.claims is not None:
            self.claims.pod_finished(pod)

    # --- the claim behind a pod's DRA-served extended resources (devices/extendedclaim.py) -----------

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """The API server's create: a name from generateName (five characters of kube's alphabet,
        here counted, not drawn, so runs repeat), a uid, a resourceVersion; then the scheduler's
        watch delivers it. A name in use is refused as kube refuses it."""
        meta = claim.metadata
        name = meta.name or meta.generate_name + _generated_suffix(self.resource_version)
        claims = self.devices.setdefault(RESOURCE_CLAIM, {})
        if f"{meta.namespace}/{name}" in claims:
            raise ResourceClaimWriteError(f'resourceclaims.resource.k8s.io "{name}" already exists', conflict=True)
        self.resource_version += 1
        stored = msgspec.structs.replace(claim, metadata=msgspec.structs.replace(
            meta, name=name, uid=f"claim-{self.resource_version}", resource_version=str(self.resource_version)))
        claims[f"{meta.namespace}/{name}"] = stored
        self._sched().on_resource_claim(msgspec.structs.replace(stored))
        return stored

    async def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        """The claim deleted when it still has this uid (the simulated API server keeps no
        finalizers to remove first); one already gone is no error."""
        claims = self.devices.get(RESOURCE_CLAIM, {})
        current: ResourceClaim | None = claims.get(f"{namespace}/{name}")
        if current is None:
            return
        if current.metadata.uid != uid:
            raise ResourceClaimWriteError(
                f'Operation cannot be fulfilled on ResourceClaim.resource.k8s.io "{name}": the UID in the precondition '
                f"({uid}) does not match the UID in record ({current.metadata.uid}). The object might have been "
                "deleted and then recreated", conflict=True)
        del claims[f"{namespace}/{name}"]
        self._sched().on_resource_claim_delete(namespace, name)

    async def set_extended_resource_claim_status(self, pi: PodInfo, status: PodExtendedResourceClaimStatus) -> None:
        pod = self.pods.get(pi.uid)
        if pod is None:
            raise ResourceClaimWriteError(f'pods "{pi.pod.metadata.name}" not found', not_found=True)
        pod.status.extended_resource_claim_status = status


# kube's generateName alphabet (utilrand): no vowels, no confusable digits.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _generated_suffix(counter: int) -> str:
    out = []
    for _ in range(5):
        counter, digit = divmod(counter, len(_NAME_ALPHABET))
        out.append(_NAME_ALPHABET[digit])
    return "".join(out)


def _plain(pod: Pod) -> bool:
    """A pod whose scheduling requests are exactly what runs (no init containers, no overhead)."""
    return not pod.spec.init_containers and not pod.spec.overhead


# --- the PV controller's rules -------------------------------------------------------------------


def _with_phase(pv: PersistentVolume, phase: str) -> PersistentVolume:
    return msgspec.structs.replace(pv, status=msgspec.structs.replace(pv.status, phase=phase))


def _provisions(sc: StorageClass) -> bool:
    return bool(sc.provisioner) and sc.provisioner != NOT_SUPPORTED_PROVISIONER


def _matching_volume(claim: PersistentVolumeClaim, volumes: list[PersistentVolume]) -> PersistentVolume | None:
    """The PV controller's FindMatchingVolume (no node): a PV pre-bound to the claim, else the
    smallest Available PV of its class, size, modes and selector."""
    from kubesched.api.selectors import SelectorError, compile_label_selector

    requested = claim_request(claim)
    selector = None
    if claim.spec.selector is not None:
        try:
            selector = compile_label_selector(claim.spec.selector, none_matches_nothing=False)
        except SelectorError:
            return None
    best: PersistentVolume | None = None
    for pv in sorted(volumes, key=lambda v: v.metadata.name):
        if pv.spec.claim_ref is not None and not volume_bound_to_claim(pv, claim):
            continue
        size = quantity(pv.spec.capacity)
        if size < requested or (pv.spec.volume_mode or "Filesystem") != (claim.spec.volume_mode or "Filesystem"):
            continue
        if volume_bound_to_claim(pv, claim):
            return pv
        if pv.status.phase != VOLUME_AVAILABLE or volume_class(pv) != claim_class(claim):
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if not set(claim.spec.access_modes) <= set(pv.spec.access_modes):
            continue
        if best is None or quantity(best.spec.capacity) > size:
            best = pv
    return best


ZONE_LABEL = "topology.kubernetes.io/zone"


def _provisioned_affinity(sc: StorageClass, node: Node | None) -> VolumeNodeAffinity | None:
    """Where a provisioned volume can be used: the selected node's values of the class's
    allowedTopologies keys, else its zone; without a node, the class's first allowed topology."""
    from kubesched.api.objects import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

    requirements: list[NodeSelectorRequirement] = []
    if node is not None:
        labels = node.metadata.labels
        keys = [r.key for t in sc.allowed_topologies for r in t.match_label_expressions] or [ZONE_LABEL]
        for key in dict.fromkeys(keys):
            if key in labels:
                requirements.append(NodeSelectorRequirement(key=key, operator="In", values=[labels[key]]))
    elif sc.allowed_topologies:
        requirements = [NodeSelectorRequirement(key=r.key, operator="In", values=list(r.values[:1]))
                        for r in sc.allowed_topologies[0].match_label_expressions if r.values]
    if not requirements:
        return None
    return VolumeNodeAffinity(required=NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=requirements)]))
