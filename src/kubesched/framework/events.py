"""Cluster events (kube's fwk.ClusterEvent, ActionType, QueueingHint): the kinds of change a plugin
registers for, the events the scheduler reports to its queue, and how a change is refined into them
(kube's framework/events.go): a node update becomes the UpdateNode... events of what changed, a
pod update the UpdatePod... events, so that a plugin's queueing hint runs only for the changes it
registered for."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.infra import features


class ActionType(enum.IntFlag):
    """What happened to an object (kube's fwk.ActionType): a bit each, combinable. Member names
    are kube's own, so an event label (resource + action) reads as kube-scheduler's metrics do."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4  # a taint or spec.unschedulable changed
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdateNodeDeclaredFeature = 1 << 7
    UpdateNodePreemptionPolicy = 1 << 8
    UpdatePodLabel = 1 << 9
    UpdatePodScaleDown = 1 << 10
    UpdatePodScaleUp = 1 << 11
    UpdatePodToleration = 1 << 12
    UpdatePodSchedulingGatesEliminated = 1 << 13
    UpdatePodGeneratedResourceClaim = 1 << 14
    All = (1 << 15) - 1
    Update = All & ~(Add | Delete)


class QueueingHint(enum.IntEnum):
    """A plugin's answer to "may this event make the pod I rejected schedulable?"."""

    QueueSkip = 0
    Queue = 1


# Event resources, as kube names them. "Pod" registered matches the three kinds of pod event.
POD = "Pod"


ASSIGNED_POD = "AssignedPod"  # a pod bound (or assumed) to a node


UNSCHEDULED_POD = "UnscheduledPod"  # another pending pod


TARGET_POD = "TargetPod"  # the pending pod the hint is asked about, itself


NODE = "Node"


WILDCARD = "*"


_POD_KINDS = frozenset({ASSIGNED_POD, UNSCHEDULED_POD, TARGET_POD})


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster change that may make an unschedulable pod schedulable (kube's
    fwk.ClusterEvent). `resource` is "Node", "Pod" (registered: any pod), "AssignedPod",
    "UnscheduledPod", "TargetPod", a storage or custom resource, or "*"."""

    resource: str
    action: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """The event as kube-scheduler's metrics name it: NodeAdd, AssignedPodDelete, NodeUpdateNodeTaint..."""
        return self.custom_label or f"{self.resource}{self.action.name}"

    @property
    def wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.All

    def covers(self, incoming: ClusterEvent) -> bool:
        """Whether this registered event matches an incoming one (kube's MatchClusterEvents): the
        resource matches and the incoming action is one the registration asks for, all of it."""
        if self.wildcard:
            return True
        if self.resource != incoming.resource and not (self.resource == POD and incoming.resource in _POD_KINDS):
            return False
        return bool(self.action & incoming.action) and incoming.action <= self.action


QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]
"""(the rejected pod, the object before, the object after) -> hint. Objects are PodInfo for pod
events and the API object (Node, ...) otherwise; `before` is None for Add, `after` for Delete.
An exception counts as Queue, as a hint's error does in kube."""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and the plugin's hint for it (None: every such event may help)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


WILDCARD_EVENT = ClusterEvent(WILDCARD, ActionType.All)


# Requeues that are no cluster change: every pod they reach is moved (kube's wildcard events).
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.All, "UnschedulableTimeout")


EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.All, "ForceActivate")


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
    if new.pod.status.resource_claim_statuses != old.pod.status.resource_claim_statuses:
        # The resourceclaim controller named a claim made from a template (DynamicResourceAllocation, GA).
        actions.append(ActionType.UpdatePodGeneratedResourceClaim)
    return [ClusterEvent(resource, action) for action in actions or [ActionType.Update]]


def _condition_statuses(node: Node) -> dict[str, str]:
    return {c.type: c.status for c in node.status.conditions}


def node_changes(new: Node, old: Node) -> list[ClusterEvent]:
    """The refined events of a node update (kube's NodeSchedulingPropertiesChange), in kube's
    order; none when nothing scheduling reads changed. A node made schedulable again counts as a
    taint change (as does any change of its taints). Declared features (kept sorted, so compared as
    lists) are an event of their own under the NodeDeclaredFeatures gate."""
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
    if features.current().node_declared_features and new.status.declared_features != old.status.declared_features:
        actions.append(ActionType.UpdateNodeDeclaredFeature)
    return [ClusterEvent(NODE, action) for action in actions]
