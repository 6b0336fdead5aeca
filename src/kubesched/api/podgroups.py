"""Typed views of the workload API kube-scheduler v1.37 reads for gang scheduling: PodGroups and
Workloads of `scheduling.k8s.io/v1beta1` (feature gate GenericWorkload), in objects.py's style
(only what scheduling reads; Go's zero values as defaults; unknown fields ignored).

A pod joins a group through `spec.schedulingGroup.podGroupName` (objects.PodSchedulingGroup); the
scheduler reads PodGroups and pods, never Workloads (a Workload is a template its controller
makes PodGroups from: kept here for the simulator's manifests and their validation).
"""

from __future__ import annotations

import msgspec

from kubesched.api.objects import Int32, ObjectMeta, _Obj

API_GROUP = "scheduling.k8s.io"
API_VERSION = "scheduling.k8s.io/v1beta1"
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/podgroups"
# kube's cluster event resource for PodGroups (framework.PodGroup).
PODGROUP_RESOURCE = "PodGroup"

CONDITION_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


class GangPolicy(_Obj):
    min_count: Int32 = 0


class BasicPolicy(_Obj):
    pass


class SchedulingPolicy(_Obj):
    """Exactly one of `basic` or `gang` (the API server refuses anything else)."""

    basic: BasicPolicy | None = None
    gang: GangPolicy | None = None


class TopologyConstraint(_Obj):
    key: str = ""


class SchedulingConstraints(_Obj):
    topology: list[TopologyConstraint] = msgspec.field(default_factory=list)


class WorkloadRef(_Obj):
    workload_name: str = ""
    template_name: str = ""


class DisruptionMode(_Obj):
    single: dict[str, object] | None = None
    all: dict[str, object] | None = None


class PodGroupSpec(_Obj):
    workload_ref: WorkloadRef | None = None
    scheduling_policy: SchedulingPolicy = msgspec.field(default_factory=SchedulingPolicy)
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None
    preemption_policy: str | None = None


class Condition(_Obj):
    """A metav1.Condition."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class PodGroupStatus(_Obj):
    conditions: list[Condition] = msgspec.field(default_factory=list)


class PodGroup(_Obj):
    api_version: str = API_VERSION
    kind: str = "PodGroup"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    @property
    def is_gang(self) -> bool:
        return self.spec.scheduling_policy.gang is not None

    @property
    def min_count(self) -> int:
        """The gang's minCount; 1 for a basic group (every member may go on its own)."""
        gang = self.spec.scheduling_policy.gang
        return gang.min_count if gang is not None else 1

    @property
    def topology_key(self) -> str:
        """The label whose value every member's node must share (""; no constraint)."""
        constraints = self.spec.scheduling_constraints
        return constraints.topology[0].key if constraints is not None and constraints.topology else ""

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.status.conditions if c.type == type_), None)


class PodGroupTemplate(_Obj):
    name: str = ""
    scheduling_policy: SchedulingPolicy = msgspec.field(default_factory=SchedulingPolicy)
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str = ""
    priority: Int32 | None = None


class ControllerRef(_Obj):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class WorkloadSpec(_Obj):
    controller_ref: ControllerRef | None = None
    pod_group_templates: list[PodGroupTemplate] = msgspec.field(default_factory=list)


class Workload(_Obj):
    api_version: str = API_VERSION
    kind: str = "Workload"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
