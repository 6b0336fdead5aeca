"""The parse tree (Go's text/template/parse/node.go, the nodes this subset has)."""

from __future__ import annotations

from typing import Any


class _Node:
    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos


class _TextN(_Node):
    __slots__ = ("text",)

    def __init__(self, pos: int, text: str) -> None:
        super().__init__(pos)
        self.text = text


class _PipeN(_Node):
    __slots__ = ("cmds", "decl", "is_assign", "src")

    def __init__(self, pos: int) -> None:
        super().__init__(pos)
        self.decl: list[str] = []
        self.is_assign = False
        self.cmds: list[_CmdN] = []
        self.src = ""


class _CmdN(_Node):
    __slots__ = ("args", "src")

    def __init__(self, pos: int, args: list[_Node], src: str) -> None:
        super().__init__(pos)
        self.args = args
        self.src = src


class _ActionN(_Node):
    __slots__ = ("pipe",)

    def __init__(self, pos: int, pipe: _PipeN) -> None:
        super().__init__(pos)
        self.pipe = pipe


class _ControlN(_Node):
    __slots__ = ("body", "else_", "kind", "pipe")

    def __init__(self, pos: int, kind: str, pipe: _PipeN, body: list[_Node], else_: list[_Node] | None) -> None:
        super().__init__(pos)
        self.kind = kind
        self.pipe = pipe
        self.body = body
        self.else_ = else_


class _BreakN(_Node):
    __slots__ = ()


class _ContinueN(_Node):
    __slots__ = ()


class _ElseN(_Node):
    __slots__ = ()


class _EndN(_Node):
    __slots__ = ()


class _FieldN(_Node):
    __slots__ = ("names",)

    def __init__(self, pos: int, names: list[str]) -> None:
        super().__init__(pos)
        self.names = names


class _VarN(_Node):
    __slots__ = ("fields", "name")

    def __init__(self, pos: int, name: str, fields: list[str]) -> None:
        super().__init__(pos)
        self.name = name
        self.fields = fields


class _ChainN(_Node):
    __slots__ = ("fields", "node")

    def __init__(self, pos: int, node: _Node, fields: list[str]) -> None:
        super().__init__(pos)
        self.node = node
        self.fields = fields


class _IdentN(_Node):
    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class _DotN(_Node):
    __slots__ = ()


class _NilN(_Node):
    __slots__ = ()


class _ConstN(_Node):
    """A bool, number or string literal: its value, or the error Go gives when it is used."""

    __slots__ = ("error", "text", "value")

    def __init__(self, pos: int, text: str, value: Any, error: str | None = None) -> None:
        super().__init__(pos)
        self.text = text
        self.value = value
        self.error = error
