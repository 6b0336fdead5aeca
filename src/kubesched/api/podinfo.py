"""PodInfo: everything the scheduler derives from a pod once, reused every cycle."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.dra import DEVICE_CLASS_PREFIX
from kubesched.api.objects import Container, Pod
from kubesched.api.quantity import QuantityError, resource_value
from kubesched.api.validation.field import shown
from kubesched.api.validation.resources import is_extended

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler scores a container that sets no cpu/memory request as if it asked for
# these, so best-effort pods do not all pile onto one node (DefaultMilliCPURequest,
# DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_sequence = itertools.count()
# Resources no DeviceClass can map (they have no domain): most pods request only these.
_NATIVE = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, PODS})


class PodError(ValueError):
    """A pod whose resources cannot be read; the message names the pod and field."""


@dataclass(frozen=True, slots=True)
class HostPort:
    protocol: str
    host_ip: str
    port: int


def _container_requests(pod_key: str, where: str, container: Container) -> dict[str, int]:
    out: dict[str, int] = {}
    # A limit without a request defaults the request to the limit (API defaulting).
    merged: dict[str, Any] = dict(container.resources.limits)
    merged.update(container.resources.requests)
    for name, raw in merged.items():
        try:
            value = resource_value(name, raw)
        except QuantityError as exc:
            raise PodError(f"pod {pod_key}: {where}.resources.requests[{name}]: {exc}") from None
        if value < 0:
            raise PodError(f"pod {pod_key}: {where}.resources.requests[{name}]: must be non-negative, got {shown(raw)}")
        out[name] = value
    return out


def _add(into: dict[str, int], other: dict[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: dict[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(pod: Pod, *, non_zero: bool = False) -> dict[str, int]:
    """Effective requests as kube computes them: app containers and sidecars summed, each
    regular init container on top of the sidecars started before it, the larger of the two,
    plus pod overhead. With non_zero, missing cpu/memory requests count as the defaults."""
    key = pod.key
    total: dict[str, int] = {}
    for i, c in enumerate(pod.spec.containers):
        r = _container_requests(key, f"spec.containers[{i}]", c)
        if non_zero:
            r.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
            r.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
        _add(total, r)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for i, c in enumerate(pod.spec.init_containers):
        r = _container_requests(key, f"spec.initContainers[{i}]", c)
        if non_zero:
            r.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
            r.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
        if c.restart_policy == "Always":
            _add(total, r)
            _add(sidecars, r)
            _max(init_max, sidecars)
        else:
            step = dict(r)
            _add(step, sidecars)
            _max(init_max, step)
    _max(total, init_max)
    for name, raw in pod.spec.overhead.items():
        try:
            total[name] = total.get(name, 0) + resource_value(name, raw)
        except QuantityError as exc:
            raise PodError(f"pod {key}: spec.overhead[{name}]: {exc}") from None
    return total


def normalize_image(name: str) -> str:
    """Image names as the kubelet reports them: a missing tag means :latest."""
    if "@" in name:
        return name
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


@dataclass(slots=True, eq=False)
class PodInfo:
    """A pod plus what scheduling derives from it. Identity is the object (eq=False)."""

    pod: Pod
    key: str
    uid: str
    namespace: str
    labels: dict[str, str]
    priority: int
    requests: dict[str, int]
    non_zero_cpu: int
    non_zero_memory: int
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    seq: int = field(default_factory=lambda: next(_sequence))
    # Dynamic resource allocation: the names of the pod's spec.resourceClaims, and the resources it
    # requests that a DeviceClass could map to DRA (kube's IsDRAExtendedResourceName; whether one
    # does depends on the classes, and per node on its allocatable). `may_use_dra` is the one
    # flag every cycle reads: false for almost every pod (scheduler/draguard.py).
    resource_claims: tuple[str, ...] = ()
    dra_resources: tuple[str, ...] = ()
    may_use_dra: bool = False
    # Cache of the request vector for a NodeTable resource layout: (layout version, array).
    vector_cache: tuple[int, Any] | None = None
    # Opaque per-plugin precomputations (parsed affinity, tolerations...), keyed by plugin name.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def node_name(self) -> str:
        return self.pod.spec.node_name

    @property
    def scheduler_name(self) -> str:
        return self.pod.spec.scheduler_name or "default-scheduler"

    @property
    def gated(self) -> bool:
        return bool(self.pod.spec.scheduling_gates)

    @property
    def preempt_never(self) -> bool:
        return self.pod.spec.preemption_policy == "Never"

    @property
    def terminal(self) -> bool:
        return self.pod.status.phase in ("Succeeded", "Failed")

    def seen_as(self, *, node_name: str | None = None, nominated_node_name: str | None = None) -> PodInfo:
        """A copy whose pod shows another node name or nominated node name (the same derived
        facts): the pod as an event reports it, such as an assumed pod whose assumption is undone."""
        spec, status = self.pod.spec, self.pod.status
        if node_name is not None:
            spec = msgspec.structs.replace(spec, node_name=node_name)
        if nominated_node_name is not None:
            status = msgspec.structs.replace(status, nominated_node_name=nominated_node_name)
        return dataclasses.replace(self, pod=msgspec.structs.replace(self.pod, spec=spec, status=status))


def make_pod_info(pod: Pod) -> PodInfo:
    """Derive a PodInfo; raises PodError naming the pod and field for unreadable resources."""
    requests = pod_requests(pod)
    requests[PODS] = 1
    non_zero = pod_requests(pod, non_zero=True)
    ports: list[HostPort] = []
    # Regular init containers have exited before the app starts; only sidecars hold ports.
    running = itertools.chain((c for c in pod.spec.init_containers if c.restart_policy == "Always"), pod.spec.containers)
    for c in running:
        for p in c.ports:
            # With hostNetwork the API server defaults hostPort to containerPort.
            host_port = p.host_port or (p.container_port if pod.spec.host_network else 0)
            if host_port > 0:
                ports.append(HostPort(p.protocol or "TCP", p.host_ip or "0.0.0.0", host_port))
    images = tuple(normalize_image(c.image) for c in pod.spec.containers if c.image)
    # Both are empty for almost every pod: found so without building anything.
    claims = tuple(c.name for c in pod.spec.resource_claims) if pod.spec.resource_claims else ()
    dra_resources: tuple[str, ...] = ()
    if not requests.keys() <= _NATIVE:
        dra_resources = tuple(sorted(n for n, v in requests.items() if v > 0 and may_be_dra_resource(n)))
    return PodInfo(
        pod=pod,
        key=pod.key,
        uid=pod.metadata.uid or pod.key,
        namespace=pod.metadata.namespace,
        labels=pod.metadata.labels,
        priority=pod.spec.priority or 0,
        requests=requests,
        non_zero_cpu=non_zero.get(CPU, 0),
        non_zero_memory=non_zero.get(MEMORY, 0),
        host_ports=tuple(ports),
        images=images,
        resource_claims=claims,
        dra_resources=dra_resources,
        may_use_dra=bool(claims or dra_resources),
    )


def may_be_dra_resource(name: str) -> bool:
    """Whether a DeviceClass could map this resource name (kube's IsDRAExtendedResourceName): an
    extended resource, or one of the implicit deviceclass.resource.kubernetes.io/ names."""
    return name.startswith(DEVICE_CLASS_PREFIX) or is_extended(name)
