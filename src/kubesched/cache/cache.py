"""The scheduler cache: nodes and the pods on them, including pods only assumed.

A pod is counted on its node from the moment the scheduling cycle assumes it (at
Reserve), so the next cycle already sees the node's reduced room; the binding
cycle then confirms it (the backend reports the pod bound) or forgets it (the
bind failed). This is what keeps a node from being overcommitted while binds
are in flight, and a pod from being bound twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.api.selectors import Selector
from kubesched.cache.customobjects import CustomObjectIndex
from kubesched.cache.deviceclasses import DeviceClassIndex
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.pdbs import PdbIndex
from kubesched.cache.podgroups import ASSUMED, BOUND, PodGroupIndex
from kubesched.cache.podindex import PodIndex
from kubesched.cache.storage import StorageIndex

log = logging.getLogger(__name__)


class CacheError(RuntimeError):
    """An operation that would corrupt the cache (assuming a pod twice, onto no node...)."""


@dataclass(slots=True)
class PlacedPod:
    info: PodInfo
    node: str
    assumed: bool
    binding_finished: bool = False


class PodListener(Protocol):
    """Told when a pod starts or stops counting on a node: assumed by this scheduler (`assumed`), or
    reported bound by the cluster without having been assumed here (someone else bound it, or it
    ran before we started). A confirmed assumption is not a new placement."""

    def pod_placed(self, pi: PodInfo, row: int, assumed: bool) -> None: ...

    def pod_removed(self, uid: str) -> None: ...


class Cache:
    def __init__(self) -> None:
        self.table = NodeTable()
        self.pods = PodIndex()
        self.placed: dict[str, PlacedPod] = {}
        # Pods reported on a node the cache has not seen yet: kept until the node arrives.
        self._orphans: dict[str, dict[str, PodInfo]] = {}
        self.namespace_labels: dict[str, dict[str, str]] = {}
        # Selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets, keyed by
        # (kind, namespace, name): PodTopologySpread's system defaults spread a pod by them.
        self.workload_selectors: dict[tuple[str, str, str], Selector] = {}
        self._listeners: list[PodListener] = []
        # PVCs, PVs, StorageClasses, CSINodes... for the volume plugins (cache.storage).
        self.storage = StorageIndex(self.table)
        self.subscribe(self.storage)
        # PodGroups and their members by state (GenericWorkload's gang scheduling).
        self.groups = PodGroupIndex()
        # Custom objects (CRD-backed kinds) that plugins read, as the backend delivers them.
        self.custom = CustomObjectIndex()
        # PodDisruptionBudgets, for preemption.
        self.pdbs = PdbIndex()
        # DeviceClasses: which extended resources DRA serves (DynamicResources and NodeResourcesFit read them).
        self.device_classes = DeviceClassIndex()

    def subscribe(self, listener: PodListener) -> None:
        self._listeners.append(listener)

    # --- nodes -------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        row = self.table.upsert_node(node)
        for pi in self._orphans.pop(node.metadata.name, {}).values():
            self._place(pi, row)

    update_node = add_node

    def remove_node(self, name: str) -> None:
        row = self.table.index.get(name)
        if row is None:
            return
        # Pods stay known (kube keeps them until their own delete arrives) but no longer
        # occupy a row; they come back if a node of that name is added again.
        for pi in list(self.table.pods[row].values()):
            self.pods.remove(pi)
            self._orphans.setdefault(name, {})[pi.uid] = pi
        self.table.remove_node(name)

    # --- placed pods ------------------------------------------------------------------------

    def lift(self, pi: PodInfo, row: int) -> None:
        """Takes a placed pod off its row for a what-if (group preemption's): neither the table
        nor the pod index counts it until `restore`; what the cache knows of it is unchanged."""
        self._take(pi, row)

    def restore(self, pi: PodInfo, row: int) -> None:
        """Puts a pod `lift` took off back on its row."""
        self._place(pi, row)

    def _place(self, pi: PodInfo, row: int) -> None:
        self.table.add_pod(row, pi)
        self.pods.add(pi, row)

    def _take(self, pi: PodInfo, row: int) -> None:
        self.table.remove_pod(row, pi)
        self.pods.remove(pi)

    def _unplace(self, pi: PodInfo, node: str) -> None:
        row = self.table.index.get(node)
        if row is not None:
            self._take(pi, row)
        else:
            orphans = self._orphans.get(node)
            if orphans is not None:
                orphans.pop(pi.uid, None)
                if not orphans:  # the name of a node long deleted must not stay behind
                    del self._orphans[node]

    def _put(self, pi: PodInfo, node: str) -> None:
        row = self.table.index.get(node)
        if row is None:
            self._orphans.setdefault(node, {})[pi.uid] = pi
        else:
            self._place(pi, row)

    def assume(self, pi: PodInfo, node: str) -> None:
        if pi.uid in self.placed:
            raise CacheError(f"pod {pi.key} is already assumed or bound on {self.placed[pi.uid].node}")
        if node not in self.table.index:
            raise CacheError(f"pod {pi.key} assumed onto unknown node {node}")
        self.placed[pi.uid] = PlacedPod(pi, node, assumed=True)
        self._put(pi, node)
        self.groups.set_member(pi, ASSUMED)
        for listener in self._listeners:
            listener.pod_placed(pi, self.table.index[node], True)

    def finish_binding(self, pi: PodInfo) -> None:
        placed = self.placed.get(pi.uid)
        if placed is not None and placed.assumed:
            placed.binding_finished = True

    def forget(self, pi: PodInfo) -> None:
        placed = self.placed.get(pi.uid)
        if placed is None or not placed.assumed:
            return
        del self.placed[pi.uid]
        self._unplace(placed.info, placed.node)
        self.groups.unassume(placed.info)
        for listener in self._listeners:
            listener.pod_removed(pi.uid)

    def is_assumed(self, uid: str) -> bool:
        placed = self.placed.get(uid)
        return placed is not None and placed.assumed

    def add_pod(self, pi: PodInfo) -> None:
        """A pod the cluster reports on a node (bound). Confirms an assumption if there was one."""
        node = pi.node_name
        placed = self.placed.get(pi.uid)
        if placed is not None and placed.info is pi and placed.node == node:
            placed.assumed = False  # the bind we assumed is confirmed; the table already counts it
            self.groups.set_member(pi, BOUND)
            return
        if placed is not None:
            if placed.assumed and placed.node != node:
                log.warning("pod %s was assumed on %s but is bound to %s", pi.key, placed.node, node)
            self._unplace(placed.info, placed.node)
        self.placed[pi.uid] = PlacedPod(pi, node, assumed=False)
        self._put(pi, node)
        self.groups.set_member(pi, BOUND)
        row = self.table.index.get(node)
        if placed is None and row is not None:
            for listener in self._listeners:
                listener.pod_placed(pi, row, False)

    def update_pod(self, pi: PodInfo) -> None:
        self.add_pod(pi)

    def remove_pod(self, uid: str) -> PodInfo | None:
        self.groups.remove_member(uid)
        placed = self.placed.pop(uid, None)
        if placed is None:
            return None
        self._unplace(placed.info, placed.node)
        for listener in self._listeners:
            listener.pod_removed(uid)
        return placed.info

    def node_of(self, uid: str) -> str | None:
        placed = self.placed.get(uid)
        return placed.node if placed else None

    # --- namespaces ----------------------------------------------------------------------------

    def set_namespace(self, name: str, labels: dict[str, str]) -> None:
        self.namespace_labels[name] = dict(labels)

    def remove_namespace(self, name: str) -> None:
        self.namespace_labels.pop(name, None)

    # --- workload selectors ----------------------------------------------------------------------

    def set_workload_selector(self, kind: str, namespace: str, name: str, selector: Selector) -> None:
        self.workload_selectors[(kind, namespace, name)] = selector

    def remove_workload_selector(self, kind: str, namespace: str, name: str) -> None:
        self.workload_selectors.pop((kind, namespace, name), None)

    def selectors_for(self, pi: PodInfo) -> list[Selector]:
        """Selectors of the workloads and services in the pod's namespace that select it
        (kube's DefaultSelector inputs). An empty selector selects nothing here."""
        out = []
        for (_kind, ns, _name), sel in self.workload_selectors.items():
            if ns == pi.namespace and not sel.empty and sel.matches(pi.labels):
                out.append(sel)
        return out
