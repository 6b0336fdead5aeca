"""NodePorts: reject nodes where a host port the pod wants is already taken.

A wanted (protocol, hostIP, port) conflicts with a used one of the same protocol and
port when either side binds 0.0.0.0 or both bind the same IP. Few pods use host ports,
so the plugin keeps a reverse index (protocol, port) -> IP -> rows over only the rows
that have any, rebuilt when the table changes, and a pod's check touches only the rows
using its ports.
"""

from __future__ import annotations

import itertools

import numpy as np

from kubesched.api.podinfo import HostPort, PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.interface import (
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    FilterResult,
    Handle,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
BIND_ALL = "0.0.0.0"

# (protocol, port) -> host IP -> rows using it
PortIndex = dict[tuple[str, int], dict[str, list[int]]]


def build_index(table: NodeTable) -> PortIndex:
    index: PortIndex = {}
    ports = table.ports
    # compress tests each row's Counter for emptiness in C: most rows use no host port.
    for row in itertools.compress(range(len(ports)), ports):
        for hp in ports[row]:
            index.setdefault((hp.protocol, hp.port), {}).setdefault(hp.host_ip, []).append(row)
    return index


def conflicting_rows(index: PortIndex, want: HostPort) -> list[int]:
    by_ip = index.get((want.protocol, want.port))
    if not by_ip:
        return []
    if want.host_ip == BIND_ALL:
        return [row for rows in by_ip.values() for row in rows]
    return [*by_ip.get(BIND_ALL, ()), *by_ip.get(want.host_ip, ())]


class NodePorts(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = "NodePorts"
    Args = None

    def __init__(self, args: object = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._key = "PreFilter" + self.name
        self._table: NodeTable | None = None
        self._generation = -1
        self._index: PortIndex = {}

    def index(self, table: NodeTable) -> PortIndex:
        if self._table is not table or self._generation != table.generation:
            self._table, self._generation = table, table.generation
            self._index = build_index(table)
        return self._index

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not pi.host_ports:
            return None, Status(Code.SKIP, plugin=self.name)
        state.write(self._key, pi.host_ports)
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        wanted: tuple[HostPort, ...] = state.read(self._key) or pi.host_ports
        if not wanted:
            return None
        index = self.index(table)
        rows: list[int] = []
        for want in wanted:
            rows.extend(conflicting_rows(index, want))
        if not rows:
            return None
        failed = np.zeros(table.size, dtype=bool)
        failed[rows] = True
        return FilterResult.reject(failed, ERR_REASON)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add")]
