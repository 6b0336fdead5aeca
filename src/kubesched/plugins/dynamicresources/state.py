"""What DynamicResources keeps for one pod's scheduling cycle (kube's stateData and claimStore):
the pod's claims, what each allocated claim allows (the nodes its allocation's node selector
matches), the allocator of the cycle, and per node the allocation Filter found, for Score,
Reserve and PreBind.

The claim store holds the pod's own claims (spec.resourceClaims, in order), and is made to hold
one more later: the special claim for extended resources that DRA serves (kube's
DRAExtendedResource, extendeddynamicresources.go). Code goes through its methods only, so that
claim can be added without touching the extension points: `user_claims` leaves it out,
`extended_claim` returns it (None today).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.dra import AllocationResult, ResourceClaim, ResourceClaimConsumerReference
from kubesched.api.podinfo import PodInfo
from kubesched.devices.allocator import Allocator
from kubesched.plugins.helper.nodeselector import Term


class ClaimStore:
    """The pod's claims (kube's claimStore): user claims first, then the extended-resource claim
    if there is one. Claims are read-only (the tracker's objects); `set` replaces one after a write."""

    __slots__ = ("_claims", "_num_user")

    def __init__(self, claims: list[ResourceClaim], extended: ResourceClaim | None = None) -> None:
        self._claims = claims + ([extended] if extended is not None else [])
        self._num_user = len(claims)

    def __len__(self) -> int:
        return len(self._claims)

    @property
    def empty(self) -> bool:
        return not self._claims

    def all(self) -> Iterator[tuple[int, ResourceClaim]]:
        return enumerate(self._claims)

    def user_claims(self) -> Iterator[tuple[int, ResourceClaim]]:
        return enumerate(self._claims[: self._num_user])

    def to_allocate(self) -> Iterator[tuple[int, ResourceClaim]]:
        """The claims without an allocation in their status, with their index in the store."""
        return ((i, c) for i, c in enumerate(self._claims) if c.status.allocation is None)

    def extended_claim(self) -> ResourceClaim | None:
        return self._claims[self._num_user] if len(self._claims) > self._num_user else None

    @property
    def no_user_claim(self) -> bool:
        return self._num_user == 0

    def get(self, index: int) -> ResourceClaim:
        return self._claims[index]

    def set(self, index: int, claim: ResourceClaim) -> None:
        self._claims[index] = claim

    @staticmethod
    def binding(pi: PodInfo) -> ResourceClaimConsumerReference:
        """What status.reservedFor gets for the pod (kube's getBinding: the pod itself, as
        DRAWorkloadResourceClaims is off)."""
        meta = pi.pod.metadata
        return ResourceClaimConsumerReference(api_group="", resource="pods", name=meta.name, uid=meta.uid)


@dataclass(slots=True)
class ClaimInfo:
    """kube's informationForClaim: for an allocated claim, the nodes its allocation is available on
    (None: every node); the allocation Reserve chose for an unallocated one."""

    terms: tuple[Term, ...] | None = None
    mask: np.ndarray | None = None  # the terms over the table rows, computed once per cycle
    allocation: AllocationResult | None = None


@dataclass(slots=True)
class NodeAllocation:
    """What Filter found on one node (kube's nodeAllocation): one result per claim to allocate, in
    the store's order. The extended-resource claim made for the node will sit beside them."""

    results: list[AllocationResult]
    extended_claim: ResourceClaim | None = None


@dataclass(slots=True)
class StateData:
    """One pod's cycle state (kube's stateData). Shared, not copied, by clones of the cycle state
    (preemption's dry runs), as kube's Clone returns the same pointer."""

    claims: ClaimStore
    infos: list[ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    # Indices of allocated claims that some node could not offer (PostFilter's candidates).
    unavailable: set[int] = field(default_factory=set)
    node_allocations: dict[str, NodeAllocation] = field(default_factory=dict)
    # Whether the pod has a firstAvailable request anywhere: without, every Score is 0.
    prioritized: bool = False
    # The verdict shared by every node without devices (None until one was filtered): with no
    # slice to look at, the allocator's answer does not depend on the node.
    no_devices_verdict: tuple[str | None, bool] | None = None

    def clone(self) -> StateData:
        return self
