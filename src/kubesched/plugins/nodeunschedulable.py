"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take no new pods, except pods that
tolerate the node.kubernetes.io/unschedulable:NoSchedule taint (the taint the node lifecycle
controller puts on cordoned nodes; DaemonSet pods carry this toleration).

Queueing hints, as kube's: a node that is added schedulable or made schedulable again, or the
pod gaining tolerations of which one tolerates that taint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache import labels
from kubesched.cache.nodetable import NodeTable
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, SignPlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.helper.args import refuse_args
from kubesched.plugins.helper.hints import checked_new

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


class NodeUnschedulable(Plugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.tolerations(pi)]

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    # --- events and queueing hints ------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # kube files a node made schedulable again under the taint-update event.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeTaint), self.is_schedulable_after_node_change),
            ClusterEventWithHint(
                ClusterEvent(TARGET_POD, ActionType.UpdatePodToleration), self.is_schedulable_after_target_pod_toleration_change
            ),
        ]

    def is_schedulable_after_target_pod_toleration_change(
        self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """Queue when the pod's new tolerations tolerate the unschedulable taint. (Its old ones did
        not, or this plugin would not have rejected it; tolerations can only be added.)"""
        new = checked_new(NAME, PodInfo, old, new)
        return QueueingHint.Queue if tolerates_unschedulable(new) else QueueingHint.QueueSkip

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when a schedulable node is added, or a cordoned one uncordoned."""
        new = checked_new(NAME, Node, old, new)
        if new.spec.unschedulable:
            return QueueingHint.QueueSkip
        if old is None or old.spec.unschedulable:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        # kube's PreFilter skips only a pod whose resize is deferred, behind the alpha
        # InPlacePodVerticalScalingSchedulerPreemption gate (off, and not a gate kubesched has):
        # every pod goes on to Filter. The plugin is at PreFilter as kube's is.
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        cordoned = table.unschedulable[: table.size]
        if not np.count_nonzero(cordoned) or tolerates_unschedulable(pi):
            return None
        return FilterResult.reject(np.array(cordoned), ERR_REASON_UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
