"""Go's strconv, the parts templates need: number literals (strconv.ParseInt, ParseFloat and Atoi's
syntax), strconv.FormatFloat, and quoting (strconv.UnquoteChar and Unquote for literals,
strconv.Quote for messages and %q)."""

from __future__ import annotations

import math
import re
import struct
from typing import Final

from kubesched.tools.perf.gotemplate.values import _from_utf8, _utf8

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT64_MAX: Final = (1 << 64) - 1


# ---------------------------------------------------------------------------------------------
# Numbers: Go's syntax for literals and strconv.ParseFloat, and Go's float formatting.

_GO_INT = re.compile(r"[+-]?(?:0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0[xX](?:_?[0-9a-fA-F])+|0(?:_?[0-7])*|[1-9](?:_?[0-9])*)")
_DEC_FLOAT = re.compile(r"[+-]?(?=\.?[0-9])[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9][0-9_]*)?")
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?=[_.]*[0-9a-fA-F])[0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?[pP][+-]?[0-9][0-9_]*")
_SPECIAL_FLOAT = re.compile(r"[+-]?(?:inf|infinity)|nan", re.IGNORECASE)
_ATOI = re.compile(r"[+-]?[0-9]+")


def _underscore_ok(s: str) -> bool:
    """strconv's rule: an underscore only between digits, or between a base prefix and a digit."""
    saw = "^"
    if s[:1] in ("+", "-"):
        s = s[1:]
    i = 0
    hexa = False
    if len(s) >= 2 and s[0] == "0" and s[1] in "bBoOxX":
        i = 2
        saw = "0"
        hexa = s[1] in "xX"
    for c in s[i:]:
        if "0" <= c <= "9" or (hexa and c in "abcdefABCDEF"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def _go_parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64)'s value without its range check, or None."""
    if not _GO_INT.fullmatch(text):
        return None
    neg = text[0] == "-"
    body = text.lstrip("+-").replace("_", "")
    if len(body) > 1 and body[0] == "0":
        base = {"b": 2, "B": 2, "o": 8, "O": 8, "x": 16, "X": 16}.get(body[1], 0)
        value = int(body[2:], base) if base else int(body[1:], 8)
    else:
        value = int(body)
    return -value if neg else value


def _go_parse_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64), or None where Go returns an error (bad syntax, out of range)."""
    if _SPECIAL_FLOAT.fullmatch(text):
        return float(text)
    if _DEC_FLOAT.fullmatch(text):
        if "_" in text and not _underscore_ok(text):
            return None
        value = float(text.replace("_", ""))
    elif _HEX_FLOAT.fullmatch(text):
        if "_" in text and not _underscore_ok(text):
            return None
        try:
            value = float.fromhex(text.replace("_", ""))
        except OverflowError:
            return None
    else:
        return None
    return None if math.isinf(value) else value


def _shortest_digits(f: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as abs(f) (f finite), and the decimal point's
    place: abs(f) == 0.<digits> * 10**dp. Zero is ("0", 1)."""
    mant, _, exp = repr(abs(f)).partition("e")
    whole, _, frac = mant.partition(".")
    digits = whole + frac
    dp = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    dp -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    return (digits, dp) if digits else ("0", 1)


def _digits_e(digits: str, dp: int, e: str = "e") -> str:
    exp = dp - 1 if digits != "0" else 0
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mant}{e}{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _digits_f(digits: str, dp: int) -> str:
    if digits == "0":
        return "0"
    if dp <= 0:
        return "0." + "0" * -dp + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _strconv_float(f: float, verb: str, prec: int) -> str:
    """strconv.FormatFloat(f, verb, prec, 64) for the verbs fmt uses: b e E f g G x X."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    neg = math.copysign(1.0, f) < 0
    sign = "-" if neg else ""
    if verb in "xX":
        return sign + _hex_float(abs(f), prec, verb)
    if verb == "b":
        mant, exp = _mantissa_exponent(f)
        exp -= 52
        return f"{sign}{mant}p{'+' if exp >= 0 else ''}{exp}"
    a = abs(f)
    if prec < 0:
        digits, dp = _shortest_digits(a)
        if verb in "eE":
            return sign + _digits_e(digits, dp, verb)
        if verb == "f":
            return sign + _digits_f(digits, dp)
        exp = dp - 1 if digits != "0" else 0
        if exp < -4 or exp >= 6:  # %g, shortest: Go decides with precision 6
            return sign + _digits_e(digits, dp, "E" if verb == "G" else "e")
        return sign + _digits_f(digits, dp)
    return sign + format(a, f".{prec}{verb}")


def _mantissa_exponent(f: float) -> tuple[int, int]:
    """The float's 53-bit mantissa (with the implicit bit; subnormals without) and unbiased exponent."""
    bits = struct.unpack("<Q", struct.pack("<d", f))[0]
    exp = (bits >> 52) & 0x7FF
    mant = bits & ((1 << 52) - 1)
    if exp == 0:
        exp = 1
    else:
        mant |= 1 << 52
    return mant, exp - 1023


def _hex_float(a: float, prec: int, verb: str) -> str:
    """strconv's %x of a non-negative finite float: 0x1.8p+01."""
    mant, exp = _mantissa_exponent(a)
    if mant == 0:
        exp = 0
    mask64 = (1 << 64) - 1
    mant <<= 60 - 52
    while mant != 0 and mant & (1 << 60) == 0:
        mant <<= 1
        exp -= 1
    if 0 <= prec < 15:
        shift = prec * 4
        extra = (mant << shift) & ((1 << 60) - 1)
        mant >>= 60 - shift
        if extra | (mant & 1) > 1 << 59:
            mant += 1
        mant <<= 60 - shift
        if mant & (1 << 61):
            mant >>= 1
            exp += 1
    hexdigits = "0123456789abcdef" if verb == "x" else "0123456789ABCDEF"
    out = ["0", verb, "01"[(mant >> 60) & 1]]
    mant = (mant << 4) & mask64
    if (prec < 0 and mant != 0) or prec > 0:
        out.append(".")
        count = 0
        while (prec < 0 and mant != 0) or count < prec:
            out.append(hexdigits[(mant >> 60) & 15])
            mant = (mant << 4) & mask64
            count += 1
    out.append("p" if verb == "x" else "P")
    out.append("-" if exp < 0 else "+")
    out.append(f"{abs(exp):02d}")
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Strings: Go's escapes in literals, strconv.Quote.

_SIMPLE_ESCAPES: Final = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}


def _unquote_char(s: str, i: int, quote: str) -> tuple[int, bool, int]:
    """strconv.UnquoteChar at s[i]: (value, is_byte, next index). ValueError: bad escape."""
    c = s[i]
    if c == quote and quote in "'\"":
        raise ValueError("unescaped quote")
    if c != "\\":
        return ord(c), False, i + 1
    if i + 1 >= len(s):
        raise ValueError("trailing backslash")
    c = s[i + 1]
    i += 2
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], False, i
    if c in "xuU":
        n = {"x": 2, "u": 4, "U": 8}[c]
        digits = s[i : i + n]
        if len(digits) != n or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise ValueError("bad hex escape")
        value = int(digits, 16)
        if c == "x":
            return value, True, i + n
        if 0xD800 <= value <= 0xDFFF or value > 0x10FFFF:
            raise ValueError("escape is not a valid code point")
        return value, False, i + n
    if "0" <= c <= "7":
        digits = s[i - 1 : i + 2]
        if len(digits) != 3 or not all("0" <= d <= "7" for d in digits):
            raise ValueError("bad octal escape")
        value = int(digits, 8)
        if value > 255:
            raise ValueError("octal escape above 255")
        return value, True, i + 2
    if c in "'\"" and c == quote:
        return ord(c), False, i
    raise ValueError(f"unknown escape \\{c}")


def _unquote(lit: str) -> str:
    """strconv.Unquote of a "..." or `...` literal."""
    if lit[0] == "`":
        return lit[1:-1].replace("\r", "")
    body = lit[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    while i < len(body):
        value, is_byte, i = _unquote_char(body, i, '"')
        if is_byte:
            out.append(value)
        else:
            out += _utf8(chr(value))
    return _from_utf8(bytes(out))


def _can_backquote(s: str) -> bool:
    return all(c == "\t" or (c >= " " and c not in "`\x7f\ufeff" and not 0xD800 <= ord(c) <= 0xDFFF) for c in s)
