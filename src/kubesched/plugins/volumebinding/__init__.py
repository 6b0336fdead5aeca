"""VolumeBinding: a pod's PersistentVolumeClaims, bound and unbound (the plugin is plugin.py; the
binder, scorer and node masks beside it, as kube splits its volumebinding plugin)."""

from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from kubesched.plugins.volumebinding.plugin import ERR_UNBOUND_IMMEDIATE, NAME, VolumeBinding, VolumeBindingArgs

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "NAME",
    "VolumeBinding",
    "VolumeBindingArgs",
]
