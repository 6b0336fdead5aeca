"""The field names of the kinds the simulator reads, from a real kube-apiserver's OpenAPI v3.

kubectl apply asks the API server for strict field validation, so a misspelt field
(`toleration:` for `tolerations:`) is an error, not a silently ignored line. kubesched's manifest
loader does the same from `src/kubesched/api/known-fields.json`, which this module writes from
the pinned kube-apiserver (`make known-fields`) and which tests/integration/api checks against it.

The file maps each type to its fields, each field to its shape: "T" (an object of type T), a
scalar ("string", "int32", "int64", "integer", "number", "boolean", "quantity", "int-or-string";
"" for anything else), or "[]X" / "{}X" (a list / map of X). The scalar types let the loader decode `null` as
Go does: the element's zero value ("" for a string, 0 for a quantity, {} for an object).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from integration.harness.binaries import pinned_kube_version, require_binaries
from integration.harness.controlplane import ControlPlane
from integration.harness.rest import Kube

# kind -> (OpenAPI v3 group-version path, schema name)
KINDS: dict[str, tuple[str, str]] = {
    "Pod": ("api/v1", "io.k8s.api.core.v1.Pod"),
    "Node": ("api/v1", "io.k8s.api.core.v1.Node"),
    "Namespace": ("api/v1", "io.k8s.api.core.v1.Namespace"),
    "Service": ("api/v1", "io.k8s.api.core.v1.Service"),
    "ConfigMap": ("api/v1", "io.k8s.api.core.v1.ConfigMap"),
    "ReplicationController": ("api/v1", "io.k8s.api.core.v1.ReplicationController"),
    "PriorityClass": ("apis/scheduling.k8s.io/v1", "io.k8s.api.scheduling.v1.PriorityClass"),
    "Deployment": ("apis/apps/v1", "io.k8s.api.apps.v1.Deployment"),
    "ReplicaSet": ("apis/apps/v1", "io.k8s.api.apps.v1.ReplicaSet"),
    "StatefulSet": ("apis/apps/v1", "io.k8s.api.apps.v1.StatefulSet"),
    "Job": ("apis/batch/v1", "io.k8s.api.batch.v1.Job"),
    "PersistentVolumeClaim": ("api/v1", "io.k8s.api.core.v1.PersistentVolumeClaim"),
    "PersistentVolume": ("api/v1", "io.k8s.api.core.v1.PersistentVolume"),
    "StorageClass": ("apis/storage.k8s.io/v1", "io.k8s.api.storage.v1.StorageClass"),
    "CSINode": ("apis/storage.k8s.io/v1", "io.k8s.api.storage.v1.CSINode"),
    "CSIDriver": ("apis/storage.k8s.io/v1", "io.k8s.api.storage.v1.CSIDriver"),
    "CSIStorageCapacity": ("apis/storage.k8s.io/v1", "io.k8s.api.storage.v1.CSIStorageCapacity"),
    "VolumeAttachment": ("apis/storage.k8s.io/v1", "io.k8s.api.storage.v1.VolumeAttachment"),
    # GenericWorkload's API (the test control plane serves it).
    "PodGroup": ("apis/scheduling.k8s.io/v1beta1", "io.k8s.api.scheduling.v1beta1.PodGroup"),
    "Workload": ("apis/scheduling.k8s.io/v1beta1", "io.k8s.api.scheduling.v1beta1.Workload"),
    "PodDisruptionBudget": ("apis/policy/v1", "io.k8s.api.policy.v1.PodDisruptionBudget"),
    # Dynamic resource allocation (resource.k8s.io/v1, GA).
    "DeviceClass": ("apis/resource.k8s.io/v1", "io.k8s.api.resource.v1.DeviceClass"),
    "ResourceClaim": ("apis/resource.k8s.io/v1", "io.k8s.api.resource.v1.ResourceClaim"),
    "ResourceClaimTemplate": ("apis/resource.k8s.io/v1", "io.k8s.api.resource.v1.ResourceClaimTemplate"),
    "ResourceSlice": ("apis/resource.k8s.io/v1", "io.k8s.api.resource.v1.ResourceSlice"),
}
OUTPUT = Path(__file__).resolve().parents[3] / "src" / "kubesched" / "api" / "known-fields.json"


def _ref(prop: dict[str, Any]) -> str | None:
    if "$ref" in prop:
        return str(prop["$ref"]).rsplit("/", 1)[-1]
    for part in prop.get("allOf") or []:
        if "$ref" in part:
            return str(part["$ref"]).rsplit("/", 1)[-1]
    return None


# Schemas without properties that the loader decodes specially.
_SPECIAL_SCALARS = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
}
_PLAIN_SCALARS = ("string", "integer", "number", "boolean")


def _scalar(prop: dict[str, Any], schemas: dict[str, dict[str, Any]]) -> str:
    """The scalar type of a property (or list item, or map value) that is not an object with
    fields: "string", "integer", ..., or "" when it is anything else (raw JSON, a list of lists)."""
    target = _ref(prop)
    if target is not None:
        if target in _SPECIAL_SCALARS:
            return _SPECIAL_SCALARS[target]
        prop = schemas.get(target, {})
    kind = prop.get("type")
    if kind == "integer" and prop.get("format") in ("int32", "int64"):
        return str(prop["format"])  # the Go type's range is what the decoder enforces
    return kind if kind in _PLAIN_SCALARS else ""


def known_fields(schemas: dict[str, dict[str, Any]], version: str) -> dict[str, Any]:
    """The compact field tree of KINDS from the OpenAPI schemas (all group-versions merged)."""
    names: dict[str, str] = {}

    def short(full: str) -> str:
        # The type's own name, with as much of its package as needed to stay unique.
        parts = full.split(".")
        for n in range(1, len(parts) + 1):
            candidate = ".".join(parts[-n:])
            if names.setdefault(candidate, full) == full:
                return candidate
        return full

    types: dict[str, dict[str, str]] = {}
    pending = [schema for _, schema in KINDS.values()]
    shorts: dict[str, str] = {}
    while pending:
        full = pending.pop()
        if full in shorts:
            continue
        shorts[full] = short(full)
        fields: dict[str, str] = {}
        for field, prop in sorted((schemas[full].get("properties") or {}).items()):
            shape, item = "", prop
            if prop.get("type") == "array":
                shape, item = "[]", prop.get("items") or {}
            elif isinstance(prop.get("additionalProperties"), dict):
                shape, item = "{}", prop["additionalProperties"]
            target = _ref(item)
            if target is not None and schemas.get(target, {}).get("properties"):
                pending.append(target)
                fields[field] = shape + target
            else:
                fields[field] = shape + _scalar(item, schemas)
        types[full] = fields
    return {
        "kubernetes": version,
        "kinds": {kind: shorts[schema] for kind, (_, schema) in KINDS.items()},
        "types": {
            shorts[full]: {f: (s[:2] + shorts.get(s[2:], s[2:]) if s[:2] in ("[]", "{}") else shorts.get(s, s)) for f, s in fields.items()}
            for full, fields in sorted(types.items(), key=lambda kv: shorts[kv[0]])
        },
    }


def fetch_schemas(kube: Kube) -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {}
    for group_version in sorted({gv for gv, _ in KINDS.values()}):
        schemas.update(kube.get(f"/openapi/v3/{group_version}")["components"]["schemas"])
    return schemas


def render(tree: dict[str, Any]) -> str:
    return json.dumps(tree, indent=1, sort_keys=False) + "\n"


def main() -> int:
    """Write known-fields.json from the pinned kube-apiserver (started here on loopback)."""
    with tempfile.TemporaryDirectory() as work:
        cp = ControlPlane(require_binaries(), workdir=Path(work))
        cp.start()
        try:
            client = cp.kube()
            tree = known_fields(fetch_schemas(client), pinned_kube_version())
            client.close()
        finally:
            cp.stop()
    OUTPUT.write_text(render(tree))
    print(f"wrote {OUTPUT} ({len(tree['types'])} types, kube-apiserver {tree['kubernetes']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
