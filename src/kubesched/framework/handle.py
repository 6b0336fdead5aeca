"""The handle every plugin receives (kube's framework.Handle) and the collaborators behind it
that the framework declares and the scheduler provides: pods waiting at Permit (WaitingPod) and
the pods nominated to nodes (Nominator, kube's PodNominator)."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEvent
from kubesched.framework.status import Status
from kubesched.framework.types import FilterOutcome

if TYPE_CHECKING:
    from kubesched.api.dra import ResourceClaim
    from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
    from kubesched.cache.cache import Cache
    from kubesched.cache.nodetable import NodeTable
    from kubesched.devices.manager import DraManager
    from kubesched.framework.shared import SharedObjects
    from kubesched.infra.clock import Clock
    from kubesched.observe.metrics import SchedulerMetrics


class Nominator(Protocol):
    """The pods nominated to nodes by preemption, waiting for their victims to go (kube's
    PodNominator). The scheduling queue keeps them; the framework reads and sets them for plugins."""

    def nominate(self, pi: PodInfo, node: str | None) -> None:
        """Nominates the pod to `node` (None: clears its nomination)."""
        ...

    def pods_on(self, node: str) -> list[PodInfo]: ...

    def nominated_node(self, uid: str) -> str | None: ...



class WaitingPod(Protocol):
    """A pod held at Permit (kube's framework.WaitingPod): the plugins that still have to allow it."""

    uid: str
    node: str
    pending: set[str]

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class Handle(Protocol):
    """Everything a plugin may ask of the framework (kube's framework.Handle), passed to every
    plugin's constructor. The runtime's Framework implements it over narrow collaborators
    (framework/services.py); a plugin never sees the scheduler, the queue or a backend."""

    # --- the cluster as the scheduler sees it, and time
    @property
    def cache(self) -> Cache: ...

    @property
    def table(self) -> NodeTable: ...

    @property
    def dra(self) -> DraManager:
        """Claims, slices and classes for DynamicResources (kube's SharedDRAManager)."""
        ...

    @property
    def clock(self) -> Clock: ...

    def now(self) -> float: ...

    @property
    def metrics(self) -> SchedulerMetrics: ...

    @property
    def shared(self) -> SharedObjects:
        """Objects one scheduler's plugins share across profiles (a usage service, say), made by
        the first plugin that asks; a backend may provide some in advance."""
        ...

    # --- filtering on behalf of PostFilter (preemption), as the profile runs it
    def prefilter_extensions_active(self, state: CycleState) -> bool:
        """Whether a PreFilter AddPod/RemovePod extension keeps state for this cycle's pod."""
        ...

    def run_filters_with_nominated(
        self, state: CycleState, pi: PodInfo, rows: np.ndarray, nominated: Mapping[int, Sequence[PodInfo]]
    ) -> FilterOutcome:
        """Every Filter over `rows` (a mask), each row also with the pods nominated to it that are
        given (kube's RunFilterPluginsWithNominatedPods): a row passes only if it fits both with
        and without them. Reasons of both passes are returned."""
        ...

    def run_prefilter_add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None: ...

    def run_prefilter_remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None: ...

    # --- nominations and pods waiting at Permit
    def nominate(self, pi: PodInfo, node: str | None) -> None:
        """Sets (or with None clears) the pod's nominated node, in the scheduler and the cluster."""
        ...

    def nominated_pods(self, node: str) -> list[PodInfo]: ...

    def nominated_node(self, pi: PodInfo) -> str | None:
        """The node this scheduler has nominated the pod to, if any (the pod's status may lag)."""
        ...

    def waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def waiting_pods(self) -> Sequence[WaitingPod]: ...

    # --- side effects
    async def bind(self, pi: PodInfo, node: str) -> Status | None: ...

    async def delete_pod(self, pi: PodInfo, reason: str) -> None: ...

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """The volume binder's PV write (claimRef, annotations; conditional on the resourceVersion)."""
        ...

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """The volume binder's PVC write (annotations: the selected node; conditional on the resourceVersion)."""
        ...

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim: ...

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """DynamicResources' claim update (finalizers; conditional on the resourceVersion)."""
        ...

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """DynamicResources' status write (allocation, reservedFor; conditional on the resourceVersion)."""
        ...

    async def unreserve_resource_claim(self, claim: ResourceClaim, pod_uid: str) -> None: ...

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None: ...

    def record_preemption(self, victims: Sequence[PodInfo], pdb_violations: int = 0, preemptor: str = "pod") -> None:
        """Counts a preemption, its victims and how many of them a PodDisruptionBudget protected
        (stats and metrics; `preemptor`: "pod" or "podgroup")."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        """Runs a side effect from a synchronous extension point in the background; the scheduler
        tracks it, so a simulation waits for it and a failure is logged."""
        ...

    def cluster_event(self, event: ClusterEvent) -> None:
        """Reports a change outside the API objects (new usage samples, say) that may make pods
        rejected by plugins registered for `event` schedulable."""
        ...

    # --- the scheduling queue (kube's PodActivator and pod lister)
    def activate(self, uids: Iterable[str]) -> None:
        """Moves these pending pods from the unschedulable pool or backoff to activeQ now."""
        ...

    def pending_pods(self) -> Iterable[PodInfo]:
        """The pending pods this scheduler holds (queued, backing off, unschedulable, gated, or
        being scheduled now)."""
        ...
