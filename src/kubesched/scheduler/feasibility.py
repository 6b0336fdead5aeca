"""PreFilter and Filter for one pod on the current snapshot: the one function that the scheduling
cycle and an explanation's dry run share, so that both see the same feasible nodes and the same
reasons (kube's findNodesThatFitPod)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.framework.types import Diagnosis, FilterOutcome

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.framework.runtime import Framework

NO_NODES_AVAILABLE = "no nodes available to schedule pods"

# Pods nominated to the rows of a mask, with priority >= the pod's: it must fit with them too.
NominatedAhead = Callable[[np.ndarray], Mapping[int, Sequence["PodInfo"]]]


@dataclass(slots=True)
class Feasibility:
    diagnosis: Diagnosis
    # Every Filter's outcome over the rows PreFilter left; None when PreFilter rejected the pod
    # (diagnosis.pre_filter_msg says why) or the cycle failed (failure).
    outcome: FilterOutcome | None = None
    failure: Status | None = None  # an Error: the cycle fails with it
    # The rows PreFilter left (its node names, if any plugin gave some; else every node).
    evaluated: np.ndarray | None = None
    # Nodes cut by PreFilter's node names: (reason, how many).
    prefilter_cut: tuple[str, int] | None = None
    prefilter_status: Status | None = None  # the PreFilter rejection, if one refused the pod
    feasible: int = 0  # nodes that passed every Filter
    hinted: int | None = None  # the row of OpportunisticBatching's hint, when the pod passed there


def find_feasible(
    fwk: Framework, state: CycleState, pi: PodInfo, nominated_ahead: NominatedAhead, within: np.ndarray | None = None,
    hint: Callable[[CycleState], int | None] | None = None,
) -> Feasibility:
    """Runs PreFilter, then every Filter (with the pods nominated ahead) over the nodes left. When no
    node fits, the diagnosis is complete: reasons per node count, unresolvable rows, rejecting
    plugins, as PostFilter and the failure message need them. `within`: the rows of a pod group's
    placement (the cluster, for the pod, is then those nodes alone: messages count only them).
    `hint`: asked after PreFilter for a row to try alone first (framework.batching), as kube tries
    a nominated node; if the pod passes every Filter there, that row is the only feasible one."""
    table = fwk.cache.table
    present = table.present[: table.size] if within is None else table.present[: table.size] & within[: table.size]
    num_nodes = len(table) if within is None else int(np.count_nonzero(present))
    diagnosis = Diagnosis(num_nodes)
    if num_nodes == 0:
        return Feasibility(diagnosis, failure=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_NODES_AVAILABLE,)))
    names, narrowed_by, status = fwk.run_pre_filter(state, pi)
    if status is not None:
        if status.code == Code.ERROR:
            return Feasibility(diagnosis, failure=status)
        diagnosis.pre_filter_msg = status.message()
        diagnosis.unschedulable_plugins.add(status.plugin)
        # kube gives every node the PreFilter's status: preemption may still help an Unschedulable one.
        diagnosis.unresolvable = present.copy() if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else np.zeros_like(present)
        return Feasibility(diagnosis, prefilter_status=status)
    if hint is not None:
        row = hint(state)
        if row is not None and present[row]:
            only = np.zeros_like(present)
            only[row] = True
            tried = fwk.run_filters_with_nominated(state, pi, only, nominated_ahead(only))
            if tried.error is None and tried.alive[row]:
                return Feasibility(diagnosis, outcome=tried, evaluated=only, feasible=1, hinted=row)
    alive = present.copy()
    found = Feasibility(diagnosis)
    if names is not None:
        keep = np.zeros(table.size, dtype=bool)
        for name in names:
            row = table.index.get(name)
            if row is not None:
                keep[row] = True
        outside = int(np.count_nonzero(alive & ~keep))
        if outside:
            reason = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowed_by.split(', ')))}]"
            diagnosis.reasons[reason] = outside
            found.prefilter_cut = (reason, outside)
        alive &= keep
        diagnosis.evaluated = keep
    found.evaluated = alive.copy()
    outcome = fwk.run_filters_with_nominated(state, pi, alive, nominated_ahead(alive))
    if outcome.error is not None:
        found.failure = outcome.error
        return found
    found.outcome = outcome
    found.feasible = int(np.count_nonzero(outcome.alive))
    if found.feasible == 0:
        for _plugin, reason, count in outcome.rejections:
            diagnosis.reasons[reason] = diagnosis.reasons.get(reason, 0) + count
        diagnosis.unresolvable = outcome.unresolvable
        diagnosis.unschedulable_plugins.update(p for p, _ in outcome.rejected_by)
    return found
