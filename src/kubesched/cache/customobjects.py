"""Custom objects (CRD-backed kinds, api.customresources) as the backend last delivered them.

One small index for every custom resource plugins read: objects by resource and key
(`namespace/name`), the time this scheduler first saw each (on its own clock: what a queue sort
may compare with its pods' times), and a generation per resource, bumped on every change, so a
plugin can keep what it derives from the objects until they change.

`watched` says which resources the backend delivers: None when it delivers every one it has (the
simulator), or the set the kube backend watches (chosen at start from the profiles' plugins).
"""

from __future__ import annotations

from typing import Any

from kubesched.api.customresources import object_key


class CustomObjectIndex:
    def __init__(self) -> None:
        self._objects: dict[str, dict[str, Any]] = {}
        self._seen: dict[tuple[str, str], float] = {}
        self._generations: dict[str, int] = {}
        self.watched: frozenset[str] | None = None

    def watching(self, resource: str) -> bool:
        """Whether objects of this resource reach the scheduler at all."""
        return self.watched is None or resource in self.watched

    def generation(self, resource: str) -> int:
        return self._generations.get(resource, 0)

    def apply(self, resource: str, obj: Any, now: float) -> Any | None:
        """Adds or replaces an object; returns the one it replaces (None for an add)."""
        key = object_key(obj)
        objects = self._objects.setdefault(resource, {})
        old = objects.get(key)
        objects[key] = obj
        self._seen.setdefault((resource, key), now)
        self._generations[resource] = self.generation(resource) + 1
        return old

    def delete(self, resource: str, obj: Any) -> Any | None:
        """Removes an object (by its key); returns what was stored, None if nothing was."""
        key = object_key(obj)
        objects = self._objects.get(resource)
        old = objects.pop(key, None) if objects is not None else None
        self._seen.pop((resource, key), None)
        if old is not None:
            self._generations[resource] = self.generation(resource) + 1
        return old

    def get(self, resource: str, namespace: str, name: str) -> Any | None:
        objects = self._objects.get(resource)
        if not objects:
            return None
        return objects.get(f"{namespace}/{name}" if namespace else name)

    def objects(self, resource: str) -> list[Any]:
        """Every object of the resource, in the order first seen."""
        return list(self._objects.get(resource, {}).values())

    def first_seen(self, resource: str, obj: Any) -> float | None:
        """When the scheduler first saw the object (its clock), None if it holds no such object."""
        return self._seen.get((resource, object_key(obj)))
