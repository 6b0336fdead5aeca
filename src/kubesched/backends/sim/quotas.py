"""The simulator's view of tenant quotas (ElasticQuota), for a run's report: how much tenants
borrowed and how often a lender took its min back by preemption.

It follows the simulated cluster, not the scheduler: a pod counts in its namespace's use from its
bind to its end (completion, deletion or preemption), as scheduler-plugins' controller counts
status.used. With plugins.elasticquotas' arithmetic:

- a pod borrows if its namespace is over its min (any resource) once the pod is counted; the
  span it then runs adds to `borrowed_pod_seconds` (and the pod to `borrowing_pods`);
- a reclaim is a preemption whose victim's namespace is over its min and whose preemptor is a pod
  of another namespace with a quota (CapacityScheduling takes borrowed room back that way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.xk8s import ElasticQuota, XK8sError
from kubesched.plugins.elasticquotas import QuotaInfo, quota_info, request_of

_PREEMPTOR = re.compile(r"^Preempted by pod (\S+) on node ")


def preemptor_uid(reason: str) -> str | None:
    """The preemptor's uid in a Preempted event's message, None if it is no such message."""
    m = _PREEMPTOR.match(reason)
    return m.group(1) if m is not None else None


@dataclass
class QuotaLedger:
    infos: dict[str, QuotaInfo] = field(default_factory=dict)
    borrowing: dict[str, float] = field(default_factory=dict)  # uid -> when its borrowing span began
    borrowing_pods: int = 0
    borrowed_seconds: float = 0.0
    reclaims: int = 0

    def quota(self, eq: ElasticQuota) -> None:
        """A quota created (the first of its namespace counts, as the scheduler reads them)."""
        if eq.metadata.namespace in self.infos:
            return
        try:
            self.infos[eq.metadata.namespace] = quota_info(eq)
        except XK8sError:
            return  # refused when the manifests were read; kept out all the same

    def started(self, pod: Pod, now: float) -> None:
        info = self.infos.get(pod.metadata.namespace)
        if info is None:
            return
        info.add_pod(pod.metadata.uid, request_of(pod))
        if info.used_over_min():
            self.borrowing[pod.metadata.uid] = now
            self.borrowing_pods += 1

    def stopped(self, pod: Pod, now: float, preemptor: Pod | None = None) -> None:
        """The pod ended: completed, deleted, or preempted for `preemptor`."""
        uid = pod.metadata.uid
        info = self.infos.get(pod.metadata.namespace)
        if info is None or uid not in info.pods:
            return
        if preemptor is not None and info.used_over_min():
            ns = preemptor.metadata.namespace
            if ns != pod.metadata.namespace and ns in self.infos:
                self.reclaims += 1
        info.remove_pod(uid)
        began = self.borrowing.pop(uid, None)
        if began is not None:
            self.borrowed_seconds += now - began

    def summary(self, now: float) -> dict[str, Any]:
        running = sum(now - began for began in self.borrowing.values())
        return {
            "tenants": len(self.infos),
            "borrowing_pods": self.borrowing_pods,
            "borrowed_pod_seconds": round(self.borrowed_seconds + running, 3),
            "reclaims": self.reclaims,
        }
