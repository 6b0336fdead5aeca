"""The API: a template parsed once into a Template, executed once per object."""

from __future__ import annotations

import bisect
import re
from types import MappingProxyType
from typing import Any, Final

from kubesched.tools.perf.gotemplate.errors import TemplateError
from kubesched.tools.perf.gotemplate.execute import _Compiler
from kubesched.tools.perf.gotemplate.funcs import _BUILTINS, _IDENT, FuncMap, _arity, _Fn
from kubesched.tools.perf.gotemplate.lexer import _Lexer
from kubesched.tools.perf.gotemplate.limits import MAX_OUTPUT
from kubesched.tools.perf.gotemplate.nodes import _TextN
from kubesched.tools.perf.gotemplate.parser import _Parser
from kubesched.tools.perf.gotemplate.runtime import _Eval, _State
from kubesched.tools.perf.gotemplate.values import _NO_VALUE


class Template:
    """A parsed template; execute it as often as needed (it keeps no state between executions)."""

    __slots__ = ("_run", "_static", "name")

    def __init__(self, name: str, run: _Eval, static: str | None) -> None:
        self.name = name
        self._run = run
        self._static = static

    def execute(self, data: Any) -> str:
        """The template's output for `data` (Go's `.` and `$`). TemplateError if it fails."""
        if self._static is not None:
            return self._static
        dot = _NO_VALUE if data is None else data
        st = _State(dot)
        try:
            self._run(st, dot)
        except RecursionError:
            raise TemplateError(f"{self.name}: the data are nested too deep (or contain themselves)", self.name) from None
        return "".join(st.out)

    def __repr__(self) -> str:
        return f"<Template {self.name!r}>"


_NO_FUNCS: Final[FuncMap] = MappingProxyType({})


def parse(text: str, name: str, funcs: FuncMap = _NO_FUNCS) -> Template:
    """Parses `text` as Go's template.New(name).Funcs(funcs).Parse(text) does: syntax errors,
    undefined variables and unknown functions are TemplateErrors here."""
    table: dict[str, _Fn] = dict(_BUILTINS)
    for fname, fn in funcs.items():
        if not isinstance(fname, str) or not _IDENT.fullmatch(fname):
            raise TemplateError(f"{name}: function name {fname!r} is not a valid identifier", name)
        if not callable(fn):
            raise TemplateError(f"{name}: the value for function {fname!r} is not callable", name)
        least, most = _arity(fn)
        table[fname] = _Fn(fn, False, least, most)
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line(pos: int) -> int:
        return 1 + bisect.bisect_left(newlines, pos)

    toks = _Lexer(text, "break" not in table, "continue" not in table).run()
    root = _Parser(name, text, toks, table, line).parse()
    static: str | None = None
    if all(isinstance(n, _TextN) for n in root) and len(text) <= MAX_OUTPUT:
        static = "".join(n.text for n in root if isinstance(n, _TextN))
    return Template(name, _Compiler(name, table, line).block(root), static)


def render(text: str, data: Any, *, name: str, funcs: FuncMap = _NO_FUNCS) -> str:
    """parse(text, name, funcs).execute(data)."""
    return parse(text, name, funcs).execute(data)
