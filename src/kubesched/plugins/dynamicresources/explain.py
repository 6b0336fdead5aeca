"""What DynamicResources' reasons leave unsaid, for `kubesched explain` (a short version): on a
node that failed, which claim could not be had there and the devices the node offers; for a
claim, which devices its allocation holds. The reasons themselves stay kube's words
("cannot allocate all claims", "resourceclaim not available on the node").
"""

from __future__ import annotations

from kubesched.api.dra import ResourceClaim
from kubesched.api.objects import Node
from kubesched.devices.manager import DraManager
from kubesched.plugins.dynamicresources.claims import kobj
from kubesched.plugins.dynamicresources.state import StateData
from kubesched.plugins.helper.nodeselector import terms_match_node


def on_node(dra: DraManager, s: StateData, node: Node) -> str:
    parts: list[str] = []
    for index, claim in s.claims.all():
        info = s.infos[index]
        if info.terms is not None and not terms_match_node(info.terms, node):
            parts.append(f"ResourceClaim {kobj(claim)} is allocated devices ({devices_of(claim)}) that this node cannot use")
    pending = [kobj(claim) for _, claim in s.claims.to_allocate()]
    if pending and not parts:
        slices = dra.slices.candidates(node.metadata.name)
        total = sum(len(rs.spec.devices or []) for rs in slices)
        if not total:
            parts.append(f"no ResourceSlice offers devices on this node for ResourceClaim(s) {', '.join(pending)}")
        else:
            allocated = dra.claims.gather_allocated_state()
            taken = sum(1 for rs in slices for d in rs.spec.devices or []
                        if allocated.is_allocated((rs.spec.driver, rs.spec.pool.name, d.name)))
            parts.append(f"ResourceClaim(s) {', '.join(pending)}: no set of this node's devices satisfies every "
                         f"request and constraint ({total} device(s) in its ResourceSlices, {taken} allocated)")
    return "; ".join(parts)


def devices_of(claim: ResourceClaim) -> str:
    """The devices a claim's allocation holds, as driver/pool/device per request."""
    allocation = claim.status.allocation
    if allocation is None:
        return "none"
    return ", ".join(f"{r.request}: {r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results) or "none"
