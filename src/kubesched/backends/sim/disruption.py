"""The disruption controller's part in the simulated cluster (kube's pkg/controller/disruption):
each PodDisruptionBudget's status kept current as the pods it selects come, run, finish and go,
so that preemption reads what a real cluster's budgets would say.

A budget selects the pods of its namespace its selector matches (policy/v1: an empty selector
selects every pod there, a nil one none). Its status, as the controller computes it:
- expectedPods: the number of selected pods for an integer minAvailable; otherwise the summed
  scale (replicas) of the controllers owning them (a Deployment through its ReplicaSet, a
  ReplicaSet, a StatefulSet, a ReplicationController; a Job has no scale and is an error);
- desiredHealthy: minAvailable, or expected minus maxUnavailable, percentages rounded up;
- currentHealthy: selected pods that are ready: on a node, neither finished nor being deleted,
  with no Ready condition saying otherwise (the simulated kubelet starts a pod on its node at
  once), and not let go by the eviction API a moment ago (disruptedPods);
- disruptionsAllowed: currentHealthy - desiredHealthy, at least 0, and 0 while no pod is expected.
A budget the controller cannot compute (a controller it cannot find or scale) gets, as kube's
fail-safe gives it, disruptionsAllowed 0 and a DisruptionAllowed=False condition with reason
SyncFailed; unless the manifest came with a status of its own (as `kubectl get -o yaml` writes
it), which then stands, as it does while the budget selects no pod of the simulation yet: the
real controller computed it with what the input does not hold.

Counts are kept per budget and updated per pod change, so a change costs the budgets of its
namespace, not a walk of their pods.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import msgspec

from kubesched.api.objects import IntOrString, Pod
from kubesched.api.podgroups import Condition
from kubesched.api.policy import (
    DISRUPTION_ALLOWED,
    INSUFFICIENT_PODS,
    SUFFICIENT_PODS,
    SYNC_FAILED,
    PodDisruptionBudget,
    PodDisruptionBudgetStatus,
)
from kubesched.api.selectors import Selector, SelectorError, compile_label_selector
from kubesched.backends.sim.clusterinput import Scale

# How long a pod the eviction API let go counts as disrupted before the controller gives up on
# its deletion (kube's DeletionTimeout).
DELETION_TIMEOUT = 120.0
# A budget's metadata.generation: created once, never updated in a simulation.
GENERATION = 1


@dataclass(slots=True)
class _Member:
    healthy: bool
    controller: str | None  # the uid of the controlling ownerReference, if any
    controller_kind: str = ""
    controller_group: str = ""


@dataclass(slots=True)
class _Budget:
    pdb: PodDisruptionBudget
    selector: Selector | None  # None: selects no pod
    given_status: bool  # the manifest carried a status (kept when none can be computed)
    disrupted: dict[str, float] = field(default_factory=dict)  # pod name -> virtual time let go
    members: dict[str, _Member] = field(default_factory=dict)  # by pod name
    healthy: int = 0


def _selector(pdb: PodDisruptionBudget) -> Selector | None:
    if pdb.spec.selector is None:
        return None
    try:
        return compile_label_selector(pdb.spec.selector)
    except SelectorError:
        return None  # an invalid selector selects nothing, as LabelSelectorAsSelector's error does


def _scaled(value: IntOrString, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent with rounding up."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * total / 100)


def is_healthy(pod: Pod) -> bool:
    """Ready, as the simulated kubelet makes a pod once it is on a node: unless it finished, is
    being deleted, or its manifest says it is not ready (a Ready condition other than True)."""
    if not pod.spec.node_name or pod.metadata.deletion_timestamp:
        return False
    if pod.status.phase in ("Succeeded", "Failed"):
        return False
    return all(c.status == "True" for c in pod.status.conditions if c.type == "Ready")


def _controller(pod: Pod) -> tuple[str | None, str, str]:
    for ref in pod.metadata.owner_references:
        if ref.controller:
            group = ref.api_version.rsplit("/", 1)[0] if "/" in ref.api_version else ""
            return ref.uid, ref.kind, group
    return None, "", ""


class DisruptionController:
    def __init__(self, scales: Mapping[str, Scale], now: Callable[[], float],
                 publish: Callable[[PodDisruptionBudget], None]) -> None:
        self.scales = scales
        self.now = now
        self.publish = publish
        self._budgets: dict[str, dict[str, _Budget]] = {}  # namespace -> key -> budget
        self._pods: dict[str, dict[str, Pod]] = {}  # namespace -> name -> pod, for budgets added later

    def budgets(self) -> list[PodDisruptionBudget]:
        return [b.pdb for ns in self._budgets.values() for b in ns.values()]

    # --- budgets ---------------------------------------------------------------------------------

    def add_budget(self, pdb: PodDisruptionBudget) -> None:
        given = pdb.status != PodDisruptionBudgetStatus()
        pdb = msgspec.structs.replace(pdb, status=msgspec.structs.replace(pdb.status,
                                                                          disrupted_pods=dict(pdb.status.disrupted_pods)))
        budget = _Budget(pdb, _selector(pdb), given, {name: self.now() for name in pdb.status.disrupted_pods})
        self._budgets.setdefault(pdb.metadata.namespace, {})[pdb.key] = budget
        for pod in self._pods.get(pdb.metadata.namespace, {}).values():
            self._enter(budget, pod)
        self._sync(budget, force=True)

    # --- pods --------------------------------------------------------------------------------------

    def pod_changed(self, pod: Pod) -> None:
        """A pod created, bound, finished or otherwise changed (the object as it is now)."""
        ns, name = pod.metadata.namespace, pod.metadata.name
        self._pods.setdefault(ns, {})[name] = pod
        for budget in self._budgets.get(ns, {}).values():
            self._leave(budget, name)
            self._enter(budget, pod)
            self._sync(budget)

    def pod_gone(self, pod: Pod) -> None:
        ns, name = pod.metadata.namespace, pod.metadata.name
        self._pods.get(ns, {}).pop(name, None)
        for budget in self._budgets.get(ns, {}).values():
            self._leave(budget, name)
            budget.disrupted.pop(name, None)
            self._sync(budget)

    def _enter(self, budget: _Budget, pod: Pod) -> None:
        if budget.selector is None or not budget.selector.matches(pod.metadata.labels):
            return
        uid, kind, group = _controller(pod)
        member = _Member(is_healthy(pod) and not self._disrupted(budget, pod.metadata.name), uid, kind, group)
        budget.members[pod.metadata.name] = member
        budget.healthy += member.healthy

    def _leave(self, budget: _Budget, name: str) -> None:
        member = budget.members.pop(name, None)
        if member is not None:
            budget.healthy -= member.healthy

    def _disrupted(self, budget: _Budget, name: str) -> bool:
        at = budget.disrupted.get(name)
        return at is not None and at + DELETION_TIMEOUT > self.now()

    # --- the status ------------------------------------------------------------------------------

    def _sync(self, budget: _Budget, *, force: bool = False) -> None:
        status = self._status(budget) if budget.members or not budget.given_status else "no pods yet"
        if isinstance(status, str):
            if budget.given_status:
                if force:
                    self.publish(budget.pdb)
                return
            status = self._failed(budget, status)
        if force or status != budget.pdb.status:
            budget.pdb = msgspec.structs.replace(budget.pdb, status=status)
            self.publish(budget.pdb)

    def _status(self, budget: _Budget) -> PodDisruptionBudgetStatus | str:
        """The budget's status, or why it cannot be computed."""
        spec = budget.pdb.spec
        expected, desired = 0, 0
        if spec.max_unavailable is not None:
            scale = self._expected_scale(budget)
            if isinstance(scale, str):
                return scale
            expected = scale
            desired = max(expected - _scaled(spec.max_unavailable, expected), 0)
        elif spec.min_available is not None:
            if isinstance(spec.min_available, int):
                desired, expected = spec.min_available, len(budget.members)
            else:
                scale = self._expected_scale(budget)
                if isinstance(scale, str):
                    return scale
                expected = scale
                desired = _scaled(spec.min_available, expected)
        healthy = budget.healthy
        allowed = healthy - desired if expected > 0 and healthy - desired > 0 else 0
        disrupted = {name: budget.pdb.status.disrupted_pods[name] for name in budget.disrupted
                     if name in budget.members and self._disrupted(budget, name)}
        condition = Condition(type=DISRUPTION_ALLOWED, status="True" if allowed > 0 else "False",
                              reason=SUFFICIENT_PODS if allowed > 0 else INSUFFICIENT_PODS, observed_generation=GENERATION)
        return PodDisruptionBudgetStatus(
            observed_generation=GENERATION, disrupted_pods=disrupted, disruptions_allowed=allowed,
            current_healthy=healthy, desired_healthy=desired, expected_pods=expected, conditions=[condition])

    def _expected_scale(self, budget: _Budget) -> int | str:
        """The summed replicas of the selected pods' controllers (kube's getExpectedScale), or why
        one cannot be found or scaled. Pods without a controller are left out (kube reports them
        in an event and carries on)."""
        counted: Counter[str] = Counter()
        for name, member in sorted(budget.members.items()):
            if member.controller is None:
                continue
            scale = self.scales.get(member.controller)
            if scale is not None and scale.kind == "ReplicaSet" and scale.owner_uid in self.scales:
                scale = self.scales[scale.owner_uid]  # a Deployment's ReplicaSet: the Deployment's scale
            if scale is None:
                return f'found no controllers for pod "{name}"'
            if not scale.scalable:
                return f"{scale.kind.lower()}s.{member.controller_group} does not implement the scale subresource"
            counted[scale.uid] = scale.replicas
        return sum(counted.values())

    def _failed(self, budget: _Budget, message: str) -> PodDisruptionBudgetStatus:
        """kube's failSafe: no disruption allowed, and why, the rest of the status as it was."""
        old = budget.pdb.status
        condition = Condition(type=DISRUPTION_ALLOWED, status="False", reason=SYNC_FAILED, message=message,
                              observed_generation=old.observed_generation or None)
        return msgspec.structs.replace(old, disruptions_allowed=0, conditions=[condition])
