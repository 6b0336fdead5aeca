"""DynamicResources' Score (kube's computeScore): prioritized lists. A request with
firstAvailable scores, on a node, 8 minus the position of the subrequest the allocation chose
there (the first alternative 8, the eighth 1), summed over the pod's claims; exact requests add
nothing. NormalizeScore then scales the highest to 100.
"""

from __future__ import annotations

from kubesched.api.dra.common import FIRST_AVAILABLE_MAX_SIZE
from kubesched.plugins.dynamicresources.state import ClaimStore, NodeAllocation


def compute_score(claims: ClaimStore, allocation: NodeAllocation) -> int:
    """The node's raw score: claims allocated before the cycle read their status' allocation, the
    others the node's results in order."""
    score = 0
    results = iter(allocation.results)
    for _, claim in claims.all():
        allocated = claim.status.allocation
        if allocated is None:
            allocated = next(results, None)
            if allocated is None:
                raise ValueError(f"number of allocations {len(allocation.results)} is smaller than number of claims "
                                 "needing allocation")
        chosen = {r.request for r in allocated.devices.results if r.request.count("/") == 1}
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                continue
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
