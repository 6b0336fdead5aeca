"""The lexer (Go's text/template/parse/lex.go, as a token list)."""

from __future__ import annotations

from typing import Final, NamedTuple

from kubesched.infra.gostrconv import quote as _quote
from kubesched.tools.perf.gotemplate.gofmt import _sharp_u

(_T_ERROR, _T_BOOL, _T_CHAR, _T_CHAR_CONST, _T_COMPLEX, _T_ASSIGN, _T_DECLARE, _T_EOF, _T_FIELD, _T_IDENT,
 _T_LDELIM, _T_LPAREN, _T_NUMBER, _T_PIPE, _T_RAW, _T_RDELIM, _T_RPAREN, _T_SPACE, _T_STRING, _T_TEXT,
 _T_VARIABLE) = range(21)
(_K_BLOCK, _K_BREAK, _K_CONTINUE, _K_DOT, _K_DEFINE, _K_ELSE, _K_END, _K_IF, _K_NIL, _K_RANGE, _K_TEMPLATE,
 _K_WITH) = range(100, 112)
_KEYWORDS: Final = {".": _K_DOT, "block": _K_BLOCK, "break": _K_BREAK, "continue": _K_CONTINUE, "define": _K_DEFINE,
                    "else": _K_ELSE, "end": _K_END, "if": _K_IF, "range": _K_RANGE, "nil": _K_NIL,
                    "template": _K_TEMPLATE, "with": _K_WITH}
_SPACES: Final = frozenset(" \t\r\n")
_TERMINATORS: Final = frozenset(" \t\r\n.,|:()")


class _Tok(NamedTuple):
    typ: int
    val: str
    pos: int


def _is_alnum(c: str) -> bool:
    return c == "_" or c.isalpha() or c.isdecimal()


def _tok_str(t: _Tok) -> str:
    """Go's item.String(), for "unexpected ..." messages."""
    if t.typ == _T_EOF:
        return "EOF"
    if t.typ == _T_ERROR:
        return t.val
    if t.typ >= _K_BLOCK:
        return f"<{t.val}>"
    if len(t.val) > 10:
        return _quote(t.val[:10]) + "..."
    return _quote(t.val)


class _Lexer:
    def __init__(self, text: str, break_ok: bool, continue_ok: bool) -> None:
        self.text = text
        self.n = len(text)
        self.break_ok = break_ok
        self.continue_ok = continue_ok
        self.toks: list[_Tok] = []

    def run(self) -> list[_Tok]:
        text, n, toks = self.text, self.n, self.toks
        pos = 0
        while True:
            x = text.find("{{", pos)
            if x < 0:
                if pos < n:
                    toks.append(_Tok(_T_TEXT, text[pos:], pos))
                toks.append(_Tok(_T_EOF, "", n))
                return toks
            trim = self._left_trim(x + 2)
            end = pos + len(text[pos:x].rstrip(" \t\r\n")) if trim else x
            if end > pos:
                toks.append(_Tok(_T_TEXT, text[pos:end], pos))
            p = x + 2 + (2 if trim else 0)
            if text.startswith("/*", p):
                close = text.find("*/", p + 2)
                if close < 0:
                    return self._error("unclosed comment", x)
                q = close + 2
                delim, rtrim = self._at_right_delim(q)
                if not delim:
                    return self._error("comment ends before closing delimiter", x)
                pos = q + (2 if rtrim else 0) + 2
                if rtrim:
                    pos = self._skip_space(pos)
                continue
            toks.append(_Tok(_T_LDELIM, "{{", x))
            pos = self._action(p)
            if pos < 0:
                return toks

    def _left_trim(self, p: int) -> bool:
        return self.text.startswith("-", p) and p + 1 < self.n and self.text[p + 1] in _SPACES

    def _at_right_delim(self, p: int) -> tuple[bool, bool]:
        text = self.text
        if text.startswith("}}", p):
            return True, False
        if p < self.n and text[p] in _SPACES and text.startswith("-}}", p + 1):
            return True, True
        return False, False

    def _skip_space(self, p: int) -> int:
        while p < self.n and self.text[p] in _SPACES:
            p += 1
        return p

    def _at_terminator(self, p: int) -> bool:
        return p >= self.n or self.text[p] in _TERMINATORS or self.text.startswith("}}", p)

    def _error(self, msg: str, pos: int) -> list[_Tok]:
        self.toks.append(_Tok(_T_ERROR, msg, pos))
        self.toks.append(_Tok(_T_EOF, "", self.n))
        return self.toks

    def _bad_char(self, p: int) -> int:
        self._error(f"bad character {_sharp_u(self.text[p])}", p)
        return -1

    def _action(self, pos: int) -> int:
        """Lexes the inside of an action from pos; the position after it, or -1 after an error."""
        text, n, toks = self.text, self.n, self.toks
        paren = 0
        while True:
            delim, rtrim = self._at_right_delim(pos)
            if delim:
                if paren:
                    self._error("unclosed left paren", pos)
                    return -1
                toks.append(_Tok(_T_RDELIM, "}}", pos))
                pos += 4 if rtrim else 2
                return self._skip_space(pos) if rtrim else pos
            if pos >= n:
                self._error("unclosed action", n)
                return -1
            c = text[pos]
            if c in _SPACES:
                s = pos
                pos = self._skip_space(pos)
                if text.startswith("-}}", pos):
                    pos -= 1
                    if pos == s:
                        continue
                toks.append(_Tok(_T_SPACE, text[s:pos], s))
            elif c == "=":
                toks.append(_Tok(_T_ASSIGN, "=", pos))
                pos += 1
            elif c == ":":
                if not text.startswith(":=", pos):
                    self._error("expected :=", pos)
                    return -1
                toks.append(_Tok(_T_DECLARE, ":=", pos))
                pos += 2
            elif c == "|":
                toks.append(_Tok(_T_PIPE, "|", pos))
                pos += 1
            elif c == '"' or c == "'":
                q = pos + 1
                while True:
                    if q >= n or text[q] == "\n":
                        kind = "quoted string" if c == '"' else "character constant"
                        self._error(f"unterminated {kind}", pos)
                        return -1
                    if text[q] == "\\":
                        if q + 1 >= n or text[q + 1] == "\n":
                            kind = "quoted string" if c == '"' else "character constant"
                            self._error(f"unterminated {kind}", pos)
                            return -1
                        q += 2
                        continue
                    q += 1
                    if text[q - 1] == c:
                        break
                toks.append(_Tok(_T_STRING if c == '"' else _T_CHAR_CONST, text[pos:q], pos))
                pos = q
            elif c == "`":
                q = text.find("`", pos + 1)
                if q < 0:
                    self._error("unterminated raw quoted string", pos)
                    return -1
                toks.append(_Tok(_T_RAW, text[pos : q + 1], pos))
                pos = q + 1
            elif c == "$" or (c == "." and not (pos + 1 < n and "0" <= text[pos + 1] <= "9")):
                q = pos + 1
                if self._at_terminator(q):
                    toks.append(_Tok(_T_VARIABLE if c == "$" else _K_DOT, c, pos))
                else:
                    while q < n and _is_alnum(text[q]):
                        q += 1
                    if not self._at_terminator(q):
                        return self._bad_char(q)
                    toks.append(_Tok(_T_VARIABLE if c == "$" else _T_FIELD, text[pos:q], pos))
                pos = q
            elif c in "+-." or "0" <= c <= "9":
                pos = self._number(pos)
                if pos < 0:
                    return -1
            elif _is_alnum(c):
                q = pos
                while q < n and _is_alnum(text[q]):
                    q += 1
                if not self._at_terminator(q):
                    return self._bad_char(q)
                word = text[pos:q]
                typ = _KEYWORDS.get(word, _T_IDENT)
                if (typ == _K_BREAK and not self.break_ok) or (typ == _K_CONTINUE and not self.continue_ok):
                    typ = _T_IDENT
                elif word in ("true", "false"):
                    typ = _T_BOOL
                toks.append(_Tok(typ, word, pos))
                pos = q
            elif c == "(":
                paren += 1
                toks.append(_Tok(_T_LPAREN, c, pos))
                pos += 1
            elif c == ")":
                paren -= 1
                if paren < 0:
                    self._error("unexpected right paren", pos)
                    return -1
                toks.append(_Tok(_T_RPAREN, c, pos))
                pos += 1
            elif c.isascii() and c.isprintable():
                toks.append(_Tok(_T_CHAR, c, pos))
                pos += 1
            else:
                self._error(f"unrecognized character in action: {_sharp_u(c)}", pos)
                return -1

    def _scan_number(self, p: int) -> tuple[int, bool]:
        text, n = self.text, self.n

        def run(p: int, chars: str) -> int:
            while p < n and text[p] in chars:
                p += 1
            return p

        if p < n and text[p] in "+-":
            p += 1
        digits = "0123456789_"
        if p < n and text[p] == "0":
            p += 1
            if p < n and text[p] in "xX":
                p += 1
                digits = "0123456789abcdefABCDEF_"
            elif p < n and text[p] in "oO":
                p += 1
                digits = "01234567_"
            elif p < n and text[p] in "bB":
                p += 1
                digits = "01_"
        p = run(p, digits)
        if p < n and text[p] == ".":
            p = run(p + 1, digits)
        if (len(digits) == 11 and p < n and text[p] in "eE") or (len(digits) == 23 and p < n and text[p] in "pP"):
            p += 1
            if p < n and text[p] in "+-":
                p += 1
            p = run(p, "0123456789_")
        if p < n and text[p] == "i":
            p += 1
        if p < n and _is_alnum(text[p]):
            return p + 1, False
        return p, True

    def _number(self, pos: int) -> int:
        p, ok = self._scan_number(pos)
        if not ok:
            self._error(f"bad number syntax: {_quote(self.text[pos:p])}", pos)
            return -1
        typ = _T_NUMBER
        if p < self.n and self.text[p] in "+-":
            p, ok = self._scan_number(p)
            if not ok or self.text[p - 1] != "i":
                self._error(f"bad number syntax: {_quote(self.text[pos:p])}", pos)
                return -1
            typ = _T_COMPLEX
        self.toks.append(_Tok(typ, self.text[pos:p], pos))
        return p
