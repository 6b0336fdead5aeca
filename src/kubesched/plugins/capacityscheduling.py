"""CapacityScheduling: tenant quotas with ElasticQuota (`scheduling.x-k8s.io/v1alpha1`), as
kubernetes-sigs/scheduler-plugins v0.34.7 does it (pkg/capacityscheduling). Not in the default
profile; enable it as scheduler-plugins documents (its preemption replaces DefaultPreemption):

    plugins:
      multiPoint: {enabled: [{name: CapacityScheduling}]}
      postFilter: {enabled: [{name: CapacityScheduling}], disabled: [{name: "*"}]}

A tenant is a namespace with an ElasticQuota: `min` is guaranteed, `max` the most it may use.
A tenant may go above its min (borrow) while the sum of every tenant's use stays within the sum
of their mins, i.e. on other tenants' unused guarantees. The accounting is plugins.elasticquotas.

- PreFilter (Unschedulable, so preemption may follow): with the pod, and the pods nominated to
  nodes that come first (same namespace, priority >= the pod's), the namespace's use would
  exceed its max; or, with the pod and the nominated pods of the namespace and of tenants within
  their min, the use of all tenants would exceed the sum of their mins.
- PostFilter: preemption (kube's evaluator with every node a candidate, no random offset) whose
  victims depend on the quota: a tenant within its min with the pod (its guarantee was lent out)
  reclaims it from pods of tenants above their min, any priority; a tenant borrowing preempts only
  its own lower-priority pods; a pod without a quota preempts lower-priority pods of namespaces
  without one. Victims are then spared most important first while the pod still fits the node
  and its quota.
- Reserve / Unreserve: the pod counts in its tenant's use, or stops counting.

Messages are upstream's, word for word (and, as upstream's PostFilter, without the "preemption: "
prefix DefaultPreemption adds). One deliberate difference: when a spared victim would both stop
the pod fitting and break its quota, upstream removes it twice and fails the node with an error;
here it is a victim once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kubesched.api.podinfo import PodInfo
from kubesched.api.xk8s import ELASTICQUOTAS
from kubesched.cache.pdbs import Budget
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, Plugin, PostFilterPlugin, PreFilterPlugin, ReservePlugin
from kubesched.framework.status import Status
from kubesched.framework.types import Diagnosis, PostFilterResult, PreFilterResult
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.elasticquotas import QuotaBook, QuotaSnapshot, Resource, pod_request
from kubesched.plugins.helper.args import refuse_args
from kubesched.plugins.helper.preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    DryRun,
    NodeTrial,
    importance_key,
    reprieve_order,
    taking,
)

NAME = "CapacityScheduling"
PREFILTER_KEY = "PreFilter" + NAME
SNAPSHOT_KEY = "ElasticQuotaSnapshot"
GLOBAL_QUOTA_MAX_EXCEEDED = "global quota max exceeded"
NO_PREFILTER_STATE = "Failed to read preFilterState from cycleState"
NO_SNAPSHOT = "Failed to read elasticQuotaSnapshot from cycleState"
NOT_ELIGIBLE_NO_STATE = "not eligible due to failed to read from cycleState"


def over_max(pi: PodInfo, quota_namespace: str) -> str:
    return f"Pod {pi.namespace}/{pi.pod.metadata.name} is rejected in PreFilter because ElasticQuota {quota_namespace} is more than Max"


def over_min(pi: PodInfo) -> str:
    return f"Pod {pi.namespace}/{pi.pod.metadata.name} is rejected in PreFilter because total ElasticQuota used is more than min"


def no_victims_on_node(node: str, pi: PodInfo) -> str:
    return f"No victims found on node {node} for preemptor pod {pi.pod.metadata.name}"


@dataclass(frozen=True, slots=True)
class _Requests:
    """upstream's PreFilterState: the pod's request, with the nominated pods that come first in its
    quota, and with those and the nominated pods of other tenants within their min."""

    pod: Resource
    in_quota: Resource
    all_quotas: Resource

    def clone(self) -> _Requests:
        return self  # never modified


class CapacityScheduling(Plugin, PreFilterPlugin, PostFilterPlugin, ReservePlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME
    watches = (ELASTICQUOTAS,)

    def __init__(self, args: Any, handle: Handle) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)
        if not handle.cache.custom.watching(ELASTICQUOTAS.resource):
            raise ValueError(f"{NAME} reads {ELASTICQUOTAS.name}, which this kubesched does not watch (the watches "
                             "are chosen when it starts, from the profiles' plugins): restart kubesched to enable it")
        self.handle: Handle = handle
        self.book = handle.shared.get(QuotaBook, lambda: QuotaBook(handle.cache))
        self.preemption = _QuotaPreemption(handle)

    # --- PreFilter and its extensions ---------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        snapshot = self.book.snapshot()
        # Victims whose deletion this plugin has issued no longer count: upstream deletes them before
        # its PostFilter returns (no asynchronous preemption), so the next pods see them gone.
        for uid in self.preemption.executor.deleting:
            for tenant in snapshot.infos.values():
                tenant.remove_pod(uid)
        state.write(SNAPSHOT_KEY, snapshot)
        request = pod_request(pi)
        quota = snapshot.get(pi.namespace)
        if quota is None:
            state.write(PREFILTER_KEY, _Requests(request, Resource(), Resource()))
            return None, None
        in_quota, all_quotas = Resource(), Resource()
        live = self.book.infos
        table = self.handle.table
        for node in table.names:
            if not node or node not in table.index:
                continue
            for p in self.handle.nominated_pods(node):
                if p.uid == pi.uid:
                    continue
                info = live.get(p.namespace)
                if info is None:
                    continue
                if p.namespace == pi.namespace and p.priority >= pi.priority:
                    in_quota.add(pod_request(p))
                    all_quotas.add(pod_request(p))
                elif p.namespace != pi.namespace and not info.used_over_min():
                    all_quotas.add(pod_request(p))
        in_quota.add(request)
        all_quotas.add(request)
        state.write(PREFILTER_KEY, _Requests(request, in_quota, all_quotas))
        if quota.used_over_max_with(in_quota):
            return None, Status.unschedulable(over_max(pi, quota.namespace))
        if snapshot.aggregated_used_over_min_with(all_quotas):
            return None, Status.unschedulable(over_min(pi))
        return None, None

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        snapshot = state.read(SNAPSHOT_KEY)
        if not isinstance(snapshot, QuotaSnapshot):
            return Status.error(f'error reading "{SNAPSHOT_KEY}" from cycleState: not found')
        info = snapshot.get(added.namespace)
        if info is not None:
            info.add_pod(added.uid, pod_request(added))
        return None

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        snapshot = state.read(SNAPSHOT_KEY)
        if not isinstance(snapshot, QuotaSnapshot):
            return Status.error(f'error reading "{SNAPSHOT_KEY}" from cycleState: not found')
        info = snapshot.get(removed.namespace)
        if info is not None:
            info.remove_pod(removed.uid)
        return None

    # --- PostFilter, Reserve ----------------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis) -> tuple[PostFilterResult | None, Status | None]:
        return self.preemption.preempt(state, pi, diagnosis)

    def reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        self.book.reserve(pi)
        return None

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        self.book.unreserve(pi)

    # --- events -------------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.Delete)),
            ClusterEventWithHint(ClusterEvent(ELASTICQUOTAS.resource, ActionType.All)),
        ]


class _QuotaPreemption(DefaultPreemption):
    """kube's preemption evaluator as CapacityScheduling configures it: every node a candidate from
    the first on, its own eligibility and victim selection, and no message on success (the
    evaluator of kube 1.34, which scheduler-plugins v0.34.7 is built with, gives none)."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle) -> None:
        super().__init__(None, handle)
        self._state: CycleState | None = None

    def preempt(self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis) -> tuple[PostFilterResult | None, Status | None]:
        self._state = state
        try:
            best, result, status = self._find(state, pi, diagnosis, self.offset)
        finally:
            self._state = None
        if best is None:
            return result, status
        self.prepare(pi, best)
        return PostFilterResult(nominated_node=best.node, victims=tuple(best.victims)), None

    def num_candidates(self, num_nodes: int) -> int:
        return num_nodes

    def offset(self, num_nodes: int) -> int:
        return 0

    def extensions_active(self, state: CycleState) -> bool:
        return True  # the quota snapshot changes with every victim: each node on its own state

    def eligible(self, pi: PodInfo, diagnosis: Diagnosis) -> tuple[bool, str]:
        """upstream's PodEligibleToPreemptOthers: Never; and a terminating pod on the node the pod is
        nominated to that this preemption may have made room with (lower priority in its own
        tenant, or of a tenant above its min when the pod reclaims its own min)."""
        if pi.preempt_never:
            return False, NOT_ELIGIBLE_NEVER
        state = self._state
        requests = state.read(PREFILTER_KEY) if state is not None else None
        if not isinstance(requests, _Requests):
            return False, NOT_ELIGIBLE_NO_STATE
        nominated = pi.pod.status.nominated_node_name
        if not nominated:
            nominated = self.executor.waiting_on_node(pi)
        if not nominated:
            return True, ""
        table = self.handle.table
        row = table.index.get(nominated)
        unresolvable = diagnosis.unresolvable
        if row is None or (unresolvable is not None and row < len(unresolvable) and unresolvable[row]):
            return True, ""
        snapshot = state.read(SNAPSHOT_KEY) if state is not None else None
        if not isinstance(snapshot, QuotaSnapshot):
            return True, ""
        own = snapshot.get(pi.namespace)
        reclaiming = own is not None and not own.used_over_min_with(requests.in_quota)
        for other in table.pods[row].values():
            if not (self.executor.deleting_now(other) or other.pod.metadata.deletion_timestamp):
                continue
            quota = snapshot.get(other.namespace)
            if own is not None:
                if quota is None:
                    continue
                if other.namespace == pi.namespace and other.priority < pi.priority:
                    return False, NOT_ELIGIBLE_TERMINATING
                if other.namespace != pi.namespace and reclaiming and quota.used_over_min():
                    return False, NOT_ELIGIBLE_TERMINATING
            elif quota is None and other.priority < pi.priority:
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def _dry_run_node(self, state: CycleState, pi: PodInfo, row: int, run: DryRun, budgets: list[Budget]) -> None:
        """upstream's SelectVictimsOnNode, on a copy of the cycle state for this node."""
        handle = self.handle
        table = handle.table
        run.examined += 1
        trial_state = state.clone()
        snapshot = trial_state.read(SNAPSHOT_KEY)
        if not isinstance(snapshot, QuotaSnapshot):
            run.count(NO_SNAPSHOT)
            return
        requests = trial_state.read(PREFILTER_KEY)
        if not isinstance(requests, _Requests):
            run.count(NO_PREFILTER_STATE)
            return
        own = snapshot.get(pi.namespace)
        nominated = {row: n} if (n := self._nominated_ahead(pi, row)) else {}
        # Least important first, as upstream walks the node's pods.
        pods = sorted(table.pods[row].values(), key=importance_key, reverse=True)
        potential: list[PodInfo] = []
        with taking(table) as taken:
            trial = NodeTrial(handle, trial_state, pi, row, taken, run)
            if own is not None:
                borrowing = own.used_over_min_with(requests.in_quota)
                for p in pods:
                    quota = snapshot.get(p.namespace)
                    if quota is None:
                        continue
                    if borrowing:
                        chosen = p.namespace == pi.namespace and p.priority < pi.priority
                    else:
                        chosen = p.namespace != pi.namespace and quota.used_over_min()
                    if chosen:
                        potential.append(p)
                        if not trial.take(p):
                            return
            else:
                for p in pods:
                    if snapshot.get(p.namespace) is None and p.priority < pi.priority:
                        potential.append(p)
                        if not trial.take(p):
                            return
            if not potential:
                run.count(no_victims_on_node(table.name_of(row), pi))
                return
            alive, rejections, errors = self._fits(trial_state, pi, [row], nominated)
            if not alive[row]:
                self._record_failures(run, rejections, errors)
                return
            if own is not None and (own.used_over_max_with(requests.pod)
                                    or snapshot.aggregated_used_over_min_with(requests.pod)):
                run.count(GLOBAL_QUOTA_MAX_EXCEEDED)
                return
            victims: list[PodInfo] = []
            violations = 0
            potential.sort(key=importance_key)  # spare the most important first
            # The budget-violating ones are tried first; upstream's copy of the filter draws down
            # every budget covering a pod, and counts a violation only where the pod does not fit.
            order, violating = reprieve_order(potential, budgets, counts_every_budget=True)
            for p in order:
                if not trial.put_back(p):
                    return
                alive, _, _ = self._fits(trial_state, pi, [row], nominated)
                broken = own is not None and (own.used_over_max_with(requests.in_quota)
                                              or snapshot.aggregated_used_over_min_with(requests.all_quotas))
                if not alive[row] and p.uid in violating:
                    violations += 1
                if not alive[row] or broken:
                    if not trial.take(p):
                        return
                    victims.append(p)
        self.add_candidate(run, row, victims, violations, violating)
