"""ImageLocality: favour nodes that already hold the pod's container images.

Each image of the pod (init containers and containers, repeats counted) found on a node
adds its size scaled by the share of nodes that have it, so a big image present on a
single node does not draw every replica there. The sum is clamped between 23 MiB and
1000 MiB per container and mapped linearly onto 0..100. The work is proportional to the
rows holding the pod's images, never to the cluster size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.api.podinfo import PodInfo, normalize_image
from kubesched.cache.nodetable import NodeTable
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, ScorePlugin, SignPlugin
from kubesched.framework.types import MAX_NODE_SCORE, SignFragment

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def pod_images(pi: PodInfo) -> tuple[tuple[str, ...], int]:
    """(normalized images of init containers and containers, number of containers)."""
    spec = pi.pod.spec
    containers = [*spec.init_containers, *spec.containers]
    return tuple(normalize_image(c.image) for c in containers if c.image), len(containers)


def priority(sums: np.ndarray, containers: int) -> np.ndarray:
    """Clamp the summed image scores and scale them to 0..MAX_NODE_SCORE (kube's calculatePriority)."""
    top = MAX_CONTAINER_THRESHOLD * containers
    clamped = np.clip(sums, MIN_THRESHOLD, top)
    out: np.ndarray = (MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (top - MIN_THRESHOLD)).astype(np.int64)
    return out


class ImageLocality(Plugin, ScorePlugin, SignPlugin):
    name = "ImageLocality"
    Args = None

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [signers.image_names(pi)]

    def __init__(self, args: object = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        # Per image: (rows holding it, their spread-scaled sizes); valid while the nodes are unchanged.
        self._table: NodeTable | None = None
        self._generation = -1
        self._scaled: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _images(self, pi: PodInfo) -> tuple[tuple[str, ...], int]:
        cached = pi.extra.get(self.name)
        if cached is None:
            cached = pi.extra[self.name] = pod_images(pi)
        result: tuple[tuple[str, ...], int] = cached
        return result

    def _scaled_scores(self, table: NodeTable, image: str) -> tuple[np.ndarray, np.ndarray] | None:
        if self._table is not table or self._generation != table.node_generation:
            self._table, self._generation = table, table.node_generation
            self._scaled = {}
        hit = self._scaled.get(image)
        if hit is None:
            holders = table.image_rows.get(image)
            if not holders:
                return None
            rows = np.fromiter(holders.keys(), dtype=np.intp, count=len(holders))
            sizes = np.fromiter(holders.values(), dtype=np.float64, count=len(holders))
            # Same float steps as kube: spread first, then size * spread, truncated.
            spread = float(len(holders)) / float(len(table))
            hit = self._scaled[image] = (rows, (sizes * spread).astype(np.int64))
        return hit

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        # Score only, as kube's: no PreScore to skip it, so a pod whose images no node holds
        # scores 0 everywhere, found before any per-node array is made.
        images, containers = self._images(pi)
        if containers == 0 or len(table) == 0 or not any(table.image_rows.get(img) for img in images):
            return np.zeros(len(rows), dtype=np.int64)
        sums = np.zeros(table.size, dtype=np.int64)
        found = False
        for image in images:
            hit = self._scaled_scores(table, image)
            if hit is not None:
                sums[hit[0]] += hit[1]
                found = True
        if not found:
            return np.zeros(len(rows), dtype=np.int64)
        return priority(sums[rows], containers)
