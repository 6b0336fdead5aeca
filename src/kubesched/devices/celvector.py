"""Batch evaluation of a device selector: numpy over columns of the devices' values where the
expression has one of the common shapes, the CEL library device by device otherwise, with the
same answers.

The vectorized shapes: `&&`, `||` and `!` over
- `device.driver == "s"` / `!=`, `device.allowMultipleAllocations`,
- `device.attributes["domain"].name <op> literal` (int, bool or string literal; ==, !=, <, <=, >, >=),
- `has(device.attributes["domain"].name)`, `has(device.capacity["domain"].name)`,
- `device.capacity["domain"].name.compareTo(quantity("q")) <op> int`, `.isGreaterThan(quantity("q"))`,
  `.isLessThan(quantity("q"))`.

A device on which a leaf is not plain (a missing attribute, a value of another type than the
literal's) is left undecided by the columns; such devices, where `&&`/`||` do not decide without
them, are evaluated by the library, which also gives their errors kube's words.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from kubesched.api import quantity as quantities
from kubesched.devices.cel import BatchResult, DeviceInput, Selector, SelectorRuntimeError, split_qualified, versions_parse
from kubesched.infra.celtree import Checked, Node

_ORDER: dict[str, Callable[[Any, Any], Any]] = {
    "_==_": operator.eq, "_!=_": operator.ne, "_<_": operator.lt, "_<=_": operator.le, "_>_": operator.gt, "_>=_": operator.ge,
}


class _Unsupported(Exception):
    """The expression is outside the vectorized shapes."""


@dataclass(slots=True)
class _Tri:
    """Per device: the value where `known`, undecided elsewhere."""

    value: np.ndarray
    known: np.ndarray


class Columns(Protocol):
    """The devices of a batch and their values by column: what the vectorized shapes read.
    sliceinputs.DeviceColumns builds them from slices once; _Columns from any DeviceInputs."""

    @property
    def devices(self) -> Sequence[DeviceInput]: ...

    @property
    def n(self) -> int: ...

    def values(self, holder: str, domain: str, name: str) -> Sequence[Any] | np.ndarray:
        """Per device, its value of device.<holder>["domain"].name, None where it has none."""
        ...

    def drivers(self) -> np.ndarray: ...

    def allow_multiple(self) -> np.ndarray: ...

    def unreadable(self) -> np.ndarray:
        """Per device, whether it fails every selector before the expression runs (a version
        attribute that does not parse: DeviceMatches converts all attributes first)."""
        ...


class _Columns:
    """The devices' values, one column per (map, domain, name), built on first use."""

    def __init__(self, devices: Sequence[DeviceInput]) -> None:
        self.devices = devices
        self.n = len(devices)
        self._cache: dict[tuple[str, str, str], list[Any]] = {}

    def values(self, holder: str, domain: str, name: str) -> list[Any]:
        key = (holder, domain, name)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = [self._lookup(d, holder, domain, name) for d in self.devices]
        return hit

    def drivers(self) -> np.ndarray:
        return np.array([d.driver for d in self.devices], dtype=object)

    def allow_multiple(self) -> np.ndarray:
        return np.array([d.allow_multiple_allocations for d in self.devices], dtype=bool)

    def unreadable(self) -> np.ndarray:
        return np.array([not versions_parse(d) for d in self.devices], dtype=bool)

    @staticmethod
    def _lookup(device: DeviceInput, holder: str, domain: str, name: str) -> Any:
        source: Any = device.attributes if holder == "device.attributes" else device.capacity
        for qualified, value in source.items():
            if split_qualified(qualified, device.driver) == (domain, name):
                return value
        return None


class _Vectorizer:
    def __init__(self, checked: Checked, columns: Columns) -> None:
        self.checked = checked
        self.cols = columns
        self.n = columns.n

    def var(self, node: Node | None) -> str:
        if node is None or node.kind != "ident":
            return ""
        return self.checked.references.get(node.id, node.name)

    def entry(self, node: Node) -> tuple[str, str, str]:
        """(map, domain, name) of `device.<map>["domain"].name`."""
        if node.kind != "select" or node.target is None:
            raise _Unsupported
        inner = node.target
        if inner.kind != "call" or inner.name != "_[_]" or len(inner.args) != 2:
            raise _Unsupported
        holder = self.var(inner.args[0])
        key = inner.args[1]
        if holder not in ("device.attributes", "device.capacity") or key.kind != "const" or not isinstance(key.value, str):
            raise _Unsupported
        return holder, key.value, node.name

    def const(self, value: bool) -> _Tri:
        return _Tri(np.full(self.n, value, dtype=bool), np.ones(self.n, dtype=bool))

    def bool_value(self, node: Node) -> _Tri:
        if node.kind == "select" and node.test_only:
            holder, domain, name = self.entry(Node(node.id, "select", name=node.name, target=node.target))
            present = np.array([v is not None for v in self.cols.values(holder, domain, name)], dtype=bool)
            return _Tri(present, np.ones(self.n, dtype=bool))
        if node.kind == "select" and self.var(node.target.args[0] if node.target is not None and node.target.args else None) \
                == "device.attributes":
            values = self.cols.values(*self.entry(node))
            known = np.array([type(v) is bool for v in values], dtype=bool)
            return _Tri(np.array([v is True for v in values], dtype=bool), known)
        if node.kind == "ident" and self.var(node) == "device.allowMultipleAllocations":
            return _Tri(self.cols.allow_multiple(), np.ones(self.n, dtype=bool))
        if node.kind != "call" or (node.target is not None and node.name not in ("isGreaterThan", "isLessThan")):
            raise _Unsupported
        name, args = node.name, node.args
        if name in ("_&&_", "_||_"):
            return self.junction(self.bool_value(args[0]), self.bool_value(args[1]), conj=name == "_&&_")
        if name == "!_":
            inner = self.bool_value(args[0])
            return _Tri(~inner.value, inner.known)
        if name in ("isGreaterThan", "isLessThan") and node.target is not None:
            sign = self.quantity_order(node.target, args[0])
            want = 1 if name == "isGreaterThan" else -1
            return _Tri(sign.value == want, sign.known)
        if name in _ORDER and len(args) == 2:
            return self.comparison(name, args[0], args[1])
        raise _Unsupported

    def junction(self, a: _Tri, b: _Tri, *, conj: bool) -> _Tri:
        decided_a = a.known & (a.value != conj)  # false for &&, true for ||
        decided_b = b.known & (b.value != conj)
        decides = decided_a | decided_b
        both = a.known & b.known
        value = np.where(decides, not conj, (a.value & b.value) if conj else (a.value | b.value))
        return _Tri(value, decides | both)

    def comparison(self, name: str, left: Node, right: Node) -> _Tri:
        op = _ORDER[name]
        if self.var(left) == "device.driver" and right.kind == "const" and isinstance(right.value, str) and name in ("_==_", "_!=_"):
            drivers = np.asarray(op(self.cols.drivers(), right.value), dtype=bool)
            return _Tri(drivers, np.ones(self.n, dtype=bool))
        if left.kind == "call" and left.name == "compareTo" and left.target is not None and right.kind == "const" \
                and right.const_type == "int":
            sign = self.quantity_order(left.target, left.args[0])
            return _Tri(op(sign.value, right.value), sign.known)
        if right.kind != "const" or right.const_type not in ("int", "bool", "string"):
            raise _Unsupported
        holder, domain, attr = self.entry(left)
        if holder != "device.attributes":
            raise _Unsupported
        literal = right.value
        kind = type(literal)
        values = self.cols.values(holder, domain, attr)
        # Only values of the literal's own type are compared here (bool is not an int to CEL).
        same = np.array([type(v) is kind for v in values], dtype=bool)
        result = np.array([bool(op(v, literal)) if s else False for v, s in zip(values, same, strict=True)], dtype=bool)
        return _Tri(result, same)

    def quantity_order(self, receiver: Node, argument: Node) -> _Tri:
        """compareTo of a capacity and a literal quantity: -1, 0 or 1 where the capacity exists."""
        holder, domain, name = self.entry(receiver)
        if holder != "device.capacity" or argument.kind != "call" or argument.name != "quantity" or len(argument.args) != 1:
            raise _Unsupported
        text = argument.args[0]
        if text.kind != "const" or not isinstance(text.value, str):
            raise _Unsupported
        try:
            limit = quantities.parse(text.value)
        except quantities.QuantityError:
            raise _Unsupported from None
        if limit.nanos is None:
            raise _Unsupported
        values = self.cols.values(holder, domain, name)
        known = np.array([v is not None and v.nanos is not None for v in values], dtype=bool)
        sign = np.array([(v.nanos > limit.nanos) - (v.nanos < limit.nanos) if k else 0 for v, k in zip(values, known, strict=True)],
                        dtype=np.int64)
        return _Tri(sign, known)


def vectorized(selector: Selector, devices: Sequence[DeviceInput] | Columns) -> _Tri:
    """The selector's columns result; _Unsupported when its shape is not one of the above."""
    columns = _Columns(devices) if isinstance(devices, Sequence) else devices
    tri = _Vectorizer(selector.checked, columns).bool_value(selector.checked.root)
    return _Tri(tri.value, tri.known & ~columns.unreadable())


def evaluate_batch(selector: Selector, batch: Sequence[DeviceInput] | Columns) -> BatchResult:
    """The selector on every device (DeviceInputs, or columns built once, such as a cluster's
    slices': sliceinputs.DeviceColumns): vectorized when the expression's shape allows it, one by
    one otherwise; the same answers either way."""
    devices = batch if isinstance(batch, Sequence) else batch.devices
    try:
        tri = vectorized(selector, batch)
    except _Unsupported:
        return selector.matches_each(devices)
    result = BatchResult(tri.value & tri.known, {})
    for i in np.flatnonzero(~tri.known).tolist():
        try:
            result.matches[i] = selector.matches(devices[i])
        except SelectorRuntimeError as exc:
            result.matches[i] = False
            result.errors[i] = str(exc)
    return result
