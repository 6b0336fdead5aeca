"""Custom resources (CRD-backed kinds) that plugins read: how each is named, found and decoded.

A plugin that reads a custom resource lists it in its class attribute `watches` (a tuple of
CustomResource). The kube backend watches exactly the resources the running profiles' plugins
list (so a cluster without those CRDs is not asked about them); the simulator delivers whatever
its manifests hold. Both deliver objects through one path (SchedulerPort.on_custom_object /
on_custom_delete) into the cache's index of custom objects (cache.customobjects), and each change
is a cluster event named as kube-scheduler names a custom resource's events:
`<plural>.<version>.<group>` (e.g. `elasticquotas.v1alpha1.scheduling.x-k8s.io`), which plugins
register for in EnqueueExtensions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CustomResource:
    group: str
    version: str
    plural: str
    kind: str
    type: type[Any]  # the msgspec Struct an object decodes to (unknown fields ignored)
    namespaced: bool = True

    @property
    def resource(self) -> str:
        """kube-scheduler's event resource name for it (fwk.EventResource of a custom resource)."""
        return f"{self.plural}.{self.version}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def path(self) -> str:
        """The collection across all namespaces, for list and watch."""
        return f"/apis/{self.group}/{self.version}/{self.plural}"

    @property
    def name(self) -> str:
        """`<plural>.<group>`, as the CRD is named (and informers are called in logs and metrics)."""
        return f"{self.plural}.{self.group}"


def object_key(obj: Any) -> str:
    """`namespace/name` of a namespaced object, `name` of a cluster-scoped one."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else str(meta.name)


def watched_by(plugins: Iterable[object]) -> list[CustomResource]:
    """The custom resources the given plugin instances read (their classes' `watches`), each once,
    in the order first listed."""
    out: dict[str, CustomResource] = {}
    for plugin in plugins:
        for cr in getattr(type(plugin), "watches", ()):
            if isinstance(cr, CustomResource):
                out.setdefault(cr.resource, cr)
    return list(out.values())
