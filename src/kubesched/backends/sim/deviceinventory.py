"""A device inventory stated briefly: one ResourceSlice manifest stamped onto every Node a label
selector matches, so that a 1,000-node GPU cluster is one document, not 1,000 slices.

    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata:
      name: a100
      annotations:
        sim.kubesched.io/nodes: "gpu.example.com/model=a100"   # which Nodes (kubectl -l syntax)
        sim.kubesched.io/device-count: "8"                     # each device below, 8 times
    spec:
      driver: gpu.example.com
      devices:
      - name: gpu-{i}                                          # gpu-0 ... gpu-7
        attributes:
          uuid: {string: "GPU-{node}-{i}"}
          model: {string: A100-80GB}

- `sim.kubesched.io/nodes`: a label selector in kubectl's `-l` syntax (`k=v`, `k==v`, `k!=v`,
  `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma-separated, all must hold; empty: every node).
  Each matching Node of the input gets its own slice, named `<name>-<node>`, with `spec.nodeName`
  the node and `spec.pool.name` the node's name (a pool of one slice, as a node-local driver
  publishes it; a pool name given must contain `{node}`). Where the devices are is filled in, so
  `nodeName`, `nodeSelector`, `allNodes` and `perDeviceNodeSelection` may not be given.
  `resourceSliceCount` defaults to 1.
- `sim.kubesched.io/device-count: N` (with `nodes`): every device of `spec.devices` stands for N
  devices, `{i}` (0 to N-1) in its name (required there) and in its string attributes.
- `{node}` in a string attribute (or the pool name) is the node's name.

Each stamped slice is then validated as the API server validates any slice (a message names the
manifest, the node and the field), defaulted and created like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from kubesched.api.dra import ResourceSlice
from kubesched.api.dra.common import RESOURCE_SLICE_MAX_DEVICES
from kubesched.api.dra.slices import Device, DeviceAttribute
from kubesched.api.objects import Node
from kubesched.api.selectors import Requirement, Selector
from kubesched.api.validation.meta import label_key, label_value
from kubesched.backends.sim.clusterinput import quoted
from kubesched.backends.sim.simannotations import SIM_DEVICE_COUNT, SIM_NODES, count
from kubesched.backends.sim.workloads import FieldError

INDEX = "{i}"
NODE = "{node}"
# Where the devices of a slice are: filled in per node, so not the manifest's to say.
PLACEMENT_FIELDS = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")

_SET = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s+(?P<op>in|notin)\s+\((?P<values>[^()]*)\)\s*$")
_COMPARE = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=,()]*)\s*$")
_EXISTS = re.compile(r"^\s*(?P<not>!?)\s*(?P<key>[^\s!=,()]+)\s*$")


def is_inventory(annotations: dict[str, str]) -> bool:
    return SIM_NODES in annotations


def node_selector(text: str, where: str) -> Selector:
    """A label selector in kubectl's `-l` syntax (labels.Parse's equality- and set-based forms)."""
    requirements: list[Requirement] = []
    for part in _split(text):
        if not part.strip():
            if text.strip():
                raise FieldError(where, f"invalid label selector {quoted(text)}: empty requirement")
            continue
        requirements.append(_requirement(part, text, where))
    return Selector(tuple(requirements))


def _split(text: str) -> list[str]:
    """Requirements are comma-separated; commas inside `( )` separate values."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _requirement(part: str, text: str, where: str) -> Requirement:
    if m := _SET.match(part):
        values = [v.strip() for v in m["values"].split(",")]
        if not any(values):
            raise FieldError(where, f"invalid label selector {quoted(text)}: {m['op']} needs at least one value")
        return _checked(m["key"], "In" if m["op"] == "in" else "NotIn", values, text, where)
    if m := _COMPARE.match(part):
        return _checked(m["key"], "NotIn" if m["op"] == "!=" else "In", [m["value"]], text, where)
    if m := _EXISTS.match(part):
        return _checked(m["key"], "DoesNotExist" if m["not"] else "Exists", [], text, where)
    raise FieldError(where, f"invalid label selector {quoted(text)}: cannot read {quoted(part.strip())} (expected "
                            "key=value, key!=value, key in (a,b), key notin (a,b), key or !key)")


def _checked(key: str, operator: str, values: list[str], text: str, where: str) -> Requirement:
    for problem in label_key(key):
        raise FieldError(where, f"invalid label selector {quoted(text)}: key {quoted(key)}: {problem}")
    for value in values:
        for problem in label_value(value):
            raise FieldError(where, f"invalid label selector {quoted(text)}: value {quoted(value)}: {problem}")
    return Requirement(key, operator, frozenset(values))


def check_template(raw: dict[str, Any], annotations: dict[str, str]) -> None:
    """What the manifest itself must be for stamping (FieldError naming the field)."""
    spec: dict[str, Any] = raw["spec"] if isinstance(raw.get("spec"), dict) else {}
    for name in PLACEMENT_FIELDS:
        if spec.get(name) not in (None, False):
            raise FieldError(f"spec.{name}", f"filled in per node by {SIM_NODES}: leave it out")
    pool: dict[str, Any] = spec["pool"] if isinstance(spec.get("pool"), dict) else {}
    if pool.get("name") and NODE not in str(pool["name"]):
        raise FieldError("spec.pool.name", f"must contain {NODE}: each node's slice is a pool of its own "
                                           "(leave it out for the node's name)")
    if SIM_DEVICE_COUNT in annotations:
        devices = spec.get("devices") or []
        for i, device in enumerate(devices if isinstance(devices, list) else []):
            device_name = device.get("name") if isinstance(device, dict) else None
            if isinstance(device_name, str) and INDEX not in device_name:
                raise FieldError(f"spec.devices[{i}].name", f"must contain {INDEX} (the device's index, 0 to count-1) "
                                                            f"with {SIM_DEVICE_COUNT}, e.g. gpu-{INDEX}")


def device_count(annotations: dict[str, str], devices: int) -> int | None:
    """The `device-count` annotation's value (None without it), refused before anything is made
    when the slices it asks for could not hold that many devices."""
    if SIM_DEVICE_COUNT not in annotations:
        return None
    where = f"metadata.annotations[{SIM_DEVICE_COUNT}]"
    n = count(annotations[SIM_DEVICE_COUNT], where)
    if n * devices > RESOURCE_SLICE_MAX_DEVICES:
        raise FieldError(where, f"{n} x {devices} device(s) is more than a ResourceSlice may hold "
                                f"({RESOURCE_SLICE_MAX_DEVICES})")
    return n


def placeholder(text: str) -> str:
    """The template with its placeholders made valid, for validating the manifest as written."""
    return text.replace(INDEX, "0").replace(NODE, "node")


class Stamp:
    """Stamps one decoded slice (placeholders intact) onto nodes."""

    def __init__(self, template: ResourceSlice, count: int | None) -> None:
        self.template = template
        devices = template.spec.devices
        self.devices: list[Device] | None = None if devices is None else (
            list(devices) if count is None else [_indexed(d, i) for d in devices for i in range(count)])
        # The devices whose string attributes name the node (made per node; the others are shared):
        # (position, device, the keys of those attributes).
        self.per_node = [(pos, d, keys) for pos, d in enumerate(self.devices or []) if (keys := _node_keys(d))]
        self.pool = template.spec.pool.name or NODE

    def onto(self, nodes: Iterable[Node]) -> list[tuple[str, ResourceSlice]]:
        """(node, slice) for each node."""
        base = self.template
        out = []
        for node in nodes:
            node_name = node.metadata.name
            devices = list(self.devices) if self.devices is not None else None
            if devices is not None:
                for pos, device, keys in self.per_node:
                    attributes = dict(device.attributes)
                    for key in keys:
                        attributes[key] = _substituted(attributes[key], NODE, node_name)
                    devices[pos] = msgspec.structs.replace(device, attributes=attributes)
            meta = msgspec.structs.replace(base.metadata, name=f"{base.metadata.name}-{node_name}",
                                           labels=dict(base.metadata.labels), annotations=dict(base.metadata.annotations))
            pool = msgspec.structs.replace(base.spec.pool, name=self.pool.replace(NODE, node_name),
                                           resource_slice_count=base.spec.pool.resource_slice_count or 1)
            spec = msgspec.structs.replace(base.spec, node_name=node_name, pool=pool, devices=devices)
            out.append((node_name, msgspec.structs.replace(base, metadata=meta, spec=spec)))
        return out


def _indexed(device: Device, i: int) -> Device:
    index = str(i)
    attributes = {key: _substituted(value, INDEX, index) for key, value in device.attributes.items()}
    return msgspec.structs.replace(device, name=device.name.replace(INDEX, index), attributes=attributes)


def _node_keys(device: Device) -> list[str]:
    return [key for key, a in device.attributes.items() if a.string_value is not None and NODE in a.string_value]


def _substituted(attribute: DeviceAttribute, placeholder_: str, value: str) -> DeviceAttribute:
    text = attribute.string_value
    if text is None or placeholder_ not in text:
        return attribute
    return msgspec.structs.replace(attribute, string_value=text.replace(placeholder_, value))


def as_written(raw: dict[str, Any]) -> dict[str, Any]:
    """The manifest as one stamped slice of it would read (a node named "node", index 0), for
    checking what is written before stamping: the decoder's and the API server's checks then name
    the manifest's own fields."""
    spec = dict(raw.get("spec") or {}) if isinstance(raw.get("spec"), dict) else raw.get("spec")
    if isinstance(spec, dict):
        spec["nodeName"] = "node"
        pool = spec.get("pool", {})
        if isinstance(pool, dict):
            spec["pool"] = {**pool, "name": placeholder(str(pool.get("name") or NODE)),
                            "resourceSliceCount": pool.get("resourceSliceCount") or 1}
        devices = spec.get("devices")
        if isinstance(devices, list):
            spec["devices"] = [_device_as_written(d) for d in devices]
    return {**raw, "spec": spec}


def _device_as_written(device: Any) -> Any:
    if not isinstance(device, dict):
        return device
    out = dict(device)
    if isinstance(out.get("name"), str):
        out["name"] = placeholder(out["name"])
    attributes = out.get("attributes")
    if isinstance(attributes, dict):
        out["attributes"] = {key: {**value, "string": placeholder(value["string"])}
                             if isinstance(value, dict) and isinstance(value.get("string"), str) else value
                             for key, value in attributes.items()}
    return out
