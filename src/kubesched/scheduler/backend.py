"""The contract between the scheduler and a cluster backend, both directions.

`ClusterBackend` is what the scheduler asks of a backend: the writes its decisions make.
`SchedulerPort` is what a backend may use of the scheduler: the events it delivers, the
state it may read, and how it drives the loop. The scheduler hands itself to the backend
once, as a SchedulerPort, through `ClusterBackend.connect`; backends hold nothing else of
it, and the core never imports a backend. The core declares the contract (here, in its own
layer) and the backends, a layer above, implement it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kubesched.api.customresources import CustomResource
from kubesched.api.dra import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Namespace, Node, Pod
from kubesched.api.podgroups import Condition, PodGroup
from kubesched.api.podinfo import PodInfo
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.selectors import Selector
from kubesched.framework.handle import WaitingPod
from kubesched.framework.services import ClusterWrites
from kubesched.framework.shared import SharedObjects
from kubesched.scheduler.reload.target import ReloadTarget

if TYPE_CHECKING:
    from kubesched.infra.clock import Timer
    from kubesched.observe.metrics import DurationHistogram


class ClusterBackend(ClusterWrites, Protocol):
    def set_unschedulable(self, pi: PodInfo, message: str, reason: str = "Unschedulable") -> None:
        """Set condition PodScheduled=False with the reason (Unschedulable for a rejection,
        SchedulerError for an error) and the message."""
        ...

    def set_pod_group_condition(self, pg: PodGroup, condition: Condition) -> None:
        """Write one condition of a PodGroup's status (PodGroupInitiallyScheduled), merged by
        type; the scheduler decides whether it changed."""
        ...

    def connect(self, scheduler: SchedulerPort) -> None:
        """Called once by the scheduler this backend serves, while it is built: where to deliver
        cluster events from now on."""
        ...


class QueueState(Protocol):
    """What a backend may read of the scheduling queue (the simulator decides when a run ends
    and which timers it may skip by it)."""

    # Scheduling cycles so far: one per pod (a burst's pods each) or pod group popped.
    scheduling_cycle: int

    def __len__(self) -> int:
        """Pods in activeQ."""
        ...

    def has_timed_work(self) -> bool:
        """Whether a backoff or unschedulable-pool timer will move pods."""
        ...

    @property
    def pool_timer(self) -> Timer | None: ...

    def retry_would_repeat(self) -> bool:
        """Whether nothing happened since the pooled pods failed (their retry would fail alike)."""
        ...

    def defer_pool_flush(self, until: float) -> None: ...


class SchedulerPort(ReloadTarget, Protocol):
    # --- cluster events a backend delivers (kube's informer event handlers)
    def on_pod_add(self, pod: Pod) -> None: ...

    def on_pod_update(self, pod: Pod) -> None: ...

    def refresh_pending_pod(self, pod: Pod) -> None:
        """A pending pod whose status alone changed: keep the status, do not move it in the queue."""
        ...

    def on_pod_bound(self, pi: PodInfo, node: str) -> None:
        """The backend bound the pod the scheduler gave it (same PodInfo)."""
        ...

    def on_pod_delete(self, uid: str) -> None: ...

    def on_node_add(self, node: Node) -> None: ...

    def on_node_update(self, node: Node) -> None: ...

    def on_node_delete(self, name: str) -> None: ...

    def on_namespace(self, ns: Namespace) -> None: ...

    def on_namespace_delete(self, name: str) -> None: ...

    def on_storage_update(self, resource: str, old: Any, new: Any) -> None:
        """A storage object added (`old` None) or updated; `resource` is kube's event resource
        ("PersistentVolumeClaim", "PersistentVolume", "storage.k8s.io/StorageClass",
        "storage.k8s.io/CSINode", ... see api.storage), the objects are api.storage types."""
        ...

    def on_pod_group(self, pg: PodGroup) -> None:
        """A PodGroup (scheduling.k8s.io/v1beta1) added or updated."""
        ...

    def refresh_pod_group(self, pg: PodGroup) -> None:
        """A PodGroup whose status alone changed: kept, no event."""
        ...

    def on_pdb(self, pdb: PodDisruptionBudget) -> None:
        """A PodDisruptionBudget (policy/v1) added or updated, status included."""
        ...

    def on_pdb_delete(self, namespace: str, name: str) -> None: ...

    def on_pod_group_delete(self, namespace: str, name: str) -> None: ...

    def on_storage_delete(self, resource: str, old: Any) -> None:
        """A storage object deleted (`old` is its last known state)."""
        ...

    def on_device_class(self, dc: DeviceClass) -> None:
        """A DeviceClass (resource.k8s.io/v1) added or updated."""
        ...

    def on_device_class_delete(self, name: str) -> None: ...

    def on_resource_claim(self, claim: ResourceClaim) -> None:
        """A ResourceClaim (resource.k8s.io/v1) added or updated, status included."""
        ...

    def on_resource_claim_delete(self, namespace: str, name: str) -> None: ...

    def on_resource_slice(self, rs: ResourceSlice) -> None:
        """A ResourceSlice (resource.k8s.io/v1) added or updated."""
        ...

    def on_resource_slice_delete(self, name: str) -> None: ...

    def on_custom_object(self, resource: str, old: Any, new: Any) -> None:
        """A custom object (a CRD-backed kind plugins read: api.customresources) added (`old` None)
        or updated; `resource` is its event resource, `<plural>.<version>.<group>`."""
        ...

    def on_custom_delete(self, resource: str, old: Any) -> None:
        """A custom object deleted (`old` is its last known state)."""
        ...

    def custom_resources(self) -> list[CustomResource]:
        """The custom resources the profiles' plugins read (their classes' `watches`): a backend that
        watches resources one by one watches these, and no other is expected from then on."""
        ...

    def set_workload_selector(self, kind: str, namespace: str, name: str, selector: Selector) -> None:
        """The selector of a Service, ReplicationController, ReplicaSet or StatefulSet."""
        ...

    def remove_workload_selector(self, kind: str, namespace: str, name: str) -> None: ...

    def track(self, task: asyncio.Task[None], what: str = "background task") -> None:
        """A side effect the backend started itself (a status write), drained like the scheduler's own."""
        ...

    # --- driving the loop
    def schedule_one(self) -> bool: ...

    async def run(self, stop: asyncio.Event, pace: Callable[[asyncio.Event], Awaitable[None]] | None = None) -> None:
        """Schedules until `stop`; `pace(stop)`, awaited after each cycle, returns when the
        backend can take more writes."""
        ...

    async def drain_bindings(self) -> None: ...

    async def close(self) -> None:
        """Releases what plugins hold open (Prometheus connections, timers)."""
        ...

    # --- state a backend may read
    def responsible_for(self, pod: Pod) -> bool: ...

    def explain(self, namespace: str, name: str) -> dict[str, Any] | None:
        """A pod's explanation (scheduler.explain's JSON form); None if the pod is unknown."""
        ...

    def decision_history(self, limit: int = 100) -> list[dict[str, Any]]:
        """The most recent decision records, newest first."""
        ...

    def shadow_summary(self) -> dict[str, dict[str, int]]:
        """Per shadow profile, how many of its decisions compared with the live ones each way."""
        ...

    @property
    def queue(self) -> QueueState: ...

    @property
    def busy(self) -> bool:
        """Whether background side effects (deletions, refreshes, writes) are still running."""
        ...

    @property
    def shared(self) -> SharedObjects: ...

    @property
    def profile_names(self) -> Sequence[str]: ...

    @property
    def cycle_seconds(self) -> DurationHistogram: ...

    def counts(self) -> tuple[int, int]:
        """(nodes known, pods pending)."""
        ...

    def waiting_pods(self) -> Sequence[WaitingPod]: ...

    def pending_reason(self, uid: str, key: str) -> tuple[str, bool]:
        """Why a pod is not placed: its last failure message, or its gate (then True)."""
        ...
