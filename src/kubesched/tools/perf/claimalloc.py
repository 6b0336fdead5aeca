"""scheduler_perf's allocResourceClaims, for any target: claims allocated directly by the structured
allocator, with no pod, to fill the cluster's devices before the measured pods come.

As upstream's op (dra.go) does it: the claims of the namespace (every namespace when empty) are
taken in the order the API server lists them (by namespace, then name); a claim already allocated
is left as it is; for each other one, an allocator sees the devices every claim of the cluster holds
now (its own writes included, as upstream assumes each write in its claim cache), the nodes are
shuffled, and the claim gets the first node where it fits. The target writes status.allocation and
hands the stored claim back (`written`). A claim that fits on no node stops the workload, as
upstream's Fatalf does. The shuffle is seeded, so a run is repeatable (upstream's is not).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping

from kubesched.api.dra import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.api.objects import Node
from kubesched.devices.allocator import AllocationError
from kubesched.devices.manager import DraManager
from kubesched.tools.perf.workloads import WorkloadError

SHUFFLE_SEED = 0


class ClaimAllocation:
    """One run of allocResourceClaims over a view of the cluster taken when the op starts (the set
    of nodes, slices and classes is fixed from then on, as upstream assumes)."""

    def __init__(self, classes: Mapping[str, DeviceClass], slices: Iterable[ResourceSlice], claims: Iterable[ResourceClaim],
                 nodes: Iterable[Node], *, seed: int = SHUFFLE_SEED) -> None:
        self._manager = DraManager(classes=dict(classes))
        for rs in slices:
            self._manager.on_slice(rs)
        self._claims = list(claims)
        for claim in self._claims:
            self._manager.on_claim(claim)
        self._nodes = list(nodes)
        self._random = random.Random(seed)

    def pending(self, namespace: str) -> list[ResourceClaim]:
        """The claims to allocate: those of `namespace` (all when empty) in list order, the
        allocated ones left out."""
        listed = sorted((c for c in self._claims if not namespace or c.metadata.namespace == namespace),
                        key=lambda c: (c.metadata.namespace, c.metadata.name))
        return [c for c in listed if c.status.allocation is None]

    def allocate(self, claim: ResourceClaim, position: int, total: int) -> AllocationResult:
        """The claim's allocation on the first node of a fresh shuffle where it fits; WorkloadError
        (upstream's words, with the claim named) when it fits nowhere or the allocator refuses it."""
        nodes = list(self._nodes)
        self._random.shuffle(nodes)
        meta = claim.metadata
        for node in nodes:
            try:
                results = self._manager.allocator_for(node).allocate(node, [claim])
            except AllocationError as exc:
                raise WorkloadError(f"allocResourceClaims: allocate claim {meta.namespace}/{meta.name}: {exc.message}") from None
            if results is not None:
                return results[0]
        raise WorkloadError(f"allocResourceClaims: Could not allocate claim {position} out of {total} "
                            f"({meta.namespace}/{meta.name} fits on none of the {len(nodes)} nodes)")

    def written(self, stored: ResourceClaim) -> None:
        """The claim as the target stored it with its allocation: its devices are in use from now on."""
        self._manager.on_claim(stored)

    def each(self, namespace: str) -> Iterator[tuple[ResourceClaim, AllocationResult]]:
        """(claim, its allocation) for every pending claim, in order; the caller writes each and
        calls `written` before asking for the next."""
        todo = self.pending(namespace)
        for i, claim in enumerate(todo):
            yield claim, self.allocate(claim, i, len(todo))
