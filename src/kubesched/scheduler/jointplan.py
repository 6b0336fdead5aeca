"""What a pod group's cycle and a burst's have in common: the joint plan.

Each pod's Filter and Score results on the snapshot (each alone, as a dry run: nothing is
assumed, no plugin state kept) are handed to the profile's GroupAssign plugin, which chooses a
node for every pod together. Scores on the snapshot are each pod's alone; how far a pod's score
on a node falls for each pod of its kind already there (its *crowding*: LeastAllocated, a
load-aware score fall as a node fills) is measured by scoring it once more with one copy of it
counted on every node (NodeTable.with_copies), so the plan spreads where the per-pod order would.
The caller then places each pod on its node with every Filter run, and takes the per-pod path for
the pods the plan left out or that do not pass where it put them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Status
from kubesched.scheduler.nodechoice import EVERY_SCORE, Nominations, choose_node

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache
    from kubesched.framework.runtime import Framework


class PlanHost(Protocol):
    """What planning reads of the scheduler."""

    cache: Cache
    nominations: Nominations


def joint_plan(host: PlanHost, fwk: Framework, group: Any, pods: Sequence[PodInfo], within: np.ndarray | None,
               min_count: int, *, identical: bool = False) -> dict[str, int] | None:
    """A node row per pod uid (-1: left to the per-pod path) from the profile's GroupAssign
    plugin, or None when it declines or a Score plugin fails. `identical`: the pods are of one
    burst (queue.bursts), so one pod's results stand for all."""
    table = host.cache.table
    size = table.size
    feasible = np.zeros((len(pods), size), dtype=bool)
    scores = np.zeros((len(pods), size), dtype=np.int64)
    crowding = np.zeros((len(pods), size), dtype=np.int64)
    columns = table.resource_index
    requests = np.zeros((len(pods), len(columns)), dtype=np.int64)
    evaluated = pods[:1] if identical else pods
    with fwk.dry():
        for i, pi in enumerate(evaluated):
            found = _options(host, fwk, pi, within)
            if isinstance(found, Status):
                return None
            if found is not None:
                rows, totals, fallen = found
                feasible[i, rows] = True
                scores[i, rows] = totals
                crowding[i, rows] = np.maximum(totals - fallen, 0)
            for name, col in columns.items():
                requests[i, col] = 1 if name == "pods" else pi.requests.get(name, 0)
    if identical and len(pods) > 1:
        feasible[1:] = feasible[0]
        scores[1:] = scores[0]
        crowding[1:] = crowding[0]
        requests[1:] = requests[0]
    allocatable = table.allocatable[:size]
    free = allocatable - table.requested[:size]
    nodes = fwk.group_assign[0].assign_group(group, pods, feasible, scores, requests, free, allocatable,
                                             min(min_count, len(pods)), crowding)
    if nodes is None:
        return None
    return {pi.uid: int(n) for pi, n in zip(pods, nodes, strict=True)}


def _options(host: PlanHost, fwk: Framework, pi: PodInfo, within: np.ndarray | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | Status | None:
    """The rows the pod passes every Filter on, its total scores there, and its scores there with a
    copy of it on every node; None when there are none, a Status when scoring failed."""
    state = CycleState()
    choice = choose_node(fwk, state, pi, host.nominations, within=within, rules=EVERY_SCORE)
    if choice.scored is None:
        return choice.failure if choice.failure is not None and choice.found.failure is None else None
    scored = choice.scored
    with host.cache.table.with_copies(pi):
        crowded = fwk.run_scores(state, pi, scored.rows)
    if isinstance(crowded, Status):
        return crowded
    return scored.rows, scored.totals, crowded.totals
