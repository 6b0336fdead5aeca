"""Template values: Go's "no value" (what a missing map key yields) and the pipeline's missing
argument, Go's truth and type names, Go's order of map entries, and strings as Go's bytes (UTF-8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final


class _NoValueType:
    """Go's invalid reflect.Value: what a missing map key yields."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"

    def __bool__(self) -> bool:
        return False


_NO_VALUE: Final = _NoValueType()


class _Missing:
    """No value passed down the pipeline (the first command of a pipeline)."""

    __slots__ = ()


_MISSING: Final = _Missing()


def _is_nil(v: Any) -> bool:
    return v is None or v is _NO_VALUE


def _type_name(v: Any) -> str:
    """Go's name of the dynamic type of a YAML value."""
    if _is_nil(v):
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "[]interface {}"
    if isinstance(v, Mapping):
        return "map[string]interface {}"
    return type(v).__name__


def _truth(v: Any) -> bool:
    """Go's truth: false, 0, nil, and empty strings, lists and maps are false."""
    if v is True:
        return True
    if v is False or v is None or v is _NO_VALUE:
        return False
    t = type(v)
    if t is int or t is float:
        return bool(v != 0)
    if t is str or t is list or t is dict or t is tuple:
        return len(v) > 0
    if isinstance(v, (int, float)):
        return bool(v != 0)
    if isinstance(v, (str, list, tuple, Mapping)):
        return len(v) > 0
    return True


def _sorted_items(m: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """A map's entries in Go's order (fmt and range sort map keys)."""
    try:
        keys = sorted(m)
    except TypeError:
        keys = sorted(m, key=lambda k: (type(k).__name__, str(k)))
    return [(k, m[k]) for k in keys]


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _from_utf8(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _byte_len(s: str) -> int:
    return len(s) if s.isascii() else len(_utf8(s))
