"""PodDisruptionBudgets (`policy/v1`), in objects.py's style: only what the scheduler and the
simulator's disruption controller read; Go's zero values as defaults; unknown fields ignored.

What preemption reads of a budget is its namespace, its selector and its status: how many more
pods it lets be disrupted now (`disruptionsAllowed`, the disruption controller's count) and the
pods already disrupted that the controller has not seen deleted yet (`disruptedPods`, which no
longer count against the budget).
"""

from __future__ import annotations

import msgspec

from kubesched.api.objects import Int32, IntOrString, LabelSelector, ObjectMeta, _Obj
from kubesched.api.podgroups import Condition

API_VERSION = "policy/v1"
KIND = "PodDisruptionBudget"
PDBS = "/apis/policy/v1/poddisruptionbudgets"
# The condition the disruption controller keeps on a budget (policy.DisruptionAllowedCondition).
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")

class PodDisruptionBudgetSpec(_Obj):
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None
    # policy/v1: a nil selector selects no pod; an empty one every pod of the namespace (for the
    # disruption controller; preemption counts neither as matching, as kube's does).
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(_Obj):
    observed_generation: int = 0
    # Pod name -> when the eviction API let it go: not counted against the budget until deleted.
    disrupted_pods: dict[str, str] = msgspec.field(default_factory=dict)
    disruptions_allowed: Int32 = 0
    current_healthy: Int32 = 0
    desired_healthy: Int32 = 0
    expected_pods: Int32 = 0
    conditions: list[Condition] = msgspec.field(default_factory=list)


class PodDisruptionBudget(_Obj):
    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"
