"""The cluster events the scheduler reports to its queue, and how a change is refined into them
(kube's framework/events.go): a node update becomes the UpdateNode... events of what changed, a
pod update the UpdatePod... events, so that a plugin's queueing hint runs only for the changes it
registered for."""

from __future__ import annotations

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import (
    ASSIGNED_POD,
    NODE,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    ClusterEvent,
)

NODE_ADD = ClusterEvent(NODE, ActionType.Add)
NODE_DELETE = ClusterEvent(NODE, ActionType.Delete)
ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.Add)
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.Delete)
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.Add)
PODGROUP_ADD = ClusterEvent("PodGroup", ActionType.Add)
PODGROUP_UPDATE = ClusterEvent("PodGroup", ActionType.Update)
PODGROUP_DELETE = ClusterEvent("PodGroup", ActionType.Delete)
# A new configuration generation took over: no plugin's hint can judge it (the plugins that
# rejected a pod may be configured differently, or gone), so every waiting pod is retried.
CONFIGURATION_CHANGE = ClusterEvent(WILDCARD, ActionType.All, "SchedulerConfigurationChange")

# Queue movements that are no cluster event, as kube labels them in its metrics.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"


def _scaled(new: dict[str, int], old: dict[str, int]) -> bool:
    """Whether some request of `old` is gone from `new` or smaller there."""
    return any(name not in new or new[name] < value for name, value in old.items())


def pod_changes(new: PodInfo, old: PodInfo, resource: str) -> list[ClusterEvent]:
    """The refined events of a pod update (kube's PodSchedulingPropertiesChange); a change none
    of them names is a plain Update. `resource` says whose pod it is: ASSIGNED_POD for a pod on a
    node, TARGET_POD for the pending pod itself."""
    actions: list[ActionType] = []
    if new.labels != old.labels:
        actions.append(ActionType.UpdatePodLabel)
    if _scaled(new.requests, old.requests):
        actions.append(ActionType.UpdatePodScaleDown)
    if _scaled(old.requests, new.requests):
        actions.append(ActionType.UpdatePodScaleUp)
    if not new.pod.spec.scheduling_gates and old.pod.spec.scheduling_gates:
        actions.append(ActionType.UpdatePodSchedulingGatesEliminated)
    if len(new.pod.spec.tolerations) != len(old.pod.spec.tolerations):
        actions.append(ActionType.UpdatePodToleration)
    return [ClusterEvent(resource, action) for action in actions or [ActionType.Update]]


def _condition_statuses(node: Node) -> dict[str, str]:
    return {c.type: c.status for c in node.status.conditions}


def node_changes(new: Node, old: Node) -> list[ClusterEvent]:
    """The refined events of a node update (kube's NodeSchedulingPropertiesChange), in kube's
    order; none when nothing scheduling reads changed. A node made schedulable again counts as a
    taint change (as does any change of its taints)."""
    actions: list[ActionType] = []
    if old.spec.unschedulable and not new.spec.unschedulable:
        actions.append(ActionType.UpdateNodeTaint)
    if new.status.allocatable != old.status.allocatable:
        actions.append(ActionType.UpdateNodeAllocatable)
    if new.metadata.labels != old.metadata.labels:
        actions.append(ActionType.UpdateNodeLabel)
    if new.spec.taints != old.spec.taints:
        actions.append(ActionType.UpdateNodeTaint)
    if _condition_statuses(new) != _condition_statuses(old):
        actions.append(ActionType.UpdateNodeCondition)
    if new.metadata.annotations != old.metadata.annotations:
        actions.append(ActionType.UpdateNodeAnnotation)
    return [ClusterEvent(NODE, action) for action in actions]
