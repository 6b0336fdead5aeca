"""NodeName: a pod that names its node in spec.nodeName fits no other node.

kube (default features) has no PreFilter here; the narrowing PreFilter of newer sources is
behind the alpha InPlacePodVerticalScalingSchedulerPreemption gate, so this plugin filters only.
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
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, SignPlugin
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult, SignFragment
from kubesched.plugins.helper.args import refuse_args

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin, FilterPlugin, EnqueueExtensions, SignPlugin):
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

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        wanted = pi.node_name
        if not wanted:
            return None
        other = np.ones(table.size, dtype=bool)
        row = table.index.get(wanted)
        if row is not None:
            other[row] = False
        return FilterResult.reject(other, ERR_REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
