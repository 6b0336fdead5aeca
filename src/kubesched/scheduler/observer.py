"""What a scheduling cycle leaves behind besides its decision: the decision record, plugin timings
for a sample of cycles, the trace, the results a profile publishes on the pod, per-plugin outcome
counters, attempt metrics, shadow profiles' decisions and the gc policy's count. The cycle calls
`begin`, `decided` and `end`; its binding cycle `binding_started` and `binding_ended`. None of it
changes what the scheduler does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.detail import SUCCESS, CycleDetail
from kubesched.framework.status import Code, Status
from kubesched.infra import gcpolicy
from kubesched.observe.metrics import TIE, DurationHistogram, SchedulerMetrics
from kubesched.observe.record import DecisionRecord, Recorder, TopScores
from kubesched.observe.tracing import CycleTrace, Tracer
from kubesched.scheduler.nodechoice import HINTED, NOMINATED, ONLY, NodeChoice, Nominations

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.cache.nodetable import NodeTable
    from kubesched.framework.runtime import Framework, ScoreOutcome
    from kubesched.infra.clock import Clock
    from kubesched.queue.scheduling_queue import QueuedPodInfo
    from kubesched.scheduler.generation import Shadow
    from kubesched.scheduler.shadow import ShadowRunner

PLUGIN_METRICS_EVERY = 10  # cycles per cycle whose plugins are timed one by one (kube samples 10%)
TOP_NODES_RECORDED = 3

Annotate = Callable[["PodInfo", dict[str, str]], None]


@dataclass(slots=True)
class Stats:
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    bind_failures: int = 0
    preemption_attempts: int = 0
    victims: int = 0
    # A histogram, not a list: a list gains an entry every cycle of a run that lasts months.
    cycle_seconds: DurationHistogram = field(default_factory=DurationHistogram)


@dataclass(slots=True)
class Cycle:
    """One pod's scheduling cycle as the observer follows it."""

    fwk: Framework
    pi: PodInfo
    record: DecisionRecord
    started: float
    state: CycleState = field(default_factory=CycleState)
    trace: CycleTrace | None = None
    detail: CycleDetail | None = None
    shadows: Sequence[Shadow] = ()
    shadow_seconds: float = 0.0


def note_choice(record: DecisionRecord, choice: NodeChoice, table: NodeTable) -> None:
    """What the decision record keeps of a node choice: the rejections, how many nodes were
    feasible and scored, the nominated or hinted node taken, the best scored nodes."""
    found = choice.found
    if choice.how == HINTED:
        record.feasible = 1
        record.chosen = choice.node
        return
    if found.prefilter_cut is not None:
        record.rejections.append(("PreFilter", *found.prefilter_cut))
    if found.failure is not None or found.outcome is None:
        return
    record.rejections.extend(found.outcome.rejections)
    record.feasible = found.feasible
    if choice.how == NOMINATED:
        record.chosen = choice.node
        return
    record.scored = choice.sampled
    if choice.how != ONLY and choice.scored is not None and choice.ties is not None:
        record.scored_top = top_scores(table, choice.scored, choice.pick, choice.ties)


def top_scores(table: NodeTable, scored: ScoreOutcome, pick: int, ties: np.ndarray) -> TopScores:
    """The best few scored nodes (the chosen one, index `pick`, among them) with each plugin's raw
    and weighted scores, read at those nodes only; `ties`: the indices of the highest total."""
    totals = scored.totals
    top = _best_few(totals, ties, min(TOP_NODES_RECORDED, totals.size))
    few = top.tolist()
    if pick not in few:
        top[-1] = few[-1] = pick
    raw = [a[top].tolist() for a in scored.raw]
    weighted = [w[top].tolist() for _, w in scored.by_plugin]
    return TopScores(
        nodes=[table.name_of(r) for r in scored.rows[top].tolist()],
        totals=totals[top].tolist(),
        plugins=tuple(name for name, _ in scored.by_plugin),
        weights=tuple(scored.weights),
        raw=[list(column) for column in zip(*raw, strict=True)] if raw else [[] for _ in few],
        weighted=[list(column) for column in zip(*weighted, strict=True)] if weighted else [[] for _ in few],
    )


def _best_few(totals: np.ndarray, ties: np.ndarray, k: int) -> np.ndarray:
    """Indices of k highest totals, best first, lowest index first among equals; `ties`: the
    indices of the highest. (argpartition is slow on the many equal totals a uniform cluster gives.)"""
    top = ties[:k].copy()
    while top.size < k:
        below = totals < totals[top[-1]]
        nxt = np.flatnonzero(below & (totals == totals[below].max()))
        top = np.concatenate((top, nxt[: k - top.size]))
    return top


def decided_by(record: DecisionRecord) -> str | None:
    """The Score plugin that decided the cycle's winner (metrics.TIE for a tie), or None."""
    if record.scored_top is None or record.chosen is None:
        return None
    margin, plugin = record.scored_top.margin(record.chosen)
    if margin is None:
        return None
    return plugin if margin > 0 and plugin is not None else TIE


def _late_results(fwk: Framework, status: Status | None) -> dict[str, dict[str, str]]:
    """The binding cycle's results by extension point, in kube-scheduler-simulator's words."""
    if status is not None and status.code != Code.SUCCESS:
        failed = {status.plugin or "unknown": status.message()}
        return {"bind": failed}
    binder = fwk.binders[0].name if fwk.binders else ""
    return {
        "reserve": {p.name: SUCCESS for p in fwk.reserve},
        "permit": {p.name: SUCCESS for p in fwk.permit},
        "permit-timeout": {p.name: "0s" for p in fwk.permit},
        "prebind": {p.name: SUCCESS for p in fwk.pre_bind},
        "bind": {binder: SUCCESS} if binder else {},
    }


class CycleObserver:
    def __init__(
        self,
        *,
        clock: Clock,
        table: Callable[[], NodeTable],
        recorder: Recorder,
        metrics: SchedulerMetrics,
        cycle_seconds: DurationHistogram,
        tracer: Tracer,
        shadows: ShadowRunner,
        nominations: Nominations,
        annotate: Annotate,
    ) -> None:
        self.clock = clock
        self._table = table
        self.recorder = recorder
        self.metrics = metrics
        self.cycle_seconds = cycle_seconds
        self.tracer = tracer
        self.shadows = shadows
        self.nominations = nominations
        self.annotate = annotate
        self._traces: dict[str, CycleTrace] = {}  # sampled pods whose binding cycle is still to report
        self._details: dict[str, CycleDetail] = {}  # results to publish when the binding cycle ends

    # --- a scheduling cycle --------------------------------------------------------------------

    def begin(self, fwk: Framework, qpi: QueuedPodInfo, pod_cycle: int, shadows: Sequence[Shadow] = ()) -> Cycle:
        """A pod's cycle starts: a sample of cycles times its plugins, a sampled one is traced, a
        profile that publishes its results keeps every verdict."""
        started = time.perf_counter()
        fwk.plugin_metrics = self.metrics if pod_cycle % PLUGIN_METRICS_EVERY == 1 else None
        trace = fwk.trace = self.tracer.start() if self.tracer.enabled else None
        detail = fwk.detail = CycleDetail() if fwk.records_detail else None
        return Cycle(fwk, qpi.pi, self.new_record(fwk, qpi), started, trace=trace, detail=detail, shadows=shadows)

    def new_record(self, fwk: Framework, qpi: QueuedPodInfo) -> DecisionRecord:
        pi = qpi.pi
        return DecisionRecord(pi.key, fwk.name, qpi.attempts, self.clock.now(), len(self._table()), pi.uid)

    def restart(self, cycle: Cycle, qpi: QueuedPodInfo) -> None:
        """The cycle starts over on the whole cluster (a burst's pod did not pass on its planned
        node): a fresh state and record, and the verdicts of the one node tried forgotten."""
        cycle.state = CycleState()
        cycle.record = self.new_record(cycle.fwk, qpi)
        if cycle.detail is not None:
            cycle.detail = cycle.fwk.detail = CycleDetail()

    def decided(self, cycle: Cycle, choice: NodeChoice) -> None:
        """The node choice is made, before anything is assumed: the shadow profiles decide on the
        same snapshot (not when the cycle failed with an error)."""
        if not cycle.shadows or (choice.failure is not None and choice.failure.code == Code.ERROR):
            return
        decisions, cycle.shadow_seconds = self.shadows.decide(cycle.fwk.name, cycle.shadows, cycle.pi, choice.node, self.nominations)
        cycle.record.shadow = tuple(decisions)

    def end(self, cycle: Cycle) -> None:
        """The cycle is over (the pod assumed and its binding started, or the attempt failed)."""
        fwk, pi, record = cycle.fwk, cycle.pi, cycle.record
        self.metrics.outcome(fwk.name, record.rejections, decided_by(record))
        if cycle.detail is not None:
            self._publish(fwk, pi, cycle.detail, record)
        if cycle.trace is not None:
            fwk.trace = None
            self.tracer.finish(cycle.trace, record, time.perf_counter())
            if record.result == "scheduled":
                self._traces[pi.uid] = cycle.trace
        record.duration = time.perf_counter() - cycle.started
        if cycle.shadows:
            self.shadows.live_cycle(fwk.name, cycle.shadows, record.duration - cycle.shadow_seconds)
        self.cycle_seconds.observe(record.duration)
        if record.result != "scheduled":  # a scheduled pod's attempt ends when its binding does
            self.metrics.attempt(record.result, fwk.name, record.duration)
        self.recorder.add(record)
        gcpolicy.cycle_done()

    def _publish(self, fwk: Framework, pi: PodInfo, detail: CycleDetail, record: DecisionRecord) -> None:
        """A profile that publishes its results: a failed attempt's now, a placed pod's when its
        binding cycle ends (with the binding's own results), as kube-scheduler-simulator does."""
        fwk.detail = None
        detail.selected_node = record.chosen or ""
        if record.result == "scheduled":
            self._details[pi.uid] = detail
        else:
            self.annotate(pi, detail.annotations(self._table()))

    # --- a pod group's member, placed in its group's cycle ----------------------------------------

    def member_chosen(self, fwk: Framework, record: DecisionRecord) -> None:
        self.metrics.outcome(fwk.name, record.rejections, decided_by(record))

    def member_refused(self, fwk: Framework, record: DecisionRecord) -> None:
        """A member of a group refused before any was tried (the group is invalid): no cycle ran."""
        self.recorder.add(record)
        self.metrics.attempt(record.result, fwk.name, 0.0)

    def member_done(self, fwk: Framework, record: DecisionRecord, started: float) -> None:
        record.duration = time.perf_counter() - started
        self.recorder.add(record)
        self.cycle_seconds.observe(record.duration)
        if record.result != "scheduled":  # as a pod's: a placed member's attempt ends with its binding
            self.metrics.attempt(record.result, fwk.name, record.duration)

    # --- the binding cycle ------------------------------------------------------------------------

    def binding_started(self, uid: str) -> CycleTrace | None:
        """The binding cycle's trace, a child of its scheduling cycle's when that one was sampled."""
        trace = self._traces.pop(uid, None) if self._traces else None
        return self.tracer.binding_started(trace) if trace is not None else None

    def binding_ended(self, fwk: Framework, pi: PodInfo, node: str, status: Status | None, binding: CycleTrace | None) -> None:
        if binding is not None:
            failed = status is not None and status.code != Code.SUCCESS
            result = status.message()[:256] if status is not None and failed else "bound"
            self.tracer.binding(binding, time.perf_counter(), node, result)
        published = self._details.pop(pi.uid, None) if self._details else None
        if published is not None:
            self.annotate(pi, published.annotations(self._table(), _late_results(fwk, status)))
