"""The cluster events DynamicResources registers for, and its queueing hints (kube's
EventsToRegister, isSchedulableAfterClaimChange, isSchedulableAfterTargetPodUpdate).

kube's PreQueueingHint (which narrows a claim event to the pods naming the claim before the hints
run) is an optimisation with the same outcome: for a pod that does not use the claim, the hint
below answers QueueSkip unless the claim was deallocated, which kube's pre-hint sends to all pods.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, ResourceClaim
from kubesched.api.podinfo import PodInfo
from kubesched.devices.manager import DraManager
from kubesched.framework.events import NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.plugins.dynamicresources.claims import ClaimLookupError, pod_claims


class Hints:
    """The hints, reading the scheduler's claims (the same view PreEnqueue and PreFilter read)."""

    def __init__(self, dra: DraManager) -> None:
        self.dra = dra

    def events(self) -> list[ClusterEventWithHint]:
        return [
            # A claim's allocation may depend on node labels; a new node may have devices.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeLabel
                                              | ActionType.UpdateNodeAllocatable)),
            # Allocation is tracked in claims: any change may make the pod schedulable.
            ClusterEventWithHint(ClusterEvent(RESOURCE_CLAIM, ActionType.Add | ActionType.Update | ActionType.Delete),
                                 self.after_claim_change),
            # The resourceclaim controller names the claim made from a template in the pod's status.
            ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UpdatePodGeneratedResourceClaim),
                                 self.after_target_pod_update),
            # A class the pod waits for may be created or fixed.
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ActionType.Add | ActionType.Update)),
            # New or changed slices may offer devices.
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ActionType.Add | ActionType.Update)),
        ]

    def after_claim_change(self, pi: PodInfo, old: ResourceClaim | None, new: ResourceClaim | None) -> QueueingHint:
        if new is None:
            # Deleted: only an allocated claim frees devices (the assume cache sees every
            # allocation, so the deallocation event of a claim is never missed).
            return QueueingHint.Queue if old is not None and old.status.allocation is not None else QueueingHint.QueueSkip
        try:
            uses_claim = any(claim.metadata.uid == new.metadata.uid for _, claim in pod_claims(self.dra, pi.pod))
        except ClaimLookupError:
            return QueueingHint.QueueSkip  # still not schedulable (a claim missing, deleting, not its own)
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return QueueingHint.Queue  # deallocated: its devices may serve this pod
        if not uses_claim:
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue  # the pod's claim got created
        # A change outside the status (a finalizer, say) does not matter to the pod.
        return QueueingHint.QueueSkip if old.status == new.status else QueueingHint.Queue

    def after_target_pod_update(self, pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        pod = new.pod if isinstance(new, PodInfo) else pi.pod
        try:
            pod_claims(self.dra, pod)
        except ClaimLookupError:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue
