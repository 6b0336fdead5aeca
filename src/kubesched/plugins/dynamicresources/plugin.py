"""DynamicResources: a pod's ResourceClaims allocated while it is placed, as kube-scheduler
v1.37.2's plugin does it (pkg/scheduler/framework/plugins/dynamicresources, dynamicresources.go
and claims.go), for the pod's own claims (spec.resourceClaims: named claims, and claims the
resourceclaim controller made from templates).

- PreEnqueue: every claim must exist (`pod "ns/p": ResourceClaim not created yet` for a template
  whose claim is not named in the pod's status yet, `could not find ResourceClaim "ns/c"`), not be
  being deleted, and a template's claim must be the pod's own.
- PreFilter: the same, then per claim: an allocated one restricts the pod to the nodes its
  allocation's node selector matches (a mask over the node table, once per cycle); an unallocated
  one must not be in the middle of another pod's allocation (`resource claim ns/c is in the
  process of being allocated`), and its requests' device classes must exist (`request r: device
  class c does not exist`). One allocator serves the cycle (the DRA manager's: every slice, the
  devices allocated or in flight). A pod without claims skips every other point.
- Filter (per node, on the nodes still feasible): allocated claims' node selectors, binding
  conditions failed or timed out (`resourceclaim not available on the node`), then the allocator
  for the unallocated ones (`cannot allocate all claims`; an Error `node N: timed out trying to
  allocate devices` past filterTimeout). The allocation found is kept per node for Score and
  Reserve. Nodes without any device share one allocator answer: with no slice to read it cannot
  differ.
- PostFilter: deallocates one allocated claim that some node could not offer and that nobody
  (but the pod) has reserved, so the next attempt may pick other devices.
- Score: prioritized lists (firstAvailable): a subrequest chosen earlier in its list scores more
  (8 - its index); NormalizeScore scales to 0..100. Weight 2 in the default profile.
- Reserve puts the chosen allocations in flight in the claim tracker, so no other pod gets those
  devices before PreBind writes them; Unreserve takes them back (and drops the pod from a claim's
  reservedFor it had been written to).
- PreBind (prebind.py) writes each claim's status (allocation, reservedFor), retrying conflicts,
  and waits for devices' binding conditions.

The special claim for extended resources served by DRA (extendeddynamicresources.go) is not made
here: the claim store (state.py) has its place, and the DRA guard of the scheduler still handles
such pods.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import msgspec
import numpy as np
from pydantic import BaseModel

from kubesched.api.dra import AllocationResult, ResourceClaim
from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.devices.allocator import AllocationError, AllocationTimeout
from kubesched.devices.claimtracker import ClaimTrackerError
from kubesched.devices.manager import DraManager
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterMisses,
    NodeFilterPlugin,
    Plugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import Diagnosis, NodeInfo, PostFilterResult, PreFilterResult, SignFragment, default_normalize
from kubesched.infra.clock import RealClock
from kubesched.plugins.dynamicresources import explain, prebind
from kubesched.plugins.dynamicresources.args import DynamicResourcesArgs
from kubesched.plugins.dynamicresources.claims import (
    BindingFailed,
    ClaimLookupError,
    binding_timed_out,
    can_be_reserved,
    kobj,
    pod_claims,
    ready_for_binding,
    reserved_for_pod,
)
from kubesched.plugins.dynamicresources.queueing import Hints
from kubesched.plugins.dynamicresources.score import compute_score
from kubesched.plugins.dynamicresources.state import ClaimInfo, ClaimStore, NodeAllocation, StateData
from kubesched.plugins.helper.nodeselector import parse_node_selector, terms_mask, terms_match_node

NAME = "DynamicResources"
NOT_AVAILABLE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
IN_USE = "resourceclaim in use"
DEALLOCATED = "deallocation of ResourceClaim completed"
NOT_FOUND = "not found"  # kube's cycle-state read of a state PreFilter never wrote


class DynamicResources(
    Plugin, PreEnqueuePlugin, PreFilterPlugin, NodeFilterPlugin, PostFilterPlugin, ScorePlugin, ReservePlugin,
    PreBindPlugin, EnqueueExtensions, SignPlugin, FilterMisses,
):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = DynamicResourcesArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, dict):
            args = DynamicResourcesArgs.model_validate(args)
        super().__init__(args or DynamicResourcesArgs(), handle)
        self.filter_timeout = self.args.filter_timeout_seconds
        self.binding_timeout = self.args.binding_timeout_seconds
        self.hints = Hints(self.dra)

    @property
    def dra(self) -> DraManager:
        assert self.handle is not None, "DynamicResources needs the framework's handle"
        return self.handle.dra

    def wall_now(self) -> float:
        """Seconds since the epoch: the real time on a cluster, the simulation's clock (which counts
        from the epoch, as its objects' timestamps do) in the simulator."""
        assert self.handle is not None
        clock = self.handle.clock
        return time.time() if isinstance(clock, RealClock) else clock.now()

    # --- signatures and events ---------------------------------------------------------------------------

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        # kube: "pods with dra resource claims are not signable".
        return None if pi.pod.spec.resource_claims else ()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return self.hints.events()

    # --- PreEnqueue ----------------------------------------------------------------------------------------

    def pre_enqueue(self, pi: PodInfo) -> Status | None:
        if not pi.pod.spec.resource_claims:
            return None
        try:
            pod_claims(self.dra, pi.pod)
        except ClaimLookupError as exc:
            return Status.unresolvable(str(exc))
        return None

    # --- PreFilter -----------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        s = StateData(ClaimStore([]))
        state.write(NAME, s)
        if not pi.pod.spec.resource_claims:
            return None, SKIP  # almost every pod: one read
        try:
            claims = [claim for _, claim in pod_claims(self.dra, pi.pod)]
        except ClaimLookupError as exc:
            return None, Status.unresolvable(str(exc))
        s.claims = ClaimStore(claims)
        if s.claims.empty:
            return None, SKIP
        s.infos = [ClaimInfo() for _ in range(len(s.claims))]
        to_allocate = 0
        for index, claim in s.claims.all():
            allocation = claim.status.allocation
            if allocation is not None and not can_be_reserved(claim) and not reserved_for_pod(pi.pod, claim):
                return None, Status.unresolvable(IN_USE)
            if allocation is not None:
                if allocation.node_selector is not None:
                    terms = parse_node_selector(allocation.node_selector)
                    errors = [e for t in terms for e in t.errors]
                    if errors:
                        return None, Status.error(", ".join(errors))
                    table = self._table()
                    s.infos[index] = ClaimInfo(terms, terms_mask(table, terms) if table is not None else None)
                continue
            to_allocate += 1
            if self.dra.claims.pending_allocation(claim.metadata.uid) is not None:
                return None, Status.unresolvable(f"resource claim {kobj(claim)} is in the process of being allocated")
            status = self._check_classes(claim)
            if status is not None:
                return None, status
            if any(request.first_available for request in claim.spec.devices.requests):
                s.prioritized = True
        if to_allocate:
            s.allocator = self.dra.allocator()
        return None, None

    def _table(self) -> NodeTable | None:
        return self.handle.table if self.handle is not None else None

    def _check_classes(self, claim: ResourceClaim) -> Status | None:
        """Every request's class must exist (kube's validateDeviceClass per request and subrequest)."""
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                status = self._check_class(request.exactly.device_class_name, request.name)
            elif request.first_available:
                status = next((st for sub in request.first_available
                               if (st := self._check_class(sub.device_class_name, f"{request.name}/{sub.name}")) is not None),
                              None)
            else:
                status = Status.unresolvable(f"resource claim {kobj(claim)}, request {request.name}: unknown request type")
            if status is not None:
                return status
        return None

    def _check_class(self, class_name: str, request: str) -> Status | None:
        if not class_name:
            return Status.error(f"request {request}: unsupported request type")
        if self.dra.device_class(class_name) is None:
            return Status.unresolvable(f"request {request}: device class {class_name} does not exist")
        return None

    # --- Filter --------------------------------------------------------------------------------------------

    def filter_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, StateData):
            return Status.error(NOT_FOUND)
        if s.claims.empty:
            return None
        node_obj = node.node
        name = node_obj.metadata.name
        unavailable: list[int] = []
        for index, claim in s.claims.all():
            info = s.infos[index]
            if info.terms is not None and not _available(info, node):
                unavailable.append(index)
                continue
            if claim.status.allocation is not None:
                try:
                    ready = ready_for_binding(claim)
                except BindingFailed:
                    unavailable.append(index)
                    continue
                if not ready and binding_timed_out(claim, self.binding_timeout, self.wall_now()):
                    unavailable.append(index)
        allocations = None
        if s.allocator is not None:
            allocations, status = self._allocate(s, node_obj)
            if status is not None:
                return status
        if unavailable:
            s.unavailable.update(unavailable)
            return Status.unresolvable(NOT_AVAILABLE)
        if allocations is not None:
            s.node_allocations[name] = NodeAllocation(allocations)
        return None

    def _allocate(self, s: StateData, node: Node) -> tuple[list[AllocationResult] | None, Status | None]:
        """The allocator's answer for the node's unallocated claims (and claims already in flight
        for this pod's group, appended as kube appends them): (results, None) or (None, status)."""
        assert s.allocator is not None
        claims: list[ResourceClaim] = []
        pending: list[AllocationResult] = []
        for index, claim in s.claims.to_allocate():
            allocation = s.infos[index].allocation
            if allocation is not None:
                pending.append(allocation)
            else:
                claims.append(claim)
        name = node.metadata.name
        shared = not s.allocator.has_devices_for(name) and all(c.spec.devices.requests for c in claims)
        if shared and s.no_devices_verdict is not None:
            message, error = s.no_devices_verdict
            if error:
                return None, Status.error(message or CANNOT_ALLOCATE)
            return None, Status.unresolvable(message or CANNOT_ALLOCATE)
        deadline = time.monotonic() + self.filter_timeout if self.filter_timeout > 0 else None
        try:
            results = s.allocator.allocate(node, claims, deadline)
        except AllocationTimeout:
            return None, Status.error(f"node {name}: timed out trying to allocate devices")
        except AllocationError as exc:
            if shared:
                s.no_devices_verdict = (exc.message, not exc.failed_on_node)
            if exc.failed_on_node:
                return None, Status.unresolvable(exc.message)
            return None, Status.error(exc.message)
        if results is None or len(results) != len(claims):
            if shared:
                s.no_devices_verdict = (None, False)
            return None, Status.unresolvable(CANNOT_ALLOCATE)
        return results + pending, None

    # --- what a node lacks (explanations) ---------------------------------------------------------------

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Every node is as far as the next: only devices freed or added can change the answer."""
        return np.ones(rows.size)

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        s = state.read(NAME)
        node = table.nodes[row] if row < len(table.nodes) else None
        if not isinstance(s, StateData) or s.claims.empty or node is None:
            return ""
        return explain.on_node(self.dra, s, node)

    # --- PostFilter ----------------------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis) -> tuple[PostFilterResult | None, Status | None]:
        s = state.read(NAME)
        if not isinstance(s, StateData):
            return None, Status.error(NOT_FOUND)
        if s.claims.empty:
            return None, Status(Code.UNSCHEDULABLE)
        uid = pi.pod.metadata.uid
        for index in sorted(s.unavailable):
            claim = s.claims.get(index)
            reserved = claim.status.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == uid):
                # Its devices were chosen on another attempt and bind nowhere now: give them back
                # so the next attempt can choose again (kube writes this before it returns).
                released = msgspec.structs.replace(claim, status=msgspec.structs.replace(
                    claim.status, reserved_for=[], allocation=None, devices=[]))
                assert self.handle is not None
                self.handle.spawn(prebind.deallocate(self.handle, released), f"deallocate ResourceClaim {kobj(claim)}")
                return None, Status.unschedulable(DEALLOCATED)
        return None, Status(Code.UNSCHEDULABLE)

    # --- Score ---------------------------------------------------------------------------------------------

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        s = state.read(NAME)
        scores = np.zeros(rows.size, dtype=np.int64)
        if not isinstance(s, StateData) or not s.prioritized:
            return scores  # without firstAvailable every node scores 0
        for i, row in enumerate(rows):
            allocation = s.node_allocations.get(table.name_of(int(row)))
            if allocation is not None:
                scores[i] = compute_score(s.claims, allocation)
        return scores

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores)

    # --- Reserve / Unreserve -------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, StateData):
            return Status.error(NOT_FOUND)
        if s.claims.empty or s.allocator is None:
            return None  # allocated claims are reserved for the pod at PreBind
        to_allocate = list(s.claims.to_allocate())
        if not to_allocate:
            return None
        found = s.node_allocations.get(node)
        if found is None or not found.results:
            return Status.error("claim allocation not found for node")
        if len(found.results) != len(to_allocate):
            return Status.error(f"internal error, have {len(found.results)} allocations, {len(to_allocate)} claims to "
                                f"allocate, want {len(to_allocate)} claims")
        for (index, claim), allocation in zip(to_allocate, found.results, strict=True):
            s.infos[index].allocation = allocation
            finalizers = claim.metadata.finalizers
            allocated = msgspec.structs.replace(
                claim,
                metadata=msgspec.structs.replace(claim.metadata, finalizers=prebind.with_finalizer(finalizers)),
                status=msgspec.structs.replace(claim.status, allocation=allocation))
            try:
                self.dra.claims.signal_pending_allocation(claim.metadata.uid, allocated)
            except ClaimTrackerError as exc:
                return Status.error(f"internal error, couldn't signal allocation for claim {claim.metadata.name}: {exc}")
        return None

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        s = state.read(NAME)
        if not isinstance(s, StateData) or s.claims.empty:
            return
        tracker = self.dra.claims
        for _, claim in s.claims.user_claims():
            meta = claim.metadata
            # The allocation leaves flight when no other pod shares it; the tracker then shows the
            # claim as the informer last reported it.
            if tracker.maybe_remove_pending_allocation(meta.uid):
                tracker.restore(meta.namespace, meta.name)
            if claim.status.allocation is not None and reserved_for_pod(pi.pod, claim):
                assert self.handle is not None
                self.handle.spawn(prebind.unreserve(self.handle, claim, pi.pod.metadata.uid),
                                  f"unreserve ResourceClaim {kobj(claim)}")

    # --- PreBind -------------------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, StateData):
            return Status.error(NOT_FOUND)
        return SKIP if s.claims.empty else None

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        s = state.read(NAME)
        if not isinstance(s, StateData):
            return Status.error(NOT_FOUND)
        if s.claims.empty:
            return None
        assert self.handle is not None
        return await prebind.pre_bind(prebind.Binding(self.handle, self.binding_timeout, self.wall_now), s, pi, node)


def _available(info: ClaimInfo, node: NodeInfo) -> bool:
    """Whether an allocated claim's node selector matches the node: the cycle's mask where it
    covers the row, else the node itself."""
    mask = info.mask
    if mask is not None and node.row < mask.size:
        return bool(mask[node.row])
    assert info.terms is not None
    return terms_match_node(info.terms, node.node)
