"""Go's strconv.Quote (and so fmt's %q) of a string, for messages that quote what a user wrote as
a Go program would: the scheduler_perf template lexer, semantic versions in device selectors."""

from __future__ import annotations

from typing import Final

QUOTE_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def quote(s: str, ascii_only: bool = False, quote: str = '"') -> str:
    """strconv.Quote (QuoteToASCII with ascii_only; QuoteRune's escaping with quote="'")."""
    out = [quote]
    for ch in s:
        o = ord(ch)
        if ch == quote or ch == "\\":
            out.append("\\" + ch)
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{o - 0xDC00:02x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd" if not ascii_only else "\\ufffd")
        elif ch.isprintable() and (o < 0x80 or not ascii_only):
            out.append(ch)
        elif ch in QUOTE_ESCAPES:
            out.append(QUOTE_ESCAPES[ch])
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        elif o < 0x10000:
            out.append(f"\\u{o:04x}")
        else:
            out.append(f"\\U{o:08x}")
    out.append(quote)
    return "".join(out)
