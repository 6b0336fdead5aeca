"""What DynamicResources' reasons leave unsaid, for `kubesched explain`. The reasons themselves
stay kube's words ("cannot allocate all claims", "resourceclaim not available on the node",
"request r: device class c does not exist"); this adds:

- on a node that failed: which allocated claim's node selector excludes the node, and for the
  claims still to allocate, per claim and request, what stops it there (diagnosis.py);
- how far each failed node is, so the nearest misses are the nodes with most of the devices the
  pod asks for free, not the first nodes of the table;
- for a PreFilter refusal: the claim behind the request named;
- for a placed pod: the devices each of its claims holds (driver/pool/device, and for a share of
  a shared device its shareID and consumed capacity).

Everything here runs only when an explanation asks, never in a scheduling cycle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.dra import AllocationResult, ResourceClaim
from kubesched.api.objects import Node, Pod
from kubesched.cache.nodetable import NodeTable
from kubesched.devices.cel import SelectorCompileError
from kubesched.devices.celvector import evaluate_batch
from kubesched.devices.manager import DraManager, PodClaimError
from kubesched.devices.sliceinputs import DeviceColumns
from kubesched.plugins.dynamicresources.claims import kobj
from kubesched.plugins.dynamicresources.diagnosis import Ask, explain_node
from kubesched.plugins.dynamicresources.state import StateData
from kubesched.plugins.helper.nodeselector import terms_match_node

JSON = dict[str, Any]


def on_node(dra: DraManager, s: StateData, node: Node) -> str:
    parts: list[str] = []
    for index, claim in s.claims.all():
        info = s.infos[index]
        if info.terms is not None and not terms_match_node(info.terms, node):
            parts.append(f"ResourceClaim {kobj(claim)} is allocated devices ({devices_of(claim)}) whose node selector "
                         "excludes this node")
    pending = [claim for index, claim in s.claims.to_allocate() if s.infos[index].allocation is None]
    if pending and s.allocator is not None:
        parts.extend(explain_node(dra, s.allocator, node, pending))
    return "; ".join(parts)


def pre_filter(s: StateData, message: str) -> str:
    """For PreFilter's `request r: device class c does not exist`: the claim asking for it."""
    for _, claim in s.claims.to_allocate():
        for request in claim.spec.devices.requests:
            asks = ([(request.name, request.exactly.device_class_name)] if request.exactly is not None
                    else [(f"{request.name}/{sub.name}", sub.device_class_name) for sub in request.first_available])
            for name, class_name in asks:
                if message == f"request {name}: device class {class_name} does not exist":
                    return f'ResourceClaim {kobj(claim)}, request {name}: DeviceClass "{class_name}" does not exist'
    return ""


def distances(dra: DraManager, s: StateData, table: NodeTable, rows: np.ndarray) -> np.ndarray:
    """Per row, how far the node is from holding the claims to allocate: the share of the devices
    asked for that are not free there (0 to 1, a firstAvailable request by its best alternative),
    plus 1 where a request has no matching device at all, free or not. Counted over all slices at
    once; devices of slices not tied to one node count on every node."""
    out = np.zeros(rows.size)
    allocator = s.allocator
    pending = [claim for index, claim in s.claims.to_allocate() if s.infos[index].allocation is None]
    if allocator is None or not pending or rows.size == 0:
        return out
    slices = allocator.all_slices
    columns = DeviceColumns(dra.slices.columns_of(slices))
    owners = np.repeat(np.array([rs.spec.node_name or "" for rs in slices], dtype=object),
                       [len(rs.spec.devices or []) for rs in slices])
    taken = np.fromiter(((rs.spec.driver, rs.spec.pool.name, d.name) in allocator.allocated.devices
                         for rs in slices for d in rs.spec.devices or []), dtype=bool, count=columns.n)
    names = np.array(table.names_of(rows.tolist()), dtype=object)
    asks = 0
    for claim in pending:
        for request in claim.spec.devices.requests:
            alternatives = ([Ask.exact(request.name, request.exactly)] if request.exactly is not None
                            else [Ask.sub(request.name, sub) for sub in request.first_available])
            best = None
            for ask in alternatives:
                matching, free = _per_row(dra, columns, owners, taken, names, ask)
                need = max(ask.count, 1)
                gap = np.clip((need - free) / need, 0.0, 1.0) + (matching == 0)
                best = gap if best is None else np.minimum(best, gap)
            if best is not None:
                out += best
                asks += 1
    return out / max(asks, 1)


def _per_row(dra: DraManager, columns: DeviceColumns, owners: np.ndarray, taken: np.ndarray, names: np.ndarray,
             ask: Ask) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the devices the request's class and selectors match there, and how many are free."""
    nothing = np.zeros(names.size)
    device_class = dra.device_class(ask.class_name)
    if device_class is None or columns.n == 0:
        return nothing, nothing
    matching = np.ones(columns.n, dtype=bool)
    for selector in [*device_class.spec.selectors, *ask.selectors]:
        if selector.cel is None:
            continue
        try:
            matching &= evaluate_batch(dra.selector_cache.get_or_compile(selector.cel.expression), columns).matches
        except SelectorCompileError:
            return nothing, nothing
    return _count(owners[matching], names), _count(owners[matching & ~taken], names)


def _count(owners: np.ndarray, names: np.ndarray) -> np.ndarray:
    """How many of the devices (by the node their slice names, "" for any node) each row has."""
    anywhere = int(np.count_nonzero(owners == ""))
    counts: dict[str, int] = {}
    for owner in owners[owners != ""].tolist():
        counts[owner] = counts.get(owner, 0) + 1
    return np.array([counts.get(name, 0) + anywhere for name in names.tolist()], dtype=np.float64)


def devices_of(claim: ResourceClaim) -> str:
    """The devices a claim's allocation holds, as driver/pool/device per request."""
    allocation = claim.status.allocation
    if allocation is None:
        return "none"
    return ", ".join(f"{r.request}: {r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results) or "none"


def placed(dra: DraManager, pod: Pod) -> list[JSON]:
    """The devices each of the pod's claims holds, per request: the claim's allocation, or the one
    in flight while the pod is binding."""
    try:
        claims = dra.pod_claims(pod)
    except PodClaimError:
        return []
    out: list[JSON] = []
    for pod_claim, claim in claims:
        if claim is None:
            continue
        allocation = claim.status.allocation
        if allocation is None:
            in_flight = dra.claims.pending_allocation(claim.metadata.uid)
            allocation = in_flight.status.allocation if in_flight is not None else None
        out.append({"claim": kobj(claim), "pod_claim": pod_claim.name, "devices": _results(allocation)})
    return out


def _results(allocation: AllocationResult | None) -> list[JSON]:
    if allocation is None:
        return []
    out: list[JSON] = []
    for r in allocation.devices.results:
        entry: JSON = {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
        if r.share_id is not None:
            entry["share_id"] = r.share_id
        if r.consumed_capacity:
            entry["consumed_capacity"] = {name: str(value) for name, value in sorted(r.consumed_capacity.items())}
        if r.admin_access:
            entry["admin_access"] = True
        out.append(entry)
    return out
