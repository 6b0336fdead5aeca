"""Pod-level resources (spec.resources, PodLevelResources): the API server's defaulting of them on
create and its checks of them against the containers, as kube-apiserver v1.37.2 does both.

Defaulting (pkg/api/pod's DefaultPodLevelResources, run at PrepareForCreate since
PodLevelResourcesFixDefaulting, after the containers' requests were defaulted from their limits)
touches only a pod that sets some pod-level request or limit:

1. a hugepages limit the pod level lacks (and does not request) is the containers' aggregate limit;
2. a cpu or memory request the pod level lacks is the containers' aggregate request; then any
   request still missing is the pod-level limit (cpu, memory, hugepages-*);
3. a pod-level request without a limit, for a resource every container limits, gets the larger
   of that request and the containers' aggregate limit.

The aggregates follow component-helpers (app containers and sidecars summed, each init container
on top of the sidecars before it, the larger of the two) on quantities kept with the text Go
prints for them, since the API server shows them in its messages and in the object it stores: a
value copied keeps its text (`2e0` stays `2e0`), a sum is printed canonically in the format of its
left operand, or of the right one when the left is zero (resource.Quantity.Add).

A pod template is checked as given (the API server defaults neither its containers nor its pod
level); a Pod after both defaultings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kubesched.api.goquantity import go_string
from kubesched.api.objects import Container, PodSpec, ResourceRequirements
from kubesched.api.objects import Quantity as RawQuantity
from kubesched.api.quantity import Quantity, QuantityError, parse
from kubesched.api.validation.field import FieldIssue, forbidden, invalid
from kubesched.api.validation.podclaims import validate_claim_references
from kubesched.api.validation.resources import is_hugepages, is_pod_level_resource, validate_requirements

_OVERCOMMITTABLE = ("cpu", "memory")  # the pod-level resources IsOvercommitAllowed


@dataclass(frozen=True, slots=True)
class _Amount:
    """A quantity (nano-units, finite) and its Quantity.String()."""

    nanos: int
    format: str
    text: str


ResourceList = dict[str, _Amount]


def _parsed(values: Mapping[str, RawQuantity]) -> ResourceList:
    """The entries that parse to a number (validation reports the others)."""
    out: ResourceList = {}
    for name, raw in values.items():
        try:
            q = parse(raw)
        except QuantityError:
            continue
        if q.nanos is not None:
            out[name] = _Amount(q.nanos, q.format, go_string(raw))
    return out


def _plus(a: _Amount, b: _Amount) -> _Amount:
    """resource.Quantity.Add: the sum keeps a's format, or b's when a is zero; its text is the
    canonical one."""
    total = a.nanos + b.nanos
    fmt = b.format if a.nanos == 0 else a.format
    return _Amount(total, fmt, Quantity(total, fmt, total < 0).canonical())


def _add(into: ResourceList, other: ResourceList) -> None:
    for name, q in other.items():
        into[name] = _plus(into[name], q) if name in into else q


def _larger(into: ResourceList, other: ResourceList) -> None:
    for name, q in other.items():
        if name not in into or _above(q, into[name]):
            into[name] = q


def _above(a: _Amount, b: _Amount) -> bool:
    return a.nanos > b.nanos


def aggregate(spec: PodSpec, of: Callable[[Container], ResourceList]) -> ResourceList:
    """component-helpers' aggregateContainerResourcesByFn over `of(container)`."""
    total: ResourceList = {}
    for c in spec.containers:
        _add(total, of(c))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c in spec.init_containers:
        own = of(c)
        if c.restart_policy == "Always":
            _add(total, own)
            _add(sidecars, own)
            _larger(init_peak, sidecars)
        else:
            step = dict(own)
            _add(step, sidecars)
            _larger(init_peak, step)
    _larger(total, init_peak)
    return total


def _limits(c: Container) -> ResourceList:
    return _parsed(c.resources.limits)


def _defaulted_requests(c: Container) -> ResourceList:
    """A Pod's container requests: a limit without a request sets it (SetDefaults_Pod)."""
    return _parsed({**c.resources.limits, **c.resources.requests})


def _given_requests(c: Container) -> ResourceList:
    return _parsed(c.resources.requests)


def _all_containers(spec: PodSpec) -> Iterable[Container]:
    yield from spec.init_containers
    yield from spec.containers
    yield from spec.ephemeral_containers


def default_pod_level(spec: PodSpec) -> ResourceRequirements | None:
    """A Pod's spec.resources after the API server's defaulting on create; None when it sets none
    (nothing to default). Values the pod gave are kept as given; defaulted ones as Go prints them."""
    given = spec.resources
    if given is None or not (given.requests or given.limits):
        return None
    requests: dict[str, RawQuantity] = dict(given.requests)
    limits: dict[str, RawQuantity] = dict(given.limits)
    container_limits = aggregate(spec, _limits)
    for name, q in container_limits.items():
        if is_hugepages(name) and name not in requests and name not in limits:
            limits[name] = q.text
    for name, q in aggregate(spec, _defaulted_requests).items():
        if name in _OVERCOMMITTABLE and name not in requests:
            requests[name] = q.text
    for name, raw in limits.items():
        if is_pod_level_resource(name) and name not in requests:
            requests[name] = raw
    candidates = [name for name in requests if is_pod_level_resource(name) and name not in limits]
    candidates = [name for name in candidates if all(name in c.resources.limits for c in _all_containers(spec))]
    pod_requests = _parsed(requests)
    for name in candidates:
        limit = container_limits.get(name)
        if limit is None:
            continue
        request = pod_requests.get(name)
        limits[name] = (request if request is not None and _above(request, limit) else limit).text
    return ResourceRequirements(requests=requests, limits=limits, claims=given.claims)


def validate_pod_resources(spec: PodSpec, path: str, *, template: bool, claim_names: set[str]) -> list[FieldIssue]:
    """validatePodResources for a Pod (after defaulting) or a pod template (as given): where it may
    be set, its names and quantities, requests against limits, and the containers against it."""
    if spec.resources is None:
        return []
    at = f"{path}.resources"
    if spec.os is not None and spec.os.name == "windows":
        return [forbidden(at, "may not be set for a windows pod")]
    resources = spec.resources if template else (default_pod_level(spec) or spec.resources)
    out: list[FieldIssue] = []
    if resources.claims is not None:
        out.append(forbidden(f"{at}.claims", "claims may not be set for Resources at pod-level"))
    _, errs = validate_requirements(resources, at, pod_level=True)
    out.extend(errs)
    out.extend(validate_claim_references(resources.claims or [], claim_names, f"{at}.claims"))
    out.extend(_consistency(spec, resources, at, template=template))
    return out


def _consistency(spec: PodSpec, resources: ResourceRequirements, at: str, *, template: bool) -> list[FieldIssue]:
    """validatePodResourceConsistency: the pod-level requests cover the containers' aggregate, a
    hugepages limit covers their aggregate limit, and no app container's limit exceeds the pod's."""
    out: list[FieldIssue] = []
    pod_requests = _parsed(resources.requests)
    pod_limits = _parsed(resources.limits)
    for name, total in aggregate(spec, _given_requests if template else _defaulted_requests).items():
        request = pod_requests.get(name)
        if request is not None and _above(total, request):
            out.append(invalid(f"{at}.requests[{name}]", request.text,
                               f"must be greater than or equal to aggregate container requests of {total.text}"))
    for name, total in aggregate(spec, _limits).items():
        limit = pod_limits.get(name)
        if is_hugepages(name) and limit is not None and _above(total, limit):
            out.append(invalid(f"{at}.limits[{name}]", limit.text,
                               f"must be greater than or equal to aggregate container limits of {total.text}"))
    for i, c in enumerate(spec.containers):
        for name, own in _limits(c).items():
            limit = pod_limits.get(name)
            if limit is not None and _above(own, limit):
                out.append(invalid(f"{at}.containers[{i}][{name}].limits", own.text,
                                   f"must be less than or equal to pod limits of {limit.text}"))
    return out
