"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as integers.

CPU is kept in millicores and everything else in base units (bytes, counts),
which is how kube-scheduler compares them (MilliValue for cpu, Value otherwise).

Parsing follows apimachinery's ParseQuantity: a signed decimal number, then at most one suffix
(binary Ki..Ei, decimal n u m k M G T P E, or an exponent e3 / E-2); values are rounded up
(away from zero) to a whole nano, as kube does. Everything is exact integer arithmetic on
nano-units, so no Decimal context can overflow or round.

Range: the API server stores quantities with arbitrary precision (only binary ones, like 16Ei,
are capped at 2^63-1) and accepts `1e30`, but
kube-scheduler reads them as int64 (MilliValue / Value), which wraps. Here a quantity whose
scheduler integer does not fit in int64 (2^63-1 millicores for cpu, 2^63-1 units otherwise) is
refused with QuantityError, so no such number reaches scheduling.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

INT64_MAX = 2**63 - 1
NANO = 10**9
OUT_OF_RANGE = "quantity is out of range"
_BINARY_CAP = INT64_MAX * NANO

_BINARY_EXP = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIX_OF_EXP = {exp: suffix for suffix, exp in _DECIMAL_EXP.items()}
_BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_NUMBER = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$", re.DOTALL)
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
# Magnitudes beyond 10^_HUGE_DIGITS are far outside int64 in any unit; they are not materialised
# (1e1000000 would be a million-digit integer), only flagged.
_HUGE_DIGITS = 40
_SUFFIX_SHAPE = re.compile(r"^[eEinumkKMGTP]*[-+]?[0-9]*$")
FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_ERROR = "unable to parse quantity's suffix"

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"


class QuantityError(ValueError):
    """A quantity string that Kubernetes would refuse, or one too large to schedule with.
    `reason` is the message without the offending value."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class Quantity:
    """A parsed quantity: exact value in nano-units (None when astronomically large) and the
    format kube keeps for printing it back."""

    nanos: int | None
    format: str
    negative: bool = False

    @property
    def huge(self) -> bool:
        return self.nanos is None

    def canonical(self) -> str:
        """Quantity.String(): the canonical form kube prints in messages (1500m, 512Mi, 1e3)."""
        if self.nanos is None:
            return "-inf" if self.negative else "+inf"
        return canonical_nanos(self.nanos, self.format)


def brief(value: object) -> str:
    """A value for a message, strings in quotes: quantity and duration errors must not echo a 10 MB
    value whole (the same cut as validation.field.shown)."""
    text = value if isinstance(value, str) else str(value)
    cut = f"...({len(text) - 100} more)" if len(text) > 100 else ""
    return (repr(text[:100]) if isinstance(value, str) else text[:100]) + cut


def _error(reason: str, value: object) -> QuantityError:
    exc = QuantityError(f"{reason}, got {brief(value)}")
    exc.reason = reason
    return exc


def parse(value: str | int | float) -> Quantity:
    """Parse as apimachinery's ParseQuantity does (and Quantity.UnmarshalJSON for numbers)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _error("quantity must be a number or string", value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _error("quantity must be finite", value)
        text = repr(value)
    else:
        text = str(value).strip()
    m = _NUMBER.match(text)
    if m is None or not text:
        raise _error(FORMAT_ERROR, value)
    # No digits at all ("G", "-", ".", "Ki") is zero to ParseQuantity, despite the regular
    # expression its error message quotes; the suffix must still be a valid one.
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    exp10, exp2 = 0, 0
    if suffix in _BINARY_EXP:
        fmt, exp2 = BINARY_SI, 10 * _BINARY_EXP[suffix]
    elif suffix in _DECIMAL_EXP:
        fmt, exp10 = DECIMAL_SI, _DECIMAL_EXP[suffix]
    elif (em := _EXPONENT.match(suffix)) is not None:
        digits_of_exp = em.group(1)
        fmt, exp10 = DECIMAL_EXPONENT, int(digits_of_exp) if len(digits_of_exp) < 12 else _clamp_exponent(digits_of_exp)
    elif _SUFFIX_SHAPE.match(suffix):
        raise _error(SUFFIX_ERROR, value)
    else:
        raise _error(FORMAT_ERROR, value)
    digits = (whole + frac).lstrip("0")
    negative = sign == "-"
    if not digits:
        return Quantity(0, fmt)
    scale = exp10 - len(frac)  # value = int(digits) * 10^scale * 2^exp2
    magnitude = len(digits) + scale + exp2 * 0.30103  # ~log10 of the value
    if magnitude > _HUGE_DIGITS:
        if fmt == BINARY_SI:
            return Quantity(-_BINARY_CAP if negative else _BINARY_CAP, fmt, negative)
        return Quantity(None, fmt, negative)
    if magnitude < -_HUGE_DIGITS:
        nanos = 1  # non-zero values below a nano round up to one nano, as kube rounds them
    else:
        num = int(digits) * (2**exp2)
        shift = scale + 9
        nanos = num * 10**shift if shift >= 0 else -(-num // 10**-shift)  # round up to a whole nano
        if fmt == BINARY_SI:
            # ParseQuantity caps binary quantities at 2^63-1 (decimal ones keep their size).
            nanos = min(nanos, _BINARY_CAP)
    return Quantity(-nanos if negative else nanos, fmt, negative)


def _clamp_exponent(text: str) -> int:
    # A 12+ digit exponent is beyond anything representable; keep its sign, drop its size.
    return -(10**6) if text.startswith("-") else 10**6


def canonical_nanos(nanos: int, fmt: str) -> str:
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if fmt == BINARY_SI and n >= 1024 * NANO and n % NANO == 0:
        value, exp = n // NANO, 0
        while value % 1024 == 0 and exp < 6:
            value //= 1024
            exp += 1
        return f"{sign}{value}{_BINARY_SUFFIXES[exp]}"
    mantissa, exp = n, -9
    while mantissa % 1000 == 0:
        mantissa //= 1000
        exp += 3
    if fmt == DECIMAL_EXPONENT:
        return f"{sign}{mantissa}" + (f"e{exp}" if exp else "")
    if exp > 18:
        mantissa *= 10 ** (exp - 18)
        exp = 18
    return f"{sign}{mantissa}{_SUFFIX_OF_EXP[exp]}"


def canonical(value: str | int | float) -> str:
    """The canonical form of a quantity, as kube prints it back."""
    return parse(value).canonical()


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity into an exact Decimal in base units (nano-rounded)."""
    q = parse(value)
    if q.nanos is None:
        raise _error(OUT_OF_RANGE, value)
    return Decimal(f"{q.nanos}e-9")


def _ceil_div(n: int, d: int) -> int:
    return -(-n // d)


def _checked(value: int | None, raw: object, unit: str) -> int:
    if value is None or value > INT64_MAX:
        raise _error(f"must be less than or equal to {INT64_MAX}{unit}", raw)
    return value


def to_milli(value: str | int | float) -> int:
    """Quantity in thousandths (millicores for cpu), rounded up; QuantityError beyond int64."""
    nanos = parse(value).nanos
    return _checked(None if nanos is None else _ceil_div(nanos, 10**6), value, "m")


def to_int(value: str | int | float) -> int:
    """Quantity in base units, rounded up; QuantityError beyond int64."""
    nanos = parse(value).nanos
    return _checked(None if nanos is None else _ceil_div(nanos, NANO), value, "")


# Parsed quantities by (in millicores?, text): a cluster's pods repeat a few request strings
# ("100m", "500Mi") thousands of times. Bounded by emptying it when full.
_PARSED: dict[tuple[bool, str], int] = {}
PARSED_LIMIT = 4096


def resource_value(resource: str, value: str | int | float) -> int:
    """The integer kube-scheduler compares for a resource: millicores for cpu, base units otherwise."""
    milli = resource == "cpu"
    if type(value) is not str:
        return to_milli(value) if milli else to_int(value)
    key = (milli, value)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = to_milli(value) if milli else to_int(value)  # raises before anything is kept
        if len(_PARSED) >= PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[key] = parsed
    return parsed


_BINARY = (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10))


def describe_amount(resource: str, value: int) -> str:
    """An amount of a resource as a person reads it, in the units the table keeps (cpu in
    millicores, memory and storage in bytes): "300m", "2", "1.5Gi", "512Mi", "3"."""
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if value >= size:
                shown = f"{value / size:.1f}".removesuffix(".0")
                return f"{shown}{suffix}"
        return str(value)
    return str(value)
