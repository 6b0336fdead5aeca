"""CustomResourceDefinitions for tests: the test control plane has none, so tests of plugins that read
custom resources install kubesched's own definitions (deploy/crds/: scheduler-plugins' PodGroup
and ElasticQuota, scheduling.x-k8s.io/v1alpha1) and wait until the API server serves them."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from .rest import FIELD_MANAGER, JSON, ApiError, Kube

CRD_DIR = Path(__file__).resolve().parents[3] / "deploy" / "crds"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SCHEDULER_PLUGINS_CRDS = ("scheduling.x-k8s.io_podgroups.yaml", "scheduling.x-k8s.io_elasticquotas.yaml")


def install_crds(kube: Kube, files: Sequence[str] = SCHEDULER_PLUGINS_CRDS, *, timeout: float = 60.0) -> list[JSON]:
    """Applies the CRDs (server-side apply: idempotent across tests) and waits until each is
    Established and its resource is listed by the API server. Returns the CRDs as served."""
    crds: list[JSON] = []
    for name in files:
        for doc in yaml.safe_load_all((CRD_DIR / name).read_text()):
            if doc:
                kube.request("PATCH", f"{CRDS}/{doc['metadata']['name']}", json.dumps(doc).encode(),
                             content_type="application/apply-patch+yaml",
                             params={"fieldManager": FIELD_MANAGER, "force": "true"})
                crds.append(doc)
    return [wait_established(kube, crd, timeout=timeout) for crd in crds]


def wait_established(kube: Kube, crd: JSON, *, timeout: float = 60.0) -> JSON:
    """Waits for the Established condition, then for the first list of the resource to succeed
    (established a moment before the API server's handler for it is installed)."""
    name = crd["metadata"]["name"]
    served = kube.wait_for(
        f"{CRDS}/{name}",
        lambda c: any(cond["type"] == "Established" and cond["status"] == "True"
                      for cond in (c.get("status") or {}).get("conditions") or []),
        timeout=timeout,
    )
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served", True))
    path = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.get(path, {"limit": 1})
            return served
        except ApiError as e:
            if e.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def delete_custom_objects(kube: Kube, namespace: str, paths: Sequence[str]) -> None:
    """Deletes a namespace's objects of the given custom collections (`/apis/<group>/<version>/
    namespaces/{ns}/<plural>` templates): the harness's namespace teardown knows only built-in kinds,
    and without a garbage collector they would outlive their namespace in etcd."""
    for template in paths:
        try:
            kube.request("DELETE", template.format(ns=namespace), {"apiVersion": "v1", "kind": "DeleteOptions"})
        except ApiError as e:
            if e.status != 404:
                raise
