"""Choosing a node for one pod: the one path that the pod cycle, the pod-group cycle, shadow
profiles, an explanation's dry run and joint planning all take (kube's schedulePod ->
findNodesThatFitPod -> prioritizeNodes -> selectHost, which its pod and pod-group cycles share).

Read top to bottom, as `choose_node` does it (`find_feasible`, then `choose_among`):

1. `find_feasible`: PreFilter (and the DRA guard, draguard), then every Filter over the nodes
   PreFilter left, each node also with the pods nominated to it ahead of this one. With OpportunisticBatching the previous pod's
   next-best node is tried alone first, as kube tries a nominated node.
2. A nominated node that passes, or a single feasible node, is taken without scoring.
3. Otherwise kube's sample of the feasible nodes (percentageOfNodesToScore), round-robin, is
   scored, and the highest total wins, ties broken at random.

What differs between the callers is said by `Rules`: explain and joint planning score every
feasible node; joint planning takes no shortcut and breaks no tie (it wants every score); a dry
run breaks no tie (it reports them). Nothing here assumes, records or writes: the caller does
what its cycle does with the choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.batching import Candidates, OpportunisticBatch, ranked
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status
from kubesched.framework.types import Diagnosis, FilterOutcome
from kubesched.scheduler import draguard

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.cache.cache import Cache
    from kubesched.framework.runtime import Framework, ScoreOutcome
    from kubesched.queue.scheduling_queue import Nominator

NO_NODES_AVAILABLE = "no nodes available to schedule pods"

# How a node was chosen.
HINTED = "hinted"  # OpportunisticBatching's hint passed every Filter
NOMINATED = "nominated"  # the pod's nominated node passed every Filter: not scored
ONLY = "only"  # the only feasible node: not scored
SCORED = "scored"  # the best of the nodes scored


class Nominations:
    """The pods nominated to nodes, as a cycle reads them: a pod's own nominated node (its status,
    else the nomination this scheduler made and the API server has not returned yet) and the pods
    nominated ahead of it (priority >= its own) on the rows it may go to."""

    def __init__(self, nominator: Nominator, cache: Cache) -> None:
        self.nominator = nominator
        self.cache = cache

    def node_of(self, pi: PodInfo) -> str | None:
        return pi.pod.status.nominated_node_name or self.nominator.nominated_node(pi.uid)

    def ahead(self, pi: PodInfo, alive: np.ndarray) -> dict[int, list[PodInfo]]:
        """Pods nominated to the alive rows with priority >= the pod's: it must fit with them too,
        so a preemptor keeps the room it made."""
        if not self.nominator:
            return {}
        index = self.cache.table.index
        out: dict[int, list[PodInfo]] = {}
        for node, pods in self.nominator.by_node.items():
            row = index.get(node)
            if row is None or not alive[row]:
                continue
            ahead = [p for p in pods.values() if p.uid != pi.uid and p.priority >= pi.priority]
            if ahead:
                out[row] = ahead
        return out


# Pods nominated to the rows of a mask, with priority >= the pod's (Nominations.ahead for one pod).
NominatedAhead = Callable[[np.ndarray], Mapping[int, Sequence["PodInfo"]]]


@dataclass(slots=True)
class Feasibility:
    diagnosis: Diagnosis
    # Every Filter's outcome over the rows PreFilter left; None when PreFilter rejected the pod
    # (diagnosis.pre_filter_msg says why) or the cycle failed (failure).
    outcome: FilterOutcome | None = None
    failure: Status | None = None  # an Error, or no node at all: the cycle fails with it
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
    """Runs PreFilter, then every Filter (with the pods nominated ahead) over the nodes left (kube's
    findNodesThatFitPod). When no node fits, the diagnosis is complete: reasons per node count,
    unresolvable rows, rejecting plugins, as PostFilter and the failure message need them.
    `within`: the rows of a pod group's placement (the cluster, for the pod, is then those nodes
    alone: messages count only them). `hint`: asked after PreFilter for a row to try alone first
    (framework.batching), as kube tries a nominated node; if the pod passes every Filter there,
    that row is the only feasible one."""
    table = fwk.cache.table
    present = table.present[: table.size] if within is None else table.present[: table.size] & within[: table.size]
    num_nodes = len(table) if within is None else int(np.count_nonzero(present))
    diagnosis = Diagnosis(num_nodes)
    if num_nodes == 0:
        return Feasibility(diagnosis, failure=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_NODES_AVAILABLE,)))
    names, narrowed_by, status = fwk.run_pre_filter(state, pi)
    dra_rows: np.ndarray | None = None
    if status is None and pi.dra_resources:
        # Extended resources kubesched cannot serve through DRA yet: refused, or held to the nodes
        # that need no DRA, as DynamicResources' PreFilter would (draguard says why here).
        status, dra_rows = draguard.check(pi, fwk.cache.device_classes, table, present)
    if status is not None:
        if status.code == Code.ERROR:
            return Feasibility(diagnosis, failure=status)
        diagnosis.pre_filter_msg = status.message()
        diagnosis.unschedulable_plugins.add(status.plugin)
        # kube gives every node the PreFilter's status: preemption may still help an Unschedulable one.
        diagnosis.unresolvable = present.copy() if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else np.zeros_like(present)
        return Feasibility(diagnosis, prefilter_status=status)
    if hint is not None and dra_rows is None:
        row = hint(state)
        if row is not None and present[row]:
            only = np.zeros_like(present)
            only[row] = True
            tried = fwk.run_filters_with_nominated(state, pi, only, nominated_ahead(only))
            if tried.error is None and tried.alive[row]:
                return Feasibility(diagnosis, outcome=tried, evaluated=only, feasible=1, hinted=row)
    alive = present.copy()
    found = Feasibility(diagnosis)
    if dra_rows is not None:
        narrowed_by = ", ".join(filter(None, (narrowed_by, draguard.PLUGIN)))
    if names is not None or dra_rows is not None:
        if names is None:
            keep = np.ones(table.size, dtype=bool)
        else:
            keep = np.zeros(table.size, dtype=bool)
            for name in names:
                row = table.index.get(name)
                if row is not None:
                    keep[row] = True
        if dra_rows is not None:
            keep &= dra_rows
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


@dataclass(frozen=True, slots=True)
class Rules:
    """What differs between the callers of choose_node."""

    sample: bool = True  # score kube's sample of the feasible nodes; False: every feasible node
    shortcuts: bool = True  # take a nominated node that fits, or a single feasible node, without scoring
    # Break ties among the best scores at random (kube's selectHost); False: leave `pick` at -1.
    tie_break: bool = True


POD_CYCLE = Rules()
DRY_RUN = Rules(sample=False, tie_break=False)  # an explanation: every feasible node scored, ties reported
EVERY_SCORE = Rules(sample=False, shortcuts=False, tie_break=False)  # joint planning


@dataclass(slots=True)
class NodeChoice:
    """What choosing a node for a pod found (kube's ScheduleResult, or its FitError): a node, or
    the failure. With `found.diagnosis` and no node, Filters rejected every node and PostFilter
    may still help."""

    found: Feasibility
    node: str | None = None
    how: str = ""  # HINTED, NOMINATED, ONLY or SCORED, when a node was chosen
    failure: Status | None = None  # an Error (or no node in the cluster): PostFilter does not run
    scored: ScoreOutcome | None = None  # the scores, when the nodes were scored
    pick: int = -1  # the chosen node's index in scored.rows (-1: no tie broken)
    ties: np.ndarray | None = None  # the indices in scored.rows of the highest total, when a tie was broken
    sampled: int = 0  # how many feasible nodes were scored, or would be without shortcuts
    others: Candidates | None = None  # OpportunisticBatching: the scored nodes not taken, for the next pod

    @property
    def diagnosis(self) -> Diagnosis | None:
        """Why the pod fits nowhere, when that is the outcome (PostFilter's input)."""
        if self.node is not None or self.failure is not None:
            return None
        return self.found.diagnosis


def choose_node(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    nominations: Nominations,
    rng: np.random.Generator | None = None,
    *,
    within: np.ndarray | None = None,
    rules: Rules = POD_CYCLE,
    batch: OpportunisticBatch | None = None,
    cycle: int = 0,
) -> NodeChoice:
    """A node for the pod on the current snapshot, chosen as a scheduling cycle chooses it: the
    feasible nodes (find_feasible), then the choice among them (choose_among). `rng` breaks ties
    (rules.tie_break). `within`: the rows of a pod group's placement. `batch`: the profile's
    OpportunisticBatching state, for a pod's own cycle (`cycle`: its number); the choice is
    remembered there for the next pod of the same signature."""
    signature = batch.sign(pi) if batch is not None else None
    hinted: int | None = None

    def hint(st: CycleState) -> int | None:
        nonlocal hinted
        assert batch is not None
        hinted = batch.hint(st, pi, signature, cycle)
        return hinted

    found = find_feasible(fwk, state, pi, lambda alive: nominations.ahead(pi, alive), within,
                          hint if batch is not None else None)
    choice = choose_among(fwk, state, pi, found, nominations, rng, rules=rules,
                          keep_others=batch is not None and signature is not None)
    if batch is not None and choice.node is not None:
        batch.store(signature, hinted, fwk.cache.table.row_of(choice.node), choice.others, cycle)
    return choice


def choose_among(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    found: Feasibility,
    nominations: Nominations,
    rng: np.random.Generator | None = None,
    *,
    rules: Rules = POD_CYCLE,
    keep_others: bool = False,
) -> NodeChoice:
    """The node among the feasible ones `found` (kube's prioritizeNodes and selectHost, with the
    nominated-node and single-node shortcuts of schedulePod). `keep_others`: OpportunisticBatching
    takes the head of the ranked scores and keeps the rest for the next pod."""
    table = fwk.cache.table
    if found.hinted is not None:
        return NodeChoice(found, table.name_of(found.hinted), HINTED)
    if found.failure is not None:
        return NodeChoice(found, failure=found.failure)
    outcome = found.outcome
    if outcome is None or found.feasible == 0:  # PreFilter refused the pod, or no node passed
        return NodeChoice(found)
    if rules.shortcuts:
        nominated = nominations.node_of(pi)
        if nominated:
            row = table.index.get(nominated)
            if row is not None and outcome.alive[row]:
                return NodeChoice(found, nominated, NOMINATED)
    if rules.sample:
        rows, _ = fwk.sample(outcome.alive, found.diagnosis.num_nodes)
    else:
        rows = np.flatnonzero(outcome.alive[: table.size])
    if rows.size == 1 and rules.shortcuts:
        return NodeChoice(found, table.name_of(int(rows[0])), ONLY, sampled=1)
    scored = fwk.run_scores(state, pi, rows)
    if isinstance(scored, Status):
        return NodeChoice(found, failure=scored, sampled=int(rows.size))
    choice = NodeChoice(found, how=SCORED, scored=scored, sampled=int(rows.size))
    if not rules.tie_break:
        return choice
    assert rng is not None, "breaking ties needs a random generator"
    choice.ties = np.flatnonzero(scored.totals == scored.totals.max())
    if keep_others:
        # kube v1.37 takes the head of its sorted score list; the rest is kept for the next pod.
        choice.pick, choice.others = ranked(scored, rng)
    else:
        choice.pick = select_host(choice.ties, rng)
    choice.node = table.name_of(int(scored.rows[choice.pick]))
    return choice


def select_host(ties: np.ndarray, rng: np.random.Generator) -> int:
    """One of `ties` (the indices of the highest total), at random when there are several (kube's
    selectHost)."""
    return int(ties[0] if ties.size == 1 else ties[rng.integers(ties.size)])
