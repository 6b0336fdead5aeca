"""What the volume plugins share (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits):
the storage index behind the handle, and the objects their queueing hints read."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.podinfo import PodInfo
from kubesched.api.storage import PersistentVolumeClaim
from kubesched.cache.storage import StorageIndex, pod_volumes
from kubesched.framework.events import QueueingHint
from kubesched.framework.handle import Handle


def storage_index(handle: Handle | None, plugin: str) -> StorageIndex:
    """The cache's storage objects; a volume plugin cannot work without its handle."""
    assert handle is not None, f"{plugin} needs the framework handle"
    return handle.cache.storage


def pod_of(obj: Any) -> Pod | None:
    """The Pod of a pod event's object (a PodInfo or a Pod); None for anything else."""
    if isinstance(obj, PodInfo):
        return obj.pod
    return obj if isinstance(obj, Pod) else None


def claim_of_pod(pi: PodInfo, claim: PersistentVolumeClaim | None, *, ephemeral: bool) -> QueueingHint:
    """Queue when an added or updated claim is one of the pod's: named by a persistentVolumeClaim
    volume, or (with `ephemeral`) the claim of one of its generic ephemeral volumes."""
    if claim is None or claim.metadata.namespace != pi.namespace:
        return QueueingHint.QueueSkip
    volumes = pod_volumes(pi)
    name = claim.metadata.name
    if ephemeral:
        named = any(c.claim == name for c in volumes.claims)
    else:
        named = name in volumes.pvc_names
    return QueueingHint.Queue if named else QueueingHint.QueueSkip
