"""What an expression reads, as the library takes it: the activation of one pod on one node.

The pod's and namespace's variables are made once per cycle; a node's are made from the node
table's row (its object for labels, annotations and taints, the table's columns for amounts),
only for the variables some rule reads. Resource maps hold every resource of the table and every
resource a rule names (0 where there is none), so both evaluation paths see the same keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable


def resource_keys(table: NodeTable, named: Iterable[str]) -> list[str]:
    """The keys of every resource map: the table's resources, then those rules name."""
    keys = list(table.resources)
    seen = set(keys)
    keys.extend(sorted(r for r in named if r not in seen))
    return keys


def pod_data(pi: PodInfo, namespace_labels: Mapping[str, str], keys: Iterable[str], wanted: frozenset[str]) -> dict[str, Any]:
    """The per-cycle variables (pod.*, namespaceObject.*) that are read."""
    pod = pi.pod
    values: dict[str, Any] = {}
    for name in wanted:
        if name == "pod.name":
            values[name] = pod.metadata.name
        elif name == "pod.namespace":
            values[name] = pi.namespace
        elif name == "pod.labels":
            values[name] = dict(pi.labels)
        elif name == "pod.annotations":
            values[name] = dict(pod.metadata.annotations)
        elif name == "pod.priority":
            values[name] = int(pi.priority)
        elif name == "pod.priorityClassName":
            values[name] = pod.spec.priority_class_name
        elif name == "pod.schedulerName":
            values[name] = pi.scheduler_name
        elif name == "pod.nodeSelector":
            values[name] = dict(pod.spec.node_selector)
        elif name == "pod.requests":
            values[name] = {k: int(pi.requests.get(k, 0)) for k in keys}
        elif name == "namespaceObject.name":
            values[name] = pi.namespace
        elif name == "namespaceObject.labels":
            values[name] = dict(namespace_labels)
    return values


class NodeData:
    """The node variables of table rows, for the library. What depends on the node object only
    is kept per row until a node changes; amounts are read from the columns on every call."""

    def __init__(self, wanted: frozenset[str]) -> None:
        self.wanted = wanted
        self._key: tuple[int, int] = (-1, -1)
        self._static: dict[int, dict[str, Any]] = {}

    def row(self, table: NodeTable, row: int, keys: list[str], usage: Mapping[str, np.ndarray] | None) -> dict[str, Any]:
        key = (id(table), table.node_generation)
        if key != self._key:
            self._key, self._static = key, {}
        static = self._static.get(row)
        if static is None:
            static = self._static[row] = self._node_static(table, row, keys)
        values = dict(static)
        wanted = self.wanted
        if "node.allocatable" in wanted or "node.requested" in wanted or "node.free" in wanted:
            alloc = table.allocatable[row]
            req = table.requested[row]
            index = table.resource_index
            cols = [index.get(k) for k in keys]
            if "node.allocatable" in wanted:
                values["node.allocatable"] = {k: int(alloc[c]) if c is not None else 0 for k, c in zip(keys, cols, strict=True)}
            if "node.requested" in wanted:
                values["node.requested"] = {k: int(req[c]) if c is not None else 0 for k, c in zip(keys, cols, strict=True)}
            if "node.free" in wanted:
                values["node.free"] = {k: int(alloc[c]) - int(req[c]) if c is not None else 0 for k, c in zip(keys, cols, strict=True)}
        if "usage" in wanted:
            values["usage"] = {} if usage is None else {
                r: float(v[row]) for r, v in usage.items() if not np.isnan(v[row])
            }
        return values

    def _node_static(self, table: NodeTable, row: int, keys: list[str]) -> dict[str, Any]:
        node = table.nodes[row]
        assert node is not None, f"row {row} is not a node"
        out: dict[str, Any] = {}
        wanted = self.wanted
        if "node.name" in wanted:
            out["node.name"] = node.metadata.name
        if "node.labels" in wanted:
            out["node.labels"] = dict(table.node_labels[row])
        if "node.annotations" in wanted:
            out["node.annotations"] = dict(node.metadata.annotations)
        if "node.taints" in wanted:
            out["node.taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.spec.taints]
        if "node.unschedulable" in wanted:
            out["node.unschedulable"] = bool(table.unschedulable[row])
        return out


def collection_sizes(data: Mapping[str, Any]) -> tuple[dict[str, int], int]:
    """Entries of every collection in an activation, and its longest string (for cost bounds)."""
    entries: dict[str, int] = {}
    longest = 0
    for name, value in data.items():
        if isinstance(value, str):
            longest = max(longest, len(value))
        elif isinstance(value, Mapping):
            entries[name] = len(value)
            for k, v in value.items():
                longest = max(longest, len(k) if isinstance(k, str) else 0, len(v) if isinstance(v, str) else 0)
        elif isinstance(value, list):
            entries[name] = len(value)
            for item in value:
                if isinstance(item, Mapping):
                    for k, v in item.items():
                        longest = max(longest, len(str(k)), len(str(v)))
    return entries, longest
