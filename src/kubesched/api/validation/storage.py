"""PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and VolumeAttachments as the API server validates them on create (kube's
core and storage validation: the rules that shape scheduling, with kube's paths and texts), and
the PVC-backed sources of pod volumes (persistentVolumeClaim, ephemeral)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.objects import PodSpec, Quantity
from kubesched.api.storage import (
    PV_SOURCES,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    StorageClass,
    VolumeAttachment,
)
from kubesched.api.validation.field import (
    FieldIssue,
    duplicate,
    forbidden,
    go_json,
    invalid,
    not_supported,
    required,
    too_long,
)
from kubesched.api.validation.meta import (
    dns1123_subdomain,
    label_key,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_label_name,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
)
from kubesched.api.validation.resources import parse_at
from kubesched.api.validation.scheduling import validate_node_selector

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
PV_RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
CLASS_RECLAIM_POLICIES = ["Delete", "Retain"]
BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024


def _positive(raw: Quantity, path: str) -> list[FieldIssue]:
    """A quantity that parses (kube's decoder) and is greater than zero (ValidatePositiveQuantityValue)."""
    q, issues = parse_at(raw, path)
    if issues or q is None:
        return issues
    if q.negative or q.nanos == 0:
        return [invalid(path, q.canonical(), "must be greater than zero")]
    return []


def _access_modes(modes: Sequence[str], path: str, required_detail: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if not modes:
        out.append(required(path, required_detail))
    rwop = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            out.append(not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            rwop = True
        else:
            other = True
    if rwop and other:
        out.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return out


def _class_name(value: str, path: str) -> list[FieldIssue]:
    return [invalid(path, value, msg) for msg in name_is_dns_subdomain(value)]


# --- claims --------------------------------------------------------------------------------------


def validate_pvc_spec(spec: PersistentVolumeClaimSpec, path: str) -> list[FieldIssue]:
    """ValidatePersistentVolumeClaimSpec."""
    out = _access_modes(spec.access_modes, f"{path}.accessModes", "at least 1 access mode is required")
    if spec.selector is not None:
        out.extend(validate_label_selector(spec.selector, f"{path}.selector"))
    where = f"{path}.resources[storage]"
    storage = spec.resources.requests.get("storage")
    if storage is None:
        out.append(required(where))
    else:
        out.extend(_positive(storage, where))
    if spec.storage_class_name:
        out.extend(_class_name(spec.storage_class_name, f"{path}.storageClassName"))
    if spec.volume_mode is not None and spec.volume_mode not in VOLUME_MODES:
        out.append(not_supported(f"{path}.volumeMode", spec.volume_mode, VOLUME_MODES))
    if spec.data_source is not None:
        ds = spec.data_source
        if not ds.name:
            out.append(required(f"{path}.dataSource.name"))
        if not ds.kind:
            out.append(required(f"{path}.dataSource.kind"))
        if not ds.api_group and ds.kind != "PersistentVolumeClaim":
            out.append(invalid(f"{path}.dataSource", ds.kind, "must be 'PersistentVolumeClaim' when referencing the "
                                                             "default apiGroup"))
    if spec.volume_attributes_class_name:
        out.extend(_class_name(spec.volume_attributes_class_name, f"{path}.volumeAttributesClassName"))
    return out


def validate_pvc(pvc: PersistentVolumeClaim) -> list[FieldIssue]:
    out = validate_object_meta(pvc.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    out.extend(validate_pvc_spec(pvc.spec, "spec"))
    return out


class _ClaimTemplate(msgspec.Struct, kw_only=True, rename="camel"):
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


def validate_claim_template(raw: Any, path: str) -> list[FieldIssue]:
    """ValidatePersistentVolumeClaimTemplate (an ephemeral volume's): labels and annotations only
    in its metadata, and a valid claim spec."""
    try:
        template = msgspec.convert(raw, _ClaimTemplate, strict=False)
    except msgspec.ValidationError as exc:
        return [FieldIssue(path, str(exc), decode=True)]
    out: list[FieldIssue] = []
    for key in template.metadata:
        if key not in ("labels", "annotations"):
            out.append(forbidden(f"{path}.metadata", f"{key}: cannot be set"))
    labels = template.metadata.get("labels")
    if isinstance(labels, Mapping):
        out.extend(validate_labels({str(k): str(v) for k, v in labels.items()}, f"{path}.metadata.labels"))
    out.extend(validate_pvc_spec(template.spec, f"{path}.spec"))
    return out


def validate_volume_sources(spec: PodSpec, path: str) -> list[FieldIssue]:
    """The PVC-backed sources of pod volumes: a claim name, or an ephemeral volume's claim
    template; a volume has at most one of them."""
    out: list[FieldIssue] = []
    for i, volume in enumerate(spec.volumes):
        at = f"{path}.volumes[{i}]"
        if volume.persistent_volume_claim is not None:
            if volume.ephemeral is not None:
                out.append(forbidden(f"{at}.ephemeral", "may not specify more than 1 volume type"))
            if not volume.persistent_volume_claim.claim_name:
                out.append(required(f"{at}.persistentVolumeClaim.claimName"))
        elif volume.ephemeral is not None:
            template = volume.ephemeral.volume_claim_template
            if template is None:
                out.append(required(f"{at}.ephemeral.volumeClaimTemplate"))
            else:
                out.extend(validate_claim_template(template, f"{at}.ephemeral.volumeClaimTemplate"))
    return out


# --- volumes -------------------------------------------------------------------------------------


def validate_pv(pv: PersistentVolume, raw_spec: Mapping[str, Any] | None = None) -> list[FieldIssue]:
    """ValidatePersistentVolume: metadata, access modes, capacity (storage only, positive),
    reclaim policy, node affinity, exactly one volume source, class and volume mode. `raw_spec`
    (the manifest's spec) tells which sources are set."""
    out = validate_object_meta(pv.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    spec = pv.spec
    out.extend(_access_modes(spec.access_modes, "spec.accessModes", ""))
    if not spec.capacity:
        out.append(required("spec.capacity"))
    if "storage" not in spec.capacity or len(spec.capacity) > 1:
        out.append(not_supported("spec.capacity", _go_capacity(spec.capacity), ["storage"]))
    for name, qty in spec.capacity.items():
        out.extend(_positive(qty, f"spec.capacity[{name}]"))
    policy = spec.persistent_volume_reclaim_policy
    if policy and policy not in PV_RECLAIM_POLICIES:
        out.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES))
    affinity_set = False
    if spec.node_affinity is not None:
        affinity_set = True
        if spec.node_affinity.required is None:
            out.append(required("spec.nodeAffinity.required", "must specify required node constraints"))
        else:
            out.extend(validate_node_selector(spec.node_affinity.required, "spec.nodeAffinity.required"))
    sources = [s for s in PV_SOURCES if isinstance(raw_spec, Mapping) and raw_spec.get(s) is not None] if raw_spec \
        is not None else [s for s in PV_SOURCES if getattr(spec, _attr(s), None) is not None]
    count = 0
    for source in sources:  # in kube's order: the first is checked, any other is one too many
        if count and source != "flexVolume":
            out.append(forbidden(f"spec.{source}", "may not specify more than 1 volume type"))
            continue
        count += 1
        out.extend(_pv_source(spec, source, affinity_set))
    if not sources:
        out.append(required("spec", "must specify a volume type"))
    if spec.storage_class_name:
        out.extend(_class_name(spec.storage_class_name, "spec.storageClassName"))
    if spec.volume_mode is not None and spec.volume_mode not in VOLUME_MODES:
        out.append(not_supported("spec.volumeMode", spec.volume_mode, VOLUME_MODES))
    if spec.volume_attributes_class_name is not None:
        if not spec.volume_attributes_class_name:
            out.append(required("spec.volumeAttributesClassName", "an empty string is disallowed"))
        else:
            out.extend(_class_name(spec.volume_attributes_class_name, "spec.volumeAttributesClassName"))
        if spec.csi is None:
            out.append(required("spec.csi", "has to be specified when using volumeAttributesClassName"))
    return out


def _pv_source(spec: Any, source: str, affinity_set: bool) -> list[FieldIssue]:
    """The checks of the volume source a PV uses (those that shape scheduling, and the required fields)."""
    out: list[FieldIssue] = []
    if source == "csi" and spec.csi is not None:
        out.extend(_csi_driver_name(spec.csi.driver, "spec.csi.driver"))
        if not spec.csi.volume_handle:
            out.append(required("spec.csi.volumeHandle"))
    elif source == "local":
        if not (spec.local or {}).get("path"):
            out.append(required("spec.local.path"))
        if not affinity_set:
            out.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    elif source == "hostPath" and not (spec.host_path or {}).get("path"):
        out.append(required("spec.hostPath.path"))
    elif source == "nfs":
        for key in ("server", "path"):
            if not (spec.nfs or {}).get(key):
                out.append(required(f"spec.nfs.{key}"))
    return out


def _attr(json_name: str) -> str:
    """The snake_case attribute of a PV source's json name."""
    special = {"scaleIO": "scale_io", "iscsi": "iscsi", "cephfs": "cephfs", "storageos": "storageos"}
    if json_name in special:
        return special[json_name]
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in json_name)


def _go_capacity(capacity: Mapping[str, Quantity]) -> str:
    return go_json({k: str(v) for k, v in sorted(capacity.items())})


def _csi_driver_name(name: str, path: str) -> list[FieldIssue]:
    """ValidateCSIDriverName."""
    if not name:
        return [required(path)]
    out: list[FieldIssue] = []
    if len(name) > 63:
        out.append(too_long(path, 63))
    out.extend(invalid(path, name, msg) for msg in dns1123_subdomain(name.lower()))
    return out


# --- storage.k8s.io ------------------------------------------------------------------------------------


def validate_storage_class(sc: StorageClass) -> list[FieldIssue]:
    """ValidateStorageClass."""
    out = validate_object_meta(sc.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    if not sc.provisioner:
        out.append(required("provisioner"))
    else:
        out.extend(invalid("provisioner", sc.provisioner.lower(), msg) for msg in label_key(sc.provisioner.lower()))
    if len(sc.parameters) > MAX_PARAMETERS:
        out.append(too_long("parameters", MAX_PARAMETERS))
    elif sum(len(k) + len(v) for k, v in sc.parameters.items()) > MAX_PARAMETERS_SIZE:
        out.append(too_long("parameters", MAX_PARAMETERS_SIZE))
    for key in sc.parameters:
        if not key:
            out.append(invalid("parameters", key, "field can not be empty."))
    if sc.reclaim_policy and sc.reclaim_policy not in CLASS_RECLAIM_POLICIES:
        out.append(not_supported("reclaimPolicy", sc.reclaim_policy, CLASS_RECLAIM_POLICIES))
    # The API server defaults volumeBindingMode to Immediate before validating.
    mode = sc.volume_binding_mode if sc.volume_binding_mode is not None else "Immediate"
    if mode not in BINDING_MODES:
        out.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
    seen: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(sc.allowed_topologies):
        at = f"allowedTopologies[{i}]"
        exprs: dict[str, frozenset[str]] = {}
        if not term.match_label_expressions:
            out.append(required(f"{at}.matchLabelExpressions", "must have at least one label selector requirement"))
        for j, req in enumerate(term.match_label_expressions):
            where = f"{at}.matchLabelExpressions[{j}]"
            out.extend(validate_label_name(req.key, f"{where}.key"))
            if not req.values:
                out.append(required(f"{where}.values", "must specify as least one value"))
            for k, value in enumerate(req.values):
                if value in req.values[:k]:
                    out.append(duplicate(f"{where}.values[{k}]", value))
            if req.key in exprs:
                out.append(duplicate(f"{where}.key", req.key))
            exprs[req.key] = frozenset(req.values)
        if exprs in seen:
            out.append(duplicate(f"{at}.matchLabelExpressions", ""))
        seen.append(exprs)
    return out


def validate_csinode(csinode: CSINode) -> list[FieldIssue]:
    """ValidateCSINode: a node's name, drivers named once each, their node ids and limits."""
    out = validate_object_meta(csinode.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    names: set[str] = set()
    for i, driver in enumerate(csinode.spec.drivers):
        at = f"spec.drivers[{i}]"
        out.extend(_csi_driver_name(driver.name, f"{at}.name"))
        if driver.name in names:
            out.append(duplicate(f"{at}.name", driver.name))
        names.add(driver.name)
        if not driver.node_id:
            out.append(required(f"{at}.nodeID"))
        elif len(driver.node_id) > 192:
            out.append(too_long(f"{at}.nodeID", 192))
        if driver.allocatable is not None and driver.allocatable.count is not None and driver.allocatable.count < 0:
            out.append(invalid(f"{at}.allocatable.count", driver.allocatable.count, "must be greater than or equal to 0"))
    return out


def validate_csidriver(driver: CSIDriver) -> list[FieldIssue]:
    # Its name is a DNS subdomain (storage validation's ValidateCSIDriverName), not the 63-character
    # driver name a volume's csi.driver is held to.
    out = validate_object_meta(driver.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    for i, mode in enumerate(driver.spec.volume_lifecycle_modes):
        if mode not in ("Persistent", "Ephemeral"):
            out.append(not_supported(f"spec.volumeLifecycleModes[{i}]", mode, ["Ephemeral", "Persistent"]))
    return out


def validate_storage_capacity(cap: CSIStorageCapacity) -> list[FieldIssue]:
    out = validate_object_meta(cap.metadata, namespaced=True, name_check=name_is_dns_subdomain)
    if cap.node_topology is not None:
        out.extend(validate_label_selector(cap.node_topology, "nodeTopology"))
    out.extend(_class_name(cap.storage_class_name, "storageClassName") if cap.storage_class_name
               else [required("storageClassName")])
    for name, raw in (("capacity", cap.capacity), ("maximumVolumeSize", cap.maximum_volume_size)):
        if raw is not None:
            q, issues = parse_at(raw, name)
            out.extend(issues)
            if q is not None and q.negative:
                out.append(invalid(name, q.canonical(), "must be greater than or equal to 0"))
    return out


def validate_volume_attachment(va: VolumeAttachment) -> list[FieldIssue]:
    out = validate_object_meta(va.metadata, namespaced=False, name_check=name_is_dns_subdomain)
    out.extend(_csi_driver_name(va.spec.attacher, "spec.attacher"))
    if not va.spec.node_name:
        out.append(required("spec.nodeName"))
    if va.spec.source.persistent_volume_name is None:
        out.append(required("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    else:
        out.extend(invalid("spec.source.persistentVolumeName", va.spec.source.persistent_volume_name, msg)
                   for msg in name_is_dns_subdomain(va.spec.source.persistent_volume_name))
    return out


__all__ = [
    "name_is_dns_label",
    "validate_claim_template",
    "validate_csidriver",
    "validate_csinode",
    "validate_pv",
    "validate_pvc",
    "validate_pvc_spec",
    "validate_storage_capacity",
    "validate_storage_class",
    "validate_volume_attachment",
    "validate_volume_sources",
]
