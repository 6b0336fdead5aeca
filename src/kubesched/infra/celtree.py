"""The checked syntax tree of a compiled CEL expression (cel-expr-python), read from the library's own
output: shared by the scheduling rules (plugins/cel) and DRA's device selectors (devices/cel.py).

cel-expr-python gives no tree, but `Expression.serialize()` is a `google.protobuf.Any` holding a
`cel.expr.CheckedExpr` (cel-spec's checked.proto and syntax.proto): the expression after type
checking, with the type of every node and what every identifier resolved to. This module reads
that message with a small protobuf wire-format reader (no protobuf runtime needed) into plain
dataclasses, which the cost estimator and the vectorizer walk.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

# Field numbers, from cel-spec's syntax.proto and checked.proto.
_ANY_VALUE = 2
_CHECKED_REFERENCE_MAP, _CHECKED_TYPE_MAP, _CHECKED_EXPR = 2, 3, 4
_EXPR_ID, _EXPR_CONST, _EXPR_IDENT, _EXPR_SELECT, _EXPR_CALL, _EXPR_LIST, _EXPR_STRUCT, _EXPR_COMPREHENSION = 2, 3, 4, 5, 6, 7, 8, 9

# Checked types reduced to what the rules need: a primitive's name, or a kind.
PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}


class WireError(ValueError):
    """The serialized expression is not what this reader expects."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise WireError("varint too long")


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varint and fixed fields, bytes for length-delimited."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            out.append((number, value))
        elif wire == 1:
            out.append((number, int.from_bytes(buf[pos:pos + 8], "little")))
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            out.append((number, buf[pos:pos + length]))
            pos += length
        elif wire == 5:
            out.append((number, int.from_bytes(buf[pos:pos + 4], "little")))
            pos += 4
        else:
            raise WireError(f"wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@dataclass(slots=True)
class Node:
    """One expression node. `kind` is const, ident, select, call, list, map or comprehension."""

    id: int
    kind: str
    value: object = None  # const: the Python value (None for null)
    const_type: str = ""  # const: bool, int, uint, double, string, bytes, null
    name: str = ""  # ident: the name; select: the field; call: the function
    test_only: bool = False  # select: has()
    target: Node | None = None  # select: the operand; call: the receiver
    args: list[Node] = field(default_factory=list)  # call args, list elements, map keys and values interleaved
    # comprehension parts
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Node | None = None
    accu_init: Node | None = None
    loop_condition: Node | None = None
    loop_step: Node | None = None
    result: Node | None = None

    def __repr__(self) -> str:
        what = repr(self.value) if self.kind == "const" else self.name
        return f"Node({self.id}, {self.kind} {what}, {len(self.children())} children)"

    def children(self) -> list[Node]:
        parts = [self.target, *self.args, self.iter_range, self.accu_init, self.loop_condition, self.loop_step, self.result]
        return [p for p in parts if p is not None]


@dataclass(slots=True)
class Checked:
    """The checked expression: the tree, each node's type, and what names resolved to."""

    root: Node
    types: dict[int, str]  # node id -> "bool", "int", "double", "string", "list", "map", "dyn", ...
    references: dict[int, str]  # node id -> the variable (qualified name) it resolved to


def _constant(buf: bytes) -> tuple[object, str]:
    for number, value in _fields(buf):
        if number == 1:
            return None, "null"
        if number == 2:
            return bool(value), "bool"
        if number == 3:
            assert isinstance(value, int)
            return _signed(value), "int"
        if number == 4:
            return value, "uint"
        if number == 5:
            assert isinstance(value, int)
            return struct.unpack("<d", value.to_bytes(8, "little"))[0], "double"
        if number == 6:
            assert isinstance(value, bytes)
            return value.decode(), "string"
        if number == 7:
            return value, "bytes"
        return None, f"constant#{number}"
    return None, "null"


def _expr(buf: bytes, depth: int = 0) -> Node:
    if depth > 500:
        raise WireError("expression nested too deeply")
    node = Node(0, "")
    for number, value in _fields(buf):
        if number == _EXPR_ID:
            assert isinstance(value, int)
            node.id = value
            continue
        assert isinstance(value, bytes)
        if number == _EXPR_CONST:
            node.kind = "const"
            node.value, node.const_type = _constant(value)
        elif number == _EXPR_IDENT:
            node.kind = "ident"
            node.name = _string(value, 1)
        elif number == _EXPR_SELECT:
            node.kind = "select"
            for n, v in _fields(value):
                if n == 1:
                    assert isinstance(v, bytes)
                    node.target = _expr(v, depth + 1)
                elif n == 2:
                    assert isinstance(v, bytes)
                    node.name = v.decode()
                elif n == 3:
                    node.test_only = bool(v)
        elif number == _EXPR_CALL:
            node.kind = "call"
            for n, v in _fields(value):
                assert isinstance(v, bytes)
                if n == 1:
                    node.target = _expr(v, depth + 1)
                elif n == 2:
                    node.name = v.decode()
                elif n == 3:
                    node.args.append(_expr(v, depth + 1))
        elif number == _EXPR_LIST:
            node.kind = "list"
            node.args = [_expr(v, depth + 1) for n, v in _fields(value) if n == 1 and isinstance(v, bytes)]
        elif number == _EXPR_STRUCT:
            node.kind = "map"
            for n, v in _fields(value):
                if n == 2 and isinstance(v, bytes):
                    for en, ev in _fields(v):
                        if en in (3, 4) and isinstance(ev, bytes):
                            node.args.append(_expr(ev, depth + 1))
                        elif en == 2 and isinstance(ev, bytes):
                            node.args.append(Node(0, "const", ev.decode(), "string"))
        elif number == _EXPR_COMPREHENSION:
            node.kind = "comprehension"
            for n, v in _fields(value):
                assert isinstance(v, bytes)
                if n == 1:
                    node.iter_var = v.decode()
                elif n == 8:
                    node.iter_var2 = v.decode()
                elif n == 3:
                    node.accu_var = v.decode()
                else:
                    sub = _expr(v, depth + 1)
                    if n == 2:
                        node.iter_range = sub
                    elif n == 4:
                        node.accu_init = sub
                    elif n == 5:
                        node.loop_condition = sub
                    elif n == 6:
                        node.loop_step = sub
                    elif n == 7:
                        node.result = sub
    return node


def _string(buf: bytes, number: int) -> str:
    for n, v in _fields(buf):
        if n == number and isinstance(v, bytes):
            return v.decode()
    return ""


def _type(buf: bytes) -> str:
    for number, value in _fields(buf):
        if number == 1:
            return "dyn"
        if number == 2:
            return "null"
        if number == 3:
            assert isinstance(value, int)
            return PRIMITIVES.get(value, "unknown")
        if number == 4:
            return "wrapper"
        if number == 6:
            return "list"
        if number == 7:
            return "map"
        if number == 12:
            return "error"
        return f"type#{number}"
    return "unknown"


def _map_entry(buf: bytes) -> tuple[int, bytes]:
    key, value = 0, b""
    for n, v in _fields(buf):
        if n == 1 and isinstance(v, int):
            key = _signed(v)
        elif n == 2 and isinstance(v, bytes):
            value = v
    return key, value


def read_checked(serialized: bytes) -> Checked:
    """The CheckedExpr inside `Expression.serialize()`'s Any."""
    payload = next((v for n, v in _fields(serialized) if n == _ANY_VALUE and isinstance(v, bytes)), None)
    if payload is None:
        raise WireError("no CheckedExpr in the serialized expression")
    root: Node | None = None
    types: dict[int, str] = {}
    references: dict[int, str] = {}
    for number, value in _fields(payload):
        if not isinstance(value, bytes):
            continue
        if number == _CHECKED_EXPR:
            root = _expr(value)
        elif number == _CHECKED_TYPE_MAP:
            key, body = _map_entry(value)
            types[key] = _type(body)
        elif number == _CHECKED_REFERENCE_MAP:
            key, body = _map_entry(value)
            name = _string(body, 1)
            if name:
                references[key] = name
    if root is None:
        raise WireError("CheckedExpr without an expression")
    return Checked(root, types, references)
