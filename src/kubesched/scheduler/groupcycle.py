"""The PodGroup scheduling cycle (kube v1.37's scheduleOnePodGroup, GenericWorkload): a group's
members placed together on one snapshot, all or nothing.

Read top to bottom, as `run` does it:

1. Check the group: its PodGroup exists, every member names the same profile and has the
   group's priority. A failure fails every member with a scheduler error.
2. Quorum first (GangScheduling's PlacementFeasible, minCount 1 for a basic group): if the
   members queued plus those already scheduled cannot reach minCount, no member is tried.
3. Members in order (queue.groups.member_order): each one's ordinary cycle (PreFilter, Filter,
   Score, select; no PostFilter: a member never preempts on its own), then assumed and reserved
   on its node, so the next member sees it. After each, the quorum again: it cannot be met any
   more, and the loop stops.
4. The group succeeds when the quorum is met and some member was placed; otherwise every member
   placed is unreserved and forgotten, last first. A failed group runs PodGroupPostFilter
   (group preemption) once; its message is appended to the group's.
5. Results: placed members of a successful group go on to Permit and binding; the others fail
   with kube's messages (below), each with its FailedScheduling event and condition; the
   PodGroup's PodGroupInitiallyScheduled condition is written if it changed; the queue takes
   the members that are left (queue.groups).

Messages, as kube composes them: a group status's message is its reasons joined by ", ", the
sentinel "pod group is unschedulable" first when it carries it. A member placed in a group that
failed reads "pod group is unschedulable, <group message>"; a member that did not fit, its own
FitError; a member never tried, the group's message as it was before PodGroupPostFilter.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kubesched.api.podgroups import (
    CONDITION_INITIALLY_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    Condition,
    PodGroup,
)
from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import PlacementFeasiblePlugin
from kubesched.framework.status import Code, Status, fit_error_message
from kubesched.framework.types import GroupPlacement
from kubesched.infra import features
from kubesched.queue.groups import GroupAttempt
from kubesched.scheduler.jointplan import joint_plan
from kubesched.scheduler.reprieve import CheckHost, ReprieveCheck

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework
    from kubesched.observe.metrics import SchedulerMetrics
    from kubesched.observe.record import DecisionRecord
    from kubesched.queue.scheduling_queue import QueuedGroup, QueuedPodInfo, SchedulingQueue
    from kubesched.scheduler.backend import ClusterBackend
    from kubesched.scheduler.nodechoice import NodeChoice, Nominations
    from kubesched.scheduler.observer import CycleObserver


class GroupHost(CheckHost, Protocol):
    """What a group cycle uses of the scheduler: its state, and its own per-pod cycle, assume,
    Permit and binding, and failure paths (a member is scheduled, bound and reported as a pod is);
    the reprieve check's needs (CheckHost) among them."""

    queue: SchedulingQueue
    frameworks: dict[str, Framework]
    metrics: SchedulerMetrics
    backend: ClusterBackend
    observer: CycleObserver
    nominations: Nominations

    def permit_and_bind(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, record: DecisionRecord, node: str, pod_cycle: int
    ) -> None: ...

    def fail_attempt(self, fwk: Framework, qpi: QueuedPodInfo, record: DecisionRecord, status: Status) -> None: ...

UNSCHEDULABLE_GROUP = "pod group is unschedulable"  # kube's errPodGroupUnschedulable
_PLAN_FAILED = Status(Code.ERROR, ("a jointly planned member did not pass on its node",))  # internal: fall back
NO_PLACEMENTS = "no feasible placements found"


@dataclass(slots=True)
class _Member:
    qpi: QueuedPodInfo
    record: DecisionRecord
    state: CycleState = field(default_factory=CycleState)
    node: str | None = None  # placed on, in this cycle
    status: Status | None = None  # its own failure (a FitError, an error), if it was tried
    rejectors: frozenset[str] = frozenset()
    tried: bool = False


def _with_sentinel(status: Status) -> Status:
    return Status(status.code, (UNSCHEDULABLE_GROUP, *status.reasons), status.plugin)


class GroupCycle:
    """The group cycle of one scheduler (it uses the scheduler's own cycle, failure and binding
    paths: a member is scheduled, reported and bound as a pod is)."""

    def __init__(self, sched: GroupHost) -> None:
        self.sched = sched
        # TopologyAwareWorkloadScheduling: every group is placed through candidate placements.
        self.by_placement = features.current().topology_aware_workload_scheduling
        self.rng = np.random.default_rng(0)  # ties between placements, repeatably

    def run(self, entity: QueuedGroup) -> None:
        sched = self.sched
        started = time.perf_counter()
        key = entity.group
        group_state = sched.cache.groups.state(key)
        pg = group_state.group if group_state is not None else None
        members = entity.ordered()
        if pg is None:
            # Deleted since the entity was queued: its members wait for it again.
            sched.queue.group_attempted(entity, GroupAttempt("error", back=members))
            return
        problem = self._validate(pg, members)
        if problem is not None:
            self._error_before_scheduling(entity, pg, members, problem)
            return
        members = [m for m in members if not m.pi.pod.metadata.deletion_timestamp and sched.cache.node_of(m.pi.uid) is None]
        if not members:
            sched.queue.group_attempted(entity, GroupAttempt("success"))
            return
        fwk = sched.frameworks[members[0].pi.scheduler_name]
        tried = [self._member(fwk, m) for m in members]
        status = self._place_by_placements(fwk, pg, tried) if self.by_placement else self._place(fwk, pg, tried)
        outcome = "success" if status is None else "error" if status.code == Code.ERROR else "unschedulable"
        if status is not None:
            self._undo(fwk, tried)
            before_post_filter = status
            preempting = False
            if status.code == Code.UNSCHEDULABLE:
                status, preempting = self._post_filter(fwk, pg, status, tried)
            self._fail_members(fwk, pg, tried, status, before_post_filter, preempting)
        else:
            for m in tried:
                if m.node is not None:
                    sched.permit_and_bind(fwk, m.state, m.qpi, m.record, m.node, sched.queue.scheduling_cycle)
                else:
                    self._report(fwk, m, m.status or Status(Code.UNSCHEDULABLE, ()))
        self._write_condition(pg, status)
        back = [m.qpi for m in tried if m.node is None or status is not None]
        sched.queue.group_attempted(entity, GroupAttempt(outcome, back, {m.qpi.pi.uid: m.rejectors for m in tried}))
        for m in tried:
            sched.observer.member_done(fwk, m.record, started)
        sched.metrics.attempt_group(outcome if outcome != "success" else "scheduled", fwk.name, time.perf_counter() - started)

    # --- 1. the group's own checks -------------------------------------------------------------

    def _validate(self, pg: PodGroup, members: list[QueuedPodInfo]) -> str | None:
        sched = self.sched
        first = members[0].pi
        group_state = sched.cache.groups.state(pg.key)
        everyone = [m.pi for m in members] + (group_state.scheduled() if group_state is not None else [])
        for pi in everyone:
            if pi.scheduler_name != first.scheduler_name:
                return (f"all pods in a single pod group should have the same .spec.schedulerName set, "
                        f'got: "{pi.scheduler_name}" and "{first.scheduler_name}"')
        priority = pg.spec.priority or 0
        for pi in everyone:
            if pi.priority != priority:
                return (f"all pods in a single pod group should have the same priority as the pod group's priority, "
                        f"got {pi.priority} and {priority}")
        policy = first.pod.spec.preemption_policy or "PreemptLowerPriority"
        for pi in everyone:
            mine = pi.pod.spec.preemption_policy or "PreemptLowerPriority"
            if mine != policy:
                return f"all pods in a single pod group should have the same preemption policy, got {mine} and {policy}"
        if first.scheduler_name not in sched.frameworks:
            return f'profile not found for scheduler name "{first.scheduler_name}"'
        return None

    def _error_before_scheduling(self, entity: QueuedGroup, pg: PodGroup, members: list[QueuedPodInfo], message: str) -> None:
        sched = self.sched
        status = Status(Code.ERROR, (message,))
        fwk = sched.frameworks.get(members[0].pi.scheduler_name) or next(iter(sched.frameworks.values()))
        for qpi in members:
            m = self._member(fwk, qpi)
            self._report(fwk, m, status)
            sched.observer.member_refused(fwk, m.record)
        self._write_condition(pg, status)
        sched.queue.group_attempted(entity, GroupAttempt("error", back=members))

    # --- 2-4. placing the members together --------------------------------------------------------

    def _member(self, fwk: Framework, qpi: QueuedPodInfo) -> _Member:
        return _Member(qpi, self.sched.observer.new_record(fwk, qpi))

    def _quorum(self, fwk: Framework, pg: PodGroup, scheduled: int, remaining: int) -> Status | None:
        plugin = fwk.named.get("GangScheduling")
        if not isinstance(plugin, PlacementFeasiblePlugin):
            return None  # kube: no quorum is enforced without GangScheduling
        return plugin.placement_feasible(pg, scheduled, remaining)

    def _place_by_placements(self, fwk: Framework, pg: PodGroup, members: list[_Member]) -> Status | None:
        """kube's topology-aware algorithm: the group tried on each placement the first
        PlacementGenerate plugin proposes (every node, without one), each trial undone; of those
        that succeed the PlacementScore plugins pick one, whose placement is then made. When none
        succeeds, the first trial's results are the members'."""
        table = self.sched.cache.table
        parent = table.present[: table.size].copy()
        if fwk.placement_generate:
            generated = fwk.placement_generate[0].generate_placements(pg, parent)
            if isinstance(generated, Status):
                return generated if generated.code == Code.ERROR else Status(generated.code, generated.reasons)
            placements = generated
        else:
            placements = [GroupPlacement("", parent)]
        if not placements:
            return Status(Code.UNSCHEDULABLE, (NO_PLACEMENTS,))
        first: tuple[Status | None, list[_Member]] | None = None
        fits: list[tuple[GroupPlacement, list[_Member]]] = []
        for placement in placements:
            trial = [self._member(fwk, m.qpi) for m in members]
            status = self._place(fwk, pg, trial, placement.rows)
            self._undo(fwk, trial)
            if status is not None and status.code == Code.ERROR:
                self._adopt(members, trial)
                return status
            if first is None:
                first = (status, trial)
            if status is None:
                fits.append((placement, trial))
        if not fits:
            assert first is not None
            status, trial = first
            assert status is not None
            self._adopt(members, trial)
            why = UNSCHEDULABLE_GROUP if status.reasons[:1] == (UNSCHEDULABLE_GROUP,) else status.message()
            return Status(Code.UNSCHEDULABLE,
                          (UNSCHEDULABLE_GROUP, f"0/{len(placements)} placements are available, first placement status: {why}"))
        chosen = fits[0] if len(fits) == 1 else self._best(fwk, pg, fits)
        if isinstance(chosen, Status):
            return chosen
        _, trial = chosen
        self._adopt(members, trial)
        for m in members:  # the chosen placement made for real
            if m.node is not None:
                reserve = self.sched.assume_and_reserve(fwk, m.state, m.qpi.pi, m.record, m.node)
                if reserve is not None:
                    self.sched.unreserve_and_forget(fwk, m.state, m.qpi.pi, m.node)
                    m.node = None
                    return Status(Code.ERROR, (f"failed to assume pod group placement: {reserve.message()}",))
        return None

    def _best(self, fwk: Framework, pg: PodGroup, fits: list[tuple[GroupPlacement, list[_Member]]]
              ) -> tuple[GroupPlacement, list[_Member]] | Status:
        """kube's RunPlacementScorePlugins: each plugin's scores (normalized if it normalizes),
        weighted and summed; the highest wins, ties broken at random."""
        group_state = self.sched.cache.groups.state(pg.key)
        scheduled = group_state.scheduled_count() if group_state is not None else 0
        table = self.sched.cache.table
        totals = [0] * len(fits)
        for plugin, weight in fwk.placement_score:
            raw = [plugin.score_placement(pg, placement, [(m.qpi.pi, table.index[m.node]) for m in trial if m.node is not None],
                                          scheduled) for placement, trial in fits]
            scores = plugin.normalize_placement_scores(raw)
            if isinstance(scores, Status):
                return Status(Code.ERROR, (f'running NormalizePlacementScore on PlacementScore plugins: plugin "{plugin.name}" '
                                           f"failed with: {scores.message()}",))
            totals = [t + s * weight for t, s in zip(totals, scores, strict=True)]
        best = max(totals)
        tied = [i for i, t in enumerate(totals) if t == best]
        return fits[tied[0] if len(tied) == 1 else int(tied[self.rng.integers(len(tied))])]

    @staticmethod
    def _adopt(members: list[_Member], trial: list[_Member]) -> None:
        """The members take a trial's results (its records, nodes, failures)."""
        for m, t in zip(members, trial, strict=True):
            m.record, m.state, m.node, m.status, m.rejectors, m.tried = t.record, t.state, t.node, t.status, t.rejectors, t.tried

    def _place(self, fwk: Framework, pg: PodGroup, members: list[_Member], within: np.ndarray | None = None) -> Status | None:
        """Tries the members (on the nodes `within` a placement); None when the group is placed,
        else the group's status."""
        sched = self.sched
        group_state = sched.cache.groups.state(pg.key)
        scheduled = group_state.scheduled_count() if group_state is not None else 0
        remaining = len(members)
        quorum = self._quorum(fwk, pg, scheduled, remaining)
        if quorum is not None and quorum.code == Code.UNSCHEDULABLE:
            return _with_sentinel(quorum)
        plan = self._joint_plan(fwk, pg, members, within, scheduled) if fwk.group_assign else None
        if plan is not None:
            planned = [self._member(fwk, m.qpi) for m in members]
            status = self._place_members(fwk, pg, planned, within, scheduled, plan)
            if status is not _PLAN_FAILED:
                self._adopt(members, planned)
                return status
            self._undo(fwk, planned)  # a member the plan put somewhere did not pass there
        return self._place_members(fwk, pg, members, within, scheduled, None)

    def _place_members(self, fwk: Framework, pg: PodGroup, members: list[_Member], within: np.ndarray | None, scheduled: int,
                       plan: dict[str, int] | None) -> Status | None:
        """The members in order, each on the nodes `within`, or on the row a joint plan chose for
        it (`_PLAN_FAILED` if it does not pass there); the quorum after each."""
        sched = self.sched
        table = sched.cache.table
        remaining = len(members)
        quorum: Status | None = None
        placed = 0
        for m in members:
            m.tried = True
            where = within
            row = plan.get(m.qpi.pi.uid, -1) if plan is not None else -1
            if row >= 0:
                where = np.zeros(table.size, dtype=bool)
                where[row] = True
            result = sched.schedule_member(fwk, m.state, m.qpi.pi, m.record, where)
            if row >= 0 and result.node != table.name_of(row):
                return _PLAN_FAILED
            if result.node is not None:
                reserve = sched.assume_and_reserve(fwk, m.state, m.qpi.pi, m.record, result.node)
                if reserve is None:
                    m.node = result.node
                    placed += 1
                    scheduled += 1
                else:
                    sched.unreserve_and_forget(fwk, m.state, m.qpi.pi, result.node)
                    m.record.chosen = None
                    m.status = reserve
                    m.rejectors = frozenset([reserve.plugin] if reserve.plugin and reserve.code != Code.ERROR else [])
            else:
                m.status = result.failure if result.failure is not None else self._fit_error(result)
                m.rejectors = frozenset(result.diagnosis.unschedulable_plugins) if result.diagnosis is not None else \
                    frozenset([m.status.plugin] if m.status.plugin and m.status.code != Code.ERROR else [])
            if m.status is not None and m.status.code == Code.ERROR:
                return Status(Code.ERROR, (f"failed to schedule other pod from a pod group: {m.status.message()}",))
            remaining -= 1
            quorum = self._quorum(fwk, pg, scheduled, remaining)
            if quorum is not None and quorum.code == Code.ERROR:
                return Status(Code.ERROR, (f"failed to evaluate placement feasibility: running PlacementFeasible plugin: "
                                           f"{quorum.message()}",))
            if quorum is not None and quorum.code == Code.UNSCHEDULABLE:
                return quorum
        if quorum is not None:  # Wait once every member was tried cannot happen: remaining is 0
            return Status(Code.UNSCHEDULABLE, (UNSCHEDULABLE_GROUP, *quorum.reasons), quorum.plugin)
        if not placed:
            return Status(Code.UNSCHEDULABLE, (UNSCHEDULABLE_GROUP,))
        return None

    def _joint_plan(self, fwk: Framework, pg: PodGroup, members: list[_Member], within: np.ndarray | None,
                    scheduled: int) -> dict[str, int] | None:
        """The GroupAssign plugin's choice of a row per member (jointplan), at least what the
        quorum still needs placed or none."""
        return joint_plan(self.sched, fwk, pg, [m.qpi.pi for m in members], within, max(pg.min_count - scheduled, 0))

    @staticmethod
    def _fit_error(result: NodeChoice) -> Status:
        """A member that fits nowhere: kube's FitError text, without a PostFilter's (a member
        never preempts on its own)."""
        diagnosis = result.diagnosis
        assert diagnosis is not None
        return Status(Code.UNSCHEDULABLE, (fit_error_message(diagnosis.num_nodes, diagnosis.reasons.items(), diagnosis.pre_filter_msg),))

    def _undo(self, fwk: Framework, members: list[_Member]) -> None:
        """A group that failed: every member placed is unreserved and forgotten, last first."""
        for m in reversed(members):
            if m.node is not None:
                self.sched.unreserve_and_forget(fwk, m.state, m.qpi.pi, m.node)

    def _post_filter(self, fwk: Framework, pg: PodGroup, status: Status, members: list[_Member]) -> tuple[Status, bool]:
        """PodGroupPostFilter (group preemption): its message is appended to the group's, always
        (an empty one too, as kube does); True when it made room the group now waits for."""
        pods = [m.qpi.pi for m in members]

        def place() -> tuple[Status | None, list[tuple[PodInfo, str]]]:
            trial = [self._member(fwk, m.qpi) for m in members]
            result = self._place_by_placements(fwk, pg, trial) if self.by_placement else self._place(fwk, pg, trial)
            proposed = [(t.qpi.pi, t.node) for t in trial if t.node is not None]
            self._undo(fwk, trial)
            return result, proposed

        result = fwk.run_pod_group_post_filter(pg, pods, place, ReprieveCheck(self.sched, fwk))
        if result.code == Code.ERROR:
            return result, False
        return Status(status.code, (*status.reasons, result.message()), status.plugin), result.code == Code.SUCCESS

    # --- 5. results ------------------------------------------------------------------------------

    def _fail_members(
        self, fwk: Framework, pg: PodGroup, members: list[_Member], status: Status, before: Status, preempting: bool
    ) -> None:
        for m in members:
            if status.code == Code.ERROR:
                own = m.status if m.status is not None and m.status.code == Code.ERROR else status
                self._report(fwk, m, own)
            elif m.node is not None and preempting:  # it waits for the room preemption makes
                m.record.chosen = None
                m.rejectors = m.rejectors | {"GangScheduling"}
                self._report(fwk, m, Status(status.code, status.reasons))
            elif m.node is not None:
                m.record.chosen = None
                m.rejectors = m.rejectors | {"GangScheduling"}
                self._report(fwk, m, Status(Code.UNSCHEDULABLE, (UNSCHEDULABLE_GROUP, *status.reasons)))
            elif m.tried and m.status is not None:
                self._report(fwk, m, m.status)
            else:
                m.rejectors = m.rejectors | {"GangScheduling"}
                self._report(fwk, m, Status(before.code, before.reasons))
            m.node = None

    def _report(self, fwk: Framework, m: _Member, status: Status) -> None:
        """The member's failed attempt, as any pod's: FailedScheduling, PodScheduled=False; the
        queue takes it back with its group (queue.groups), not one by one."""
        self.sched.fail_attempt(fwk, m.qpi, m.record, status)

    def _write_condition(self, pg: PodGroup, status: Status | None) -> None:
        """PodGroupInitiallyScheduled, if it changed; never from True back to anything else. Both
        judged, as kube judges them, on the PodGroup as the informer last delivered it: a write
        of this scheduler's is seen once it comes back through the watch."""
        if status is None:
            value, reason, message = "True", REASON_SCHEDULED, ""
        elif status.code == Code.ERROR:
            value, reason, message = "False", REASON_SCHEDULER_ERROR, status.message()
        else:
            value, reason, message = "False", REASON_UNSCHEDULABLE, status.message()
        current = pg.condition(CONDITION_INITIALLY_SCHEDULED)
        if current is not None:
            if current.status == "True" and value != "True":
                return
            if (current.status, current.reason, current.message) == (value, reason, message):
                return
        changed = current is None or current.status != value
        when = datetime.fromtimestamp(time.time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        condition = Condition(type=CONDITION_INITIALLY_SCHEDULED, status=value, reason=reason, message=message,
                              last_transition_time=when if changed or current is None else current.last_transition_time)
        self.sched.backend.set_pod_group_condition(pg, condition)

