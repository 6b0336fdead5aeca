"""Typed views of the storage objects the volume plugins read: PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities and
VolumeAttachments, in objects.py's style (only what scheduling reads; every field defaults to
Go's zero value; unknown fields are ignored), and the small helpers kube's volume code shares
(component-helpers/storage/volume and ephemeral): a claim's class, whether a volume is bound to
a claim, what a binding writes.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import msgspec

from kubesched.api.objects import Int32, LabelSelector, NodeSelector, ObjectMeta, OwnerReference, Pod, Quantity
from kubesched.api.quantity import QuantityError, parse_quantity

# Annotations of kube's PV controller and scheduler (component-helpers/storage/volume).
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

RESOURCE_STORAGE = "storage"
VOLUME_BINDING_IMMEDIATE = "Immediate"
VOLUME_BINDING_WAIT = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
CLAIM_PENDING, CLAIM_BOUND, CLAIM_LOST = "Pending", "Bound", "Lost"
VOLUME_PENDING, VOLUME_AVAILABLE, VOLUME_BOUND, VOLUME_RELEASED, VOLUME_FAILED = (
    "Pending", "Available", "Bound", "Released", "Failed")


class StorageWriteError(RuntimeError):
    """A PV or PVC write the API server refused (the message is its own: a conflict, a 404...)."""


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


# --- PersistentVolumeClaims -------------------------------------------------------------------


class VolumeResourceRequirements(_Obj):
    requests: dict[str, Quantity] = msgspec.field(default_factory=dict)
    limits: dict[str, Quantity] = msgspec.field(default_factory=dict)


class TypedLocalObjectReference(_Obj):
    api_group: str | None = None
    kind: str = ""
    name: str = ""


class PersistentVolumeClaimSpec(_Obj):
    access_modes: list[str] = msgspec.field(default_factory=list)
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = msgspec.field(default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    data_source: TypedLocalObjectReference | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(_Obj):
    phase: str = ""
    access_modes: list[str] = msgspec.field(default_factory=list)
    capacity: dict[str, Quantity] = msgspec.field(default_factory=dict)


class PersistentVolumeClaim(_Obj):
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# --- PersistentVolumes --------------------------------------------------------------------------


class ObjectReference(_Obj):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class VolumeNodeAffinity(_Obj):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(_Obj):
    driver: str = ""
    volume_handle: str = ""
    read_only: bool = False
    fs_type: str = ""
    volume_attributes: dict[str, str] = msgspec.field(default_factory=dict)


class PersistentVolumeSpec(_Obj):
    capacity: dict[str, Quantity] = msgspec.field(default_factory=dict)
    access_modes: list[str] = msgspec.field(default_factory=list)
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: str = ""
    mount_options: list[str] = msgspec.field(default_factory=list)
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    # The volume sources (exactly one is set); the CSI one is read for volume limits, the rest
    # only for validation, as raw JSON.
    csi: CSIPersistentVolumeSource | None = None
    host_path: dict[str, Any] | None = None
    local: dict[str, Any] | None = None
    nfs: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None
    fc: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    cephfs: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    azure_file: dict[str, Any] | None = None
    cinder: dict[str, Any] | None = None
    flex_volume: dict[str, Any] | None = None
    flocker: dict[str, Any] | None = None
    glusterfs: dict[str, Any] | None = None
    photon_persistent_disk: dict[str, Any] | None = None
    portworx_volume: dict[str, Any] | None = None
    quobyte: dict[str, Any] | None = None
    scale_io: dict[str, Any] | None = msgspec.field(default=None, name="scaleIO")
    storageos: dict[str, Any] | None = None
    vsphere_volume: dict[str, Any] | None = None


class PersistentVolumeStatus(_Obj):
    phase: str = ""
    message: str = ""
    reason: str = ""


class PersistentVolume(_Obj):
    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


# The volume sources a PV may carry (json names), in the order kube's validation checks them: it
# requires exactly one, and reports every one after the first.
PV_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd", "quobyte", "cephfs",
    "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume",
    "azureDisk", "scaleIO", "local", "storageos", "csi",
)


# --- StorageClasses ------------------------------------------------------------------------------


class TopologySelectorLabelRequirement(_Obj):
    key: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class TopologySelectorTerm(_Obj):
    match_label_expressions: list[TopologySelectorLabelRequirement] = msgspec.field(default_factory=list)


class StorageClass(_Obj):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "StorageClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    parameters: dict[str, str] = msgspec.field(default_factory=dict)
    reclaim_policy: str | None = None
    mount_options: list[str] = msgspec.field(default_factory=list)
    allow_volume_expansion: bool | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = msgspec.field(default_factory=list)


# --- CSI -------------------------------------------------------------------------------------------


class VolumeNodeResources(_Obj):
    count: Int32 | None = None


class CSINodeDriver(_Obj):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    topology_keys: list[str] = msgspec.field(default_factory=list)
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(_Obj):
    drivers: list[CSINodeDriver] = msgspec.field(default_factory=list)


class CSINode(_Obj):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSINode"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSIDriverSpec(_Obj):
    attach_required: bool | None = None
    pod_info_on_mount: bool | None = None
    storage_capacity: bool | None = None
    fs_group_policy: str | None = None
    requires_republish: bool | None = None
    se_linux_mount: bool | None = msgspec.field(default=None, name="seLinuxMount")
    volume_lifecycle_modes: list[str] = msgspec.field(default_factory=list)
    prevent_pod_scheduling_if_missing: bool | None = None


class CSIDriver(_Obj):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIDriver"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(_Obj):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: Quantity | None = None
    maximum_volume_size: Quantity | None = None


class VolumeAttachmentSource(_Obj):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(_Obj):
    attacher: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)
    node_name: str = ""


class VolumeAttachment(_Obj):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "VolumeAttachment"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)


# --- the event resources, as kube-scheduler names them (fwk.EventResource) --------------------------

PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "storage.k8s.io/StorageClass"
CSI_NODE = "storage.k8s.io/CSINode"
CSI_DRIVER = "storage.k8s.io/CSIDriver"
CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"

# Event resource -> the type its objects decode to.
STORAGE_TYPES: dict[str, type[Any]] = {
    PERSISTENT_VOLUME: PersistentVolume,
    PERSISTENT_VOLUME_CLAIM: PersistentVolumeClaim,
    STORAGE_CLASS: StorageClass,
    CSI_NODE: CSINode,
    CSI_DRIVER: CSIDriver,
    CSI_STORAGE_CAPACITY: CSIStorageCapacity,
    VOLUME_ATTACHMENT: VolumeAttachment,
}
# Manifest kind -> event resource.
STORAGE_KINDS: dict[str, str] = {cls.__name__: resource for resource, cls in STORAGE_TYPES.items()}

StorageObject = (
    PersistentVolume | PersistentVolumeClaim | StorageClass | CSINode | CSIDriver | CSIStorageCapacity | VolumeAttachment
)


# --- helpers (component-helpers/storage/volume and ephemeral) --------------------------------------


def is_default_class(sc: StorageClass) -> bool:
    """Marked as the cluster's default StorageClass (what DefaultStorageClass admission gives claims
    that name none)."""
    return sc.metadata.annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName."""
    annotated = pvc.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return pvc.spec.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    """GetPersistentVolumeClass: the beta annotation first, then spec.storageClassName."""
    annotated = pv.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if annotated is not None:
        return annotated
    return pv.spec.storage_class_name


def quantity(values: dict[str, Quantity], name: str = RESOURCE_STORAGE) -> Decimal:
    """An exact quantity of a resource map (0 when missing or unreadable), for comparisons as
    resource.Quantity.Cmp makes them."""
    raw = values.get(name)
    if raw is None:
        return Decimal(0)
    try:
        return parse_quantity(raw)
    except QuantityError:
        return Decimal(0)


def quantity_value(values: dict[str, Quantity], name: str = RESOURCE_STORAGE) -> int:
    """resource.Quantity.Value(): the quantity in whole units, rounded up."""
    exact = quantity(values, name)
    whole = int(exact)
    return whole + 1 if exact > whole else whole


def claim_request(pvc: PersistentVolumeClaim) -> Decimal:
    return quantity(pvc.spec.resources.requests)


def volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """IsVolumeBoundToClaim: the PV's claimRef names the claim (and its uid, when it has one)."""
    ref = pv.spec.claim_ref
    if ref is None:
        return False
    if ref.name != pvc.metadata.name or ref.namespace != pvc.metadata.namespace:
        return False
    return not ref.uid or ref.uid == pvc.metadata.uid


def claim_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """The volume binder's isPVCFullyBound: a volume name and the bind-completed annotation."""
    return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """GetBindVolumeToClaim: a copy of the PV bound to the claim, and whether anything changed."""
    dirty = False
    set_by_controller = not volume_bound_to_claim(pv, pvc)
    ref = pv.spec.claim_ref
    spec = pv.spec
    if ref is None or ref.name != pvc.metadata.name or ref.namespace != pvc.metadata.namespace or ref.uid != pvc.metadata.uid:
        spec = msgspec.structs.replace(spec, claim_ref=ObjectReference(
            kind="PersistentVolumeClaim", namespace=pvc.metadata.namespace, name=pvc.metadata.name,
            uid=pvc.metadata.uid, api_version="v1", resource_version=pvc.metadata.resource_version,
        ))
        dirty = True
    annotations = pv.metadata.annotations
    if set_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    meta = msgspec.structs.replace(pv.metadata, annotations=annotations) if annotations is not pv.metadata.annotations \
        else pv.metadata
    return msgspec.structs.replace(pv, metadata=meta, spec=spec), dirty


def with_annotation(pvc: PersistentVolumeClaim, key: str, value: str) -> PersistentVolumeClaim:
    """A copy of the claim with one more annotation (the original stays as the informer gave it)."""
    meta = msgspec.structs.replace(pvc.metadata, annotations={**pvc.metadata.annotations, key: value})
    return msgspec.structs.replace(pvc, metadata=meta)


def ephemeral_claim_name(pod: Pod, volume_name: str) -> str:
    """ephemeral.VolumeClaimName: the PVC a generic ephemeral volume gets."""
    return f"{pod.metadata.name}-{volume_name}"


def ephemeral_claim_error(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: None when the claim is controlled by the pod, else kube's error."""
    owned = any(_controlled_by(ref, pod) for ref in pvc.metadata.owner_references)
    if pvc.metadata.namespace != pod.metadata.namespace or not owned:
        return (f"PVC {pvc.metadata.namespace}/{pvc.metadata.name} was not created for pod "
                f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)")
    return None


def _controlled_by(ref: OwnerReference, pod: Pod) -> bool:
    return bool(ref.controller) and ref.uid == pod.metadata.uid


def resource_version_newer(a: str, b: str) -> bool:
    """Whether resourceVersion `a` is newer than `b` (APIObjectVersioner.CompareResourceVersion > 0);
    versions that are not integers compare as 0, as kube's parse failure does."""
    return _rv(a) > _rv(b)


def _rv(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0
