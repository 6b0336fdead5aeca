"""The simulated cluster: the objects, and the side effects the scheduler asks for.

It plays the API server's part: a bind sets spec.nodeName and is reported back as a
pod update, a delete removes the pod and reports it, a pod with a run duration
succeeds when its time is up and frees its node. It also plays the kubelets' part for
the usage model (pods start using resources when bound, stop when they end) and notes
when each pod was created and bound, for pending times.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.objects import Pod, PodCondition
from kubesched.api.podinfo import PodInfo
from kubesched.clock import VirtualClock
from kubesched.framework.interface import Code, Status

if TYPE_CHECKING:
    from kubesched.backends.base import SchedulerPort
    from kubesched.backends.sim.usage import UsageModel


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

    def _sched(self) -> SchedulerPort:
        assert self.scheduler is not None, "SimCluster has no scheduler connected"
        return self.scheduler

    def connect(self, scheduler: SchedulerPort) -> None:
        self.scheduler = scheduler

    def at(self, when: float, action: object) -> None:
        self.external_pending += 1

        def fire() -> None:
            self.external_pending -= 1
            self.last_external = self.clock.now()
            action()  # type: ignore[operator]

        self.clock.call_at(when, fire)

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
        self.bound_at[pi.uid] = self.clock.now()
        if self.usage is not None:
            self.usage.pod_started(pod, node, pi.requests if _plain(pod) else None)
        # The bound object is the same pod with a node: the scheduler reuses its PodInfo.
        self._sched().on_pod_bound(pi, node)
        duration = self.durations.get(pi.uid)
        if duration is not None:
            self.at(self.clock.now() + duration, lambda: self.complete(pi.uid))
        return None

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        if self.pods.pop(pi.uid, None) is not None:
            if self.usage is not None:
                self.usage.pod_stopped(pi.uid)
            self.preempted.append(pi.key)
            self.record_event(pi, "Normal", "Preempted", reason)
            self._sched().on_pod_delete(pi.uid)

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self.event_counts[reason] += 1
        if len(self.events) < self.keep_events:
            self.events.append(SimEvent(self.clock.now(), pi.key, type_, reason, message))

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
        if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed") and self.usage is not None:
            self.usage.pod_started(pod, pod.spec.node_name)
        self._sched().on_pod_add(pod)

    def complete(self, uid: str) -> None:
        pod = self.pods.get(uid)
        if pod is None:
            return
        pod.status.phase = "Succeeded"
        self.ran_on[uid] = pod.spec.node_name
        if self.usage is not None:
            self.usage.pod_stopped(uid)
        self._sched().on_pod_update(pod)


def _plain(pod: Pod) -> bool:
    """A pod whose scheduling requests are exactly what runs (no init containers, no overhead)."""
    return not pod.spec.init_containers and not pod.spec.overhead
