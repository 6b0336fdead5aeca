"""Strict field validation, as `kubectl apply` asks of the API server: unknown fields are errors.

A misspelt field (`toleration:` for `tolerations:`, `resource:` for `resources:`) would otherwise
be dropped without a word and the object simulated without it. The field names come from the
pinned kube-apiserver's OpenAPI schema, kept in known-fields.json beside this module (written by
`make known-fields`; an integration test checks it against the real API server).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from typing import Any, TypeVar

__all__ = ["go_field_names", "go_nulls", "strict_decoding_error", "unknown_fields", "wrong_type"]

# Scalar shapes in known-fields.json, with the zero value Go's decoder leaves for a JSON null in
# a list or map of them; "" is anything else (raw JSON), where null stays null.
ZERO: dict[str, Any] = {"string": "", "int32": 0, "int64": 0, "integer": 0, "number": 0, "boolean": False, "quantity": "0",
                        "int-or-string": 0}
SCALARS = frozenset({*ZERO, ""})
_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "int-or-string": (-(2**31), 2**31 - 1)}
# kubectl re-encodes a whole float below this as an integer (2.0 is sent as 2); past it, as 1e+21.
_WHOLE_FLOAT_LIMIT = 1e21
_INTEGERS = frozenset({"int32", "int64", "integer", "int-or-string"})

# Most unknown fields listed in one message; the API server lists them all, but one object with
# thousands of bad keys must still give one readable line.
MAX_LISTED = 20


T = TypeVar("T")


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

    def below(step: tuple[str, Any, str | None]) -> Iterator[tuple[str, Any, str | None]] | None:
        path, value, type_name = step
        # A wrong type is the decoder's complaint, not an unknown field.
        return _children(value, types[type_name], path) if type_name is not None and isinstance(value, dict) else None

    return [path for path, _, type_name in _depth_first(("", obj, root), below) if type_name is None]


def _depth_first(first: T, below: Callable[[T], Iterator[T] | None]) -> Iterator[T]:
    """`first` and everything `below` it, depth first in document order (as the API server's
    decoder meets them), without recursion. The caller sees each step before its children are
    asked for, so it may stop at any step."""
    stack: list[Iterator[T]] = [iter([first])]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        yield step
        children = below(step)
        if children is not None:
            stack.append(children)


def _children(value: dict[Any, Any], fields: dict[str, str], path: str) -> Iterator[tuple[str, Any, str | None]]:
    """(path, value, type) of each field of one object that has fields of its own; type None for
    an unknown field."""
    for key, child in value.items():
        where = f"{path}.{key}" if path else str(key)
        shape = fields.get(key) if isinstance(key, str) else None
        if shape is None:
            yield where, child, None
        elif shape[:2] == "[]" and shape[2:] not in SCALARS:
            if isinstance(child, list):
                for i, item in enumerate(child):
                    yield f"{where}[{i}]", item, shape[2:]
        elif shape[:2] == "{}" and shape[2:] not in SCALARS:
            if isinstance(child, dict):
                for k, item in child.items():
                    yield f"{where}[{k}]", item, shape[2:]
        elif shape not in SCALARS and shape[:2] not in ("[]", "{}"):
            yield where, child, shape


def go_nulls(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as Go's JSON decoder reads it: a null field is left unset (its zero value), a null in
    a list or map becomes the element's zero value (`labels: {a: null}` is the label a="",
    `cpu: null` a zero quantity, `containers: [null]` an empty container). Unknown fields are kept
    as they are, for the strict check. A whole float in an integer field becomes an int, as
    kubectl sends it (`tolerationSeconds: 60.0` arrives as 60). A copy; `obj` is not changed."""
    schema = _schema()
    root = schema["kinds"].get(kind)
    if root is None:
        return obj
    types: dict[str, dict[str, str]] = schema["types"]

    def value(v: Any, shape: str) -> Any:
        if shape in SCALARS:
            if shape in _INTEGERS and isinstance(v, float) and v.is_integer() and abs(v) < _WHOLE_FLOAT_LIMIT:
                return int(v)  # kubectl re-encodes 2.0 as 2, which Go's decoder takes for an integer
            return v
        if shape[:2] in ("[]", "{}"):
            item = shape[2:]
            if shape[:2] == "[]" and isinstance(v, list):
                return [element(x, item) for x in v]
            if shape[:2] == "{}" and isinstance(v, dict):
                return {k: element(x, item) for k, x in v.items()}
            return v  # the wrong type: the decoder's complaint
        if not isinstance(v, dict):
            return v
        fields = types[shape]
        out = {}
        for k, x in v.items():
            known = fields.get(k) if isinstance(k, str) else None
            if known is None:
                out[k] = x
            elif x is not None:
                out[k] = value(x, known)
        return out

    def element(x: Any, shape: str) -> Any:
        if x is not None:
            return value(x, shape)
        if shape in ZERO:
            return ZERO[shape]
        # A nil list, map or raw value; an empty object for a struct.
        return None if shape in SCALARS or shape[:2] in ("[]", "{}") else {}

    result: dict[str, Any] = value(obj, root)
    return result


def go_field_names(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with each field name the API does not define, but does define in another letter case,
    spelt as the API spells it: what Go's encoding/json does when it decodes into a typed object
    (it matches field names case-insensitively), before a typed client sends the object on. A copy;
    names that match nothing are kept, for the strict check."""
    schema = _schema()
    root = schema["kinds"].get(kind)
    if root is None:
        return obj
    types: dict[str, dict[str, str]] = schema["types"]

    def value(v: Any, shape: str) -> Any:
        if shape in SCALARS:
            return v
        if shape[:2] == "[]":
            return [value(x, shape[2:]) for x in v] if isinstance(v, list) else v
        if shape[:2] == "{}":
            return {k: value(x, shape[2:]) for k, x in v.items()} if isinstance(v, dict) else v
        if not isinstance(v, dict):
            return v
        fields = types[shape]
        folded = {name.lower(): name for name in fields}
        out = {}
        for k, x in v.items():
            name = k if not isinstance(k, str) or k in fields else folded.get(k.lower(), k)
            out[name] = value(x, fields[name]) if name in fields else x
        return out

    result: dict[str, Any] = value(obj, root)
    return result


def strict_decoding_error(paths: list[str]) -> str:
    """The API server's words for unknown fields: `strict decoding error: unknown field "a", ...`."""
    listed = [f'unknown field "{p}"' for p in paths[:MAX_LISTED]]
    if len(paths) > MAX_LISTED:
        listed.append(f"and {len(paths) - MAX_LISTED} more")
    return "strict decoding error: " + ", ".join(listed)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    return "array" if isinstance(value, list) else "object"


def _scalar_problem(value: Any, shape: str) -> str | None:
    """Why Go's decoder refuses `value` for a scalar field of this shape, or None."""
    if value is None or shape == "":
        return None
    got = _json_type(value)
    if shape == "string":
        return None if got == "str" else f"expected `str`, got `{got}`"
    if shape == "boolean":
        return None if got == "bool" else f"expected `bool`, got `{got}`"
    if shape == "quantity":
        return None if got in ("str", "number") else f"expected `str | number`, got `{got}`"
    if shape == "int-or-string" and got == "str":
        return None
    if shape == "number":
        return None if got == "number" else f"expected `number`, got `{got}`"
    # int32, int64, integer, int-or-string: a whole number within the Go type's range.
    expected = "`int | str`" if shape == "int-or-string" else "`int`"
    if got != "number":
        return f"expected {expected}, got `{got}`"
    if isinstance(value, float):
        if not (value.is_integer() and abs(value) < _WHOLE_FLOAT_LIMIT):
            return f"expected {expected}, got `float`"
        value = int(value)
    low, high = _RANGES.get(shape, (None, None))
    if low is not None and high is not None and not low <= value <= high:
        return f"expected `int` {'>=' if value < low else '<='} {low if value < low else high}"
    return None


def wrong_type(kind: str, obj: dict[str, Any]) -> tuple[str, str] | None:
    """The first known field of `obj` whose value Go's decoder cannot take (`description: false`,
    a 2^40 into an int32, a list for an object), as (path, problem): the API server answers
    "cannot be handled as a <Kind>" for those, whether or not kubesched reads the field. Nulls are
    fine (see go_nulls); unknown fields are the strict check's."""
    schema = _schema()
    root = schema["kinds"].get(kind)
    if root is None:
        return None
    types: dict[str, dict[str, str]] = schema["types"]

    def below(step: tuple[str, Any, str]) -> Iterator[tuple[str, Any, str]] | None:
        path, value, shape = step
        return None if value is None or shape in SCALARS else _typed_children(path, value, shape, types)

    for path, value, shape in _depth_first(("", obj, root), below):
        if value is None:
            continue
        if shape in SCALARS:
            problem = _scalar_problem(value, shape)
            if problem is not None:
                return path, problem
        elif not isinstance(value, list if shape[:2] == "[]" else dict):
            return path, f"expected `{'array' if shape[:2] == '[]' else 'object'}`, got `{_json_type(value)}`"
    return None


def _typed_children(path: str, value: Any, shape: str, types: dict[str, dict[str, str]]) -> Iterator[tuple[str, Any, str]]:
    """(path, value, shape) of the items of a list or map, or of the known fields of an object."""
    if shape[:2] == "[]":
        for i, item in enumerate(value):
            yield f"{path}[{i}]", item, shape[2:]
    elif shape[:2] == "{}":
        for k, item in value.items():
            yield f"{path}[{k}]", item, shape[2:]
    else:
        fields = types[shape]
        for k, item in value.items():
            if isinstance(k, str) and k in fields:
                yield (f"{path}.{k}" if path else k), item, fields[k]
