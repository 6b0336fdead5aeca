"""The DeviceClasses the scheduler knows, kept for the one question asked of them today: which
class, if any, maps a resource name a pod requests to DRA (kube's DeviceClassResolver over its
extended-resource cache). Every class maps `deviceclass.resource.kubernetes.io/<its name>`, and
its `spec.extendedResourceName` when set (api.dra.mapped_resource_names).

Several classes may name the same extended resource (while migrating from one class to another);
kube resolves the name to the newest class, the lower name breaking a tie, and so does this index.
Which class answers only changes the name a message shows: the resource is DRA's either way.
"""

from __future__ import annotations

from kubesched.api.dra import DeviceClass, mapped_resource_names


class DeviceClassIndex:
    def __init__(self) -> None:
        self.classes: dict[str, DeviceClass] = {}
        self._by_resource: dict[str, dict[str, DeviceClass]] = {}

    def __len__(self) -> int:
        return len(self.classes)

    def set(self, dc: DeviceClass) -> DeviceClass | None:
        """A class added or updated; returns its previous state."""
        old = self.remove(dc.metadata.name)
        self.classes[dc.metadata.name] = dc
        for resource in mapped_resource_names(dc):
            self._by_resource.setdefault(resource, {})[dc.metadata.name] = dc
        return old

    def remove(self, name: str) -> DeviceClass | None:
        """A class deleted; returns its last state (None if it was not known)."""
        old = self.classes.pop(name, None)
        if old is not None:
            for resource in mapped_resource_names(old):
                mapping = self._by_resource.get(resource)
                if mapping is not None:
                    mapping.pop(name, None)
                    if not mapping:
                        del self._by_resource[resource]
        return old

    def class_for(self, resource: str) -> str | None:
        """The name of the class that maps this resource name to DRA, None if none does."""
        mapping = self._by_resource.get(resource)
        if not mapping:
            return None
        if len(mapping) == 1:
            return next(iter(mapping))
        # Newest first (RFC 3339 timestamps of one format sort as text; none sorts oldest), then
        # the lower name.
        newest = max(dc.metadata.creation_timestamp or "" for dc in mapping.values())
        return min(name for name, dc in mapping.items() if (dc.metadata.creation_timestamp or "") == newest)
