"""The compiler: the parse tree into closures. An expression is `(state, dot) -> value`; a command
after the first of a pipeline also takes the previous command's value."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kubesched.tools.perf.gotemplate.errors import TemplateError, _Break, _Continue, _ExecFailure
from kubesched.tools.perf.gotemplate.funcs import _Fn
from kubesched.tools.perf.gotemplate.gofmt import _print_top
from kubesched.tools.perf.gotemplate.limits import MAX_ITERATIONS, MAX_OUTPUT
from kubesched.tools.perf.gotemplate.nodes import (
    _ActionN,
    _BreakN,
    _ChainN,
    _CmdN,
    _ConstN,
    _ContinueN,
    _ControlN,
    _DotN,
    _FieldN,
    _IdentN,
    _NilN,
    _Node,
    _PipeN,
    _TextN,
    _VarN,
)
from kubesched.tools.perf.gotemplate.runtime import (
    _dot,
    _Eval,
    _field,
    _field_with_args,
    _get_var,
    _Loc,
    _nil,
    _noop,
    _output_error,
    _Piped,
    _range_items,
    _set_var,
    _State,
)
from kubesched.tools.perf.gotemplate.values import _MISSING, _NO_VALUE, _truth


class _Compiler:
    def __init__(self, name: str, funcs: Mapping[str, _Fn], lines: Callable[[int], int]) -> None:
        self.name = name
        self.funcs = funcs
        self.line = lines

    def loc(self, pos: int, src: str) -> _Loc:
        return _Loc(self.name, self.line(pos), src)

    def block(self, nodes: Iterable[_Node]) -> _Eval:
        merged: list[_Node] = []
        for n in nodes:
            if isinstance(n, _TextN) and merged and isinstance(merged[-1], _TextN):
                merged[-1] = _TextN(merged[-1].pos, merged[-1].text + n.text)
            else:
                merged.append(n)
        fns = tuple(self.node(n) for n in merged)
        if not fns:
            return _noop
        if len(fns) == 1:
            return fns[0]

        def run(st: _State, dot: Any) -> None:
            for f in fns:
                f(st, dot)

        return run

    def node(self, n: _Node) -> _Eval:
        if isinstance(n, _TextN):
            return self.text(n)
        if isinstance(n, _ActionN):
            return self.action(n)
        if isinstance(n, _ControlN):
            if n.kind == "range":
                return self.range(n)
            return self.if_with(n)
        if isinstance(n, _BreakN):
            def brk(st: _State, dot: Any) -> None:
                raise _Break
            return brk
        if isinstance(n, _ContinueN):
            def cont(st: _State, dot: Any) -> None:
                raise _Continue
            return cont
        raise AssertionError(f"unexpected node {n!r}")

    def text(self, node: _TextN) -> _Eval:
        text = node.text
        n = len(text)
        name = self.name
        line = self.line(node.pos)

        def run(st: _State, dot: Any) -> None:
            st.out.append(text)
            size = st.size + n
            st.size = size
            if size > MAX_OUTPUT:
                raise _output_error(name, line)

        return run

    def action(self, n: _ActionN) -> _Eval:
        pipe = self.pipeline(n.pipe)
        if n.pipe.decl:
            return pipe
        name = self.name
        line = self.line(n.pos)

        def run(st: _State, dot: Any) -> None:
            v = pipe(st, dot)
            t = type(v)
            s = v if t is str else str(v) if t is int else _print_top(v)
            st.out.append(s)
            size = st.size + len(s)
            st.size = size
            if size > MAX_OUTPUT:
                raise _output_error(name, line)

        return run

    def if_with(self, n: _ControlN) -> _Eval:
        pipe = self.pipeline(n.pipe)
        body = self.block(n.body)
        else_ = self.block(n.else_) if n.else_ is not None else None
        if n.kind == "if":
            def run_if(st: _State, dot: Any) -> None:
                vars = st.vars
                mark = len(vars)
                if _truth(pipe(st, dot)):
                    body(st, dot)
                elif else_ is not None:
                    else_(st, dot)
                del vars[mark:]
            return run_if

        def run_with(st: _State, dot: Any) -> None:
            vars = st.vars
            mark = len(vars)
            v = pipe(st, dot)
            if _truth(v):
                body(st, v)
            elif else_ is not None:
                else_(st, dot)
            del vars[mark:]

        return run_with

    def range(self, n: _ControlN) -> _Eval:
        pipe = self.pipeline(n.pipe)
        body = self.block(n.body)
        else_ = self.block(n.else_) if n.else_ is not None else None
        decl = tuple(n.pipe.decl)
        assign = n.pipe.is_assign
        loc = self.loc(n.pos, "range " + n.pipe.src)

        def run(st: _State, dot: Any) -> None:
            vars = st.vars
            mark0 = len(vars)
            v = pipe(st, dot)
            mark = len(vars)
            try:
                counted = _range_items(v, len(decl))
            except _ExecFailure as exc:
                raise loc.fail(str(exc)) from None
            count, items = counted
            if count:
                st.steps += count
                if st.steps > MAX_ITERATIONS:
                    raise loc.fail(f"more than {MAX_ITERATIONS} range iterations")
                slots = vars[mark - len(decl) : mark] if decl and not assign else []
                try:
                    for index, elem in items:
                        if slots:
                            slots[-1][1] = elem
                            if len(slots) > 1:
                                slots[0][1] = index
                        elif decl:
                            try:
                                if len(decl) > 1:
                                    _set_var(vars, decl[0], index)
                                    _set_var(vars, decl[1], elem)
                                else:
                                    _set_var(vars, decl[0], elem)
                            except _ExecFailure as exc:
                                raise loc.fail(str(exc)) from None
                        try:
                            body(st, elem)
                        except _Continue:
                            del vars[mark:]
                            continue
                        del vars[mark:]
                except _Break:
                    pass
            elif else_ is not None:
                else_(st, dot)
            del vars[mark0:]

        return run

    # -- pipelines and commands

    def pipeline(self, p: _PipeN) -> _Eval:
        first: _Eval = self.command(p.cmds[0], piped=False)
        rest: tuple[_Piped, ...] = tuple(self.command(c, piped=True) for c in p.cmds[1:])
        if not p.decl:
            if not rest:
                return first

            def run(st: _State, dot: Any) -> Any:
                v = first(st, dot)
                for c in rest:
                    v = c(st, dot, v)
                return v

            return run
        names = tuple(p.decl)
        assign = p.is_assign
        loc = self.loc(p.pos, p.src)

        def run_decl(st: _State, dot: Any) -> Any:
            v = first(st, dot)
            for c in rest:
                v = c(st, dot, v)
            vars = st.vars
            for name in names:
                if assign:
                    try:
                        _set_var(vars, name, v)
                    except _ExecFailure as exc:
                        raise loc.fail(str(exc)) from None
                else:
                    vars.append([name, v])
            return v

        return run_decl

    def command(self, cmd: _CmdN, piped: bool) -> Any:
        """The command's closure: (state, dot) -> value, or (state, dot, previous) -> value when piped.
        Its value is Go's after the pipeline's step (a nil interface becomes no value)."""
        first = cmd.args[0]
        loc = self.loc(cmd.pos, cmd.src)
        has_args = len(cmd.args) > 1 or piped
        if isinstance(first, _IdentN):
            return self.call(first.name, cmd.args[1:], piped, loc)
        if isinstance(first, _FieldN):
            return self.field_command(_dot, first.names, has_args, piped, loc)
        if isinstance(first, _ChainN):
            return self.field_command(self.arg(first.node), first.fields, has_args, piped, loc)
        if isinstance(first, _VarN) and first.fields:
            return self.field_command(self.var_getter(first.name, []), first.fields, has_args, piped, loc)
        if has_args:
            what = f"({first.src})" if isinstance(first, _PipeN) else cmd.src.split()[0]
            return self.failing(loc, f"can't give argument to non-function {what}")
        if isinstance(first, _PipeN):
            return self.pipeline(first)
        if isinstance(first, _VarN):
            getter = self.var_getter(first.name, [])

            def var(st: _State, dot: Any) -> Any:
                try:
                    v = getter(st, dot)
                except _ExecFailure as exc:
                    raise loc.fail(str(exc)) from None
                return _NO_VALUE if v is None else v

            return var
        if isinstance(first, _DotN):
            def dot_(st: _State, dot: Any) -> Any:
                return _NO_VALUE if dot is None else dot
            return dot_
        if isinstance(first, _NilN):
            return self.failing(loc, "nil is not a command")
        assert isinstance(first, _ConstN)
        if first.error is not None:
            return self.failing(loc, first.error)
        value = first.value

        def const(st: _State, dot: Any) -> Any:
            return value

        return const

    def failing(self, loc: _Loc, msg: str) -> Any:
        """A command Go accepts in Parse but refuses when it executes it."""

        def fail(st: _State, dot: Any, final: Any = _MISSING) -> Any:
            raise loc.fail(msg)
        return fail

    def field_command(self, receiver: _Eval, names: list[str], has_args: bool, piped: bool, loc: _Loc) -> Any:
        *mids, last = names
        if receiver is _dot and not mids and not has_args:
            def field1(st: _State, dot: Any) -> Any:
                if type(dot) is dict:
                    v = dot.get(last, _NO_VALUE)
                else:
                    try:
                        v = _field(dot, last)
                    except _ExecFailure as exc:
                        raise loc.fail(str(exc)) from None
                return _NO_VALUE if v is None else v
            return field1
        get_last = _field_with_args if has_args else _field

        def field(st: _State, dot: Any, final: Any = _MISSING) -> Any:
            try:
                r = receiver(st, dot)
                for name in mids:
                    r = _field(r, name)
                r = get_last(r, last)
            except _ExecFailure as exc:
                raise loc.fail(str(exc)) from None
            return _NO_VALUE if r is None else r

        return field

    def var_getter(self, name: str, fields: list[str]) -> _Eval:
        if not fields:
            def var(st: _State, dot: Any) -> Any:
                return _get_var(st.vars, name)
            return var

        def var_fields(st: _State, dot: Any) -> Any:
            r = _get_var(st.vars, name)
            for f in fields:
                r = _field(r, f)
            return r

        return var_fields

    def arg(self, n: _Node) -> _Eval:
        """An argument's value as a function receives it (no value stays no value here)."""
        if isinstance(n, _DotN):
            return _dot
        if isinstance(n, _NilN):
            return _nil
        if isinstance(n, _FieldN):
            names = n.names
            if len(names) == 1:
                name = names[0]

                def field1(st: _State, dot: Any) -> Any:
                    if type(dot) is dict:
                        return dot.get(name, _NO_VALUE)
                    return _field(dot, name)

                return field1

            def field(st: _State, dot: Any) -> Any:
                r = dot
                for nm in names:
                    r = _field(r, nm)
                return r

            return field
        if isinstance(n, _VarN):
            return self.var_getter(n.name, n.fields)
        if isinstance(n, _PipeN):
            return self.pipeline(n)
        if isinstance(n, _IdentN):
            loc = self.loc(n.pos, n.name)
            call: _Eval = self.call(n.name, [], False, loc)
            return call
        if isinstance(n, _ChainN):
            receiver = self.arg(n.node)
            fields = n.fields

            def chain(st: _State, dot: Any) -> Any:
                r = receiver(st, dot)
                for f in fields:
                    r = _field(r, f)
                return r

            return chain
        assert isinstance(n, _ConstN)
        if n.error is not None:
            msg = n.error

            def bad(st: _State, dot: Any) -> Any:
                raise _ExecFailure(msg)

            return bad
        value = n.value

        def const(st: _State, dot: Any) -> Any:
            return value

        return const

    def call(self, name: str, argnodes: Sequence[_Node], piped: bool, loc: _Loc) -> Any:
        fn = self.funcs[name]
        count = len(argnodes) + (1 if piped else 0)
        if count < fn.least or (fn.most is not None and count > fn.most):
            if fn.most is None:
                want = f"at least {fn.least}"
            elif fn.least == fn.most:
                want = str(fn.least)
            else:
                want = f"{fn.least} to {fn.most}"
            return self.failing(loc, f"wrong number of args for {name}: want {want} got {count}")
        argfns = tuple(self.arg(a) for a in argnodes)
        if fn.builtin and name in ("and", "or"):
            return self.and_or(name == "or", argfns, piped, loc)
        f = fn.fn
        user = not fn.builtin

        def failed(exc: Exception) -> TemplateError:
            if isinstance(exc, _ExecFailure):
                return loc.fail(str(exc))
            return loc.fail(f"error calling {name}: {str(exc) or type(exc).__name__}")

        if not piped and len(argfns) == 1 and user:
            a0 = argfns[0]

            def call1(st: _State, dot: Any) -> Any:
                try:
                    x = a0(st, dot)
                except _ExecFailure as exc:
                    raise loc.fail(str(exc)) from None
                try:
                    r = f(None if x is _NO_VALUE else x)
                except Exception as exc:
                    raise failed(exc) from exc
                return _NO_VALUE if r is None else r

            return call1
        if not piped and len(argfns) == 2 and user:
            a0, a1 = argfns

            def call2(st: _State, dot: Any) -> Any:
                try:
                    x = a0(st, dot)
                    y = a1(st, dot)
                except _ExecFailure as exc:
                    raise loc.fail(str(exc)) from None
                try:
                    r = f(None if x is _NO_VALUE else x, None if y is _NO_VALUE else y)
                except Exception as exc:
                    raise failed(exc) from exc
                return _NO_VALUE if r is None else r

            return call2

        def call(st: _State, dot: Any, final: Any = _MISSING) -> Any:
            try:
                args = [a(st, dot) for a in argfns]
            except _ExecFailure as exc:
                raise loc.fail(str(exc)) from None
            if piped:
                args.append(final)
            if user:
                args = [None if a is _NO_VALUE else a for a in args]
            try:
                r = f(*args)
            except Exception as exc:
                raise failed(exc) from exc
            return _NO_VALUE if r is None else r

        return call

    def and_or(self, is_or: bool, argfns: tuple[_Eval, ...], piped: bool, loc: _Loc) -> Any:
        def run(st: _State, dot: Any, final: Any = _MISSING) -> Any:
            v: Any = _NO_VALUE
            try:
                for a in argfns:
                    v = a(st, dot)
                    if _truth(v) == is_or:
                        return _NO_VALUE if v is None else v
            except _ExecFailure as exc:
                raise loc.fail(str(exc)) from None
            if piped:
                v = final
            return _NO_VALUE if v is None else v

        return run
