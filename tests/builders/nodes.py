"""make_node: a Node built fluently, as a typed object or a manifest for the simulator.

    make_node("n1").capacity(cpu="8", memory="16Gi").zone("a").taint("gpu", "yes").obj()

A fresh builder is a schedulable node with the kubernetes.io/hostname label and capacity (equal
to its allocatable) cpu 4, memory 32Gi, pods 110 (scheduler_perf's default node) and
ephemeral-storage 100Gi (a kubelet reports its local storage); `.without("ephemeral-storage")`
leaves a resource out, as a hand-written Nodes file may.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from builders.meta import ObjectBuilder
from builders.pods import HOSTNAME, ZONE, quantities
from kubesched.api.objects import Node, convert

REGION = "topology.kubernetes.io/region"


class NodeBuilder(ObjectBuilder):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._labels[HOSTNAME] = name
        self._resources: dict[str, Any] = {"cpu": "4", "memory": "32Gi", "pods": 110, "ephemeral-storage": "100Gi"}
        self._taints: list[dict[str, str]] = []
        self._unschedulable = False
        self._images: list[dict[str, Any]] = []
        self._status: dict[str, Any] = {}

    def capacity(self, resources: dict[str, Any] | None = None, /, **more: Any) -> Self:
        """Capacity and allocatable of these resources (`ephemeral_storage=` for
        ephemeral-storage; extended resources in the mapping); the others keep theirs."""
        self._resources.update(quantities(resources, more))
        return self

    def exactly(self, resources: dict[str, Any] | None = None, /, **more: Any) -> Self:
        """Capacity and allocatable of these resources and no others."""
        self._resources = quantities(resources, more)
        return self

    def without(self, *resources: str) -> Self:
        """These resources absent from capacity and allocatable."""
        for name in resources:
            self._resources.pop(name, None)
        return self

    def zone(self, zone: str) -> Self:
        return self.label({ZONE: zone})

    def region(self, region: str) -> Self:
        return self.label({REGION: region})

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        entry = {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}
        self._taints.append(entry)
        return self

    def taints(self, taints: list[dict[str, str]] | None) -> Self:
        """Taints written out as the API spells them (None: none)."""
        self._taints.extend(dict(t) for t in taints or [])
        return self

    def unschedulable(self, value: bool = True) -> Self:
        self._unschedulable = value
        return self

    def image(self, names: list[str], size_bytes: int) -> Self:
        """An image the node holds (status.images), known by these names."""
        self._images.append({"names": list(names), "sizeBytes": size_bytes})
        return self

    def declared(self, *features: str) -> Self:
        """status.declaredFeatures, as given (the API server wants them sorted)."""
        self._status["declaredFeatures"] = list(features)
        return self

    def status(self, **fields: Any) -> Self:
        """Other status fields written out (conditions, addresses)."""
        self._status.update(fields)
        return self

    def _metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self._name, **self._optional_metadata()}
        if self._uid is not None:
            meta["uid"] = self._uid
        return meta

    def _status_body(self) -> dict[str, Any]:
        resources = dict(self._resources)
        return {"allocatable": resources, "capacity": resources, **copy.deepcopy(self._status)}

    def manifest(self) -> dict[str, Any]:
        """The manifest a user writes (apiVersion and kind included)."""
        status = self._status_body()
        if self._images:
            status["images"] = copy.deepcopy(self._images)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": self._metadata(),
            "spec": {"taints": copy.deepcopy(self._taints), "unschedulable": self._unschedulable, **copy.deepcopy(self._spec)},
            "status": status,
        }

    def obj(self) -> Node:
        data = self.manifest()
        result: Node = convert(data, Node, f"node {self._name}")
        return result


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)
