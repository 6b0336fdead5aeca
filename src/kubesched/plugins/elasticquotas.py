"""ElasticQuota accounting shared by the quota plugins (CapacityScheduling, TenantOvercommit) and the
simulator's report: each tenant's min, max and used, as scheduler-plugins' CapacityScheduling
(v0.34.7, pkg/capacityscheduling/elasticquota.go) keeps them.

- A tenant is a namespace with an ElasticQuota (api.xk8s). One quota per namespace: the first one
  the scheduler saw is used; another in the same namespace is ignored (logged).
- Amounts are kube's framework.Resource: millicores, memory, ephemeral-storage, the pod count and
  scalar resources (extended, hugepages...). `spec.min` absent counts as 0 for cpu, memory and
  ephemeral-storage; `spec.max` absent as unbounded for those three. A resource missing from a
  min or max that is given is 0 there, as upstream reads a ResourceList (so `max: {memory: 1Gi}`
  caps cpu at 0); a scalar resource missing from both is bounded by 0 (min) or unbounded (max).
- "Over" compares cpu, memory, ephemeral-storage, the pod count, and each scalar resource of the
  left-hand side: any one above its bound is over.
- `used` sums the requests of the namespace's pods placed on nodes (assumed by this scheduler, or
  bound by anyone) that are not finished, with upstream's request arithmetic: containers summed,
  the larger of that and each init container, plus overhead. Unlike upstream, pods placed before
  their namespace's quota appeared are counted too (upstream counts only pods added after it).

`QuotaBook` is the live state, one per scheduler (handle.shared), kept current by the cache's pod
listener; `snapshot()` gives a cycle its own copy, which preemption's what-ifs modify.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Pod
from kubesched.api.podinfo import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, PodInfo
from kubesched.api.quantity import INT64_MAX, resource_value
from kubesched.api.xk8s import ELASTICQUOTAS, ElasticQuota, XK8sError, resource_list
from kubesched.plugins.helper.resourcescoring import is_scalar_resource

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache

log = logging.getLogger(__name__)

UPPER_BOUND = INT64_MAX  # upstream's UpperBoundOfMax
LOWER_BOUND = 0  # upstream's LowerBoundOfMin
REQUEST_KEY = "ElasticQuotaRequest"  # PodInfo.extra: the pod's request as upstream computes it


@dataclass(slots=True)
class Resource:
    """kube's framework.Resource: the amounts quota arithmetic works on."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalars: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, amounts: Mapping[str, int]) -> Resource:
        """kube's NewResource(ResourceList) on amounts already in the scheduler's units: the
        well-known resources, and scalar resources; other names are not accounted."""
        out = cls()
        out.add_amounts(amounts)
        return out

    @classmethod
    def bound(cls, value: int) -> Resource:
        """upstream's makeResourceListForBound: cpu, memory and ephemeral-storage at `value`."""
        return cls(milli_cpu=value, memory=value, ephemeral_storage=value)

    def add_amounts(self, amounts: Mapping[str, int], sign: int = 1) -> None:
        for name, value in amounts.items():
            if name == CPU:
                self.milli_cpu += sign * value
            elif name == MEMORY:
                self.memory += sign * value
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += sign * value
            elif name == PODS:
                self.pods += sign * value
            elif is_scalar_resource(name):
                self.scalars[name] = self.scalars.get(name, 0) + sign * value

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        self.pods += sign * other.pods
        for name, value in other.scalars.items():
            self.scalars[name] = self.scalars.get(name, 0) + sign * value

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.pods, dict(self.scalars))

    def amounts(self) -> dict[str, int]:
        """The non-zero amounts by resource name (cpu in millicores)."""
        out = {CPU: self.milli_cpu, MEMORY: self.memory, EPHEMERAL_STORAGE: self.ephemeral_storage, PODS: self.pods,
               **self.scalars}
        return {k: v for k, v in out.items() if v}


def over(x1: Resource, x2: Resource, y: Resource, bound: int) -> bool:
    """upstream's cmp2: whether x1 + x2 exceeds y in some dimension; scalar resources are those of
    x1, bounded by `bound` where y does not name them."""
    if x1.milli_cpu + x2.milli_cpu > y.milli_cpu:
        return True
    if x1.memory + x2.memory > y.memory:
        return True
    if x1.ephemeral_storage + x2.ephemeral_storage > y.ephemeral_storage:
        return True
    if x1.pods + x2.pods > y.pods:
        return True
    return any(value + x2.scalars.get(name, 0) > y.scalars.get(name, bound) for name, value in x1.scalars.items())


_ZERO = Resource()


def _container_requests(container: Any) -> dict[str, int]:
    merged: dict[str, Any] = dict(container.resources.limits)  # a limit alone defaults the request
    merged.update(container.resources.requests)
    return {name: resource_value(name, raw) for name, raw in merged.items()}


def pod_request(pi: PodInfo) -> Resource:
    """The pod's request as upstream's computePodResourceRequest counts it: app containers summed,
    the larger of that and each init container (sidecars too), plus overhead. Cached on the pod."""
    cached = pi.extra.get(REQUEST_KEY)
    if isinstance(cached, Resource):
        return cached
    out = request_of(pi.pod)
    pi.extra[REQUEST_KEY] = out
    return out


def request_of(pod: Pod) -> Resource:
    """pod_request of a Pod object (its quantities must parse: the API server validated them)."""
    total: dict[str, int] = {}
    for c in pod.spec.containers:
        for name, value in _container_requests(c).items():
            total[name] = total.get(name, 0) + value
    for c in pod.spec.init_containers:
        for name, value in _container_requests(c).items():
            if value > total.get(name, 0):
                total[name] = value
    for name, raw in pod.spec.overhead.items():
        total[name] = total.get(name, 0) + resource_value(name, raw)
    return Resource.of(total)


# --- one tenant ------------------------------------------------------------------------------------


@dataclass(slots=True)
class QuotaInfo:
    """One namespace's ElasticQuota: its bounds, what its placed pods use, and which pods those are.
    `pods` maps the uid of each counted pod to its request."""

    namespace: str
    name: str
    min: Resource
    max: Resource
    used: Resource = field(default_factory=Resource)
    pods: dict[str, Resource] = field(default_factory=dict)

    def used_over_min_with(self, request: Resource) -> bool:
        return over(request, self.used, self.min, LOWER_BOUND)

    def used_over_max_with(self, request: Resource) -> bool:
        return over(request, self.used, self.max, UPPER_BOUND)

    def used_over_min(self) -> bool:
        return over(self.used, _ZERO, self.min, LOWER_BOUND)

    def add_pod(self, uid: str, request: Resource) -> None:
        if uid in self.pods:
            return
        self.pods[uid] = request
        self.used.add(request)

    def remove_pod(self, uid: str) -> None:
        request = self.pods.pop(uid, None)
        if request is not None:
            self.used.add(request, -1)

    def clone(self) -> QuotaInfo:
        return QuotaInfo(self.namespace, self.name, self.min.clone(), self.max.clone(), self.used.clone(), dict(self.pods))


def quota_info(eq: ElasticQuota) -> QuotaInfo:
    """The bounds of a quota object (used empty); XK8sError naming the field of a bad quantity."""
    spec = eq.spec
    low = Resource.of(resource_list(eq, "spec.min", spec.min)) if spec.min is not None else Resource.bound(LOWER_BOUND)
    high = Resource.of(resource_list(eq, "spec.max", spec.max)) if spec.max is not None else Resource.bound(UPPER_BOUND)
    return QuotaInfo(eq.metadata.namespace, eq.metadata.name, low, high)


class QuotaSnapshot:
    """Every tenant's quota for one scheduling cycle (upstream's ElasticQuotaSnapshotState): a copy,
    so preemption's what-ifs (PreFilter AddPod/RemovePod on a cloned CycleState) change only it."""

    __slots__ = ("infos",)

    def __init__(self, infos: dict[str, QuotaInfo]) -> None:
        self.infos = infos

    def clone(self) -> QuotaSnapshot:
        return QuotaSnapshot({ns: info.clone() for ns, info in self.infos.items()})

    def get(self, namespace: str) -> QuotaInfo | None:
        return self.infos.get(namespace)

    def aggregated_used_over_min_with(self, request: Resource) -> bool:
        used, low = Resource(), Resource()
        for info in self.infos.values():
            used.add(info.used)
            low.add(info.min)
        used.add(request)
        return over(used, _ZERO, low, LOWER_BOUND)


# --- the live book ---------------------------------------------------------------------------------


class QuotaBook:
    """Every tenant's quota now, kept current from the cache: quota objects from its custom object
    index, placed pods from its pod listener. Made once per scheduler (handle.shared)."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.infos: dict[str, QuotaInfo] = {}
        self._of_pod: dict[str, str] = {}  # uid of a counted pod -> its namespace
        self._generation = -1
        self.problems: dict[str, str] = {}  # quota key -> why it is ignored (a bad quantity, a second quota)
        cache.subscribe(self)
        self.refresh()

    # --- quota objects ---------------------------------------------------------------------------------

    def refresh(self) -> dict[str, QuotaInfo]:
        """The infos, rebuilt if the quota objects changed since the last call (used is kept)."""
        custom = self.cache.custom
        generation = custom.generation(ELASTICQUOTAS.resource)
        if generation == self._generation:
            return self.infos
        self._generation = generation
        fresh: dict[str, QuotaInfo] = {}
        problems: dict[str, str] = {}
        for eq in custom.objects(ELASTICQUOTAS.resource):
            if not isinstance(eq, ElasticQuota):
                continue
            ns = eq.metadata.namespace
            if ns in fresh:
                problems[eq.key] = (f"ElasticQuota {eq.key} ignored: namespace {ns} already has ElasticQuota "
                                    f"{ns}/{fresh[ns].name} (one quota per namespace)")
                continue
            try:
                info = quota_info(eq)
            except XK8sError as exc:
                problems[eq.key] = f"{exc} (the quota is ignored)"
                continue
            old = self.infos.get(ns)
            if old is not None:
                info.used, info.pods = old.used, old.pods
            else:
                self._count_placed(info)
            fresh[ns] = info
        for key, problem in problems.items():
            if self.problems.get(key) != problem:
                log.error("%s", problem)
        self.problems = problems
        for ns in set(self.infos) - set(fresh):
            for uid in self.infos[ns].pods:
                self._of_pod.pop(uid, None)
        self.infos = fresh
        return fresh

    def _count_placed(self, info: QuotaInfo) -> None:
        for placed in self.cache.placed.values():
            pi = placed.info
            if pi.namespace == info.namespace and not pi.terminal:
                info.add_pod(pi.uid, pod_request(pi))
                self._of_pod[pi.uid] = info.namespace

    def get(self, namespace: str) -> QuotaInfo | None:
        return self.refresh().get(namespace)

    def snapshot(self) -> QuotaSnapshot:
        return QuotaSnapshot({ns: info.clone() for ns, info in self.refresh().items()})

    def __iter__(self) -> Iterator[QuotaInfo]:
        return iter(list(self.refresh().values()))

    # --- pods (the cache's PodListener, and Reserve/Unreserve) --------------------------------------------

    def reserve(self, pi: PodInfo) -> None:
        info = self.get(pi.namespace)
        if info is not None:
            info.add_pod(pi.uid, pod_request(pi))
            self._of_pod[pi.uid] = pi.namespace

    def unreserve(self, pi: PodInfo) -> None:
        self.pod_removed(pi.uid)

    def pod_placed(self, pi: PodInfo, row: int, assumed: bool) -> None:
        self.reserve(pi)

    def pod_removed(self, uid: str) -> None:
        ns = self._of_pod.pop(uid, None)
        if ns is not None:
            info = self.infos.get(ns)
            if info is not None:
                info.remove_pod(uid)
