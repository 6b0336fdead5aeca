"""What the simulated cluster shows of a pod where the scheduler is not the one to say it, for the
simulation's results and explanations:

- a pod created with `spec.schedulingGates` is reported with its PodScheduled condition, which the
  API server writes and a user reads (`Scheduling is blocked due to non-empty scheduling gates`),
  not with the SchedulingGates plugin's PreEnqueue status, which kube-scheduler only logs;
- a pod bound by `spec.nodeName` to a node the cluster does not have stays Pending and never runs:
  no kubelet of that name ever registers to run it. On a cluster, kube-controller-manager's pod
  garbage collector deletes such a pod (PodGC: node no longer exists) once the node has been
  missing for 40 s; the simulated cluster runs no controller manager, so the pod stays, as on an
  API server alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.objects import Node, Pod, PodCondition

SCHEDULING_GATED = "SchedulingGated"
MISSING_NODE_NOTE = (
    'bound by spec.nodeName to node "{node}", which does not exist: the pod stays Pending and never runs (no kubelet of '
    "that name); on a cluster, kube-controller-manager's pod garbage collector deletes it once the node has been missing "
    "for 40s"
)


def gate_condition(pod: Pod | None) -> PodCondition | None:
    """The PodScheduled condition the API server wrote on a pod created with scheduling gates."""
    if pod is None or not pod.spec.scheduling_gates:
        return None
    return next((c for c in pod.status.conditions if c.type == "PodScheduled" and c.reason == SCHEDULING_GATED), None)


def pending_message(pod: Pod | None, scheduler_message: str) -> str:
    """A pending pod's message as the cluster shows it: a gated pod's condition, else the
    scheduler's message (the same text its FailedScheduling condition carries)."""
    condition = gate_condition(pod)
    return condition.message if condition is not None else scheduler_message


def bound_to_missing_nodes(pods: Iterable[Pod], nodes: Mapping[str, Node]) -> dict[str, str]:
    """Pod key -> node name, for the pods bound to a node that does not exist (still Pending)."""
    return {pod.key: pod.spec.node_name for pod in pods
            if pod.spec.node_name and pod.spec.node_name not in nodes and pod.status.phase not in ("Succeeded", "Failed")}


def as_the_cluster_shows(explanation: dict[str, Any], pod: Pod | None, nodes: Mapping[str, Node]) -> dict[str, Any]:
    """An explanation (scheduler.explain's) with what the cluster shows of the pod: its scheduling
    gates' condition, or that its node does not exist (then it is Pending there, not scheduled)."""
    condition = gate_condition(pod)
    if condition is not None and explanation.get("status") == "gated":
        assert pod is not None
        gates = ", ".join(g.name for g in pod.spec.scheduling_gates)
        explanation["note"] = (f"{condition.message} (its PodScheduled condition, reason {condition.reason}; "
                               f"spec.schedulingGates: {gates}): a scheduling cycle runs once every gate is removed")
    node = explanation.get("node")
    if node and node not in nodes and explanation.get("status") in ("scheduled", "binding"):
        explanation["status"] = "pending"
        explanation["note"] = MISSING_NODE_NOTE.format(node=node)
    return explanation
