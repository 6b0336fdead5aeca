"""Resource names and quantities: ValidateResourceQuantityValue, container resource names,
requests against limits, and the int64 range the scheduler needs.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.objects import Quantity as RawQuantity
from kubesched.api.objects import ResourceRequirements
from kubesched.api.quantity import INT64_MAX, NANO, Quantity, QuantityError, parse
from kubesched.api.validation.field import FieldIssue, forbidden, invalid, not_supported, required
from kubesched.api.validation.meta import label_key

# Resources that may be named without a domain prefix in a container (IsStandardContainerResourceName).
_STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
# Resources kube counts in whole units (IsIntegerResourceName), besides extended resources.
_INTEGER_RESOURCES = frozenset({
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers", "requests.storage",
})
_STANDARD_RESOURCES = _STANDARD_CONTAINER | _INTEGER_RESOURCES | frozenset({
    "storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage",
})
HUGEPAGES_PREFIX = "hugepages-"
POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"})


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_extended(name: str) -> bool:
    """IsExtendedResourceName: domain-prefixed, not kubernetes.io, valid as a quota name."""
    if is_native(name) or name.startswith("requests."):
        return False
    return not label_key("requests." + name)


def is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or is_extended(name)


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def _resource_name(name: str, path: str) -> list[FieldIssue]:
    """validateResourceName: a qualified name, and a standard one when it has no prefix."""
    errs = [invalid(path, name, msg) for msg in label_key(name)]
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not is_hugepages(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    return errs


def validate_container_resource_name(name: str, path: str) -> list[FieldIssue]:
    """validateContainerResourceName: the general rule, then the containers' own (both reported)."""
    errs = _resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER and not is_hugepages(name):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not is_native(name) and not is_extended(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def parse_at(raw: RawQuantity, path: str) -> tuple[Quantity | None, list[FieldIssue]]:
    """Parse a quantity; a string kube cannot parse is an error on its field (kube refuses it
    while decoding the object, with this text)."""
    try:
        return parse(raw), []
    except QuantityError as exc:
        return None, [invalid(path, raw, exc.reason or str(exc))]


def scheduler_value(resource: str, q: Quantity) -> int | None:
    """What kube-scheduler compares (millicores for cpu, units otherwise); None if unbounded."""
    if q.nanos is None:
        return None
    div = 10**6 if resource == "cpu" else NANO
    return -(-q.nanos // div)


def range_issue(resource: str, raw: RawQuantity, q: Quantity, path: str) -> list[FieldIssue]:
    """The one rule kube itself does not have: the scheduler's int64 must hold the value."""
    value = scheduler_value(resource, q)
    if q.negative or (value is not None and value <= INT64_MAX):
        return []
    unit = "m" if resource == "cpu" else ""
    return [invalid(path, raw, f"must be less than or equal to {INT64_MAX}{unit}")]


def _go_milli_remainder(nanos: int) -> int:
    """Quantity.MilliValue() % 1000 as the API server computes it for integer resources: rounded
    away from zero, then wrapped into int64 (so pods: 9223372036854776, whose milli-value
    overflows, is "not an integer" there), with Go's remainder taking the dividend's sign."""
    magnitude = -(-abs(nanos) // 10**6)
    wrapped = ((magnitude if nanos >= 0 else -magnitude) + 2**63) % 2**64 - 2**63
    remainder = abs(wrapped) % 1000
    return remainder if wrapped >= 0 else -remainder


def validate_quantity_value(resource: str, q: Quantity, path: str) -> list[FieldIssue]:
    """ValidateResourceQuantityValue: non-negative, and whole for integer resources."""
    out: list[FieldIssue] = []
    if q.negative and (q.nanos is None or q.nanos < 0):
        out.append(invalid(path, q.canonical(), "must be greater than or equal to 0"))
    if is_integer_resource(resource) and q.nanos is not None and _go_milli_remainder(q.nanos) != 0:
        out.append(invalid(path, q.canonical(), "must be an integer"))
    return out


def validate_pod_level_resource_name(name: str, path: str) -> list[FieldIssue]:
    """validatePodResourceName: pod-level resources (spec.resources) are cpu and memory only."""
    return [] if name in POD_LEVEL_RESOURCES else [not_supported(path, name, sorted(POD_LEVEL_RESOURCES))]


def validate_resource_map(values: Mapping[str, RawQuantity], path: str, *, names: bool,
                          key_style: str = "[]", pod_level: bool = False) -> tuple[dict[str, Quantity], list[FieldIssue]]:
    """Each entry of a resource list: its name (for containers and overhead), its quantity, and
    the scheduler's range. Returns the parsed quantities of the valid entries."""
    out: list[FieldIssue] = []
    parsed: dict[str, Quantity] = {}
    for name, raw in values.items():
        where = f"{path}[{name}]" if key_style == "[]" else f"{path}.{name}"
        if pod_level:
            out.extend(validate_pod_level_resource_name(name, where))
        elif names:
            out.extend(validate_container_resource_name(name, where))
        q, errs = parse_at(raw, where)
        out.extend(errs)
        if q is None:
            continue
        problems = validate_quantity_value(name, q, where) + range_issue(name, raw, q, where)
        out.extend(problems)
        if not problems:
            parsed[name] = q
    return parsed, out


def validate_requirements(res: ResourceRequirements, path: str, *, pod_level: bool = False) -> tuple[dict[str, int], list[FieldIssue]]:
    """A container's (or with pod_level, the pod's spec.resources) resources after API defaulting
    (a limit without a request sets the request). Returns the scheduler's request values too."""
    limits, out = validate_resource_map(res.limits, f"{path}.limits", names=True, pod_level=pod_level)
    requests_raw: dict[str, RawQuantity] = dict(res.limits)
    requests_raw.update(res.requests)
    # A request defaulted from its limit is validated (and reported) again, as kube does.
    requests, errs = validate_resource_map(requests_raw, f"{path}.requests", names=True, pod_level=pod_level)
    out.extend(errs)
    for name, q in requests.items():
        limit = limits.get(name)
        if limit is None:
            if name not in res.limits and not overcommit_allowed(name):
                out.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
            continue
        assert q.nanos is not None and limit.nanos is not None  # validated above
        if q.nanos != limit.nanos and not overcommit_allowed(name):
            out.append(invalid(f"{path}.requests", q.canonical(), f"must be equal to {name} limit of {limit.canonical()}"))
        elif q.nanos > limit.nanos:
            out.append(invalid(f"{path}.requests", q.canonical(),
                               f"must be less than or equal to {name} limit of {limit.canonical()}"))
    names = set(res.limits) | set(res.requests)
    if any(is_hugepages(n) for n in names) and not names & {"cpu", "memory"}:
        out.append(forbidden(path, "HugePages require cpu or memory"))
    values = {name: scheduler_value(name, q) or 0 for name, q in requests.items()}
    return values, out
