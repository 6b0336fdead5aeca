"""NodePorts: reject nodes where a host port the pod wants is already taken.

A wanted (protocol, hostIP, port) conflicts with a used one of the same protocol and
port when either side binds 0.0.0.0 or both bind the same IP. Few pods use host ports,
so the plugin keeps a reverse index (protocol, port) -> IP -> rows over only the rows
that have any, rebuilt when the table changes, and a pod's check touches only the rows
using its ports.

Pods' ports cannot change, so only an assigned pod's deletion (when it held a port the pod
wants, judged with the same conflict rule) or a new node can let a rejected pod in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from kubesched.api.podinfo import HostPort, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework import signers
from kubesched.framework.interface import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    SignFragment,
    SignPlugin,
    Status,
)

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"

# (protocol, port) -> host IP -> rows using it (NodeTable.port_index's shape; the counts are not read here)
PortIndex = Mapping[tuple[str, int], Mapping[str, Mapping[int, int] | list[int]]]


def ports_index(ports: Iterable[HostPort], row: int = 0) -> dict[tuple[str, int], dict[str, list[int]]]:
    """An index of the given ports, all on one row (a single pod's, say)."""
    index: dict[tuple[str, int], dict[str, list[int]]] = {}
    for hp in ports:
        index.setdefault((hp.protocol, hp.port), {}).setdefault(hp.host_ip, []).append(row)
    return index


def conflicting_rows(index: PortIndex, want: HostPort) -> list[int]:
    by_ip = index.get((want.protocol, want.port))
    if not by_ip:
        return []
    if want.host_ip == BIND_ALL:
        return [row for rows in by_ip.values() for row in rows]
    return [*by_ip.get(BIND_ALL, ()), *by_ip.get(want.host_ip, ())]


class NodePorts(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
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
        wanted: tuple[HostPort, ...] = state.read(self._key) or pi.host_ports
        if not wanted:
            return None
        index = table.port_index
        rows: list[int] = []
        for want in wanted:
            rows.extend(conflicting_rows(index, want))
        if not rows:
            return None
        failed = np.zeros(table.size, dtype=bool)
        failed[rows] = True
        return FilterResult.reject(failed, ERR_REASON)

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
        freed = ports_index(old.host_ports)
        if any(conflicting_rows(freed, want) for want in pi.host_ports):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip
