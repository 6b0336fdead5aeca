"""The functions a template can call: scheduler_perf's (SCHEDULER_PERF_FUNCS) and text/template's
builtins, and what parse needs to make its table of them (a function's arity, a valid name)."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NamedTuple
from urllib.parse import quote_plus

from kubesched.tools.perf.gotemplate.errors import _ExecFailure, _Fail
from kubesched.tools.perf.gotemplate.gofmt import _float_v, _fmt_v, _sprint, _sprintf, _sprintln
from kubesched.tools.perf.gotemplate.gojson import _json_encode, _JSONError
from kubesched.tools.perf.gotemplate.gostrconv import _ATOI, _INT64_MAX, _INT64_MIN, _go_parse_float
from kubesched.tools.perf.gotemplate.values import _NO_VALUE, _byte_len, _from_utf8, _is_nil, _truth, _type_name, _utf8

FuncMap = Mapping[str, Callable[..., Any]]


# ---------------------------------------------------------------------------------------------
# scheduler_perf's functions (operations.go: getTemplateFuncs and the helpers below it).


def _cannot_cast(val: Any, to: str) -> ValueError:
    return ValueError(f"cannot cast {_fmt_v(val)} to {to}")


def _to_float64(val: Any) -> float:
    """scheduler_perf's toFloat64: ints, floats, and strings strconv.ParseFloat reads."""
    if type(val) is float:
        return float(val)
    if isinstance(val, bool):
        raise _cannot_cast(val, "float64")
    if isinstance(val, (int, float)):
        try:
            return float(val)
        except OverflowError:
            raise _cannot_cast(val, "float64") from None
    if isinstance(val, str):
        f = _go_parse_float(val)
        if f is not None:
            return f
    raise _cannot_cast(val, "float64")


def _float_to_int(f: float) -> int:
    """Go's int(f) where it is defined; an error where Go's result would be garbage (NaN, Inf, out of range)."""
    if math.isnan(f) or math.isinf(f) or not _INT64_MIN <= math.trunc(f) <= _INT64_MAX:
        raise ValueError(f"{_float_v(f)} does not fit in an int")
    return int(f)


def _to_int(val: Any) -> int:
    """scheduler_perf's toInt: ints, floats (truncated), and strings strconv.Atoi reads."""
    if type(val) is int:
        return int(val)
    if isinstance(val, bool):
        raise _cannot_cast(val, "int")
    if isinstance(val, int):
        return int(val)
    if isinstance(val, float):
        return _float_to_int(float(val))
    if isinstance(val, str) and _ATOI.fullmatch(val):
        value = int(val)
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
    raise _cannot_cast(val, "int")


def _to_json(val: Any) -> str:
    out: list[str] = []
    try:
        _json_encode(val, out)
    except _JSONError as exc:
        raise ValueError(f"cannot JSON-encode {_fmt_v(val)}: {exc}") from None
    return "".join(out)


def _add_float(*numbers: Any) -> float:
    total = 0.0
    for n in numbers:
        total += _to_float64(n)
    return total


def _add_int(*numbers: Any) -> int:
    return _float_to_int(_add_float(*numbers))


def _subtract_float(i: Any, j: Any) -> float:
    return _to_float64(i) - _to_float64(j)


def _subtract_int(i: Any, j: Any) -> int:
    return _float_to_int(_subtract_float(i, j))


def _multiply_float(*numbers: Any) -> float:
    product = 1.0
    for n in numbers:
        product *= _to_float64(n)
    return product


def _multiply_int(*numbers: Any) -> int:
    return _float_to_int(_multiply_float(*numbers))


def _divide_float(i: Any, j: Any) -> float:
    a = _to_float64(i)
    b = _to_float64(j)
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b


def _divide_int(i: Any, j: Any) -> int:
    return _float_to_int(_divide_float(i, j))


def _mod(a: Any, b: Any) -> int:
    x = _float_to_int(_to_float64(a))
    y = _float_to_int(_to_float64(b))
    if y == 0:
        raise ZeroDivisionError("runtime error: integer divide by zero")
    r = abs(x) % abs(y)
    return -r if x < 0 else r


SCHEDULER_PERF_FUNCS: Final[FuncMap] = MappingProxyType({
    "AddFloat": _add_float,
    "AddInt": _add_int,
    "DivideFloat": _divide_float,
    "DivideInt": _divide_int,
    "Int": _to_int,
    "JSON": _to_json,
    "Mod": _mod,
    "MultiplyFloat": _multiply_float,
    "MultiplyInt": _multiply_int,
    "SubtractFloat": _subtract_float,
    "SubtractInt": _subtract_int,
})
"""scheduler_perf's template functions, with its semantics (numbers from ints, floats and numeric
strings; the Int ones truncate a float result; division by zero is an error)."""


# ---------------------------------------------------------------------------------------------
# Builtins. They take template values as they are (nil as None or _NO_VALUE) and raise _Fail.

_K_INVALID, _K_BOOL, _K_INT, _K_FLOAT, _K_STRING = range(5)


def _basic_kind(v: Any) -> int:
    if isinstance(v, bool):
        return _K_BOOL
    if isinstance(v, int):
        return _K_INT
    if isinstance(v, float):
        return _K_FLOAT
    if isinstance(v, str):
        return _K_STRING
    return _K_INVALID


def _incompatible(a: Any, b: Any) -> _Fail:
    return _Fail(f"incompatible types for comparison: {_type_name(a)} and {_type_name(b)}")


def _b_eq(a: Any, *others: Any) -> bool:
    if not others:
        raise _Fail("missing argument for comparison")
    if a is _NO_VALUE:
        a = None
    k1 = _basic_kind(a)
    for b in others:
        if b is _NO_VALUE:
            b = None
        k2 = _basic_kind(b)
        if k1 != k2:
            if a is not None and b is not None:
                raise _incompatible(a, b)
            truth = False
        elif k1 == _K_INVALID:
            if a is None or b is None:
                truth = a is None and b is None
            elif isinstance(a, (list, tuple, Mapping)) or isinstance(b, (list, tuple, Mapping)):
                if isinstance(a, (list, tuple)) != isinstance(b, (list, tuple)) or isinstance(a, Mapping) != isinstance(b, Mapping):
                    raise _Fail(f"non-comparable types {_fmt_v(a)}: {_type_name(a)}, {_type_name(b)}: {_fmt_v(b)}")
                raise _Fail(f"non-comparable type {_fmt_v(b)}: {_type_name(b)}")
            else:
                truth = bool(a == b)
        else:
            truth = bool(a == b)
        if truth:
            return True
    return False


def _b_ne(a: Any, b: Any) -> bool:
    return not _b_eq(a, b)


def _b_lt(a: Any, b: Any) -> bool:
    k1 = _basic_kind(a)
    k2 = _basic_kind(b)
    if k1 == _K_INVALID or k2 == _K_INVALID:
        raise _Fail("invalid type for comparison")
    if k1 != k2:
        raise _incompatible(a, b)
    if k1 == _K_BOOL:
        raise _Fail("invalid type for comparison")
    return bool(a < b)


def _b_le(a: Any, b: Any) -> bool:
    return _b_lt(a, b) or _b_eq(a, b)


def _b_gt(a: Any, b: Any) -> bool:
    return not _b_le(a, b)


def _b_ge(a: Any, b: Any) -> bool:
    return not _b_lt(a, b)


def _b_not(a: Any) -> bool:
    return not _truth(a)


def _b_len(item: Any) -> int:
    if isinstance(item, str):
        return _byte_len(item)
    if isinstance(item, (list, tuple, Mapping)):
        return len(item)
    if _is_nil(item):
        raise _Fail("len of nil")
    raise _Fail(f"len of type {_type_name(item)}")


def _index_arg(ix: Any, cap: int, *, inclusive: bool = False) -> int:
    if _is_nil(ix):
        raise _Fail("cannot index slice/array with nil")
    if isinstance(ix, bool) or not isinstance(ix, int):
        raise _Fail(f"cannot index slice/array with type {_type_name(ix)}")
    if ix < 0 or ix > cap or (ix == cap and not inclusive):
        raise _Fail(f"index out of range: {ix}")
    return int(ix)


def _b_index(item: Any, *indexes: Any) -> Any:
    if _is_nil(item):
        raise _Fail("index of untyped nil")
    for ix in indexes:
        if item is None:
            raise _Fail("index of nil pointer")
        if isinstance(item, str):
            data = _utf8(item)
            item = data[_index_arg(ix, len(data))]
        elif isinstance(item, (list, tuple)):
            item = item[_index_arg(ix, len(item))]
        elif isinstance(item, Mapping):
            if _is_nil(ix):
                raise _Fail("value is nil; should be of type string")
            if not isinstance(ix, str) and all(isinstance(k, str) for k in item):
                raise _Fail(f"value has type {_type_name(ix)}; should be string")
            try:
                item = item.get(ix)
            except TypeError:
                raise _Fail(f"value has type {_type_name(ix)}; should be string") from None
        else:
            raise _Fail(f"can't index item of type {_type_name(item)}")
    return item


def _b_slice(item: Any, *indexes: Any) -> Any:
    if _is_nil(item):
        raise _Fail("slice of untyped nil")
    if len(indexes) > 3:
        raise _Fail(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise _Fail("cannot 3-index slice a string")
        seq: Any = _utf8(item)
    elif isinstance(item, (list, tuple)):
        seq = item
    else:
        raise _Fail(f"can't slice item of type {_type_name(item)}")
    bounds = [0, len(seq), len(seq)]
    for i, ix in enumerate(indexes):
        bounds[i] = _index_arg(ix, len(seq), inclusive=True)
    if bounds[0] > bounds[1]:
        raise _Fail(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if len(indexes) == 3 and bounds[1] > bounds[2]:
        raise _Fail(f"invalid slice index: {bounds[1]} > {bounds[2]}")
    part = seq[bounds[0] : bounds[1]]
    if isinstance(part, bytes):
        return _from_utf8(part)
    return list(part)


def _b_print(*args: Any) -> str:
    return _sprint(args)


def _b_println(*args: Any) -> str:
    return _sprintln(args)


def _b_printf(fmt: Any, *args: Any) -> str:
    if not isinstance(fmt, str):
        raise _ExecFailure(f"wrong type for value; expected string; got {_type_name(fmt)}")
    return _sprintf(fmt, args)


def _eval_args(args: Sequence[Any]) -> str:
    """text/template's evalArgs: the one string argument, or fmt.Sprint of them all."""
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return _sprint(["<no value>" if _is_nil(a) else a for a in args])


def _b_html(*args: Any) -> str:
    s = _eval_args(args)
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            .replace("'", "&#39;").replace("\x00", "\ufffd"))


def _b_urlquery(*args: Any) -> str:
    return quote_plus(_eval_args(args), safe="", errors="surrogateescape")


class _Fn(NamedTuple):
    fn: Callable[..., Any]
    builtin: bool
    least: int
    most: int | None


_BUILTINS: Final[dict[str, _Fn]] = {
    "and": _Fn(_b_not, True, 1, None),  # evaluated by the compiler: they short-circuit
    "or": _Fn(_b_not, True, 1, None),
    "not": _Fn(_b_not, True, 1, 1),
    "eq": _Fn(_b_eq, True, 1, None),
    "ne": _Fn(_b_ne, True, 2, 2),
    "lt": _Fn(_b_lt, True, 2, 2),
    "le": _Fn(_b_le, True, 2, 2),
    "gt": _Fn(_b_gt, True, 2, 2),
    "ge": _Fn(_b_ge, True, 2, 2),
    "len": _Fn(_b_len, True, 1, 1),
    "index": _Fn(_b_index, True, 1, None),
    "slice": _Fn(_b_slice, True, 1, None),
    "print": _Fn(_b_print, True, 0, None),
    "printf": _Fn(_b_printf, True, 1, None),
    "println": _Fn(_b_println, True, 0, None),
    "html": _Fn(_b_html, True, 0, None),
    "urlquery": _Fn(_b_urlquery, True, 0, None),
}
_UNSUPPORTED_BUILTINS: Final = ("call", "js")
_IDENT = re.compile(r"[^\W\d]\w*")


def _arity(fn: Callable[..., Any]) -> tuple[int, int | None]:
    """How many positional arguments a function takes: (at least, at most or None)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 0, None
    least = 0
    most: int | None = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if most is not None:
                most += 1
            if p.default is p.empty:
                least += 1
        elif p.kind is p.VAR_POSITIONAL:
            most = None
    return least, most
