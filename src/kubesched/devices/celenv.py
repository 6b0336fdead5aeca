"""The declarations of DRA's device CEL environment, as k8s.io/dynamic-resource-allocation/cel
v0.37.2 declares it with the v1.37 feature defaults (DRAConsumableCapacity on, so
`device.allowMultipleAllocations` exists; DRAListTypeAttributes off):

- `device.driver` (string), `device.allowMultipleAllocations` (bool),
- `device.attributes`: domain -> attribute name -> value (int, bool, string or a semver, typed
  dyn as in the scheduler's stored-expression environment),
- `device.capacity`: domain -> capacity name -> kubernetes.Quantity,
- Kubernetes' quantity and semver libraries, cel.bind, optional values and the strings extension.

cel-expr-python cannot carry values of an opaque type in or out of Python, so every expression is
compiled twice: by CHECKER, where kubernetes.Quantity and kubernetes.Semver are opaque types (type
errors and the result type are kube's), and by RUNNER, where they travel as bytes with a one-letter
tag ("Q" + the exact value in nano-units, "S" + the version without build metadata), so that
CEL's own equality on them is kube's equality (`quantity("1Gi") == quantity("1024Mi")`). RUNNER
only ever runs what CHECKER accepted.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from kubesched.api import quantity as quantities
from kubesched.devices import semver

T = cel.Type
QUANTITY_TYPE = "kubernetes.Quantity"
SEMVER_TYPE = "kubernetes.Semver"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
NANO = 10**9

# Limits of the device an expression reads (resourceapi), which bound the cost estimate.
DRIVER_MAX_LENGTH = 63
DOMAIN_MAX_LENGTH = 63
ID_MAX_LENGTH = 32
ATTRIBUTE_VALUE_MAX_LENGTH = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32

VARIABLES = ("device.driver", "device.allowMultipleAllocations", "device.attributes", "device.capacity")


class RuntimeFailure(Exception):
    """An error of a library function at run time; the message is kube's."""


# --- the carriers: how quantities and versions travel through RUNNER ---------------------------


def quantity_carrier(nanos: int | None, negative: bool = False) -> bytes:
    """A quantity of `nanos` nano-units (None: beyond any number, kept as +-inf)."""
    if nanos is None:
        return b"Q-inf" if negative else b"Q+inf"
    return b"Q" + str(nanos).encode()


def version_carrier(version: semver.Version) -> bytes:
    return b"S" + version.key().encode()


@functools.lru_cache(maxsize=4096)
def _version_of(carrier: bytes) -> semver.Version:
    return semver.parse(carrier[1:].decode())


def _nanos_of(carrier: bytes | bytearray) -> float | int:
    text = carrier[1:].decode()
    if text in ("+inf", "-inf"):
        return float(text)
    return int(text)


def runtime_type_name(value: object) -> str:
    """cel-go's name of a runtime value's type, for "no such overload" messages."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        if value[:1] == b"Q":
            return QUANTITY_TYPE
        if value[:1] == b"S":
            return SEMVER_TYPE
        return "bytes"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "map"
    if value is None:
        return "null_type"
    return type(value).__name__


def _is(value: object, tag: bytes) -> bool:
    return isinstance(value, (bytes, bytearray)) and value[:1] == tag


def _no_overload(name: str, *args: object) -> RuntimeFailure:
    return RuntimeFailure(f"no such overload: {name}({', '.join(runtime_type_name(a) for a in args)})")


# --- the quantity library ------------------------------------------------------------------------


def _quantity(text: str) -> bytes:
    try:
        parsed = quantities.parse(text)
    except quantities.QuantityError as exc:
        raise RuntimeFailure(exc.reason) from None
    return quantity_carrier(parsed.nanos, parsed.negative)


def _is_quantity(text: str) -> bool:
    try:
        quantities.parse(text)
    except quantities.QuantityError:
        return False
    return True


def _q(name: str, *args: object) -> list[float | int]:
    """The nano-unit values of quantity arguments (a RuntimeFailure naming them otherwise)."""
    if not all(_is(a, b"Q") for a in args):
        raise _no_overload(name, *args)
    return [_nanos_of(a) for a in args if isinstance(a, (bytes, bytearray))]


def _compare(a: float | int, b: float | int) -> int:
    return (a > b) - (a < b)


def _sign(q: object) -> int:
    (n,) = _q("sign", q)
    return _compare(n, 0)


def _as_int(q: object) -> int:
    (n,) = _q("asInteger", q)
    if not _fits_int64(n):
        raise RuntimeFailure("cannot convert value to integer")
    return int(n) // NANO


def _fits_int64(n: float | int) -> bool:
    return isinstance(n, int) and n % NANO == 0 and INT64_MIN <= n // NANO <= INT64_MAX


def _approximate_float(q: object) -> float:
    (n,) = _q("asApproximateFloat", q)
    return n if isinstance(n, float) else float(Fraction(n, NANO))


def _add(a: object, b: object) -> bytes:
    if isinstance(b, int) and not isinstance(b, bool):
        (x,) = _q("add", a)
        return _sum_carrier(x, b * NANO)
    x, y = _q("add", a, b)
    return _sum_carrier(x, y)


def _sub(a: object, b: object) -> bytes:
    if isinstance(b, int) and not isinstance(b, bool):
        (x,) = _q("sub", a)
        return _sum_carrier(x, -b * NANO)
    x, y = _q("sub", a, b)
    return _sum_carrier(x, -y)


def _sum_carrier(x: float | int, y: float | int) -> bytes:
    total = x + y
    if isinstance(total, float):
        if math.isnan(total):
            total = 0.0
        return quantity_carrier(None, total < 0) if total else quantity_carrier(0)
    return quantity_carrier(total)


# --- the semver library --------------------------------------------------------------------------


def _semver(text: str, normalize: bool = False) -> bytes:
    try:
        version = semver.parse_normalized(text) if normalize else semver.parse(text)
    except semver.SemverError as exc:
        raise RuntimeFailure(str(exc)) from None
    return version_carrier(version)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _semver(text, normalize)
    except RuntimeFailure:
        return False
    return True


def _v(name: str, *args: object) -> list[semver.Version]:
    if not all(_is(a, b"S") for a in args):
        raise _no_overload(name, *args)
    return [_version_of(bytes(a)) for a in args if isinstance(a, (bytes, bytearray))]


def _ordered(name: str, a: object, b: object) -> int:
    """compareTo of two quantities or two versions (the receiver decides which)."""
    if _is(a, b"S"):
        x, y = _v(name, a, b)
        return x.compare(y)
    p, q = _q(name, a, b)
    return _compare(p, q)


# --- declarations --------------------------------------------------------------------------------


Impl = Callable[..., Any]
# name -> overloads of (id, member, parameter kinds, result kind, implementation); kinds are
# "string", "int", "bool", "double", "quantity", "semver". A semver overload without an
# implementation shares the quantity one's (in RUNNER both take bytes; _ordered reads the tag).
_LIBRARY: dict[str, list[tuple[str, bool, tuple[str, ...], str, Impl | None]]] = {
    "quantity": [("string_to_quantity", False, ("string",), "quantity", _quantity)],
    "isQuantity": [("is_quantity_string", False, ("string",), "bool", _is_quantity)],
    "sign": [("quantity_sign", False, ("quantity",), "int", _sign)],
    "isGreaterThan": [
        ("quantity_is_greater_than", True, ("quantity", "quantity"), "bool", lambda a, b: _ordered("isGreaterThan", a, b) == 1),
        ("semver_is_greater_than", True, ("semver", "semver"), "bool", None),
    ],
    "isLessThan": [
        ("quantity_is_less_than", True, ("quantity", "quantity"), "bool", lambda a, b: _ordered("isLessThan", a, b) == -1),
        ("semver_is_less_than", True, ("semver", "semver"), "bool", None),
    ],
    "compareTo": [
        ("quantity_compare_to", True, ("quantity", "quantity"), "int", lambda a, b: _ordered("compareTo", a, b)),
        ("semver_compare_to", True, ("semver", "semver"), "int", None),
    ],
    "asApproximateFloat": [("quantity_get_float", True, ("quantity",), "double", _approximate_float)],
    "asInteger": [("quantity_get_int", True, ("quantity",), "int", _as_int)],
    "isInteger": [("quantity_is_integer", True, ("quantity",), "bool", lambda q: _fits_int64(_q("isInteger", q)[0]))],
    "add": [
        ("quantity_add", True, ("quantity", "quantity"), "quantity", _add),
        ("quantity_add_int", True, ("quantity", "int"), "quantity", _add),
    ],
    "sub": [
        ("quantity_sub", True, ("quantity", "quantity"), "quantity", _sub),
        ("quantity_sub_int", True, ("quantity", "int"), "quantity", _sub),
    ],
    "semver": [
        ("string_to_semver", False, ("string",), "semver", _semver),
        ("string_bool_to_semver", False, ("string", "bool"), "semver", _semver),
    ],
    "isSemver": [
        ("is_semver_string", False, ("string",), "bool", _is_semver),
        ("is_semver_string_bool", False, ("string", "bool"), "bool", _is_semver),
    ],
    "major": [("semver_major", True, ("semver",), "int", lambda v: _v("major", v)[0].major)],
    "minor": [("semver_minor", True, ("semver",), "int", lambda v: _v("minor", v)[0].minor)],
    "patch": [("semver_patch", True, ("semver",), "int", lambda v: _v("patch", v)[0].patch)],
}
FUNCTIONS = frozenset(_LIBRARY)

_PRIMITIVE = {"string": T.STRING, "int": T.INT, "bool": T.BOOL, "double": T.DOUBLE}


def _checker_type(kind: str) -> Any:
    if kind == "quantity":
        return T.AbstractType(QUANTITY_TYPE)
    if kind == "semver":
        return T.AbstractType(SEMVER_TYPE)
    return _PRIMITIVE[kind]


def _runner_type(kind: str) -> Any:
    return T.BYTES if kind in ("quantity", "semver") else _PRIMITIVE[kind]


def _extensions() -> list[Any]:
    return [ext_bindings.ExtBindings(), ext_optional.ExtOptional(), ext_strings.ExtStrings(2)]


def _checker() -> Any:
    decls = [
        cel.FunctionDecl(name, [
            cel.Overload(oid, return_type=_checker_type(result), parameters=[_checker_type(p) for p in params], is_member=member)
            for oid, member, params, result, _ in overloads
        ])
        for name, overloads in _LIBRARY.items()
    ]
    variables = {
        "device.driver": T.STRING,
        "device.allowMultipleAllocations": T.BOOL,
        "device.attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
        "device.capacity": T.Map(T.STRING, T.Map(T.STRING, T.AbstractType(QUANTITY_TYPE))),
    }
    return cel.NewEnv(variables=variables, functions=decls, extensions=_extensions())


def _runner() -> Any:
    decls = []
    for name, overloads in _LIBRARY.items():
        # Quantities and versions are both bytes here: overloads that differ only in which one
        # they take become one, whose implementation looks at the tag.
        by_signature: dict[tuple[bool, tuple[str, ...]], Any] = {}
        for _oid, member, params, result, impl in overloads:
            runner_params = tuple("bytes" if p in ("quantity", "semver") else p for p in params)
            key = (member, runner_params)
            if key in by_signature or impl is None:
                continue
            by_signature[key] = cel.Overload(
                f"{name}_{'_'.join(runner_params)}{'_member' if member else ''}", return_type=_runner_type(result),
                parameters=[T.BYTES if p == "bytes" else _PRIMITIVE[p] for p in runner_params], is_member=member, impl=impl,
            )
        decls.append(cel.FunctionDecl(name, list(by_signature.values())))
    variables = {
        "device.driver": T.STRING,
        "device.allowMultipleAllocations": T.BOOL,
        "device.attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
        "device.capacity": T.Map(T.STRING, T.Map(T.STRING, T.BYTES)),
    }
    return cel.NewEnv(variables=variables, functions=decls, extensions=_extensions())


CHECKER = _checker()
RUNNER = _runner()
