"""The nodes a PersistentVolume's node affinity admits and a CSIStorageCapacity's topology covers,
as boolean masks over the node table, kept while the nodes stay the same (one per object,
replaced when its resourceVersion changes; bounded, so a long run stays flat)."""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from kubesched.api.selectors import Selector, SelectorError, compile_label_selector
from kubesched.api.storage import CSIStorageCapacity, PersistentVolume, quantity
from kubesched.cache import labels
from kubesched.cache.nodetable import NodeTable
from kubesched.plugins.helper.nodeselector import Term, parse_node_selector, terms_mask

MAX_CACHED_MASKS = 20_000


def pv_terms(pv: PersistentVolume) -> tuple[Term, ...] | None:
    """The PV's required node affinity, parsed; None when it has none (every node matches)."""
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return None
    return parse_node_selector(affinity.required)


def capacity_selector(cap: CSIStorageCapacity) -> Selector | None:
    """The capacity's node topology as a selector; None: no topology (available nowhere) or one
    that does not parse (kube logs it and treats the node as without access)."""
    if cap.node_topology is None:
        return None
    try:
        return compile_label_selector(cap.node_topology, none_matches_nothing=False)
    except SelectorError:
        return None


def capacity_limit(cap: CSIStorageCapacity) -> Decimal | None:
    """kube's volumeLimit: maximumVolumeSize when set, else capacity; None when neither."""
    raw = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
    if raw is None:
        return None
    return quantity({"q": raw}, "q")


class NodeMasks:
    """The masks of PVs and capacities for one node table."""

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._masks: dict[tuple[str, str], tuple[str, np.ndarray]] = {}

    def _get(self, table: NodeTable, key: tuple[str, str], version: str) -> np.ndarray | None:
        fresh = (id(table), table.node_generation, table.size)
        if fresh != self._key or len(self._masks) > MAX_CACHED_MASKS:
            self._key, self._masks = fresh, {}
        held = self._masks.get(key)
        return held[1] if held is not None and held[0] == version else None

    def pv(self, table: NodeTable, pv: PersistentVolume) -> np.ndarray:
        """Rows the PV's node affinity admits, nodes known by their labels alone (kube's
        CheckNodeAffinity)."""
        key, version = ("pv", pv.metadata.name), pv.metadata.resource_version
        mask = self._get(table, key, version)
        if mask is None:
            terms = pv_terms(pv)
            mask = np.ones(table.size, dtype=bool) if terms is None else terms_mask(table, terms, by_name=False)
            self._masks[key] = (version, mask)
        return mask

    def capacity(self, table: NodeTable, cap: CSIStorageCapacity) -> np.ndarray:
        """Rows in the capacity's node topology."""
        key = ("capacity", f"{cap.metadata.namespace}/{cap.metadata.name}")
        version = cap.metadata.resource_version
        mask = self._get(table, key, version)
        if mask is None:
            selector = capacity_selector(cap)
            mask = np.zeros(table.size, dtype=bool) if selector is None else labels.selector_mask(table, selector)
            self._masks[key] = (version, mask)
        return mask
