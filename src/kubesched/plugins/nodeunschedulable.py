"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods, except pods that
tolerate the node.kubernetes.io/unschedulable:NoSchedule taint (the taint the node lifecycle
controller puts on cordoned nodes; DaemonSet pods carry this toleration)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache import labels
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
)

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def tolerates_unschedulable(pi: PodInfo) -> bool:
    cached = pi.extra.get(NAME)
    if isinstance(cached, bool):
        return cached
    ok = any(labels.tolerates(t, TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule") for t in pi.pod.spec.tolerations)
    pi.extra[NAME] = ok
    return ok


class NodeUnschedulable(Plugin, FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, Mapping) and args:
            raise ValueError(f"{NAME} takes no args, got {sorted(args)}")
        super().__init__(None, handle)

    def events_to_register(self) -> list[ClusterEvent]:
        # kube files a change of spec.unschedulable under the taint-update event.
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeTaint")]

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        cordoned = table.unschedulable[: table.size]
        if not cordoned.any() or tolerates_unschedulable(pi):
            return None
        return FilterResult.reject(np.array(cordoned), ERR_REASON_UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
