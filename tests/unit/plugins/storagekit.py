"""For the volume plugins' tests: the CSI objects (CSINode, CSIDriver, CSIStorageCapacity,
VolumeAttachment) beside the builders' claims, volumes and classes, a cache holding them, and a
handle whose PV/PVC writes go to the cache's storage index."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from builders import UnitHandle, cache_with, make_node, make_pod
from builders.nodes import REGION as REGION  # the volume tests import them from here
from builders.pods import ZONE as ZONE
from builders.storage import resource_versions
from kubesched.api.objects import convert
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.api.storage import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    STORAGE_TYPES,
    VOLUME_ATTACHMENT,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageWriteError,
)
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult
from kubesched.infra.clock import VirtualClock

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"

_rv = resource_versions  # one sequence with the builders'


def _meta(name: str, namespace: str = "", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{namespace}-{name}", "resourceVersion": str(next(_rv))}
    if namespace:
        meta["namespace"] = namespace
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta


def csinode(node_name: str, *drivers: tuple[str, int | None], annotations: dict[str, str] | None = None) -> Any:
    entries = []
    for name, count in drivers:
        entry: dict[str, Any] = {"name": name, "nodeID": node_name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return convert({"metadata": _meta(node_name, annotations=annotations), "spec": {"drivers": entries}},
                   STORAGE_TYPES[CSI_NODE], "csinode")


def csidriver(name: str, *, storage_capacity: bool | None = None, prevent_if_missing: bool | None = None) -> Any:
    spec: dict[str, Any] = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    if prevent_if_missing is not None:
        spec["preventPodSchedulingIfMissing"] = prevent_if_missing
    return convert({"metadata": _meta(name), "spec": spec}, STORAGE_TYPES[CSI_DRIVER], "csidriver")


def capacity(name: str, cls: str, *, zone: str | None = None, size: str | None = None, max_size: str | None = None,
             namespace: str = "kube-system", topology: dict[str, str] | None = None) -> Any:
    data: dict[str, Any] = {"metadata": _meta(name, namespace), "storageClassName": cls}
    if zone is not None:
        topology = {ZONE: zone}
    if topology is not None:
        data["nodeTopology"] = {"matchLabels": topology}
    if size is not None:
        data["capacity"] = size
    if max_size is not None:
        data["maximumVolumeSize"] = max_size
    return convert(data, STORAGE_TYPES[CSI_STORAGE_CAPACITY], "capacity")


def attachment(name: str, attacher: str, node_name: str, pv_name: str) -> Any:
    return convert({"metadata": _meta(name), "spec": {"attacher": attacher, "nodeName": node_name,
                                                      "source": {"persistentVolumeName": pv_name}}},
                   STORAGE_TYPES[VOLUME_ATTACHMENT], "va")


RESOURCE_OF = {
    "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIM,
    "PersistentVolume": PERSISTENT_VOLUME,
    "StorageClass": STORAGE_CLASS,
    "CSINode": CSI_NODE,
    "CSIDriver": CSI_DRIVER,
    "CSIStorageCapacity": CSI_STORAGE_CAPACITY,
    "VolumeAttachment": VOLUME_ATTACHMENT,
}


def add(cache: Cache, *objects: Any) -> Cache:
    for obj in objects:
        cache.storage.apply(RESOURCE_OF[type(obj).__name__], obj)
    return cache


def claim_pod(name: str, *claims: str, namespace: str = "default", node_name: str = "", ephemeral: tuple[str, ...] = (),
              volumes: list[dict[str, Any]] | None = None, uid: str | None = None) -> PodInfo:
    """A pod using these claims (persistentVolumeClaim volumes), ephemeral volumes, or raw volumes."""
    vols: list[dict[str, Any]] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    vols += [{"name": e, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}} for e in ephemeral]
    vols += volumes or []
    p = make_pod(name).ns(namespace).node(node_name).spec(volumes=vols).obj()
    if uid is not None:
        p.metadata.uid = uid
    return make_pod_info(p)


def zoned_cache(*zones: str | None, extra_labels: dict[str, dict[str, str]] | None = None) -> Cache:
    """Nodes n0, n1, ... in these zones (None: no zone label)."""
    nodes = []
    for i, zone in enumerate(zones):
        labels = {ZONE: zone} if zone else {}
        labels.update((extra_labels or {}).get(f"n{i}", {}))
        nodes.append(make_node(f"n{i}").label(labels).obj())
    return cache_with(nodes)


def verdicts(result: FilterResult | None, cache: Cache) -> dict[str, tuple[Code, tuple[str, ...]] | None]:
    """Node name -> None when it passes, else (code, reasons)."""
    table = cache.table
    out: dict[str, tuple[Code, tuple[str, ...]] | None] = {}
    for row in table.rows():
        code = 0 if result is None else int(result.codes[row])
        out[table.name_of(int(row))] = None if code == 0 else result.describe(code)  # type: ignore[union-attr]
    return out


def passing(result: FilterResult | None, cache: Cache) -> set[str]:
    return {name for name, v in verdicts(result, cache).items() if v is None}


class StorageHandle(UnitHandle):
    """A handle with a virtual clock whose PV/PVC writes land in the cache's storage index with a
    new resourceVersion (as the API server's would), recorded in `writes`; `controller` (if set)
    runs after each write, standing in for the PV controller."""

    def __init__(self, cache: Cache, clock: VirtualClock | None = None) -> None:
        super().__init__(cache)
        self._clock = clock or VirtualClock()
        self.writes: list[Any] = []
        self.controller: Any = None
        self.fail_with: str | None = None

    @property
    def clock(self) -> VirtualClock:
        return self._clock

    def now(self) -> float:
        return self._clock.now()

    async def update_persistent_volume(self, volume: PersistentVolume) -> PersistentVolume:
        return self._write(PERSISTENT_VOLUME, volume, self.cache.storage.pv(volume.metadata.name), "persistentvolumes")

    async def update_persistent_volume_claim(self, claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
        current = self.cache.storage.pvc(f"{claim.metadata.namespace}/{claim.metadata.name}")
        return self._write(PERSISTENT_VOLUME_CLAIM, claim, current, "persistentvolumeclaims")

    def _write(self, resource: str, obj: Any, current: Any, plural: str) -> Any:
        if self.fail_with is not None:
            raise StorageWriteError(self.fail_with)
        if current is None or current.metadata.resource_version != obj.metadata.resource_version:
            raise StorageWriteError(f'Operation cannot be fulfilled on {plural} "{obj.metadata.name}": the object has been '
                                    "modified; please apply your changes to the latest version and try again")
        stored = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata,
                                                                               resource_version=str(next(_rv))))
        self.writes.append(stored)
        self.cache.storage.apply(resource, stored)
        if self.controller is not None:
            self.controller(resource, stored)
        return stored


def fresh() -> CycleState:
    return CycleState()


def rows_of(cache: Cache) -> np.ndarray:
    return cache.table.rows()
