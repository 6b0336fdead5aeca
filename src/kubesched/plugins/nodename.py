"""NodeName: a pod that names its node in spec.nodeName fits no other node.

As in kube v1.37.2, its PreFilter narrows the nodes to that one (so no other node is even a
preemption candidate) and its Filter rejects the others. A pod the scheduler takes has no
spec.nodeName, so for it both let every node through.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, SignPlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.helper.args import refuse_args

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.node_name(pi)]

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A node's name never changes, so only a new node can help; kube gives it no hint (every
        # node added is worth a retry).
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add))]

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if pi.node_name:
            return PreFilterResult(frozenset((pi.node_name,))), None
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        wanted = pi.node_name
        if not wanted:
            return None
        other = np.ones(table.size, dtype=bool)
        row = table.index.get(wanted)
        if row is not None:
            other[row] = False
        return FilterResult.reject(other, ERR_REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
