"""TaintToleration: a node's NoSchedule/NoExecute taints keep out pods that do not tolerate
them; untolerated PreferNoSchedule taints make a node less attractive.

Filter rejects a node whose taints (NoSchedule or NoExecute) include one that none of the
pod's tolerations tolerates. Taint keys and values can be sensitive, so kube no longer puts
them in pod status (kubernetes#134740, in 1.35 and backported to 1.34): the reason is the
generic "node(s) had untolerated taint(s)", whatever the taint. The failure code of each row
still identifies the node's first untolerated taint (column + 1 in `table.taint_list`), so
code holding the row codes can still say which taint it was (see `untolerated_taint`).

Score counts a node's PreferNoSchedule taints that the pod's tolerations with effect
PreferNoSchedule or no effect do not tolerate; normalization reverses the count so that a node
with none scores 100.

Queueing hints, as kube's: a node added or re-tainted is worth a retry when it had (or, added,
is taken to have had) a NoSchedule/NoExecute taint the pod does not tolerate and has none now;
a change of the pod's own tolerations always is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Node, Taint, Toleration
from kubesched.api.podinfo import PodInfo
from kubesched.cache import labels
from kubesched.cache.nodetable import NO_TAINT, NodeTable
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterMisses,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment, default_normalize
from kubesched.plugins.helper.args import refuse_args
from kubesched.plugins.helper.hints import checked_new

NAME = "TaintToleration"
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
FILTER_EFFECTS = frozenset((NO_SCHEDULE, NO_EXECUTE))

_VERDICT: tuple[Code, tuple[str, ...]] = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNTOLERATED,))


def _describe(_code: int) -> tuple[Code, tuple[str, ...]]:
    return _VERDICT


def untolerated_taint(table: NodeTable, code: int) -> tuple[str, str, str]:
    """The (key, value, effect) of the taint behind a Filter failure code of this plugin."""
    return table.taint_list[code - 1]


def has_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """Whether one node's taints include a NoSchedule/NoExecute one that no toleration tolerates
    (kube's FindMatchingUntoleratedTaint with the Filter's effects), as `UntoleratedTaints`
    finds for the node's taint columns."""
    return any(
        t.effect in FILTER_EFFECTS and not any(labels.tolerates(tol, t.key, t.value, t.effect) for tol in tolerations)
        for t in taints
    )


@dataclass(slots=True)
class _PodTaintInfo:
    """Kept in `pi.extra[NAME]`."""

    filter: labels.UntoleratedTaints
    prefer: labels.UntoleratedTaints
    table: NodeTable | None = None


def _pod_info(pi: PodInfo, table: NodeTable) -> _PodTaintInfo:
    info = pi.extra.get(NAME)
    if not isinstance(info, _PodTaintInfo) or info.table is not table:
        tols = pi.pod.spec.tolerations
        # Only tolerations that can apply to PreferNoSchedule taints matter for the score.
        prefer_tols = [t for t in tols if not t.effect or t.effect == PREFER_NO_SCHEDULE]
        info = _PodTaintInfo(
            labels.UntoleratedTaints(tols, FILTER_EFFECTS),
            labels.UntoleratedTaints(prefer_tols, frozenset((PREFER_NO_SCHEDULE,))),
            table,
        )
        pi.extra[NAME] = info
    return info


class TaintToleration(
    Plugin, PreFilterPlugin, FilterPlugin, FilterMisses, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin
):
    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = True

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.tolerations(pi)]

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    # --- events and queueing hints ------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeTaint), self.is_schedulable_after_node_change),
            ClusterEventWithHint(
                ClusterEvent(TARGET_POD, ActionType.UpdatePodToleration), self.is_schedulable_after_target_pod_toleration_change
            ),
        ]

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when the node had an untolerated taint (an added node counts as having had one)
        and has none now."""
        new = checked_new(NAME, Node, old, new)
        tolerations = pi.pod.spec.tolerations
        was_untolerated = old is None or has_untolerated_taint(old.spec.taints, tolerations)
        if was_untolerated and not has_untolerated_taint(new.spec.taints, tolerations):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_target_pod_toleration_change(
        self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """A toleration was added to the pod: it may tolerate the taint that kept it out."""
        return QueueingHint.Queue

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        # kube's PreFilter skips only a pod whose resize is deferred, behind the alpha
        # InPlacePodVerticalScalingSchedulerPreemption gate (off, and not a gate kubesched has):
        # every pod goes on to Filter. The plugin is at PreFilter as kube's is.
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        cols = _pod_info(pi, table).filter.columns(table)
        if cols.size == 0:
            return None
        first = labels.first_untolerated_column(table, cols)
        if first is None:
            return None
        return FilterResult(first + 1, _describe)

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Every untolerated taint is as far as the next: only a toleration or the node's owner helps."""
        return np.ones(rows.size)

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        result = self.filter(state, pi, table)
        if result is None or not result.codes[row]:
            return ""
        key, value, effect = untolerated_taint(table, int(result.codes[row]))
        return f"taint {key}={value}:{effect}" if value else f"taint {key}:{effect}"

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        # kube never skips this plugin's scoring: every node gets 100 when nothing is untolerated.
        _pod_info(pi, table).prefer.columns(table)
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        cols = _pod_info(pi, table).prefer.columns(table)
        if cols.size == 0:
            return np.zeros(rows.size, dtype=np.int64)
        # Counting over every row and then picking `rows` beats gathering a 2-D block of rows.
        counts = (table.taint_pos[: table.size, cols] != NO_TAINT).sum(axis=1, dtype=np.int32)
        out: np.ndarray = counts[rows].astype(np.int64)
        return out

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)
