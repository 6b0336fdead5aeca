"""make_pvc, make_pv, make_storage_class: storage objects built fluently, typed (`.obj()`, as the
API server holds them: a uid and a resourceVersion) or as the manifests the simulator reads.

    make_pvc("data").cls("fast").size("5Gi").volume("pv-1").obj()
    make_pv("pv-1").cls("fast").zones("a").claim(pvc).obj()
    make_storage_class("fast").mode("WaitForFirstConsumer").manifest()

A fresh claim asks for 1Gi ReadWriteOnce in "default" with no class named; a fresh volume offers
1Gi ReadWriteOnce of no class; a fresh class is provisioned by csi.example.com and binds at once.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any, Self

from builders.meta import ObjectBuilder
from builders.pods import ZONE
from kubesched.api.objects import convert
from kubesched.api.storage import STORAGE_CLASS, STORAGE_TYPES, PersistentVolume, PersistentVolumeClaim

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DELETED_AT = "2026-01-01T00:00:00Z"

# resourceVersions: one sequence for what the builders make and what fake handles write, so a
# write is always newer than what was read.
resource_versions = itertools.count(100)


def _admitted(meta: dict[str, Any], namespace: str, uid: str | None) -> dict[str, Any]:
    """The metadata with the uid (`uid-<namespace>-<name>` unless given) and resourceVersion the
    API server gives an object."""
    return {"name": meta["name"], "uid": uid if uid is not None else f"uid-{namespace}-{meta['name']}",
            "resourceVersion": str(next(resource_versions)), **{k: v for k, v in meta.items() if k != "name"}}


class ClaimBuilder(ObjectBuilder):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._namespace = "default"
        self._modes = ["ReadWriteOnce"]
        self._size = "1Gi"
        self._volume = ""
        self._bound: bool | None = None
        self._deleting = False
        self._phase = ""

    def ns(self, namespace: str) -> Self:
        self._namespace = namespace
        return self

    def cls(self, storage_class: str) -> Self:
        """spec.storageClassName ("" asks for no class)."""
        return self.spec(storageClassName=storage_class)

    def size(self, size: str) -> Self:
        self._size = size
        return self

    def modes(self, *modes: str) -> Self:
        self._modes = list(modes)
        return self

    def volume(self, name: str) -> Self:
        """spec.volumeName; the claim counts as bound (the bind-completed annotation) unless `.bound(False)`."""
        self._volume = name
        return self

    def bound(self, value: bool = True) -> Self:
        self._bound = value
        return self

    def deleting(self) -> Self:
        """A deletionTimestamp: the claim is being deleted."""
        self._deleting = True
        return self

    def phase(self, phase: str) -> Self:
        self._phase = phase
        return self

    def selector(self, selector: dict[str, Any]) -> Self:
        return self.spec(selector=selector)

    def volume_mode(self, mode: str) -> Self:
        return self.spec(volumeMode=mode)

    def _parts(self) -> tuple[dict[str, Any], dict[str, Any]]:
        annotations = dict(self._annotations)
        if self._bound if self._bound is not None else bool(self._volume):
            annotations[BIND_COMPLETED] = "yes"
        meta: dict[str, Any] = {"name": self._name, "namespace": self._namespace, **self._optional_metadata(annotations)}
        if self._deleting:
            meta["deletionTimestamp"] = DELETED_AT
        spec: dict[str, Any] = {"accessModes": list(self._modes), "resources": {"requests": {"storage": self._size}}}
        if self._volume:
            spec["volumeName"] = self._volume
        spec.update(copy.deepcopy(self._spec))
        return meta, spec

    def manifest(self) -> dict[str, Any]:
        meta, spec = self._parts()
        out: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
        if self._phase:
            out["status"] = {"phase": self._phase}
        return out

    def obj(self) -> PersistentVolumeClaim:
        meta, spec = self._parts()
        data = {"metadata": _admitted(meta, self._namespace, self._uid), "spec": spec, "status": {"phase": self._phase}}
        result: PersistentVolumeClaim = convert(data, PersistentVolumeClaim, f"pvc {self._name}")
        return result


class VolumeBuilder(ObjectBuilder):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._size = "1Gi"
        self._modes = ["ReadWriteOnce"]
        self._class = ""
        self._terms: list[dict[str, Any]] | None = None
        self._claim: dict[str, Any] | None = None
        self._phase = "Available"

    def cls(self, storage_class: str) -> Self:
        self._class = storage_class
        return self

    def size(self, size: str) -> Self:
        self._size = size
        return self

    def modes(self, *modes: str) -> Self:
        self._modes = list(modes)
        return self

    def zones(self, *zones: str) -> Self:
        """Node affinity to these zones."""
        return self.affinity({"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]})

    def affinity(self, *terms: dict[str, Any]) -> Self:
        """Required node affinity: these node selector terms."""
        self._terms = list(terms)
        return self

    def claim(self, pvc: PersistentVolumeClaim, *, with_uid: bool = True) -> Self:
        """Bound to this claim (claimRef; phase Bound unless set otherwise)."""
        meta = pvc.metadata
        self._claim = {"kind": "PersistentVolumeClaim", "namespace": meta.namespace, "name": meta.name,
                       "uid": meta.uid if with_uid else ""}
        return self

    def phase(self, phase: str) -> Self:
        self._phase = phase
        return self

    def csi(self, driver: str, handle: str) -> Self:
        return self.spec(csi={"driver": driver, "volumeHandle": handle})

    def volume_mode(self, mode: str) -> Self:
        return self.spec(volumeMode=mode)

    def _parts(self) -> tuple[dict[str, Any], dict[str, Any]]:
        meta: dict[str, Any] = {"name": self._name, **self._optional_metadata()}
        spec: dict[str, Any] = {"capacity": {"storage": self._size}, "accessModes": list(self._modes),
                                "storageClassName": self._class}
        if self._terms is not None:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": copy.deepcopy(self._terms)}}
        if self._claim is not None:
            spec["claimRef"] = dict(self._claim)
        spec.update(copy.deepcopy(self._spec))
        return meta, spec

    def _status_phase(self) -> str:
        return "Bound" if self._claim is not None and self._phase == "Available" else self._phase

    def manifest(self) -> dict[str, Any]:
        """What a user writes (no status: the PV controller sets the phase)."""
        meta, spec = self._parts()
        return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}

    def obj(self) -> PersistentVolume:
        meta, spec = self._parts()
        data = {"metadata": _admitted(meta, "", self._uid), "spec": spec, "status": {"phase": self._status_phase()}}
        result: PersistentVolume = convert(data, PersistentVolume, f"pv {self._name}")
        return result


class StorageClassBuilder(ObjectBuilder):
    """A StorageClass has no spec: `.spec(...)` writes top-level fields (allowedTopologies, ...)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._provisioner = "csi.example.com"
        self._mode: str | None = "Immediate"

    def mode(self, mode: str | None) -> Self:
        """volumeBindingMode (None: left out)."""
        self._mode = mode
        return self

    def provisioner(self, provisioner: str) -> Self:
        self._provisioner = provisioner
        return self

    def topologies(self, *terms: dict[str, list[str]]) -> Self:
        """allowedTopologies: each term a {label key: values} mapping."""
        return self.spec(allowedTopologies=[{"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]}
                                              for t in terms])

    def default(self) -> Self:
        """The cluster's default class."""
        return self.annotation({"storageclass.kubernetes.io/is-default-class": "true"})

    def _parts(self) -> tuple[dict[str, Any], dict[str, Any]]:
        meta: dict[str, Any] = {"name": self._name, **self._optional_metadata()}
        body: dict[str, Any] = {"provisioner": self._provisioner}
        if self._mode is not None:
            body["volumeBindingMode"] = self._mode
        body.update(copy.deepcopy(self._spec))
        return meta, body

    def manifest(self) -> dict[str, Any]:
        meta, body = self._parts()
        return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta, **body}

    def obj(self) -> Any:
        meta, body = self._parts()
        return convert({"metadata": _admitted(meta, "", self._uid), **body}, STORAGE_TYPES[STORAGE_CLASS], f"storageclass {self._name}")


def make_pvc(name: str) -> ClaimBuilder:
    return ClaimBuilder(name)


def make_pv(name: str) -> VolumeBuilder:
    return VolumeBuilder(name)


def make_storage_class(name: str) -> StorageClassBuilder:
    return StorageClassBuilder(name)
