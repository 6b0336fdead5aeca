"""DefaultPreemption: when a pod fits nowhere, make room for it by evicting lower-priority pods.

The PostFilter of kube-scheduler's default profile, with its semantics:

- Eligibility: a pod with preemptionPolicy Never never preempts. A pod nominated to a node by an
  earlier preemption does not preempt again while a lower-priority pod there is still terminating
  because of that preemption (unless its nominated node is now rejected as unresolvable). The
  scheduler drops terminating pods from its cache as soon as it hears of them, so here "still
  terminating" also covers the victims whose deletion this plugin has started and not seen finish.
- Candidates: only nodes that failed the Filters with Unschedulable; nodes rejected as
  UnschedulableAndUnresolvable, or cut by a PreFilter result, cannot be helped by evicting pods.
  They are dry-run in the order of the table starting at a random offset, until
  max(minCandidateNodesPercentage% of them, minCandidateNodesAbsolute) candidates are found.
- On each node the victims are chosen as kube's SelectVictimsOnNode does: every pod of lower
  priority is taken off; if the pod still does not fit, the node is no candidate. Otherwise the
  potential victims are put back one at a time, and each one that keeps the preemptor fitting is
  spared: first those whose eviction would violate a PodDisruptionBudget (a budget covering the
  pod, drawn down from its disruptionsAllowed by the node's more important victims, would go
  below zero; pods in its disruptedPods do not count), then the others, each kind most important
  first (higher priority, then earlier start). The victims that violate a budget are the node's
  PDB violations. Fitting means passing every Filter with the node's nominated pods of equal or
  higher priority counted, and without them, as kube's RunFilterPluginsWithNominatedPods.
- The dry run stops once it has the candidates it wants and one of them violates no budget; when
  every candidate violates one it looks on, keeping as many of each kind.
- The node is chosen as kube's pickOneNodeForPreemption: fewest PodDisruptionBudget violations,
  then the lowest highest-victim priority, the smallest sum of victim priorities, the fewest
  victims, the latest earliest start among the highest-priority victims, then the first.
- The victims are deleted in the background through the handle (plugins.helper.preemptionexecutor:
  pods still waiting at Permit are rejected instead, the preemptor waits at PreEnqueue), each
  gets a "Preempted" event ("Preempted by pod <uid> on node <node>", posted by the backend with
  the deletion), lower-priority pods nominated to the node lose their nomination, and the
  preemptor is nominated to the node. A preemptor that preemption cannot help loses its own
  nomination.
- Failures carry kube's messages, prefixed "preemption: ", e.g.
  "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."

Cost: the Filters here run over the whole table at once, so one "does it fit" question costs a
filter pass whatever the number of rows asked about. When no PreFilter extension (AddPod/RemovePod)
is active for the pod, a row's verdict depends only on that row and the cycle state, so the dry
run takes the victims off a batch of candidate rows together and asks once per batch (one pass for
the removal, one per reprieve step). Otherwise every node is dry-run on its own cloned CycleState,
exactly as kube does.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodInfo
from kubesched.cache.pdbs import Budget
from kubesched.cache.podgroups import member_key
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    Plugin,
    PodGroupPostFilterPlugin,
    PostFilterPlugin,
    PostFilterPreview,
    PreEnqueuePlugin,
)
from kubesched.framework.status import Code, Status, fit_error_message
from kubesched.framework.types import Diagnosis, PlaceGroup, PostFilterResult, PreemptionPlan, StillFits
from kubesched.infra import features
from kubesched.plugins import grouppreemption as gp
from kubesched.plugins.helper.preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    Candidate,
    DryRun,
    NodeTrial,
    aggregate_errors,
    importance_key,
    pick_one_node,
    reprieve_order,
    taking,
    terminating_by_preemption,
)
from kubesched.plugins.helper.preemptionexecutor import Executor

NAME = "DefaultPreemption"

MESSAGE_PREFIX = "preemption: "
GROUP_MESSAGE_PREFIX = "pod group preemption: "
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_NODES = "no nodes available"

_INT32_MAX = 2**31 - 1

log = logging.getLogger(__name__)


def preempted_message(preemptor: PodInfo, node: str) -> str:
    """The Preempted event's message on a victim, as kube words it."""
    return f"Preempted by pod {preemptor.uid} on node {node}"


def expected_victim_error(node: str) -> str:
    return f'expected at least one victim pod on node "{node}"'


# --- args -----------------------------------------------------------------------------------------


class DefaultPreemptionArgs(BaseModel):
    """kube's DefaultPreemptionArgs: how many candidate nodes a preemption dry-runs at least."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    min_candidate_nodes_percentage: int = Field(default=10, alias="minCandidateNodesPercentage", strict=True)
    min_candidate_nodes_absolute: int = Field(default=100, alias="minCandidateNodesAbsolute", strict=True)

    @model_validator(mode="after")
    def _validate(self) -> DefaultPreemptionArgs:
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if not 0 <= pct <= 100:
            raise ValueError(f"minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]")
        if absolute < 0:
            raise ValueError(f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)")
        if absolute > _INT32_MAX:
            raise ValueError(f"minCandidateNodesAbsolute: Invalid value: {absolute}: out of range for a 32-bit integer")
        if pct == 0 and absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
            )
        return self


def _mask(size: int, rows: Sequence[int]) -> np.ndarray:
    out = np.zeros(size, dtype=bool)
    if rows:
        out[np.fromiter(rows, dtype=np.intp, count=len(rows))] = True
    return out


def _fit(arr: np.ndarray, size: int) -> np.ndarray:
    """A per-row mask cut or padded (False) to `size` rows."""
    if len(arr) >= size:
        return arr[:size]
    out = np.zeros(size, dtype=bool)
    out[: len(arr)] = arr
    return out


# --- the plugin -----------------------------------------------------------------------------------------


class DefaultPreemption(Plugin, PreEnqueuePlugin, PostFilterPlugin, PostFilterPreview, PodGroupPostFilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = DefaultPreemptionArgs

    def __init__(self, args: Any, handle: Handle) -> None:
        if isinstance(args, Mapping):
            args = DefaultPreemptionArgs.model_validate(args)
        super().__init__(args or DefaultPreemptionArgs(), handle)
        self.handle: Handle = handle
        # kube draws the dry run's start offset at random; a fixed seed keeps simulations repeatable.
        self.rng = random.Random(0)
        # The victims' deletions, and the PreEnqueue gate that holds preemptors while they run.
        self.executor = Executor(handle, self.name)
        # kube reads a pod's PodGroup at PreEnqueue only with GenericWorkload on.
        self.groups_on = features.current().generic_workload

    # --- events (kube's, with SchedulerAsyncPreemption on by default) -----------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # kube registers a victim's deletion so that a preemptor its PreEnqueue held back while
        # the preemption ran can be let go; whether the pod is worth retrying is for the plugins
        # that rejected it to say, so this hint always skips.
        return [
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.Delete), self.is_pod_schedulable_after_assigned_pod_deletion
            )
        ]

    def is_pod_schedulable_after_assigned_pod_deletion(
        self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        return QueueingHint.QueueSkip

    # --- sizing (kube's calculateNumCandidates / GetOffsetAndNumCandidates) ---------------------------

    def num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return int(min(n, num_nodes))

    def offset(self, num_nodes: int) -> int:
        return self.rng.randrange(num_nodes) if num_nodes > 0 else 0

    # --- PostFilter ----------------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, status = self._preempt(state, pi, diagnosis)
        if status is not None and status.reasons:
            status = Status(status.code, (MESSAGE_PREFIX + status.message(),), NAME)
        return result, status

    def pod_group_post_filter(
        self,
        group: PodGroup,
        members: Sequence[PodInfo],
        place: PlaceGroup,
        still_fits: StillFits,
    ) -> Status:
        """Group preemption (kube v1.37's PodGroupPostFilter; plugins.grouppreemption)."""
        handle = self.handle
        if any(m.preempt_never for m in members):
            return Status(Code.UNSCHEDULABLE, (GROUP_MESSAGE_PREFIX + NOT_ELIGIBLE_NEVER,), NAME)
        current = gp.ongoing(handle, members, lambda o: self.executor.deleting_now(o) or terminating_by_preemption(o.pod))
        if current:
            return Status(Code.SUCCESS, (GROUP_MESSAGE_PREFIX + gp.ONGOING,), NAME)
        found = gp.evaluate(handle, group, place, still_fits)
        status, victims, proposed = found.status, found.victims, found.proposed
        if status.code != Code.SUCCESS:
            return Status(status.code, tuple(GROUP_MESSAGE_PREFIX + r for r in status.reasons) if status.reasons else (), NAME)
        message = f"Preempted by podgroup {group.metadata.uid} on node {gp.CANDIDATE_NODE}"
        handle.record_preemption(victims, found.pdb_violations, "podgroup")
        doomed = self.executor.to_delete(victims, message + " (in kube-scheduler memory).")
        # Its members wait at PreEnqueue until the deletions are through, as kube's do.
        self.executor.evict(_preemptor_key(group), members, doomed, gp.CANDIDATE_NODE, message)
        for pi, node in proposed:
            handle.nominate(pi, node)
        return Status(Code.SUCCESS, tuple(GROUP_MESSAGE_PREFIX + r for r in status.reasons), NAME)

    def preview(self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis) -> PreemptionPlan:
        """What preemption would do for the pod now, doing nothing: the node and victims it would
        pick, or why it cannot help. The candidate search starts at the first node instead of a
        random one, so that asking does not move the scheduler's random sequence."""
        best, _, status = self._find(state, pi, diagnosis, lambda k: 0)
        if best is None:
            message = MESSAGE_PREFIX + status.message() if status is not None and status.reasons else ""
            return PreemptionPlan(None, [], message)
        return PreemptionPlan(best.node, list(best.victims), "", [v for v in best.victims if v.uid in best.violating])

    def _preempt(
        self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        best, result, status = self._find(state, pi, diagnosis, self.offset)
        if best is None:
            return result, status
        self.prepare(pi, best)
        # Since kube 1.37 a successful preemption says so in the pod's FailedScheduling message.
        placed = f"found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims"
        return PostFilterResult(nominated_node=best.node, victims=tuple(best.victims)), Status(Code.SUCCESS, (placed,))

    def _find(
        self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis, offset_of: Callable[[int], int]
    ) -> tuple[Candidate | None, PostFilterResult | None, Status | None]:
        """The candidate to preempt on, or none with the PostFilter result and status to report."""
        handle = self.handle
        table = handle.table
        eligible, why = self.eligible(pi, diagnosis)
        if not eligible:
            return None, None, Status(Code.UNSCHEDULABLE, (why,))
        num_nodes = len(table)
        if num_nodes == 0:
            return None, None, Status(Code.ERROR, (NO_NODES,))
        potential = self.potential_rows(diagnosis)
        run = DryRun()
        if potential.size:
            k = int(potential.size)
            offset = offset_of(k)
            order = np.concatenate((potential[offset:], potential[:offset])).tolist()
            wanted = self.num_candidates(k)
            run = self.dry_run(state, pi, order, wanted if wanted > 0 else k)
            if wanted <= 0:
                # kube still dry-runs every node but keeps no candidate; the nodes that would have
                # been one get no status of their own.
                run.examined -= len(run.candidates)
                run.drop_candidates()
        if not run.candidates:
            if run.errors:
                return None, None, Status(Code.ERROR, (aggregate_errors(run.errors),))
            reasons = dict(run.reasons)
            absent = num_nodes - run.examined
            if absent > 0:
                reasons[NOT_HELPFUL] = reasons.get(NOT_HELPFUL, 0) + absent
            # kube clears the nomination of a pod that preemption cannot help ("" = clear).
            nominated = pi.pod.status.nominated_node_name or self.handle.nominated_node(pi)
            clear = PostFilterResult(nominated_node="") if nominated else None
            return None, clear, Status(Code.UNSCHEDULABLE, (fit_error_message(num_nodes, reasons.items()),))
        return pick_one_node(run.candidates), None, None

    def eligible(self, pi: PodInfo, diagnosis: Diagnosis) -> tuple[bool, str]:
        """kube's PodEligibleToPreemptOthers."""
        if pi.preempt_never:
            return False, NOT_ELIGIBLE_NEVER
        nominated = pi.pod.status.nominated_node_name or self.handle.nominated_node(pi)
        if not nominated:
            nominated = self.executor.waiting_on_node(pi)
        if not nominated:
            return True, ""
        table = self.handle.table
        row = table.index.get(nominated)
        if row is None:
            return True, ""
        unresolvable = diagnosis.unresolvable
        if unresolvable is not None and row < len(unresolvable) and unresolvable[row]:
            return True, ""
        if diagnosis.evaluated is not None and row < len(diagnosis.evaluated) and not diagnosis.evaluated[row]:
            return True, ""  # cut by a PreFilter result: kube's status for such nodes is unresolvable
        for other in table.pods[row].values():
            if other.priority < pi.priority and (self.executor.deleting_now(other) or terminating_by_preemption(other.pod)):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def potential_rows(self, diagnosis: Diagnosis) -> np.ndarray:
        """Rows that failed with Unschedulable only: the nodes evicting pods might help."""
        table = self.handle.table
        size = table.size
        mask = table.present[:size].copy()
        if diagnosis.unresolvable is not None:
            mask &= ~_fit(diagnosis.unresolvable, size)
        if diagnosis.evaluated is not None:
            mask &= _fit(diagnosis.evaluated, size)
        return np.flatnonzero(mask)

    # --- the dry run ------------------------------------------------------------------------------------------

    def dry_run(self, state: CycleState, pi: PodInfo, order: list[int], wanted: int) -> DryRun:
        """Examines the rows in `order` until `wanted` candidates are found, one of them violating no
        PodDisruptionBudget (kube's DryRunPreemption: when every candidate violates one, it looks
        on, to the last node, keeping `wanted` of each kind)."""
        run = DryRun(wanted)
        budgets = self.budgets()
        if self.extensions_active(state):
            for row in order:
                if run.enough:
                    break
                self._dry_run_node(state, pi, row, run, budgets)
            return run
        pos = 0
        while pos < len(order) and not run.enough:
            need = wanted - len(run.candidates)
            chunk = order[pos : pos + (need if need > 0 else wanted)]
            pos += len(chunk)
            self._dry_run_batch(state, pi, chunk, run, budgets)
        return run

    def budgets(self) -> list[Budget]:
        """The PodDisruptionBudgets preemption weighs (kube lists them all, each preemption)."""
        return self.handle.cache.pdbs.all()

    def extensions_active(self, state: CycleState) -> bool:
        """Whether some PreFilter AddPod/RemovePod extension keeps state for this pod: then each node
        needs its own cloned state and the rows cannot be evaluated together."""
        return self.handle.prefilter_extensions_active(state)

    def _lower_priority_pods(self, pi: PodInfo, row: int) -> list[PodInfo]:
        pods = [p for p in self.handle.table.pods[row].values() if p.priority < pi.priority]
        pods.sort(key=importance_key)
        return pods

    def _nominated_ahead(self, pi: PodInfo, row: int) -> list[PodInfo]:
        """Pods nominated to the row's node that the preemptor must leave room for."""
        node = self.handle.table.name_of(row)
        return [p for p in self.handle.nominated_pods(node) if p.uid != pi.uid and p.priority >= pi.priority]

    def _fits(
        self, state: CycleState, pi: PodInfo, rows: Sequence[int], nominated: Mapping[int, list[PodInfo]]
    ) -> tuple[np.ndarray, list[tuple[str, str, int]], list[str]]:
        """Which of `rows` pass every Filter, counting their nominated pods and not counting them
        (the framework's RunFilterPluginsWithNominatedPods, shared with the scheduling cycle), plus
        why the others fail and any errors."""
        out = self.handle.run_filters_with_nominated(state, pi, _mask(self.handle.table.size, rows), nominated)
        return out.alive, out.rejections, [e.message() for e in out.errors]

    def _record_failures(self, run: DryRun, rejections: list[tuple[str, str, int]], errors: list[str]) -> None:
        for _plugin, reason, count in rejections:
            run.count(reason, count)
        run.errors.extend(errors)

    def _dry_run_batch(self, state: CycleState, pi: PodInfo, rows: list[int], run: DryRun, budgets: list[Budget]) -> None:
        """Dry-runs several nodes at once; only valid when no PreFilter extension is active."""
        table = self.handle.table
        run.examined += len(rows)
        victims_of: dict[int, list[PodInfo]] = {}
        violating_of: dict[int, set[str]] = {}
        for row in rows:
            pods = self._lower_priority_pods(pi, row)
            if pods:
                victims_of[row], violating_of[row] = reprieve_order(pods, budgets)
            else:
                run.count(NO_VICTIMS)
        if not victims_of:
            return
        nominated = {row: n for row in victims_of if (n := self._nominated_ahead(pi, row))}
        chosen: dict[int, list[PodInfo]] = {}
        # Every victim's row and requests laid out once: each step puts one back per node, and
        # takes it again where the preemptor then fails.
        pairs = [(row, p) for row, pods in victims_of.items() for p in pods]
        requests = table.requests_of(pairs)
        first: dict[int, int] = {}
        for i, (row, _) in enumerate(pairs):
            first.setdefault(row, i)
        with taking(table) as taken:
            taken.take_all(pairs, requests)
            alive, rejections, errors = self._fits(state, pi, list(victims_of), nominated)
            self._record_failures(run, rejections, errors)
            fitting = [row for row in victims_of if alive[row]]
            chosen = {row: [] for row in fitting}
            longest = max((len(victims_of[row]) for row in fitting), default=0)
            for step in range(longest):
                at = [first[row] + step for row in fitting if len(victims_of[row]) > step]
                trying = [pairs[i] for i in at]
                taken.put_back_all(trying, requests.subset(np.array(at, dtype=np.intp)))
                alive, _, _ = self._fits(state, pi, [row for row, _ in trying], nominated)
                refused = [i for i in at if not alive[pairs[i][0]]]
                taken.take_all([pairs[i] for i in refused], requests.subset(np.array(refused, dtype=np.intp)))
                for i in refused:
                    row, victim = pairs[i]
                    chosen[row].append(victim)
            out = [i for i, (row, p) in enumerate(pairs) if (row, p.uid) in taken.out]
            taken.put_back_all([pairs[i] for i in out], requests.subset(np.array(out, dtype=np.intp)))
        for row in fitting:
            if run.enough:
                break  # the rows after it would not have been looked at, one by one
            self._add_candidate(run, row, chosen[row], violating_of[row])

    def _dry_run_node(self, state: CycleState, pi: PodInfo, row: int, run: DryRun, budgets: list[Budget]) -> None:
        """Dry-runs one node on its own copy of the cycle state (kube's SelectVictimsOnNode)."""
        handle = self.handle
        table = handle.table
        run.examined += 1
        pods = self._lower_priority_pods(pi, row)
        if not pods:
            run.count(NO_VICTIMS)
            return
        nominated = {row: n} if (n := self._nominated_ahead(pi, row)) else {}
        trial_state = state.clone()
        victims: list[PodInfo] = []
        with taking(table) as taken:
            trial = NodeTrial(handle, trial_state, pi, row, taken, run)
            for p in pods:
                if not trial.take(p):
                    return
            alive, rejections, errors = self._fits(trial_state, pi, [row], nominated)
            if not alive[row]:
                self._record_failures(run, rejections, errors)
                return
            order, violating = reprieve_order(pods, budgets)
            for p in order:
                if not trial.put_back(p):
                    return
                alive, _, _ = self._fits(trial_state, pi, [row], nominated)
                if not alive[row]:
                    if not trial.take(p):
                        return
                    victims.append(p)
        self._add_candidate(run, row, victims, violating)

    def _add_candidate(self, run: DryRun, row: int, victims: list[PodInfo], violating: set[str]) -> None:
        """`victims` in the order they were given up; `violating`: the uids of the node's potential
        victims whose eviction would violate a PodDisruptionBudget."""
        violations = sum(1 for v in victims if v.uid in violating)
        if violations and violations < len(victims):
            victims.sort(key=importance_key)  # the violating ones were given up first: back to importance order
        self.add_candidate(run, row, victims, violations, violating)

    def add_candidate(self, run: DryRun, row: int, victims: list[PodInfo], violations: int, violating: set[str]) -> None:
        node = self.handle.table.name_of(row)
        if not victims:
            # The pod fits with nothing evicted: the Filters disagree with the failed cycle.
            run.errors.append(expected_victim_error(node))
            return
        run.add(Candidate(row, node, victims, violations, frozenset(v.uid for v in victims if v.uid in violating)))

    # --- acting on the choice (kube's prepareCandidate) -----------------------------------------------------

    def prepare(self, pi: PodInfo, best: Candidate) -> None:
        handle = self.handle
        message = preempted_message(pi, best.node)
        handle.record_preemption(best.victims, best.pdb_violations, "pod")
        self.executor.evict(pi.uid, [pi], self.executor.to_delete(best.victims, message), best.node, message)
        # Lower-priority pods nominated here may no longer fit: let them look elsewhere.
        for other in handle.nominated_pods(best.node):
            if other.priority < pi.priority:
                handle.nominate(other, None)

    def pre_enqueue(self, pi: PodInfo) -> Status | None:
        key = member_key(pi) if self.groups_on else None
        if key is not None:
            # A member waits while its group's preemption runs (a group not known yet is not
            # this plugin's to hold back).
            group = self.handle.cache.groups.group(key)
            return self.executor.gate_group(_preemptor_key(group)) if group is not None else None
        return self.executor.gate(pi)


def _preemptor_key(group: PodGroup) -> str:
    """The key a PodGroup's preemption is tracked by, at eviction and at PreEnqueue alike: its uid
    as kube's, its namespace/name for an object without one."""
    return group.metadata.uid or group.key

