"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as integers.

CPU is kept in millicores and everything else in base units (bytes, counts),
which is how kube-scheduler compares them (MilliValue for cpu, Value otherwise).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


class QuantityError(ValueError):
    """A quantity string that Kubernetes would refuse."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a quantity into an exact Decimal in base units."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a number or string, got {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity must be finite, got {value!r}")
        return Decimal(repr(value))
    text = value.strip()
    match = _PATTERN.match(text)
    if not match:
        raise QuantityError(f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        base = Decimal(number)
    except InvalidOperation as exc:
        raise QuantityError(f"invalid quantity {value!r}") from exc
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    return base * _DECIMAL[suffix]


def _ceil(value: Decimal) -> int:
    # Kubernetes rounds fractional quantities up (e.g. 0.5 bytes becomes 1).
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


def to_milli(value: str | int | float) -> int:
    """Quantity in thousandths (millicores for cpu), rounded up."""
    return _ceil(parse_quantity(value) * 1000)


def to_int(value: str | int | float) -> int:
    """Quantity in base units, rounded up."""
    return _ceil(parse_quantity(value))


def resource_value(resource: str, value: str | int | float) -> int:
    """The integer kube-scheduler compares for a resource: millicores for cpu, base units otherwise."""
    return to_milli(value) if resource == "cpu" else to_int(value)


def parse_duration(value: str | int | float) -> float:
    """A Go-style duration ("1m30s", "500ms", "2h") or a number of seconds, in seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    total = 0.0
    pos = 0
    part = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
    if not text:
        raise ValueError("empty duration")
    while pos < len(text):
        m = part.match(text, pos)
        if not m:
            raise ValueError(f"invalid duration {value!r}: use a number of seconds or a form like 90s, 5m, 1h30m")
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    return total
