"""What VolumeBinding's reasons leave unsaid, for `kubesched explain`: which of the pod's claims
keeps it pending, and why. The reasons themselves stay kube's words ("pod has unbound immediate
PersistentVolumeClaims", "node(s) didn't find available persistent volumes to bind"); this names
the claim (namespace/name), its class, and what is missing, such as a default StorageClass.
"""

from __future__ import annotations

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import (
    ANN_SELECTED_NODE,
    BETA_STORAGE_CLASS_ANNOTATION,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_BINDING_IMMEDIATE,
    PersistentVolumeClaim,
    claim_class,
    claim_fully_bound,
    is_default_class,
)
from kubesched.cache.storage import pod_volumes
from kubesched.plugins.volumebinding.binder import Binder, Found, PodClaims


def _claim(pvc: PersistentVolumeClaim) -> str:
    return f"PersistentVolumeClaim {pvc.key}"


def unbound_immediate(binder: Binder, pi: PodInfo) -> str:
    """Why each claim that PreFilter counts as unbound and immediate is so ("" if none is)."""
    storage = binder.storage
    parts: list[str] = []
    for claim in pod_volumes(pi).claims:
        pvc = storage.get_pvc(f"{pi.namespace}/{claim.claim}")
        if pvc is None or claim_fully_bound(pvc):
            continue
        delay, error = binder.delay_binding(pvc)
        if error is not None or (delay and not pvc.spec.volume_name):
            continue  # an error is its own message; a delayed claim is Filter's
        parts.append(_why_unbound(binder, pvc))
    return "; ".join(parts)


def _why_unbound(binder: Binder, pvc: PersistentVolumeClaim) -> str:
    storage = binder.storage
    if pvc.spec.volume_name:
        return (f'{_claim(pvc)} is pre-bound to PersistentVolume "{pvc.spec.volume_name}": waiting for the PV '
                "controller to bind them")
    class_name = claim_class(pvc)
    if not class_name:
        unnamed = pvc.spec.storage_class_name is None and BETA_STORAGE_CLASS_ANNOTATION not in pvc.metadata.annotations
        if unnamed and not any(is_default_class(sc) for sc in storage.classes.values()):
            return (f"{_claim(pvc)} is unbound: it names no storageClassName and there is no default StorageClass "
                    '(none is annotated storageclass.kubernetes.io/is-default-class: "true"); without a class only '
                    "the PV controller can bind it, to an available PersistentVolume without a class")
        return (f"{_claim(pvc)} is unbound and has no class: waiting for the PV controller to bind it to an "
                "available PersistentVolume without a class")
    sc = storage.storage_class(class_name)
    if sc is None:
        return f'{_claim(pvc)} is unbound: its StorageClass "{class_name}" does not exist'
    mode = sc.volume_binding_mode or VOLUME_BINDING_IMMEDIATE
    return (f'{_claim(pvc)} is unbound: its StorageClass "{class_name}" binds {mode}, so the PV controller binds or '
            "provisions it before the pod is scheduled")


def on_node(binder: Binder, claims: PodClaims, found: Found, row: int) -> str:
    """The claims that keep the pod off the node at `row`, each with what it lacks there."""
    storage = binder.storage
    table = found.table
    parts: list[str] = []
    for pvc in claims.bound:
        pv = storage.get_pv(pvc.spec.volume_name)
        if pv is None:
            parts.append(f'{_claim(pvc)} is bound to PersistentVolume "{pvc.spec.volume_name}", which does not exist')
            break  # kube looks no further
        if not binder.masks.pv(table, pv)[row]:
            parts.append(f'{_claim(pvc)} is bound to PersistentVolume "{pv.metadata.name}", whose node affinity '
                         "excludes this node")
    node = table.name_of(row)
    matched = {id(pvc): chosen for pvc, chosen in found.matched}
    provisioned = {id(pvc): rows for pvc, rows in found.provisions}
    for pvc in claims.delayed:
        selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
        if selected is not None and selected != node:
            parts.append(f'{_claim(pvc)} is being provisioned for node "{selected}"')
            continue
        chosen = matched.get(id(pvc))
        rows = provisioned.get(id(pvc))
        if (chosen is not None and chosen[row] >= 0) or (rows is not None and rows[row]):
            continue
        parts.append(_why_not_here(binder, pvc, found, row, selected is None))
    return "; ".join(parts)


def _why_not_here(binder: Binder, pvc: PersistentVolumeClaim, found: Found, row: int, static: bool) -> str:
    """Why a claim of a WaitForFirstConsumer class gets neither a PV nor a provisioned volume here."""
    class_name = claim_class(pvc)
    no_pv = f'no available PersistentVolume of class "{class_name}" fits' if static else ""
    table = found.table
    active = np.zeros(table.size, dtype=bool)
    active[row] = True
    verdict = binder.provisionable(pvc, table, active, Found(table))
    if isinstance(verdict, str):
        dynamic = verdict
    else:
        no_provision, short, _ok, _caps = verdict
        sc = binder.storage.storage_class(class_name)
        provisioner = sc.provisioner if sc is not None else ""
        if no_provision[row] and (not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER):
            dynamic = f'StorageClass "{class_name}" provisions no volumes (provisioner "{provisioner}")'
        elif no_provision[row]:
            dynamic = f'StorageClass "{class_name}" does not provision in this node\'s topology (allowedTopologies)'
        elif short[row]:
            dynamic = f'StorageClass "{class_name}" has not enough free storage on this node (CSIStorageCapacity)'
        else:
            dynamic = "the pod's other claims already fail on this node"
    lacks = f"{no_pv}, and {dynamic}" if no_pv else dynamic
    return f"{_claim(pvc)} cannot be bound on this node: {lacks}"
