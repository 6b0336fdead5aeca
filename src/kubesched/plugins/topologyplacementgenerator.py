"""TopologyPlacementGenerator: a PodGroup that asks for one topology domain is tried domain by
domain (kube v1.37, TopologyAwareWorkloadScheduling).

The key is the PodGroup's `spec.schedulingConstraints.topology[0].key` (a node label such as
`topology.kubernetes.io/zone` or a rack label). One placement per value of that label, holding
the nodes that carry it; nodes without the label are in none. A group without the constraint has
one placement: every node it may use. Members already scheduled pin the group to their domain
(they must all share one), so a group never spans two domains and its replacements stay where
it is.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from kubesched.api.podgroups import PodGroup
from kubesched.framework.handle import Handle
from kubesched.framework.interface import PlacementGeneratePlugin, Plugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import GroupPlacement
from kubesched.plugins.helper.args import refuse_args

NAME = "TopologyPlacementGenerator"
UNKNOWN_DOMAIN = "cannot determine domain for already scheduled pods"


class TopologyPlacementGenerator(Plugin, PlacementGeneratePlugin):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        if handle is None:
            raise ValueError(f"{NAME} needs the node table (a handle)")
        super().__init__(None, handle)
        self.handle: Handle = handle

    def generate_placements(self, group: PodGroup, parent: np.ndarray) -> list[GroupPlacement] | Status:
        key = group.topology_key
        if not key:
            return [GroupPlacement("", parent)]
        table = self.handle.table
        column = table.labels.get(key)
        if column is None:
            return []
        ids = column.ids[: table.size]
        allowed = self._scheduled_domain(group, key)
        if isinstance(allowed, Status):
            return allowed
        out: list[GroupPlacement] = []
        for value, vid in sorted(column.vocab.items()):
            if allowed is not None and value != allowed:
                continue
            rows = parent & (ids == vid)
            if rows.any():
                out.append(GroupPlacement(value, rows))
        return out

    def _scheduled_domain(self, group: PodGroup, key: str) -> str | Status | None:
        """The domain the group's scheduled members sit in (None: no member is scheduled)."""
        state = self.handle.cache.groups.state(group.key)
        if state is None:
            return None
        table = self.handle.table
        domain: str | None = None
        for pi in state.scheduled():
            node = self.handle.cache.node_of(pi.uid)
            row = table.index.get(node) if node is not None else None
            obj = table.nodes[row] if row is not None else None
            value = obj.metadata.labels.get(key) if obj is not None else None
            if value is None:
                return Status(Code.ERROR, (f"{UNKNOWN_DOMAIN}: no topology domain found for pod {pi.key}",))
            if domain is not None and value != domain:
                return Status(Code.ERROR, (f"{UNKNOWN_DOMAIN}: more than 1 domain found for pod group: {domain}, {value}",))
            domain = value
        return domain
