"""What execution works on: its state (output, variables, iterations), where an error happens, and
the steps the compiled closures take on values: fields, variables, what a range iterates."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import Any

from kubesched.tools.perf.gotemplate.errors import TemplateError, _ExecFailure
from kubesched.tools.perf.gotemplate.gofmt import _fmt_v
from kubesched.tools.perf.gotemplate.limits import MAX_OUTPUT, MAX_RANGE
from kubesched.tools.perf.gotemplate.values import _NO_VALUE, _sorted_items, _type_name

_Eval = Callable[["_State", Any], Any]
_Piped = Callable[["_State", Any, Any], Any]


class _State:
    __slots__ = ("out", "size", "steps", "vars")

    def __init__(self, data: Any) -> None:
        self.out: list[str] = []
        self.size = 0
        self.steps = 0
        self.vars: list[list[Any]] = [["$", data]]


class _Loc:
    """Where an execution error happens: `<template>:<line>: at <source>: <what is wrong>`."""

    __slots__ = ("line", "name", "src")

    def __init__(self, name: str, line: int, src: str) -> None:
        self.name = name
        self.line = line
        self.src = src if len(src) <= 60 else src[:57] + "..."

    def fail(self, msg: str) -> TemplateError:
        return TemplateError(f"{self.name}:{self.line}: at <{self.src}>: {msg}", self.name, self.line)


def _field(r: Any, name: str) -> Any:
    """r.name: a mapping's key (no value where missing)."""
    if type(r) is dict:
        return r.get(name, _NO_VALUE)
    if r is _NO_VALUE:
        return _NO_VALUE
    if isinstance(r, Mapping):
        try:
            return r[name]
        except KeyError:
            return _NO_VALUE
    if r is None:
        raise _ExecFailure(f"nil pointer evaluating interface {{}}.{name}")
    raise _ExecFailure(f"can't evaluate field {name} in type {_type_name(r)}")


def _field_with_args(r: Any, name: str) -> Any:
    """r.name given arguments: only a missing receiver gets away with that (fields are no methods)."""
    if r is _NO_VALUE:
        return _NO_VALUE
    if isinstance(r, Mapping):
        raise _ExecFailure(f"{name} is not a method but has arguments")
    return _field(r, name)


def _get_var(vars: list[list[Any]], name: str) -> Any:
    for pair in reversed(vars):
        if pair[0] == name:
            return pair[1]
    raise _ExecFailure(f"undefined variable: {name}")


def _set_var(vars: list[list[Any]], name: str, value: Any) -> None:
    for pair in reversed(vars):
        if pair[0] == name:
            pair[1] = value
            return
    raise _ExecFailure(f"undefined variable: {name}")


def _output_error(name: str, line: int) -> TemplateError:
    return TemplateError(f"{name}:{line}: the output is larger than {MAX_OUTPUT} characters", name, line)


def _noop(st: _State, dot: Any) -> None:
    return None


def _dot(st: _State, dot: Any) -> Any:
    return dot


def _nil(st: _State, dot: Any) -> Any:
    return None


def _range_items(v: Any, nvars: int) -> tuple[int, Iterable[tuple[Any, Any]]]:
    """What a range iterates: how many, and (index or key, element) pairs."""
    if v is _NO_VALUE or v is None:
        return 0, ()
    if isinstance(v, bool):
        raise _ExecFailure(f"range can't iterate over {_fmt_v(v)}")
    if isinstance(v, int):
        if nvars > 1:
            raise _ExecFailure(f"can't use {v} to iterate over more than one variable")
        if v > MAX_RANGE:
            raise _ExecFailure(f"range over {v}: more than the {MAX_RANGE} iterations allowed")
        count = max(int(v), 0)
        return count, zip(repeat(None), range(count))
    if isinstance(v, (list, tuple)):
        return len(v), enumerate(v)
    if isinstance(v, Mapping):
        items = _sorted_items(v)
        return len(items), items
    raise _ExecFailure(f"range can't iterate over {_fmt_v(v)}")
