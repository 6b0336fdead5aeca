"""What the preemption plugins share (kube's framework/preemption evaluator, which DefaultPreemption
and scheduler-plugins' CapacityScheduling both build on): the order of importance of pods, the
candidates a dry run finds and the choice among them, and taking pods off a node for a what-if.
Group preemption orders its victims the same way; the deletions are helper.preemptionexecutor's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

from kubesched.api.objects import Pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable, PlacedRequests
from kubesched.cache.pdbs import Budget
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status

# kube's PodEligibleToPreemptOthers, word for word.
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."

# kube shifts priorities by MaxInt32+1 before summing so negative priorities add up sensibly.
_PRIORITY_SHIFT = 2**31
# A pod that has not started counts as starting "now": later than any recorded start.
_NOT_STARTED = math.inf
_START_TIME_KEY = "preemption.start_time"  # PodInfo.extra

U = TypeVar("U")


# --- the order of importance ------------------------------------------------------------------------


def start_time(pi: PodInfo) -> float:
    """status.startTime in seconds since the epoch; a pod that has not started counts as "now"."""
    cached = pi.extra.get(_START_TIME_KEY)
    if cached is not None:
        return cast(float, cached)
    raw = pi.pod.status.start_time
    value = _NOT_STARTED
    if raw:
        try:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            value = _NOT_STARTED
    pi.extra[_START_TIME_KEY] = value
    return value


def importance_key(pi: PodInfo) -> tuple[int, float]:
    """Ascending order of this key is kube's MoreImportantPod order: higher priority first, then
    the pod that started earlier."""
    return (-pi.priority, start_time(pi))


def terminating_by_preemption(pod: Pod) -> bool:
    """Being deleted because a scheduler preempted it (its DisruptionTarget condition says so)."""
    if not pod.metadata.deletion_timestamp:
        return False
    for cond in pod.status.conditions:
        if cond.type == "DisruptionTarget":
            return cond.status == "True" and cond.reason == "PreemptionByScheduler"
    return False


# --- candidates ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) lets the preemptor fit."""

    row: int
    node: str
    victims: list[PodInfo]
    pdb_violations: int = 0
    # The uids of the victims whose eviction violates a PodDisruptionBudget (for explanations).
    violating: frozenset[str] = frozenset()


@dataclass(slots=True)
class DryRun:
    """What a dry run over some nodes found (kube's DryRunPreemption): the candidates that violate
    no PodDisruptionBudget and those that do, each kind kept up to `wanted` (kube's candidatesNum)."""

    wanted: int = 0
    sparing: list[Candidate] = field(default_factory=list)
    violating: list[Candidate] = field(default_factory=list)
    # Why the other examined nodes are no candidates: reason -> number of nodes.
    reasons: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    examined: int = 0

    @property
    def candidates(self) -> list[Candidate]:
        """The candidates that violate no budget first, then the others, as kube returns them."""
        return self.sparing + self.violating

    def add(self, candidate: Candidate) -> None:
        kind = self.sparing if candidate.pdb_violations == 0 else self.violating
        if len(kind) < self.wanted:
            kind.append(candidate)

    @property
    def enough(self) -> bool:
        """kube stops looking once a candidate violating no budget is among `wanted` candidates."""
        return bool(self.sparing) and len(self.sparing) + len(self.violating) >= self.wanted

    def drop_candidates(self) -> None:
        self.sparing.clear()
        self.violating.clear()

    def count(self, reason: str, nodes: int = 1) -> None:
        self.reasons[reason] = self.reasons.get(reason, 0) + nodes


def _earliest_top_start(victims: Sequence[PodInfo]) -> float:
    """Earliest start among the victims of the highest priority (kube's GetEarliestPodStartTime)."""
    top = max(v.priority for v in victims)
    return min(start_time(v) for v in victims if v.priority == top)


_PICK_CRITERIA: tuple[Any, ...] = (
    lambda c: -c.pdb_violations,
    lambda c: -c.victims[0].priority,
    lambda c: -sum(v.priority + _PRIORITY_SHIFT for v in c.victims),
    lambda c: -len(c.victims),
    lambda c: _earliest_top_start(c.victims),
)


def pick_one_node(candidates: Sequence[Candidate]) -> Candidate | None:
    """kube's pickOneNodeForPreemption: each criterion keeps the best-scoring candidates and the next
    one only breaks ties; the first of the remaining ties wins."""
    remaining = list(candidates)
    if len(remaining) <= 1:
        return remaining[0] if remaining else None
    for criterion in _PICK_CRITERIA:
        scores = [criterion(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


# --- PodDisruptionBudgets ------------------------------------------------------------------------------


def split_by_budgets(
    units: Sequence[U], pods_of: Callable[[U], Iterable[PodInfo]], budgets: Sequence[Budget], *, counts_every_budget: bool = False
) -> tuple[list[tuple[U, int]], list[U]]:
    """kube's FilterVictimsWithPDBViolation: the units (pods, or groups of pods preempted
    together) whose eviction would take some budget below zero, each with how many of its pods
    would, and the others, both in the order given (callers give them most important first).
    Budgets are drawn down as the units come, from each one's disruptionsAllowed: a pod a budget
    covers (budget.covers) takes one off every budget covering it until one goes below zero, at
    which kube stops counting that pod; `counts_every_budget`: scheduler-plugins' older copy
    (CapacityScheduling) which draws down every budget covering the pod even then."""
    allowed = [b.allowed for b in budgets]

    def violates(pi: PodInfo) -> bool:
        violated = False
        for i, budget in enumerate(budgets):
            if not budget.covers(pi):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
                if not counts_every_budget:
                    break
        return violated

    violating: list[tuple[U, int]] = []
    others: list[U] = []
    for unit in units:
        count = sum(1 for pi in pods_of(unit) if violates(pi))
        if count:
            violating.append((unit, count))
        else:
            others.append(unit)
    return violating, others


def reprieve_order(pods: list[PodInfo], budgets: Sequence[Budget], *, counts_every_budget: bool = False
                   ) -> tuple[list[PodInfo], set[str]]:
    """The order a node's potential victims (most important first) are tried back in when
    PodDisruptionBudgets cover some: those whose eviction would violate one first, then the
    others (kube's SelectVictimsOnNode); and the uids of the violating ones."""
    if not budgets:
        return pods, set()
    violating, others = split_by_budgets(pods, lambda p: (p,), budgets, counts_every_budget=counts_every_budget)
    if not violating:
        return pods, set()
    return [p for p, _ in violating] + others, {p.uid for p, _ in violating}


def aggregate_errors(errors: list[str]) -> str:
    """Several errors as one message, as kube's error aggregate prints them."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


# --- what-ifs on the node table ----------------------------------------------------------------------


class Taken:
    """Pods taken off table rows for a what-if, each put back exactly once."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.out: dict[tuple[int, str], PodInfo] = {}

    def take(self, row: int, pi: PodInfo) -> None:
        self.table.remove_pod(row, pi)
        self.out[(row, pi.uid)] = pi

    def put_back(self, row: int, pi: PodInfo) -> None:
        del self.out[(row, pi.uid)]
        self.table.add_pod(row, pi)

    def take_all(self, pairs: Sequence[tuple[int, PodInfo]], requests: PlacedRequests | None = None) -> None:
        """take for many (row, pod) pairs, the table changed in one step."""
        self.table.remove_pods(pairs, requests)
        for row, pi in pairs:
            self.out[(row, pi.uid)] = pi

    def put_back_all(self, pairs: Sequence[tuple[int, PodInfo]], requests: PlacedRequests | None = None) -> None:
        for row, pi in pairs:
            del self.out[(row, pi.uid)]
        self.table.add_pods(pairs, requests)

    def restore(self) -> None:
        self.table.add_pods([(row, pi) for (row, _uid), pi in self.out.items()])
        self.out.clear()


@contextmanager
def taking(table: NodeTable) -> Iterator[Taken]:
    """Pods may be taken off the table inside; all are back when it ends."""
    taken = Taken(table)
    try:
        yield taken
    finally:
        taken.restore()


class NodeTrial:
    """One node's dry run on its own copy of the cycle state (kube's SelectVictimsOnNode): each pod
    taken off or put back is told to the PreFilter extensions (RemovePod / AddPod) in `state`; the
    first of them to fail records its error in `run`, and the trial is over (take and put_back
    answer False)."""

    def __init__(self, handle: Handle, state: CycleState, pi: PodInfo, row: int, taken: Taken, run: DryRun) -> None:
        self.handle = handle
        self.state = state
        self.pi = pi
        self.row = row
        self.taken = taken
        self.run = run

    def take(self, victim: PodInfo) -> bool:
        self.taken.take(self.row, victim)
        return self._ok(self.handle.run_prefilter_remove_pod(self.state, self.pi, victim, self.row))

    def put_back(self, victim: PodInfo) -> bool:
        self.taken.put_back(self.row, victim)
        return self._ok(self.handle.run_prefilter_add_pod(self.state, self.pi, victim, self.row))

    def _ok(self, status: Status | None) -> bool:
        if status is not None and status.code != Code.SUCCESS:
            self.run.errors.append(status.message())
            return False
        return True
