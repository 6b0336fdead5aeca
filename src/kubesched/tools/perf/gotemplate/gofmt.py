"""Go's fmt for YAML values: Sprint, Sprintln and Sprintf (Go's verbs, flags, widths, precisions and
argument indexes, and its errors written into the result), and what an action prints.

Go's %v of a float64 is %g with the shortest digits, so 1e20 prints 1e+20 (encoding/json, used by
the JSON function, writes 100000000000000000000).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesched.infra.gostrconv import quote as _quote
from kubesched.tools.perf.gotemplate.gostrconv import _UINT64_MAX, _can_backquote, _strconv_float
from kubesched.tools.perf.gotemplate.values import _NO_VALUE, _is_nil, _sorted_items, _type_name, _utf8


class _Spec:
    """One verb's flags, width and precision."""

    __slots__ = ("minus", "plus", "plus_v", "prec", "sharp", "sharp_v", "space", "wid", "zero")

    def __init__(self) -> None:
        self.minus = self.plus = self.sharp = self.space = self.zero = False
        self.plus_v = self.sharp_v = False
        self.wid: int | None = None
        self.prec: int | None = None


_PLAIN: Final = _Spec()


def _padding(sp: _Spec, n: int) -> str:
    if n <= 0:
        return ""
    return ("0" if sp.zero and not sp.minus else " ") * n


def _pad(s: str, sp: _Spec) -> str:
    if not sp.wid:
        return s
    fill = _padding(sp, sp.wid - len(s))
    return s + fill if sp.minus else fill + s


def _pad_nozero(s: str, sp: _Spec) -> str:
    if not sp.wid:
        return s
    fill = " " * (sp.wid - len(s))
    return s + fill if sp.minus else fill + s


def _bad_verb(verb: str, v: Any, sp: _Spec) -> str:
    if _is_nil(v):
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({_type_name(v)}={_fmt(v, 'v', sp, 0)})"


def _fmt_integer(a: int, verb: str, sp: _Spec) -> str:
    base = {"v": 10, "d": 10, "b": 2, "o": 8, "O": 8, "x": 16, "X": 16}.get(verb)
    if base is None:
        if verb == "c":
            return _pad(_rune(a), sp)
        if verb == "q":
            return _pad(_quote(_rune(a), sp.plus, "'"), sp)
        if verb == "U":
            u = a & _UINT64_MAX
            prec = sp.prec if sp.prec is not None and sp.prec > 4 else 4
            text = "U+" + format(u, "X").rjust(prec, "0")
            if sp.sharp and u <= 0x10FFFF and not 0xD800 <= u <= 0xDFFF and chr(u).isprintable():
                text += f" '{chr(u)}'"
            return _pad_nozero(text, sp)
        return _bad_verb(verb, a, sp)
    neg = a < 0
    u = -a if neg else a
    if sp.prec is not None:
        prec = sp.prec
        if prec == 0 and u == 0:
            return " " * (sp.wid or 0)
    elif sp.zero and not sp.minus and sp.wid is not None:
        prec = sp.wid - (1 if neg or sp.plus or sp.space else 0)
    else:
        prec = 0
    digits = format(u, {10: "d", 2: "b", 8: "o", 16: "x" if verb == "x" else "X"}[base]).rjust(prec, "0")
    if sp.sharp:
        if base == 2:
            digits = "0b" + digits
        elif base == 8 and digits[0] != "0":
            digits = "0" + digits
        elif base == 16:
            digits = ("0x" if verb == "x" else "0X") + digits
    if verb == "O":
        digits = "0o" + digits
    if neg:
        digits = "-" + digits
    elif sp.plus:
        digits = "+" + digits
    elif sp.space:
        digits = " " + digits
    return _pad_nozero(digits, sp)


def _rune(a: int) -> str:
    if a < 0 or a > 0x10FFFF or 0xD800 <= a <= 0xDFFF:
        return "\ufffd"
    return chr(a)


def _sharp_u(c: str) -> str:
    """fmt's %#U of one character: U+0041 'A'."""
    o = ord(c)
    return f"U+{o:04X} '{c}'" if c.isprintable() else f"U+{o:04X}"


def _fmt_float(f: float, verb: str, sp: _Spec) -> str:
    if verb == "v":
        verb, prec = "g", -1
    elif verb in "bgGxX":
        prec = -1
    elif verb in "feEF":
        verb, prec = ("f" if verb == "F" else verb), 6
    else:
        return _bad_verb(verb, f, sp)
    if sp.prec is not None:
        prec = sp.prec
    num = _strconv_float(f, verb, prec)
    num = num if num[0] in "+-" else "+" + num
    if sp.space and num[0] == "+" and not sp.plus:
        num = " " + num[1:]
    if num[1] in "IN":  # Inf, NaN: never zero padded
        if num[1] == "N" and not sp.space and not sp.plus:
            num = num[1:]
        return _pad_nozero(num, sp)
    if sp.sharp and verb != "b":
        num = _sharp_float(num, verb, prec)
    if sp.plus or num[0] != "+":
        if sp.zero and not sp.minus and sp.wid is not None and sp.wid > len(num):
            return num[0] + "0" * (sp.wid - len(num)) + num[1:]
        return _pad(num, sp)
    return _pad(num[1:], sp)


def _sharp_float(num: str, verb: str, prec: int) -> str:
    """fmt's '#' flag on a float: a decimal point always, trailing zeros kept (%g)."""
    digits = (6 if prec == -1 else prec) if verb in "vgGx" else 0
    tail = ""
    has_point = False
    seen_nonzero = False
    body = []
    for i, c in enumerate(num[1:], 1):
        if c == ".":
            has_point = True
        elif c in "pP" or (c in "eE" and verb not in "xX"):
            tail = num[i:]
            break
        elif c != "0" or seen_nonzero:
            seen_nonzero = True
            digits -= 1
        body.append(c)
    text = num[0] + "".join(body)
    if not has_point:
        if len(text) == 2 and text[1] == "0":
            digits -= 1
        text += "."
    return text + "0" * max(digits, 0) + tail


def _fmt_string(s: str, verb: str, sp: _Spec) -> str:
    if verb == "v" and sp.sharp_v:
        verb = "q"
    if verb in "vs":
        if sp.prec is not None:
            s = s[: sp.prec]
        return _pad(s, sp)
    if verb == "q":
        if sp.prec is not None:
            s = s[: sp.prec]
        if sp.sharp and _can_backquote(s):
            return _pad("`" + s + "`", sp)
        return _pad(_quote(s, sp.plus), sp)
    if verb in "xX":
        data = _utf8(s)
        if sp.prec is not None:
            data = data[: sp.prec]
        if not data:
            return _padding(sp, sp.wid or 0)
        prefix = "0x" if verb == "x" else "0X"
        pieces = [format(b, "02x" if verb == "x" else "02X") for b in data]
        if sp.space:
            text = " ".join(prefix + p for p in pieces) if sp.sharp else " ".join(pieces)
        else:
            text = (prefix if sp.sharp else "") + "".join(pieces)
        if sp.wid and sp.wid > len(text):
            return text + " " * (sp.wid - len(text)) if sp.minus else _padding(sp, sp.wid - len(text)) + text
        return text
    return _bad_verb(verb, s, sp)


def _fmt(v: Any, verb: str, sp: _Spec, depth: int) -> str:
    """fmt's printArg (depth 0) and printValue (inside lists and maps) of one value."""
    if v is None or v is _NO_VALUE:
        if depth > 0:
            return "interface {}(nil)" if sp.sharp_v else "<nil>"
        return _pad("<nil>", sp) if verb in "Tv" else _bad_verb(verb, v, sp)
    if verb == "T" and depth == 0:
        return _pad(_type_name(v), sp)
    t = type(v)
    if t is str:
        return _fmt_string(v, verb, sp)
    if t is bool or isinstance(v, bool):
        return _pad("true" if v else "false", sp) if verb in "tv" else _bad_verb(verb, v, sp)
    if t is int or isinstance(v, int):
        return _fmt_integer(int(v), verb, sp)
    if t is float or isinstance(v, float):
        return _fmt_float(float(v), verb, sp)
    if isinstance(v, str):
        return _fmt_string(str(v), verb, sp)
    if isinstance(v, (list, tuple)):
        if sp.sharp_v:
            return "[]interface {}{" + ", ".join(_fmt(e, verb, sp, depth + 1) for e in v) + "}"
        return "[" + " ".join(_fmt(e, verb, sp, depth + 1) for e in v) + "]"
    if isinstance(v, Mapping):
        items = _sorted_items(v)
        if sp.sharp_v:
            inner = ", ".join(f"{_fmt(k, verb, sp, depth + 1)}:{_fmt(e, verb, sp, depth + 1)}" for k, e in items)
            return "map[string]interface {}{" + inner + "}"
        return "map[" + " ".join(f"{_fmt(k, verb, sp, depth + 1)}:{_fmt(e, verb, sp, depth + 1)}" for k, e in items) + "]"
    return _pad(str(v), sp) if verb in "vs" else _bad_verb(verb, v, sp)


def _float_v(f: float) -> str:
    """fmt's %v of a float64: %g with the shortest digits."""
    if f == 0.0 and math.copysign(1.0, f) > 0:
        return "0"
    return _strconv_float(f, "g", -1)


def _fmt_v(v: Any) -> str:
    """fmt.Sprint of one value (%v)."""
    t = type(v)
    if t is str:
        return str(v)
    if t is int:
        return str(v)
    if t is float:
        return _float_v(v)
    return _fmt(v, "v", _PLAIN, 0)


def _sprint(args: Sequence[Any]) -> str:
    """fmt.Sprint: a space between two operands when neither is a string."""
    out: list[str] = []
    prev_string = False
    for i, a in enumerate(args):
        is_string = isinstance(a, str)
        if i > 0 and not is_string and not prev_string:
            out.append(" ")
        out.append(_fmt_v(a))
        prev_string = is_string
    return "".join(out)


def _sprintln(args: Sequence[Any]) -> str:
    return " ".join(_fmt_v(a) for a in args) + "\n"


def _parse_num(s: str, start: int, end: int) -> tuple[int, bool, int]:
    """fmt's parsenum: a decimal number at s[start:end]; (value, found, index after it)."""
    if start >= end:
        return 0, False, end
    num, found, i = 0, False, start
    while i < end and "0" <= s[i] <= "9":
        if num > 1_000_000:  # a crazy long number: fmt gives up on the rest
            return 0, False, end
        num = num * 10 + ord(s[i]) - 48
        found = True
        i += 1
    return num, found, i


def _int_from_arg(args: Sequence[Any], n: int) -> tuple[int, bool, int]:
    """fmt's intFromArg: the int operand of a `*` width or precision."""
    if n >= len(args):
        return 0, False, n
    a = args[n]
    if isinstance(a, bool) or not isinstance(a, int) or not -1_000_000 <= a <= 1_000_000:
        return 0, False, n + 1
    return int(a), True, n + 1


def _sprintf(fmt: str, args: Sequence[Any]) -> str:
    """fmt.Sprintf, Go's verbs, flags and argument indexes; its errors are written into the result
    as Go writes them (%!d(string=x), %!d(MISSING), %!(EXTRA ...), ...)."""
    out: list[str] = []
    end = len(fmt)
    i = 0
    argn = 0
    reordered = False
    good = True

    def arg_number(i: int) -> tuple[int, bool]:
        """fmt's argNumber: an explicit [n] at fmt[i]; (index after it, found)."""
        nonlocal argn, reordered, good
        if i >= end or fmt[i] != "[":
            return i, False
        reordered = True
        close = fmt.find("]", i + 1)
        if end - i < 3 or close < 0:
            good = False
            return i + 1, False
        num, found, after = _parse_num(fmt, i + 1, close)
        if not found or after != close:
            good = False
            return close + 1, False
        if 1 <= num <= len(args):
            argn = num - 1
            return close + 1, True
        good = False
        return close + 1, True

    while i < end:
        good = True
        j = fmt.find("%", i)
        if j < 0:
            out.append(fmt[i:])
            break
        if j > i:
            out.append(fmt[i:j])
        i = j + 1
        sp = _Spec()
        while i < end and fmt[i] in "#0+- ":
            c = fmt[i]
            if c == "#":
                sp.sharp = True
            elif c == "0":
                sp.zero = True
            elif c == "+":
                sp.plus = True
            elif c == "-":
                sp.minus = True
            else:
                sp.space = True
            i += 1
        i, after_index = arg_number(i)
        if i < end and fmt[i] == "*":
            i += 1
            wid, present, argn = _int_from_arg(args, argn)
            if not present:
                out.append("%!(BADWIDTH)")
            else:
                sp.wid = wid
                if wid < 0:
                    sp.wid = -wid
                    sp.minus = True
                    sp.zero = False
            after_index = False
        else:
            wid, present, i = _parse_num(fmt, i, end)
            if present:
                sp.wid = wid
                if after_index:
                    good = False
        if i + 1 < end and fmt[i] == ".":
            i += 1
            if after_index:
                good = False
            i, after_index = arg_number(i)
            if i < end and fmt[i] == "*":
                i += 1
                prec, present, argn = _int_from_arg(args, argn)
                if present and prec >= 0:
                    sp.prec = prec
                else:
                    out.append("%!(BADPREC)")
                after_index = False
            else:
                prec, present, i = _parse_num(fmt, i, end)
                sp.prec = prec if present else 0
        if not after_index:
            i, after_index = arg_number(i)
        if i >= end:
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        if verb == "%":
            out.append("%")
        elif not good:
            out.append(f"%!{verb}(BADINDEX)")
        elif argn >= len(args):
            out.append(f"%!{verb}(MISSING)")
        else:
            if verb == "v":
                sp.sharp_v, sp.sharp = sp.sharp, False
                sp.plus_v, sp.plus = sp.plus, False
            out.append(_fmt(args[argn], verb, sp, 0))
            argn += 1
    if not reordered and argn < len(args):
        extra = ", ".join("<nil>" if _is_nil(a) else f"{_type_name(a)}={_fmt_v(a)}" for a in args[argn:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _print_top(v: Any) -> str:
    """What an action prints: fmt.Fprint of the pipeline's value, `<no value>` for none."""
    if v is _NO_VALUE or v is None:
        return "<no value>"
    return _fmt_v(v)
