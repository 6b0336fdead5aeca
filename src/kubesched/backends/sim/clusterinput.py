"""What reading manifests gives the simulator: a ClusterInput (the nodes, the pods with their
simulated timing and usage, the other objects, the scenario's settings), or a ManifestError whose
one line names the file, the document, the object and the field; and how such a message shows
the user's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.objects import Namespace, Node, Pod, PriorityClass
from kubesched.api.podgroups import PodGroup
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.selectors import Selector
from kubesched.backends.sim.configchanges import ConfigChange
from kubesched.backends.sim.usagemodel import DEFAULT_SCRAPE_INTERVAL, UsageSpec


class ManifestError(ValueError):
    """Input the simulator cannot use; the message names file, document, object and field."""


@dataclass(frozen=True, slots=True)
class Scale:
    """A controller the disruption controller can find, and its replicas (scale.spec.replicas)."""

    uid: str
    kind: str  # ReplicaSet, Deployment, StatefulSet, ReplicationController, Job
    name: str
    replicas: int
    owner_uid: str = ""  # a ReplicaSet's Deployment, when it has one
    scalable: bool = True  # a Job is found, but has no scale subresource


@dataclass(slots=True)
class SimPod:
    pod: Pod
    # Seconds of virtual time at which the pod is created.
    arrival: float = 0.0
    # Runs this long after binding, then Succeeds and frees its resources; None = forever.
    duration: float | None = None
    # Real usage once running (sim.kubesched.io/usage-*); None = its requests.
    usage_cpu: UsageSpec | None = None
    usage_memory: UsageSpec | None = None


@dataclass
class SimSettings:
    """Scenario-wide settings, from the `kubesched-simulation` ConfigMap."""

    scrape_interval: float = DEFAULT_SCRAPE_INTERVAL
    # Virtual-time spans [start, end) during which the simulated Prometheus refuses queries.
    prometheus_outages: list[tuple[float, float]] = field(default_factory=list)
    feature_gates: str = ""  # as --feature-gates takes them


@dataclass
class ClusterInput:
    nodes: list[Node]
    pods: list[SimPod]
    namespaces: list[Namespace]
    priority_classes: list[PriorityClass]
    # (kind, namespace, name, selector) of Services, ReplicaSets, StatefulSets and
    # ReplicationControllers, for PodTopologySpread's system default constraints.
    workload_selectors: list[tuple[str, str, str, Selector]]
    name: str = ""
    description: str = ""
    warnings: list[str] = field(default_factory=list)
    # With keep_going: one complete line per object refused (file, document, object, field,
    # reason); those objects are left out and everything else loaded.
    errors: list[str] = field(default_factory=list)
    # Node name -> (cpu, memory) background load (sim.kubesched.io/background-*), if any.
    background: dict[str, tuple[UsageSpec | None, UsageSpec | None]] = field(default_factory=dict)
    settings: SimSettings = field(default_factory=SimSettings)
    # Storage objects (event resource, api.storage object, arrival in virtual seconds):
    # StorageClasses first, then the rest in document order, a StatefulSet's claims after its
    # other objects (arriving with its first pod).
    storage: list[tuple[str, Any, float]] = field(default_factory=list)
    # DRA objects (event resource, api.dra object, arrival), in document order.
    devices: list[tuple[str, Any, float]] = field(default_factory=list)
    # Scheduler configuration changes in virtual time (backends.sim.configchanges), in time order.
    config_changes: list[ConfigChange] = field(default_factory=list)
    # PodGroups (scheduling.k8s.io/v1beta1) and when they are created (sim.kubesched.io/arrival).
    pod_groups: list[tuple[PodGroup, float]] = field(default_factory=list)
    # Custom objects (scheduler-plugins' PodGroups and ElasticQuotas): (event resource, object, arrival).
    custom_objects: list[tuple[str, Any, float]] = field(default_factory=list)
    # PodDisruptionBudgets (policy/v1) and when they are created; a status a manifest carries is
    # kept where the simulator cannot compute one (backends.sim.disruption).
    pdbs: list[tuple[PodDisruptionBudget, float]] = field(default_factory=list)
    # The workload controllers in the input by uid, with their replicas: what the disruption
    # controller scales budgets by.
    scales: dict[str, Scale] = field(default_factory=dict)


# --- user input in messages ---------------------------------------------------------------------


def type_name(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {quoted(value)}"
    return type(value).__name__


def cut(text: str) -> str:
    """Unquoted user text (a name, a kind) in a message, cut like validation.shown."""
    return text if len(text) <= 100 else f"{text[:100]}...({len(text) - 100} more)"


def quoted(value: Any) -> str:
    """A user value in a simulator message (Python quoting), cut like validation.shown."""
    text = repr(value)
    return text if len(text) <= 100 else f"{text[:100]}...({len(text) - 100} more)"
