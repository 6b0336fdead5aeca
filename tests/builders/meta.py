"""What every builder shares: the object's name and metadata (uid, labels, annotations, owner
references) and spec fields written out as the API spells them."""

from __future__ import annotations

import copy
from typing import Any, Self


class ObjectBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._uid: str | None = None
        self._labels: dict[str, str] = {}
        self._annotations: dict[str, str] = {}
        self._owners: list[dict[str, Any]] = []
        self._spec: dict[str, Any] = {}

    def uid(self, uid: str) -> Self:
        self._uid = uid
        return self

    def label(self, labels: dict[str, str] | None = None, /, **more: str) -> Self:
        self._labels.update(labels or {})
        self._labels.update(more)
        return self

    def annotation(self, annotations: dict[str, str] | None = None, /, **more: str) -> Self:
        self._annotations.update(annotations or {})
        self._annotations.update(more)
        return self

    def owned_by(self, *references: dict[str, Any]) -> Self:
        """metadata.ownerReferences, written out as the API spells them."""
        self._owners.extend(dict(r) for r in references)
        return self

    def _optional_metadata(self, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        """Labels, annotations (these, when given) and owner references, each only when there are any."""
        out: dict[str, Any] = {}
        annotations = self._annotations if annotations is None else annotations
        if self._labels:
            out["labels"] = dict(self._labels)
        if annotations:
            out["annotations"] = dict(annotations)
        if self._owners:
            out["ownerReferences"] = copy.deepcopy(self._owners)
        return out

    def spec(self, **fields: Any) -> Self:
        """Spec fields written out as the API spells them (they win over what other methods set)."""
        self._spec.update(fields)
        return self
