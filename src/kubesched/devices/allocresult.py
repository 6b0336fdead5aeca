"""The AllocationResult of one claim as kube's allocator writes it once the search succeeded: one
entry per device (request or "request/subrequest", driver, pool, device, admin access,
tolerations, binding conditions; for a share of a device, its shareID and consumed capacity), the
class and claim configuration that applies to the chosen requests, and the node selector that says
where the devices are reachable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesched.api.dra import (
    AllocationResult,
    Device,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.api.objects import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


class NodeSelectorResultError(ValueError):
    pass


@dataclass(slots=True)
class ResultDevice:
    request: str
    parent: str | None
    device_id: tuple[str, str, str]
    device: Device
    slice: ResourceSlice
    admin_access: bool | None
    tolerations: list[DeviceToleration]
    share_id: str | None = None
    # Canonical quantities by capacity name (a share of a device with allowMultipleAllocations).
    consumed_capacity: dict[str, str] = field(default_factory=dict)

    @property
    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent is not None else self.request


# (request name, chosen subrequest name or None, the class used)
SelectedRequest = tuple[str, str | None, DeviceClass]


def build_result(claim: ResourceClaim, devices: list[ResultDevice], selected: list[SelectedRequest],
                 node_name: str) -> AllocationResult:
    results = [
        DeviceRequestAllocationResult(
            request=d.request_name, driver=d.device_id[0], pool=d.device_id[1], device=d.device_id[2],
            admin_access=d.admin_access, tolerations=list(d.tolerations),
            binding_conditions=list(d.device.binding_conditions),
            binding_failure_conditions=list(d.device.binding_failure_conditions),
            share_id=d.share_id, consumed_capacity=dict(d.consumed_capacity))
        for d in devices
    ]
    return AllocationResult(devices=DeviceAllocationResult(results=results, config=_config(claim, selected)),
                            node_selector=_node_selector(devices, node_name))


def _full(name: str, sub: str | None) -> str:
    return f"{name}/{sub}" if sub is not None else name


def _config(claim: ResourceClaim, selected: list[SelectedRequest]) -> list[DeviceAllocationConfiguration]:
    config: list[DeviceAllocationConfiguration] = []
    by_class: dict[str, tuple[int, int]] = {}
    for name, sub, device_class in selected:
        request_name = _full(name, sub)
        span = by_class.get(device_class.metadata.name)
        if span is not None:
            for i in range(*span):
                config[i].requests.append(request_name)
            continue
        start = len(config)
        for c in device_class.spec.config:
            config.append(DeviceAllocationConfiguration(source=SOURCE_CLASS, requests=[request_name], opaque=c.opaque))
        by_class[device_class.metadata.name] = (start, len(config))
    for claim_config in claim.spec.devices.config:
        wanted = claim_config.requests
        if not wanted or any(name in wanted or (sub is not None and _full(name, sub) in wanted) for name, sub, _ in selected):
            config.append(DeviceAllocationConfiguration(source=SOURCE_CLAIM, requests=list(wanted), opaque=claim_config.opaque))
    for entry in config:
        if entry.requests and all(name in entry.requests or (sub is not None and _full(name, sub) in entry.requests)
                                  for name, sub, _ in selected):
            entry.requests = []
    return config


def _node_selector(devices: list[ResultDevice], node_name: str) -> NodeSelector | None:
    term = NodeSelectorTerm()
    for d in devices:
        spec = d.slice.spec
        if spec.per_device_node_selection:
            name, selector = d.device.node_name, d.device.node_selector
        else:
            name, selector = spec.node_name, spec.node_selector
        if name is not None or d.device.binds_to_node:
            return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[
                NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])])])
        if selector is None or not selector.node_selector_terms:
            continue
        if len(selector.node_selector_terms) > 1:
            raise NodeSelectorResultError(f"unsupported ResourceSlice.NodeSelector with {len(selector.node_selector_terms)} terms")
        source = selector.node_selector_terms[0]
        _add_new(source.match_fields, term.match_fields)
        _add_new(source.match_expressions, term.match_expressions)
    if term.match_fields or term.match_expressions:
        return NodeSelector(node_selector_terms=[term])
    return None


def _add_new(source: list[NodeSelectorRequirement], target: list[NodeSelectorRequirement]) -> None:
    for req in source:
        if not any(t.key == req.key and t.operator == req.operator and set(t.values) == set(req.values) for t in target):
            target.append(req)
