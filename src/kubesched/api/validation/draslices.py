"""A ResourceSlice's spec as kube-apiserver v1.37.2 validates it on create (validateResourceSliceSpec):
driver and pool, where the devices are, the devices (names, typed attributes, capacity and its
request policies, counter consumption, per-device node selection, taints, binding conditions) and
the shared counters. Quantities that do not parse are refused while decoding, as the API server
refuses them ("cannot be handled as a ResourceSlice").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kubesched.api.dra.common import (
    DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH,
    DEVICE_TAINTS_MAX_LENGTH,
    MAX_ATTRIBUTE_VALUES_PER_DEVICE,
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    RESOURCE_SLICE_MAX_CONSUMPTIONS_PER_DEVICE,
    RESOURCE_SLICE_MAX_COUNTER_SETS,
    RESOURCE_SLICE_MAX_COUNTERS_PER_CONSUMPTION,
    RESOURCE_SLICE_MAX_COUNTERS_PER_SET,
    RESOURCE_SLICE_MAX_DEVICES,
    RESOURCE_SLICE_MAX_DEVICES_ADVANCED,
)
from kubesched.api.dra.slices import Counter, Device, DeviceAttribute, DeviceCapacity, ResourceSliceSpec
from kubesched.api.objects import NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.validation.drafields import (
    QUALIFIED_NAME_MAX_LENGTH,
    Found,
    binding_conditions,
    dns_label,
    dns_subdomain,
    driver_name,
    duplicates,
    item_json,
    map_key_path,
    over_limit,
    pool_name,
    qualified_name,
    taint,
)
from kubesched.api.validation.draquantity import QuantityIssues, request_policy
from kubesched.api.validation.field import forbidden, go_json, invalid, required, too_long, too_many
from kubesched.api.validation.scheduling import validate_node_selector

_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
SEMVER = re.compile(rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?", re.ASCII)
_WHERE = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
_PER_DEVICE = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
               "is set to true in the ResourceSlice spec")
# DNS1123LabelMaxLength: how much of a counter name a path shows.
_COUNTER_KEY_LIMIT = 63


def validate_slice_spec(f: Found, spec: ResourceSliceSpec, quantities: QuantityIssues, path: str = "spec") -> None:
    driver_name(f, spec.driver, f"{path}.driver")
    pool_name(f, spec.pool.name, f"{path}.pool.name")
    if spec.pool.resource_slice_count <= 0:
        f.hand.append(invalid(f"{path}.pool.resourceSliceCount", spec.pool.resource_slice_count, "must be greater than zero"))
    if spec.pool.generation < 0:
        f.hand.append(invalid(f"{path}.pool.generation", spec.pool.generation, "must be greater than or equal to zero"))
    _where(f, spec, path)
    if spec.shared_counters is not None and spec.devices is not None:
        f.hand.append(invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = spec.devices or []
    advanced = any(d.taints or d.consumes_counters for d in devices)
    limit = RESOURCE_SLICE_MAX_DEVICES_ADVANCED if advanced else RESOURCE_SLICE_MAX_DEVICES
    where = f"{path}.devices"
    if not over_limit(f, devices, limit, where, covered=False):
        per_device = spec.per_device_node_selection is True
        for i, device in enumerate(devices):
            _device(f, device, f"{where}[{i}]", per_device, quantities)
        duplicates(f, devices, lambda d: d.name, where, covered=False)
    counter_sets = spec.shared_counters or []
    where = f"{path}.sharedCounters"
    if not over_limit(f, counter_sets, RESOURCE_SLICE_MAX_COUNTER_SETS, where, covered=True):
        # The declarative rules check a list's keys before its items.
        duplicates(f, counter_sets, lambda c: c.name, where, covered=True, shown_as=item_json)
        for i, counter_set in enumerate(counter_sets):
            at = f"{where}[{i}]"
            if not counter_set.name:
                f.declared.append(required(f"{at}.name"))
            else:
                f.declared.extend(dns_label(counter_set.name, f"{at}.name"))
            _counters(f, counter_set.counters, f"{at}.counters", RESOURCE_SLICE_MAX_COUNTERS_PER_SET, quantities)


def _where(f: Found, spec: ResourceSliceSpec, path: str) -> None:
    chosen: list[str] = []
    if spec.node_name is not None:
        if spec.node_name:
            chosen.append("`nodeName`")
            f.hand.extend(dns_subdomain(spec.node_name, f"{path}.nodeName"))
        else:
            f.hand.append(invalid(f"{path}.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.node_selector is not None:
        chosen.append("`nodeSelector`")
        f.hand.extend(validate_node_selector(spec.node_selector, f"{path}.nodeSelector"))
        terms = spec.node_selector.node_selector_terms
        if len(terms) != 1:
            shown = go_json(_internal_terms(terms)) if terms else "null"
            f.hand.append(invalid(f"{path}.nodeSelector.nodeSelectorTerms", shown, "must have exactly one node selector term",
                                  rendered=True))
    for attr, name in (("all_nodes", "allNodes"), ("per_device_node_selection", "perDeviceNodeSelection")):
        value = getattr(spec, attr)
        if value is True:
            chosen.append(f"`{name}`")
        elif value is False:
            f.hand.append(invalid(f"{path}.{name}", False, "must be either unset or set to true"))
    if not chosen:
        f.hand.append(required(path, _WHERE))
    elif len(chosen) > 1:
        f.hand.append(invalid(path, "{" + ", ".join(chosen) + "}", _WHERE + ", but multiple fields are set"))


def _internal_terms(terms: Sequence[NodeSelectorTerm]) -> list[dict[str, Any]]:
    """Node selector terms as the API server prints them here: its internal type, which has no
    JSON names (json.Marshal uses the Go field names; an empty list is null)."""
    def requirements(reqs: Sequence[NodeSelectorRequirement]) -> list[dict[str, Any]] | None:
        return [{"Key": r.key, "Operator": r.operator, "Values": r.values or None} for r in reqs] or None
    return [{"MatchExpressions": requirements(t.match_expressions), "MatchFields": requirements(t.match_fields)} for t in terms]


def _device(f: Found, device: Device, path: str, per_device: bool, quantities: QuantityIssues) -> None:
    f.hand.extend(dns_label(device.name, f"{path}.name"))
    count = len(device.attributes) + len(device.capacity)
    if count > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        limit = MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
        f.hand.append(invalid(path, count, f"the total number of attributes and capacities must not exceed {limit}"))
    values = len(device.attributes)  # list-valued attributes are dropped (DRAListTypeAttributes is off)
    if values > MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        f.hand.append(invalid(path, values, f"the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES_PER_DEVICE}"))
    for key, attribute in device.attributes.items():
        f.hand.extend(qualified_name(key, f"{path}.attributes"))
        _attribute(f, attribute, map_key_path(f"{path}.attributes", key, QUALIFIED_NAME_MAX_LENGTH))
    multiple = device.allow_multiple_allocations is True
    for key, capacity in device.capacity.items():
        f.hand.extend(qualified_name(key, f"{path}.capacity"))
        _capacity(f, capacity, map_key_path(f"{path}.capacity", key, QUALIFIED_NAME_MAX_LENGTH), multiple, quantities)
    where = f"{path}.taints"
    if not over_limit(f, device.taints, DEVICE_TAINTS_MAX_LENGTH, where, covered=False):
        for i, t in enumerate(device.taints):
            taint(f, t, f"{where}[{i}]")
    where = f"{path}.consumesCounters"
    if not over_limit(f, device.consumes_counters, RESOURCE_SLICE_MAX_CONSUMPTIONS_PER_DEVICE, where, covered=True):
        duplicates(f, device.consumes_counters, lambda c: c.counter_set, where, covered=True, shown_as=item_json)
        for i, consumption in enumerate(device.consumes_counters):
            at = f"{where}[{i}]"
            if not consumption.counter_set:
                f.declared.append(required(f"{at}.counterSet"))
            else:
                f.declared.extend(dns_label(consumption.counter_set, f"{at}.counterSet"))
            _counters(f, consumption.counters, f"{at}.counters", RESOURCE_SLICE_MAX_COUNTERS_PER_CONSUMPTION, quantities)
    _device_nodes(f, device, path, per_device)
    binding_conditions(f, device.binding_conditions, device.binding_failure_conditions, path)


def _device_nodes(f: Found, device: Device, path: str, per_device: bool) -> None:
    if not per_device:
        if device.node_name is not None or device.node_selector is not None or device.all_nodes is not None:
            f.hand.append(invalid(path, "null", "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec", rendered=True))
        return
    chosen: list[str] = []
    if device.node_name is not None:
        if device.node_name:
            chosen.append("`nodeName`")
            f.hand.extend(dns_subdomain(device.node_name, f"{path}.nodeName"))
        else:
            f.hand.append(invalid(f"{path}.nodeName", "", "must not be empty"))
    if device.node_selector is not None:
        chosen.append("`nodeSelector`")
        f.hand.extend(validate_node_selector(device.node_selector, f"{path}.nodeSelector"))
    if device.all_nodes is True:
        chosen.append("`allNodes`")
    elif device.all_nodes is False:
        f.hand.append(invalid(f"{path}.allNodes", False, "must be either unset or set to true"))
    if not chosen:
        f.hand.append(required(path, _PER_DEVICE))
    elif len(chosen) > 1:
        f.hand.append(invalid(path, "{" + ", ".join(chosen) + "}", _PER_DEVICE))


def _attribute(f: Found, attribute: DeviceAttribute, path: str) -> None:
    members = [name for name, value in (("int", attribute.int_value), ("bool", attribute.bool_value),
                                        ("string", attribute.string_value), ("version", attribute.version_value))
               if value is not None]
    if attribute.string_value is not None and len(attribute.string_value.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        f.hand.append(too_long(f"{path}.string", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if attribute.version_value is not None:
        version = attribute.version_value
        if not SEMVER.fullmatch(version):
            f.hand.append(invalid(f"{path}.version", version, "must be a string compatible with semver.org spec 2.0.0"))
        if len(version.encode()) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            f.hand.append(too_long(f"{path}.version", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    every = "`int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`"
    if not members:
        f.declared.append(invalid(path, "", f"must specify one of: {every}"))
    elif len(members) > 1:
        f.declared.append(invalid(path, "{" + ", ".join(members) + "}", f"must specify exactly one of: {every}"))


def _capacity(f: Found, capacity: DeviceCapacity, path: str, multiple: bool, quantities: QuantityIssues) -> None:
    value = quantities.parse(capacity.value, f"{path}.value")
    policy = capacity.request_policy
    if policy is None:
        return
    if not multiple:
        f.hand.append(forbidden(f"{path}.requestPolicy", "allowMultipleAllocations must be true"))
        quantities.parse_policy(policy, f"{path}.requestPolicy")
        return
    parsed = quantities.parse_policy(policy, f"{path}.requestPolicy")
    if value is not None and parsed is not None:
        f.hand.extend(request_policy(value, parsed, f"{path}.requestPolicy"))


def _counters(f: Found, counters: dict[str, Counter], path: str, limit: int, quantities: QuantityIssues) -> None:
    if not counters:
        f.declared.append(required(path))
        return
    if len(counters) > limit:
        f.hand.append(too_many(path, len(counters), limit))
        return
    for name, counter in counters.items():
        f.declared.extend(dns_label(name, path))
        quantities.parse(counter.value, f"{map_key_path(path, name, _COUNTER_KEY_LIMIT)}.value")
