"""A ResourceClaim's (or template's) device claim as kube-apiserver v1.37.2 validates it on create
(validateDeviceClaim), after defaulting; and a claim's status as a status update validates it
(the simulator keeps the status of an allocated claim it is given; the API server would reset it
on create and check it on the scheduler's status update).
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.dra.claims import (
    AllocatedDeviceStatus,
    AllocationResult,
    DeviceClaim,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaimStatus,
)
from kubesched.api.dra.common import (
    ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH,
    ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS,
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_CONSTRAINTS_MAX_SIZE,
    DEVICE_REQUESTS_MAX_SIZE,
    FIRST_AVAILABLE_MAX_SIZE,
    NETWORK_HARDWARE_ADDRESS_MAX_LENGTH,
    NETWORK_INTERFACE_NAME_MAX_LENGTH,
    NETWORK_MAX_IPS,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    RESERVED_FOR_MAX_SIZE,
)
from kubesched.api.validation.drafields import (
    Found,
    SelectorCheck,
    binding_conditions,
    configuration,
    dns_label,
    dns_subdomain,
    driver_name,
    duplicates,
    fully_qualified_name,
    item_json,
    over_limit,
    pool_name,
    raw_extension,
    request_name_ref,
    selectors,
    toleration,
)
from kubesched.api.validation.field import FieldIssue, forbidden, invalid, not_supported, required, too_long, too_many
from kubesched.api.validation.meta import label_key
from kubesched.api.validation.scheduling import validate_node_selector

RequestNames = Mapping[str, frozenset[str] | None]
ALLOCATION_CONFIG_SOURCES = ("FromClaim", "FromClass")
_UUID = "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"


def request_names(claim: DeviceClaim) -> dict[str, frozenset[str] | None]:
    """gatherRequestNames: each request, with its subrequests' names when it has firstAvailable."""
    return {r.name: (frozenset(s.name for s in r.first_available) if r.first_available else None) for r in claim.requests}


def validate_device_claim(f: Found, claim: DeviceClaim, path: str, check: SelectorCheck) -> None:
    names = request_names(claim)
    where = f"{path}.requests"
    if not over_limit(f, claim.requests, DEVICE_REQUESTS_MAX_SIZE, where, covered=True):
        # The declarative rules check a list's keys before its items.
        duplicates(f, claim.requests, lambda r: r.name, where, covered=True, shown_as=item_json)
        for i, request in enumerate(claim.requests):
            _request(f, request, f"{where}[{i}]", check)
    where = f"{path}.constraints"
    if not over_limit(f, claim.constraints, DEVICE_CONSTRAINTS_MAX_SIZE, where, covered=True):
        for i, constraint in enumerate(claim.constraints):
            _constraint(f, constraint, f"{where}[{i}]", names)
    where = f"{path}.config"
    if not over_limit(f, claim.config, DEVICE_CONFIG_MAX_SIZE, where, covered=True):
        for i, config in enumerate(claim.config):
            at = f"{where}[{i}]"
            _request_refs(f, config.requests, f"{at}.requests", names)
            configuration(f, config, at, OPAQUE_PARAMETERS_MAX_LENGTH)


def _request(f: Found, request: DeviceRequest, path: str, check: SelectorCheck) -> None:
    f.hand.extend(dns_label(request.name, f"{path}.name"))
    has_first, has_exactly = bool(request.first_available), request.exactly is not None
    if not has_first and not has_exactly:
        f.hand.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif has_first and has_exactly:
        f.hand.append(invalid(path, "null", "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
                              rendered=True))
    elif request.exactly is not None:
        _exactly(f, request.exactly, f"{path}.exactly", check)
    else:
        where = f"{path}.firstAvailable"
        if not over_limit(f, request.first_available, FIRST_AVAILABLE_MAX_SIZE, where, covered=True):
            duplicates(f, request.first_available, lambda s: s.name, where, covered=True, shown_as=item_json)
            for i, sub in enumerate(request.first_available):
                _exactly(f, sub, f"{where}[{i}]", check)


def _exactly(f: Found, request: ExactDeviceRequest | DeviceSubRequest, path: str, check: SelectorCheck) -> None:
    """An `exactly` request, or a subrequest: whose class name the declarative rules check."""
    subrequest = isinstance(request, DeviceSubRequest)
    if isinstance(request, DeviceSubRequest):
        f.hand.extend(dns_label(request.name, f"{path}.name"))
    out = f.declared if subrequest else f.hand
    if not request.device_class_name:
        out.append(required(f"{path}.deviceClassName"))
    else:
        out.extend(dns_subdomain(request.device_class_name, f"{path}.deviceClassName"))
    selectors(f, request.selectors, f"{path}.selectors", check)
    _allocation_mode(f, request.allocation_mode, request.count, path)
    for i, t in enumerate(request.tolerations):
        toleration(f, t, f"{path}.tolerations[{i}]")


def _allocation_mode(f: Found, mode: str, count: int, path: str) -> None:
    if mode == ALLOCATION_MODE_ALL:
        if count != 0:
            f.hand.append(invalid(f"{path}.count", count, f"must not be specified when allocationMode is '{mode}'"))
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        if count <= 0:
            f.hand.append(invalid(f"{path}.count", count, "must be greater than zero"))
    else:
        f.declared.append(not_supported(f"{path}.allocationMode", mode, (ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT)))


def _request_refs(f: Found, refs: list[str], path: str, names: RequestNames) -> None:
    if over_limit(f, refs, DEVICE_REQUESTS_MAX_SIZE, path, covered=True):
        return
    duplicates(f, refs, lambda r: r, path, covered=True)
    for i, ref in enumerate(refs):
        request_name_ref(f, ref, f"{path}[{i}]", names)


def _constraint(f: Found, constraint: DeviceConstraint, path: str, names: RequestNames) -> None:
    _request_refs(f, constraint.requests, f"{path}.requests", names)
    if constraint.match_attribute is not None:
        f.declared.extend(fully_qualified_name(constraint.match_attribute, f"{path}.matchAttribute"))
    elif constraint.distinct_attribute is not None:
        f.declared.extend(fully_qualified_name(constraint.distinct_attribute, f"{path}.distinctAttribute"))
    else:
        # DRAConsumableCapacity (on by default) words it so, even when neither is set.
        f.hand.append(required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set'))


# --- status ------------------------------------------------------------------------------------------


def validate_claim_status(f: Found, status: ResourceClaimStatus, names: RequestNames, path: str = "status") -> None:
    """validateResourceClaimStatusUpdate from an empty status: reservedFor, device status, and a
    new allocation's results."""
    where = f"{path}.reservedFor"
    if not over_limit(f, status.reserved_for, RESERVED_FOR_MAX_SIZE, where, covered=True):
        duplicates(f, status.reserved_for, lambda r: r.uid, where, covered=True, shown_as=item_json)
        for i, ref in enumerate(status.reserved_for):
            for attr, value in (("resource", ref.resource), ("name", ref.name), ("uid", ref.uid)):
                if not value:
                    f.hand.append(required(f"{where}[{i}].{attr}"))
    allocated = set()
    if status.allocation is not None:
        allocated = {(r.driver, r.pool, r.device, r.share_id) for r in status.allocation.devices.results}
    duplicates(f, status.devices, lambda d: (d.driver, d.pool, d.device, d.share_id), f"{path}.devices", covered=True,
               shown_as=item_json)
    for i, device in enumerate(status.devices):
        _device_status(f, device, f"{path}.devices[{i}]", allocated)
    if status.reserved_for and status.allocation is None:
        f.hand.append(forbidden(where, "may not be specified when `allocated` is not set"))
    if status.allocation is not None:
        _allocation(f, status.allocation, f"{path}.allocation", names)


def _allocation(f: Found, allocation: AllocationResult, path: str, names: RequestNames) -> None:
    where = f"{path}.devices.results"
    results = allocation.devices.results
    if not over_limit(f, results, ALLOCATION_RESULTS_MAX_SIZE, where, covered=True):
        for i, result in enumerate(results):
            _result(f, result, f"{where}[{i}]", names)
    where = f"{path}.devices.config"
    if not over_limit(f, allocation.devices.config, 2 * DEVICE_CONFIG_MAX_SIZE, where, covered=True):
        for i, config in enumerate(allocation.devices.config):
            at = f"{where}[{i}]"
            if not config.source:
                f.declared.append(required(f"{at}.source"))
            elif config.source not in ALLOCATION_CONFIG_SOURCES:
                f.declared.append(not_supported(f"{at}.source", config.source, ALLOCATION_CONFIG_SOURCES))
            _request_refs(f, config.requests, f"{at}.requests", names)
            configuration(f, config, at, OPAQUE_PARAMETERS_MAX_LENGTH)
    if allocation.node_selector is not None:
        f.hand.extend(validate_node_selector(allocation.node_selector, f"{path}.nodeSelector"))


def _result(f: Found, result: DeviceRequestAllocationResult, path: str, names: RequestNames) -> None:
    request_name_ref(f, result.request, f"{path}.request", names)
    driver_name(f, result.driver, f"{path}.driver", covered=True)
    pool_name(f, result.pool, f"{path}.pool", covered=True)
    f.hand.extend(dns_label(result.device, f"{path}.device"))
    binding_conditions(f, result.binding_conditions, result.binding_failure_conditions, path)
    for i, t in enumerate(result.tolerations):
        toleration(f, t, f"{path}.tolerations[{i}]")
    if result.share_id is not None:
        f.declared.extend(uuid(result.share_id, f"{path}.shareID"))


def uuid(value: str, path: str) -> list[FieldIssue]:
    """The declarative UUID format: 36 characters, lowercase hex and dashes in RFC 4122's places."""
    ok = len(value) == 36 and all((c == "-") if i in (8, 13, 18, 23) else c in "0123456789abcdef" for i, c in enumerate(value))
    return [] if ok else [invalid(path, value, _UUID)]


def _device_status(f: Found, device: AllocatedDeviceStatus, path: str, allocated: set[tuple[str, str, str, str | None]]) -> None:
    driver_name(f, device.driver, f"{path}.driver")
    pool_name(f, device.pool, f"{path}.pool")
    f.hand.extend(dns_label(device.device, f"{path}.device"))
    if device.share_id is not None:
        f.declared.extend(uuid(device.share_id, f"{path}.shareID"))
    if (device.driver, device.pool, device.device, device.share_id) not in allocated:
        shown = "/".join((device.driver, device.pool, device.device)) + (f"/{device.share_id}" if device.share_id else "")
        f.hand.append(invalid(path, shown, "must be an allocated device in the claim"))
    if len(device.conditions) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
        f.hand.append(too_many(f"{path}.conditions", len(device.conditions), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS))
    for i, condition in enumerate(device.conditions):
        at = f"{path}.conditions[{i}]"
        if not condition.type:
            f.declared.append(required(f"{at}.type", "is required"))
        else:
            f.hand.extend(invalid(f"{at}.type", condition.type, msg) for msg in label_key(condition.type))
        if not condition.status:
            f.declared.append(required(f"{at}.status"))
        elif condition.status not in ("False", "True", "Unknown"):
            f.declared.append(not_supported(f"{at}.status", condition.status, ("False", "True", "Unknown")))
    if device.data is not None:
        f.hand.extend(raw_extension(device.data, f"{path}.data", ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH))
    network = device.network_data
    if network is not None:
        if len(network.interface_name) > NETWORK_INTERFACE_NAME_MAX_LENGTH:
            f.declared.append(too_long(f"{path}.networkData.interfaceName", NETWORK_INTERFACE_NAME_MAX_LENGTH))
        if len(network.hardware_address) > NETWORK_HARDWARE_ADDRESS_MAX_LENGTH:
            f.declared.append(too_long(f"{path}.networkData.hardwareAddress", NETWORK_HARDWARE_ADDRESS_MAX_LENGTH))
        over_limit(f, network.ips, NETWORK_MAX_IPS, f"{path}.networkData.ips", covered=True)
