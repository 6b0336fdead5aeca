"""encoding/json, as scheduler_perf's JSON function encodes (SetEscapeHTML(false))."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from kubesched.tools.perf.gotemplate.gostrconv import _strconv_float
from kubesched.tools.perf.gotemplate.values import _NO_VALUE, _type_name, _utf8


class _JSONError(ValueError):
    pass


_JSON_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        "\u2028": "\\u2028", "\u2029": "\\u2029"}
_JSON_SPECIAL = re.compile(r'["\\\x00-\x1f\u2028\u2029\ud800-\udfff]')


def _json_escape_char(m: re.Match[str]) -> str:
    c = m.group()
    if c in _JSON_ESCAPES:
        return _JSON_ESCAPES[c]
    if ord(c) >= 0xD800:
        return "\\ufffd"
    return f"\\u{ord(c):04x}"


def _json_float(f: float) -> str:
    if math.isnan(f) or math.isinf(f):
        raise _JSONError(f"json: unsupported value: {_strconv_float(f, 'g', -1)}")
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        text = _strconv_float(f, "e", -1)
        if len(text) >= 4 and text[-4] == "e" and text[-3] == "-" and text[-2] == "0":
            text = text[:-2] + text[-1]
        return text
    return _strconv_float(f, "f", -1)


def _json_encode(v: Any, out: list[str]) -> None:
    if v is None or v is _NO_VALUE:
        out.append("null")
    elif isinstance(v, str):
        out.append('"' + _JSON_SPECIAL.sub(_json_escape_char, v) + '"')
    elif isinstance(v, bool):
        out.append("true" if v else "false")
    elif isinstance(v, int):
        out.append(str(int(v)))
    elif isinstance(v, float):
        out.append(_json_float(float(v)))
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, e in enumerate(v):
            if i:
                out.append(",")
            _json_encode(e, out)
        out.append("]")
    elif isinstance(v, Mapping):
        keyed: list[tuple[str, Any]] = []
        for k, e in v.items():
            if isinstance(k, str):
                keyed.append((k, e))
            elif isinstance(k, int) and not isinstance(k, bool):
                keyed.append((str(int(k)), e))
            else:
                raise _JSONError(f"json: unsupported type: map[{_type_name(k)}]interface {{}}")
        keyed.sort(key=lambda kv: _utf8(kv[0]))
        out.append("{")
        for i, (k, e) in enumerate(keyed):
            if i:
                out.append(",")
            _json_encode(k, out)
            out.append(":")
            _json_encode(e, out)
        out.append("}")
    else:
        raise _JSONError(f"json: unsupported type: {_type_name(v)}")
