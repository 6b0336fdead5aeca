"""PodInfo: everything the scheduler derives from a pod once, reused every cycle."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.dra import DEVICE_CLASS_PREFIX
from kubesched.api.objects import Container, Pod
from kubesched.api.quantity import QuantityError, resource_value
from kubesched.api.validation.field import shown
from kubesched.api.validation.resources import is_extended, is_pod_level_resource

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


def _parsed_requests(pod_key: str, where: str, merged: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, raw in merged.items():
        try:
            value = resource_value(name, raw)
        except QuantityError as exc:
            raise PodError(f"pod {pod_key}: {where}.resources.requests[{name}]: {exc}") from None
        if value < 0:
            raise PodError(f"pod {pod_key}: {where}.resources.requests[{name}]: must be non-negative, got {shown(raw)}")
        out[name] = value
    return out


def _container_requests(pod_key: str, group: str, index: int, container: Container) -> dict[str, int]:
    # A limit without a request defaults the request to the limit (API defaulting).
    merged: dict[str, Any] = dict(container.resources.limits)
    merged.update(container.resources.requests)
    return _parsed_requests(pod_key, f"spec.{group}[{index}]", merged) if merged else {}


def pod_level_requests(pod: Pod) -> dict[str, int] | None:
    """The pod-level requests (spec.resources) that stand for the containers' aggregate: cpu,
    memory and hugepages-* (component-helpers' IsSupportedPodLevelResource); a limit without a
    request stands for the request, as the API server defaults it. None when the pod sets none
    (kube's IsPodLevelRequestsSet)."""
    resources = pod.spec.resources
    if resources is None:
        return None
    merged = {name: raw for name, raw in resources.limits.items() if is_pod_level_resource(name)}
    merged.update((name, raw) for name, raw in resources.requests.items() if is_pod_level_resource(name))
    return _parsed_requests(pod.key, "spec", merged) or None


def _add(into: dict[str, int], other: dict[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: dict[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


@dataclass(slots=True)  # not frozen: a frozen dataclass costs a microsecond to build
class _Parsed:
    """A pod's quantities, parsed once for the several ways its requests are summed."""

    app: list[dict[str, int]]
    init: list[tuple[dict[str, int], bool]]  # (requests, restartable: a sidecar)
    pod_level: dict[str, int] | None
    overhead: dict[str, int]


def _parse(pod: Pod) -> _Parsed:
    key = pod.key
    spec = pod.spec
    app = [_container_requests(key, "containers", i, c) for i, c in enumerate(spec.containers)]
    init = [(_container_requests(key, "initContainers", i, c), c.restart_policy == "Always")
            for i, c in enumerate(spec.init_containers)]
    overhead: dict[str, int] = {}
    for name, raw in spec.overhead.items():
        try:
            overhead[name] = resource_value(name, raw)
        except QuantityError as exc:
            raise PodError(f"pod {key}: spec.overhead[{name}]: {exc}") from None
    return _Parsed(app, init, pod_level_requests(pod) if spec.resources is not None else None, overhead)


def _requests(parsed: _Parsed) -> dict[str, int]:
    """component-helpers' PodRequests: app containers and sidecars summed, each regular init
    container on top of the sidecars started before it, the larger of the two; the pod-level
    requests in place of that for the resources they name; plus pod overhead."""
    total: dict[str, int] = {}
    for r in parsed.app:
        _add(total, r)
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for r, restartable in parsed.init:
        if restartable:
            _add(total, r)
            _add(sidecars, r)
            _max(init_max, sidecars)
        else:
            step = dict(r)
            _add(step, sidecars)
            _max(init_max, step)
    _max(total, init_max)
    if parsed.pod_level:
        total.update(parsed.pod_level)
    if parsed.overhead:
        _add(total, parsed.overhead)
    return total


def _filled(parsed: _Parsed, name: str, fill: int) -> int:
    """PodRequests of one resource with NonMissingContainerRequests and SkipPodLevelResources: a
    container that does not name it counts `fill`, and the pod level counts for nothing (see
    _request_sets). Resources aggregate independently, so one is summed on its own."""
    total = 0
    for r in parsed.app:
        total += r.get(name, fill)
    sidecars = init_max = 0
    for r, restartable in parsed.init:
        value = r.get(name, fill)
        if restartable:
            total += value
            sidecars += value
            init_max = max(init_max, sidecars)
        else:
            init_max = max(init_max, value + sidecars)
    total = max(total, init_max)
    return total + parsed.overhead.get(name, 0) if parsed.overhead else total


def _request_sets(pod: Pod) -> tuple[dict[str, int], tuple[int, int], tuple[int, int]]:
    """The pod's requests three ways, as kube-scheduler computes them (PodInfo.CalculateResource
    and resourceAllocationScorer.calculatePodResourceRequest): what it requests (PodRequests);
    the cpu and memory a node it is on counts for scoring (NonZeroRequested); and the cpu and
    memory NodeResourcesFit's scorers count for it as the pod being placed.

    Without pod-level requests, a container missing a cpu or memory request counts the default in
    both non-zero sets alike. With them, a node counts the pod level's values, and the default
    only for a resource neither the pod level, nor a container, nor the overhead names
    (getNonMissingContainerRequests); NodeResourcesFit's scorers ignore the pod level altogether
    (kube-scheduler v1.37.2 builds their resourceAllocationScorer without enablePodLevelResources,
    so SkipPodLevelResources holds): every container's missing request filled, plus overhead."""
    parsed = _parse(pod)
    plain = _requests(parsed)
    scoring = (_filled(parsed, CPU, DEFAULT_MILLI_CPU_REQUEST), _filled(parsed, MEMORY, DEFAULT_MEMORY_REQUEST))
    if parsed.pod_level is None:
        return plain, scoring, scoring
    node = (plain[CPU] if CPU in plain else scoring[0], plain[MEMORY] if MEMORY in plain else scoring[1])
    return plain, node, scoring


def pod_requests(pod: Pod, *, non_zero: bool = False) -> dict[str, int]:
    """The pod's effective requests as kube computes them (see _requests), pod-level requests
    included. With non_zero, as a node counts them for scoring: missing cpu/memory requests count
    as the defaults."""
    plain, (cpu, memory), _ = _request_sets(pod)
    return {**plain, CPU: cpu, MEMORY: memory} if non_zero else plain


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
    # cpu and memory as a node this pod is on counts them for scoring (NonZeroRequested), and as
    # NodeResourcesFit's scorers count them while this pod is being placed: the same numbers
    # unless the pod sets pod-level requests (see _request_sets).
    non_zero_cpu: int
    non_zero_memory: int
    scoring_cpu: int
    scoring_memory: int
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]
    seq: int = field(default_factory=lambda: next(_sequence))
    # Dynamic resource allocation: the names of the pod's spec.resourceClaims, and the resources it
    # requests that a DeviceClass could map to DRA (kube's IsDRAExtendedResourceName; whether one
    # does depends on the classes, and per node on its allocatable). `may_use_dra` is the one
    # flag every cycle reads: false for almost every pod (DynamicResources' PreFilter).
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
    requests, (non_zero_cpu, non_zero_memory), (scoring_cpu, scoring_memory) = _request_sets(pod)
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
    requests[PODS] = 1
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
        non_zero_cpu=non_zero_cpu,
        non_zero_memory=non_zero_memory,
        scoring_cpu=scoring_cpu,
        scoring_memory=scoring_memory,
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
