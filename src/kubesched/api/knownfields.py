"""Strict field validation, as `kubectl apply` asks of the API server: unknown fields are errors.

A misspelt field (`toleration:` for `tolerations:`, `resource:` for `resources:`) would otherwise
be dropped without a word and the object simulated without it. The field names come from the
pinned kube-apiserver's OpenAPI schema, kept in known-fields.json beside this module (written by
`make known-fields`; an integration test checks it against the real API server).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["strict_decoding_error", "unknown_fields"]

# Most unknown fields listed in one message; the API server lists them all, but one object with
# thousands of bad keys must still give one readable line.
MAX_LISTED = 20


@cache
def _schema() -> dict[str, Any]:
    text = (resources.files("kubesched.api") / "known-fields.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def unknown_fields(kind: str, obj: dict[str, Any]) -> list[str]:
    """Paths of the fields of `obj` (a `kind` object) that the API does not define, in the order
    they appear, as the API server names them (`spec.containers[0].resource`)."""
    schema = _schema()
    root = schema["kinds"].get(kind)
    if root is None:
        return []
    types: dict[str, dict[str, str]] = schema["types"]
    found: list[str] = []
    # Depth first in document order, as the API server's decoder meets them, without recursion:
    # each entry is the rest of one object's (path, value, type) children still to visit.
    stack: list[Iterator[tuple[str, Any, str | None]]] = [iter([("", obj, root)])]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        path, value, type_name = step
        if type_name is None:
            found.append(path)
        elif isinstance(value, dict):  # a wrong type is the decoder's complaint, not an unknown field
            stack.append(_children(value, types[type_name], path))
    return found


def _children(value: dict[Any, Any], fields: dict[str, str], path: str) -> Iterator[tuple[str, Any, str | None]]:
    """(path, value, type) of each field of one object; type None for an unknown field, "" for a
    value with no fields to check."""
    for key, child in value.items():
        where = f"{path}.{key}" if path else str(key)
        shape = fields.get(key) if isinstance(key, str) else None
        if shape is None:
            yield where, child, None
        elif shape.startswith("[]") and len(shape) > 2:
            if isinstance(child, list):
                for i, item in enumerate(child):
                    yield f"{where}[{i}]", item, shape[2:]
        elif shape.startswith("{}") and len(shape) > 2:
            if isinstance(child, dict):
                for k, item in child.items():
                    yield f"{where}[{k}]", item, shape[2:]
        elif shape and not shape.startswith(("[]", "{}")):
            yield where, child, shape


def strict_decoding_error(paths: list[str]) -> str:
    """The API server's words for unknown fields: `strict decoding error: unknown field "a", ...`."""
    listed = [f'unknown field "{p}"' for p in paths[:MAX_LISTED]]
    if len(paths) > MAX_LISTED:
        listed.append(f"and {len(paths) - MAX_LISTED} more")
    return "strict decoding error: " + ", ".join(listed)
