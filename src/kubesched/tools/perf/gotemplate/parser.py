"""The parser (Go's text/template/parse/parse.go): the tokens into the parse tree, with Go's errors
for templates it refuses to parse."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, NoReturn

from kubesched.infra.gostrconv import quote as _quote
from kubesched.tools.perf.gotemplate.errors import TemplateError
from kubesched.tools.perf.gotemplate.funcs import _UNSUPPORTED_BUILTINS, _Fn
from kubesched.tools.perf.gotemplate.gostrconv import (
    _INT64_MAX,
    _INT64_MIN,
    _UINT64_MAX,
    _go_parse_float,
    _go_parse_int,
    _unquote,
    _unquote_char,
)
from kubesched.tools.perf.gotemplate.lexer import (
    _K_BLOCK,
    _K_BREAK,
    _K_CONTINUE,
    _K_DEFINE,
    _K_DOT,
    _K_ELSE,
    _K_END,
    _K_IF,
    _K_NIL,
    _K_RANGE,
    _K_TEMPLATE,
    _K_WITH,
    _T_ASSIGN,
    _T_BOOL,
    _T_CHAR,
    _T_CHAR_CONST,
    _T_COMPLEX,
    _T_DECLARE,
    _T_EOF,
    _T_ERROR,
    _T_FIELD,
    _T_IDENT,
    _T_LDELIM,
    _T_LPAREN,
    _T_NUMBER,
    _T_PIPE,
    _T_RAW,
    _T_RDELIM,
    _T_RPAREN,
    _T_SPACE,
    _T_STRING,
    _T_TEXT,
    _T_VARIABLE,
    _Tok,
    _tok_str,
)
from kubesched.tools.perf.gotemplate.limits import MAX_DEPTH
from kubesched.tools.perf.gotemplate.nodes import (
    _ActionN,
    _BreakN,
    _ChainN,
    _CmdN,
    _ConstN,
    _ContinueN,
    _ControlN,
    _DotN,
    _ElseN,
    _EndN,
    _FieldN,
    _IdentN,
    _NilN,
    _Node,
    _PipeN,
    _TextN,
    _VarN,
)

_OPERAND_START: Final = frozenset({_T_BOOL, _T_CHAR_CONST, _T_COMPLEX, _K_DOT, _T_FIELD, _T_IDENT, _T_NUMBER, _K_NIL,
                                   _T_RAW, _T_STRING, _T_VARIABLE, _T_LPAREN})


class _Parser:
    def __init__(self, name: str, text: str, toks: list[_Tok], funcs: Mapping[str, _Fn], lines: Callable[[int], int]) -> None:
        self.name = name
        self.text = text
        self.toks = toks
        self.i = 0
        self.funcs = funcs
        self.line = lines
        self.vars = ["$"]
        self.range_depth = 0
        self.depth = 0
        self.action_line = 0

    # -- tokens

    def next(self) -> _Tok:
        toks = self.toks
        t = toks[self.i] if self.i < len(toks) else toks[-1]
        self.i += 1
        return t

    def peek(self) -> _Tok:
        t = self.next()
        self.i -= 1
        return t

    def next_non_space(self) -> _Tok:
        t = self.next()
        while t.typ == _T_SPACE:
            t = self.next()
        return t

    def peek_non_space(self) -> _Tok:
        t = self.next_non_space()
        self.i -= 1
        return t

    def error(self, pos: int, msg: str) -> NoReturn:
        line = self.line(pos)
        raise TemplateError(f"{self.name}:{line}: {msg}", self.name, line)

    def unexpected(self, t: _Tok, context: str) -> NoReturn:
        if t.typ == _T_ERROR:
            extra = ""
            line = self.line(t.pos)
            if self.action_line and self.action_line != line:
                extra = f" in action started at {self.name}:{self.action_line}"
                if t.val.endswith(" action"):
                    extra = extra[len(" in action") :]
            self.error(t.pos, t.val + extra)
        self.error(t.pos, f"unexpected {_tok_str(t)} in {context}")

    # -- structure

    def parse(self) -> list[_Node]:
        root: list[_Node] = []
        while self.peek().typ != _T_EOF:
            n = self.text_or_action()
            if isinstance(n, _EndN):
                self.error(n.pos, "unexpected {{end}}")
            if isinstance(n, _ElseN):
                self.error(n.pos, "unexpected {{else}}")
            root.append(n)
        return root

    def item_list(self, context: str, opened: _Tok) -> tuple[list[_Node], _Node]:
        nodes: list[_Node] = []
        while self.peek_non_space().typ != _T_EOF:
            n = self.text_or_action()
            if isinstance(n, (_EndN, _ElseN)):
                return nodes, n
            nodes.append(n)
        eof = self.peek()
        if eof.typ == _T_ERROR:
            self.unexpected(eof, "input")
        self.error(eof.pos, f"unexpected EOF: the {{{{{context}}}}} at line {self.line(opened.pos)} has no {{{{end}}}}")

    def text_or_action(self) -> _Node:
        t = self.next_non_space()
        if t.typ == _T_TEXT:
            return _TextN(t.pos, t.val)
        if t.typ == _T_LDELIM:
            self.action_line = self.line(t.pos)
            try:
                return self.action()
            finally:
                self.action_line = 0
        self.unexpected(t, "input")

    def action(self) -> _Node:
        t = self.next_non_space()
        typ = t.typ
        if typ in (_K_BLOCK, _K_DEFINE, _K_TEMPLATE):
            self.error(t.pos, f"{{{{{t.val}}}}} is not supported: define, template and block need named templates, "
                              "which this evaluator does not have")
        if typ in (_K_BREAK, _K_CONTINUE):
            close = self.next_non_space()
            if close.typ != _T_RDELIM:
                self.unexpected(close, f"{{{{{t.val}}}}}")
            if self.range_depth == 0:
                self.error(t.pos, f"{{{{{t.val}}}}} outside {{{{range}}}}")
            return _BreakN(t.pos) if typ == _K_BREAK else _ContinueN(t.pos)
        if typ == _K_ELSE:
            nxt = self.peek_non_space()
            if nxt.typ not in (_K_IF, _K_WITH):
                close = self.next_non_space()
                if close.typ != _T_RDELIM:
                    self.unexpected(close, "else")
            return _ElseN(t.pos)
        if typ == _K_END:
            close = self.next_non_space()
            if close.typ != _T_RDELIM:
                self.unexpected(close, "end")
            return _EndN(t.pos)
        if typ in (_K_IF, _K_RANGE, _K_WITH):
            return self.control(t)
        self.i -= 1
        start = self.peek_non_space()
        return _ActionN(start.pos, self.pipeline("command", _T_RDELIM))

    def control(self, opened: _Tok) -> _ControlN:
        context = opened.val
        saved = len(self.vars)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.error(opened.pos, f"control structures nested more than {MAX_DEPTH} deep")
        pipe = self.pipeline(context, _T_RDELIM)
        if context == "range":
            self.range_depth += 1
        body, nxt = self.item_list(context, opened)
        if context == "range":
            self.range_depth -= 1
        else_: list[_Node] | None = None
        if isinstance(nxt, _ElseN):
            follow = self.peek()
            if (context == "if" and follow.typ == _K_IF) or (context == "with" and follow.typ == _K_WITH):
                else_ = [self.control(self.next())]
            else:
                else_, end = self.item_list(context, opened)
                if not isinstance(end, _EndN):
                    self.error(end.pos, "expected end; found {{else}}")
        del self.vars[saved:]
        self.depth -= 1
        return _ControlN(opened.pos, context, pipe, body, else_)

    def pipeline(self, context: str, end: int) -> _PipeN:
        start = self.peek_non_space()
        pipe = _PipeN(start.pos)
        while True:
            v = self.peek_non_space()
            if v.typ != _T_VARIABLE:
                break
            at_variable = self.i
            self.next()
            nxt = self.peek_non_space()
            if nxt.typ in (_T_ASSIGN, _T_DECLARE):
                pipe.is_assign = nxt.typ == _T_ASSIGN
                self.next_non_space()
                pipe.decl.append(v.val)
                self.vars.append(v.val)
                break
            if nxt.typ == _T_CHAR and nxt.val == ",":
                self.next_non_space()
                pipe.decl.append(v.val)
                self.vars.append(v.val)
                if context == "range" and len(pipe.decl) < 2:
                    if self.peek_non_space().typ in (_T_VARIABLE, _T_RDELIM, _T_RPAREN):
                        continue
                    self.error(nxt.pos, "range can only initialize variables")
                self.error(nxt.pos, f"too many declarations in {context}")
            self.i = at_variable
            break
        while True:
            t = self.next_non_space()
            if t.typ == end:
                if not pipe.cmds:
                    self.error(t.pos, f"missing value for {context}")
                for i, cmd in enumerate(pipe.cmds[1:]):
                    first = cmd.args[0]
                    if isinstance(first, (_ConstN, _DotN, _NilN)):
                        self.error(cmd.pos, f"non executable command in pipeline stage {i + 2}")
                pipe.src = " ".join(self.text[start.pos : t.pos].split())
                return pipe
            if t.typ in _OPERAND_START:
                self.i -= 1
                pipe.cmds.append(self.command())
            else:
                self.unexpected(t, context)

    def command(self) -> _CmdN:
        start = self.peek_non_space()
        args: list[_Node] = []
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                args.append(operand)
            t = self.next()
            if t.typ == _T_SPACE:
                continue
            if t.typ in (_T_RDELIM, _T_RPAREN):
                self.i -= 1
            elif t.typ != _T_PIPE:
                self.unexpected(t, "operand")
            break
        if not args:
            self.error(start.pos, "empty command")
        src = " ".join(self.text[start.pos : t.pos].split())
        return _CmdN(start.pos, args, src)

    def operand(self) -> _Node | None:
        node = self.term()
        if node is None:
            return None
        if self.peek().typ == _T_FIELD:
            fields: list[str] = []
            while self.peek().typ == _T_FIELD:
                fields.append(self.next().val[1:])
            if isinstance(node, _FieldN):
                return _FieldN(node.pos, node.names + fields)
            if isinstance(node, _VarN):
                return _VarN(node.pos, node.name, node.fields + fields)
            if isinstance(node, (_ConstN, _NilN, _DotN)):
                term = node.text if isinstance(node, _ConstN) else ("nil" if isinstance(node, _NilN) else ".")
                self.error(node.pos, f"unexpected . after term {_quote(term)}")
            return _ChainN(node.pos, node, fields)
        return node

    def term(self) -> _Node | None:
        t = self.next_non_space()
        typ = t.typ
        if typ == _T_IDENT:
            if t.val not in self.funcs:
                if t.val in _UNSUPPORTED_BUILTINS:
                    self.error(t.pos, f"function {_quote(t.val)} is not supported")
                self.error(t.pos, f"function {_quote(t.val)} not defined")
            return _IdentN(t.pos, t.val)
        if typ == _K_DOT:
            return _DotN(t.pos)
        if typ == _K_NIL:
            return _NilN(t.pos)
        if typ == _T_VARIABLE:
            if t.val not in self.vars:
                self.error(t.pos, f"undefined variable {_quote(t.val)}")
            return _VarN(t.pos, t.val, [])
        if typ == _T_FIELD:
            return _FieldN(t.pos, [t.val[1:]])
        if typ == _T_BOOL:
            return _ConstN(t.pos, t.val, t.val == "true")
        if typ in (_T_NUMBER, _T_CHAR_CONST, _T_COMPLEX):
            return self.number(t)
        if typ == _T_LPAREN:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                self.error(t.pos, f"parentheses nested more than {MAX_DEPTH} deep")
            pipe = self.pipeline("parenthesized pipeline", _T_RPAREN)
            self.depth -= 1
            return pipe
        if typ in (_T_STRING, _T_RAW):
            try:
                return _ConstN(t.pos, t.val, _unquote(t.val))
            except ValueError as exc:
                self.error(t.pos, f"invalid syntax in {t.val}: {exc}")
        self.i -= 1
        return None

    def number(self, t: _Tok) -> _ConstN:
        """Go's newNumber and, for the value, idealConstant: a float if written with . e or p
        (and not hex), else an int."""
        text = t.val
        if t.typ == _T_CHAR_CONST:
            try:
                value, _, nxt = _unquote_char(text, 1, "'")
            except (ValueError, IndexError):
                self.error(t.pos, f"invalid syntax in character constant {text}")
            if text[nxt:] != "'":
                self.error(t.pos, f"malformed character constant: {text}")
            return _ConstN(t.pos, text, value)
        if t.typ == _T_COMPLEX or text.endswith("i"):
            self.error(t.pos, f"complex number {text} is not supported")
        i = _go_parse_int(text)
        if i is not None:
            if _INT64_MIN <= i <= _INT64_MAX:
                return _ConstN(t.pos, text, i)
            if text[0] not in "+-" and i <= _UINT64_MAX:
                return _ConstN(t.pos, text, None, f"{text} overflows int")
        f = _go_parse_float(text) if text[:1] not in "iInN" else None
        if f is None:
            self.error(t.pos, f"illegal number syntax: {_quote(text)}")
        if not any(c in text for c in ".eEpP"):
            self.error(t.pos, f"integer overflow: {_quote(text)}")
        return _ConstN(t.pos, text, f)
