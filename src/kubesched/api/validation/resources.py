"""Resource names and quantities: ValidateResourceQuantityValue, container resource names,
requests against limits, and the int64 range the scheduler needs.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.goquantity import go_string
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


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_extended(name: str) -> bool:
    """IsExtendedResourceName: domain-prefixed, not kubernetes.io, valid as a quota name."""
    if is_native(name) or name.startswith("requests."):
        return False
    return not label_key("requests." + name)


def is_pod_level_resource(name: str) -> bool:
    """component-helpers' IsSupportedPodLevelResource: what a pod may set in spec.resources."""
    return name in ("cpu", "memory") or name.startswith(HUGEPAGES_PREFIX)


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


def validate_quantity_value(resource: str, q: Quantity, path: str, text: str) -> list[FieldIssue]:
    """ValidateResourceQuantityValue: non-negative, and whole for integer resources (`text` is
    the value as the API server prints it: goquantity.go_string)."""
    out: list[FieldIssue] = []
    if q.negative and (q.nanos is None or q.nanos < 0):
        out.append(invalid(path, text, "must be greater than or equal to 0"))
    if is_integer_resource(resource) and q.nanos is not None and _go_milli_remainder(q.nanos) != 0:
        out.append(invalid(path, text, "must be an integer"))
    return out


# sets.List(SupportedPodLevelResources()): what the API server lists when a name is not one of them.
POD_LEVEL_NAMES = ("cpu", "hugepages-", "memory")


def validate_pod_level_resource_name(name: str, path: str) -> list[FieldIssue]:
    """validatePodResourceName: a valid resource name, then one of cpu, memory and hugepages-*."""
    errs = _resource_name(name, path)
    if not errs and not is_pod_level_resource(name):
        errs.append(not_supported(path, name, POD_LEVEL_NAMES))
    return errs


def _page_bytes(name: str) -> int | None:
    """HugePageSizeFromResourceName as a whole, positive number of bytes; None otherwise."""
    try:
        page = parse(name[len(HUGEPAGES_PREFIX):])
    except QuantityError:
        return None
    if page.nanos is None or page.nanos <= 0 or page.nanos % NANO:
        return None
    return page.nanos // NANO


def _hugepage_value(name: str, q: Quantity, text: str, path: str) -> list[FieldIssue]:
    """validateResourceQuantityHugePageValue on create: a whole number of pages of the size the
    name gives (IsHugePageResourceValueDivisible: a size that does not parse, or is not a positive
    whole number of bytes, divides nothing)."""
    if not is_hugepages(name) or q.nanos is None:
        return []
    page = _page_bytes(name)
    if page is not None and -(-q.nanos // NANO) % page == 0:  # Quantity.Value(): rounded up
        return []
    return [invalid(path, text, f"{text} is not positive integer multiple of {name}")]


def _shown(raw: RawQuantity, q: Quantity) -> str:
    """The value as the API server prints it (Quantity.String() of what it decoded)."""
    return go_string(raw) if q.nanos is not None else q.canonical()


def _entry(name: str, raw: RawQuantity, where: str, *, names: bool, pod_level: bool) -> tuple[Quantity | None, list[FieldIssue]]:
    """One entry of a resource list: its name (for containers, overhead and pod-level resources),
    its quantity and the scheduler's range; the quantity when all is well."""
    out: list[FieldIssue] = []
    if pod_level:
        out.extend(validate_pod_level_resource_name(name, where))
    elif names:
        out.extend(validate_container_resource_name(name, where))
    q, errs = parse_at(raw, where)
    out.extend(errs)
    if q is None:
        return None, out
    problems = validate_quantity_value(name, q, where, _shown(raw, q)) + range_issue(name, raw, q, where)
    out.extend(problems)
    return (None if problems else q), out


def validate_resource_map(values: Mapping[str, RawQuantity], path: str, *, names: bool,
                          key_style: str = "[]", pod_level: bool = False) -> tuple[dict[str, Quantity], list[FieldIssue]]:
    """Each entry of a resource list: its name (for containers and overhead), its quantity, and
    the scheduler's range. Returns the parsed quantities of the valid entries."""
    out: list[FieldIssue] = []
    parsed: dict[str, Quantity] = {}
    for name, raw in values.items():
        where = f"{path}[{name}]" if key_style == "[]" else f"{path}.{name}"
        q, errs = _entry(name, raw, where, names=names, pod_level=pod_level)
        out.extend(errs)
        if q is not None:
            parsed[name] = q
    return parsed, out


def validate_requirements(res: ResourceRequirements, path: str, *, pod_level: bool = False) -> tuple[dict[str, int], list[FieldIssue]]:
    """validateResourceRequirements, entry by entry in kube's order: the limits, then each request
    against its limit. A container's after API defaulting (a limit without a request sets the
    request, which is validated and reported again, as kube does); with pod_level, the pod's
    spec.resources as given (a Pod's are defaulted first: podlevel.default_pod_level). Returns the
    scheduler's request values too."""
    out: list[FieldIssue] = []
    limits: dict[str, Quantity] = {}
    for name, raw in res.limits.items():
        where = f"{path}.limits[{name}]"
        q, errs = _entry(name, raw, where, names=True, pod_level=pod_level)
        out.extend(errs)
        if q is not None:
            limits[name] = q
            out.extend(_hugepage_value(name, q, _shown(raw, q), where))
    requests_raw: dict[str, RawQuantity] = {} if pod_level else dict(res.limits)
    requests_raw.update(res.requests)
    requests: dict[str, Quantity] = {}
    for name, raw in requests_raw.items():
        where = f"{path}.requests[{name}]"
        q, errs = _entry(name, raw, where, names=True, pod_level=pod_level)
        out.extend(errs)
        if q is None:
            continue
        requests[name] = q
        text = _shown(raw, q)
        limit = limits.get(name)
        assert q.nanos is not None  # validated above
        if limit is None:
            if name not in res.limits and not overcommit_allowed(name):
                out.append(required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
        elif q.nanos != limit.nanos and not overcommit_allowed(name):
            out.append(invalid(f"{path}.requests", text,
                               f"must be equal to {name} limit of {_shown(res.limits[name], limit)}"))
        elif limit.nanos is not None and q.nanos > limit.nanos:
            out.append(invalid(f"{path}.requests", text,
                               f"must be less than or equal to {name} limit of {_shown(res.limits[name], limit)}"))
        out.extend(_hugepage_value(name, q, text, where))
    names = set(res.limits) | set(res.requests)
    if any(is_hugepages(n) for n in names) and not names & {"cpu", "memory"}:
        out.append(forbidden(path, "HugePages require cpu or memory"))
    values = {name: scheduler_value(name, q) or 0 for name, q in requests.items()}
    return values, out
