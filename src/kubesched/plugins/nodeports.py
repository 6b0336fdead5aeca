"""NodePorts: reject nodes where a host port the pod wants is already taken.

A wanted (protocol, hostIP, port) conflicts with a used one of the same protocol and
port when either side binds 0.0.0.0 or both bind the same IP. Few pods use host ports,
so the node table keeps a reverse index (protocol, port) -> IP -> rows over only the rows
that have any (cache/portindex.py, with kube's conflict rule), and a pod's check touches only
the rows using its ports.

Pods' ports cannot change, so only an assigned pod's deletion (when it held a port the pod
wants, judged with the same conflict rule) or a new node can let a rejected pod in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from kubesched.api.podinfo import HostPort, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.portindex import PortRows, conflicts
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, RowFilter, SignPlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


class NodePorts(Plugin, PreFilterPlugin, FilterPlugin, RowFilter, EnqueueExtensions, SignPlugin):
    name = "NodePorts"
    Args = None

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.host_ports(pi)]

    def __init__(self, args: object = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._key = "PreFilter" + self.name

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.host_ports:
            return None, Status(Code.SKIP, plugin=self.name)
        state.write(self._key, pi.host_ports)
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        failed: np.ndarray | None = None
        for used in self._conflicting(state, pi, table):
            if failed is None:
                failed = np.zeros(table.size, dtype=bool)
            used.mark(failed)
        return None if failed is None else FilterResult.reject(failed, ERR_REASON)

    def filter_rows(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        failed: np.ndarray | None = None
        for used in self._conflicting(state, pi, table):
            failed = used.at(rows) if failed is None else failed | used.at(rows)
        return None if failed is None else FilterResult.reject(failed, ERR_REASON)

    def _conflicting(self, state: CycleState, pi: PodInfo, table: NodeTable) -> Iterator[PortRows]:
        wanted: tuple[HostPort, ...] = state.read(self._key) or pi.host_ports
        for want in wanted:
            yield from table.port_index.conflicting(want)

    # --- events and queueing hints ------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # A pod's ports cannot be updated: only a deletion frees one.
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.Delete), self.is_schedulable_after_assigned_pod_deleted),
            # A new node has every port free; kube gives it no hint.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add)),
        ]

    def is_schedulable_after_assigned_pod_deleted(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """Queue when the deleted pod was bound or nominated and held a host port that conflicts
        with one the pending pod wants."""
        if not isinstance(old, PodInfo):
            raise TypeError(f"{self.name}: expected the deleted PodInfo, got {type(old).__name__}")
        if not old.node_name and not old.pod.status.nominated_node_name:
            return QueueingHint.QueueSkip
        if not old.host_ports:
            return QueueingHint.QueueSkip
        if any(conflicts(used, want) for used in old.host_ports for want in pi.host_ports):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip
