"""What the scheduler hands each profile's framework: the narrow collaborators behind the plugin
handle (interface.Handle). Each is one thing a plugin may use; none is the scheduler itself."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubesched.api.dra import ResourceClaim
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.cache.cache import Cache
from kubesched.devices.manager import DraManager
from kubesched.framework.events import ClusterEvent
from kubesched.framework.handle import Nominator
from kubesched.framework.shared import SharedObjects
from kubesched.framework.status import Status
from kubesched.framework.waiting import PodAtPermit
from kubesched.infra.clock import Clock
from kubesched.observe.metrics import SchedulerMetrics

if TYPE_CHECKING:
    from kubesched.api.objects import PodExtendedResourceClaimStatus


class ClusterWrites(Protocol):
    """The writes to the cluster that plugins may ask for (a backend implements them)."""

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        """Bind the pod (Binding subresource). None on success."""
        ...

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        """Delete a preemption victim."""
        ...

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        """Post an event about the pod (fire and forget)."""
        ...

    def set_nominated_node(self, pi: PodInfo, node: str | None) -> None:
        """Set or clear status.nominatedNodeName."""
        ...

    def set_annotations(self, pi: PodInfo, annotations: dict[str, str]) -> None:
        """Merge these annotations into the pod's metadata (fire and forget): the scheduling
        results some profiles publish (plugins/resultannotations.py)."""
        ...

    # The claim behind a pod's DRA-served extended resources (devices/extendedclaim.py says which
    # extension point writes what). Each raises api.dra.claims.ResourceClaimWriteError with the
    # API server's message.

    async def create_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """Create the claim (its generateName names it); returns it as stored."""
        ...

    async def delete_resource_claim(self, namespace: str, name: str, uid: str) -> None:
        """Delete the claim if it is still the one with this uid, its delete-protection finalizer
        removed first (kube's deleteClaim); one already gone is no error."""
        ...

    async def set_extended_resource_claim_status(self, pi: PodInfo, status: PodExtendedResourceClaimStatus) -> None:
        """Write the pod's status.extendedResourceClaimStatus (a status patch, awaited: PreBind
        fails when it does)."""
        ...

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """Write what the volume binder changes on a PV (spec.claimRef, metadata.annotations), on
        the condition that the PV still has pv's resourceVersion, as kube's PV Update does; returns
        the PV as stored. Raises api.storage.StorageWriteError with the API server's message."""
        ...

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """Write a PVC's metadata.annotations (the selected node), conditional on its
        resourceVersion; returns the PVC as stored. Raises api.storage.StorageWriteError."""
        ...

    # DynamicResources' writes (kube's ResourceClaims client). Each raises
    # api.dra.ResourceClaimWriteError with the API server's message (`conflict` for a 409).

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim:
        """The claim as the API server stores it now (a read: the retry after a conflict)."""
        ...

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """A claim's metadata (its finalizers), conditional on its resourceVersion; returns it as stored."""
        ...

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """A claim's status (allocation, reservedFor, devices), conditional on its resourceVersion
        (kube's UpdateStatus); returns it as stored."""
        ...

    async def unreserve_resource_claim(self, claim: ResourceClaim, pod_uid: str) -> None:
        """Removes the consumer with this uid from status.reservedFor, whatever the claim's version
        (kube's strategic-merge patch with a $patch: delete entry, on the claim's uid)."""
        ...


Spawn = Callable[[Coroutine[Any, Any, None], str], None]


@dataclass(frozen=True, slots=True)
class Services:
    cache: Cache
    clock: Clock
    nominator: Nominator
    waiting: Mapping[str, PodAtPermit]  # pods held at Permit, by uid
    cluster: ClusterWrites
    spawn: Spawn  # a tracked background task (the scheduler drains them)
    metrics: SchedulerMetrics
    shared: SharedObjects
    cluster_event: Callable[[ClusterEvent], None]  # moves pods the event may help (the queue)
    # A preemption's victims, how many a PodDisruptionBudget protected, "pod" or "podgroup": stats, metrics.
    record_preemption: Callable[[Sequence[PodInfo], int, str], None]
    activate: Callable[[Iterable[str]], None] = lambda uids: None  # pods to retry now (kube's PodActivator)
    pending_pods: Callable[[], Iterable[PodInfo]] = lambda: ()  # the queue's pods (kube's pod lister, pending)
    # Claims, slices and classes for DynamicResources (kube's SharedDRAManager), one per scheduler.
    dra: DraManager = field(default_factory=DraManager)
