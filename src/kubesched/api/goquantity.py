"""apimachinery's resource.Quantity in its int64 form, as far as a message needs it: parsing keeps
Go's (value, scale, format), subtraction its scale arithmetic, and `go_value` prints the struct as
Go's `%v` prints a Quantity held in a map (a ResourceList): `{{6000 -3} {<nil>}  DecimalSI}`.

scheduler-plugins' Coscheduling formats its "resource gap" message that way (fmt "%v" of a
ResourceList, whose values fmt cannot call String() on). Quantities beyond the int64 fast path
(over 18 significant digits, finer than a nano) are kept in nano-units instead; their text then
differs from Go's, which would print an inf.Dec.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubesched.api.quantity import BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, canonical

_NUMBER = re.compile(r"^([+-]?)0*([0-9]*)(?:\.([0-9]*))?(.*)$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_INT64_FACTORS = 18
_INT64_MAX = 2**63 - 1


@dataclass(slots=True)
class GoQuantity:
    value: int
    scale: int
    format: str
    s: str = ""  # the cached canonical string Go keeps when the input was canonical

    def sub(self, other: GoQuantity) -> None:
        """Quantity.Sub on the int64 form (int64Amount.Add of the negated value)."""
        self.s = ""
        if self.value == 0:
            self.format = other.format
        b = -other.value
        if b == 0:
            return
        if self.value == 0:
            self.value, self.scale = b, other.scale
        elif self.scale == other.scale:
            self.value += b
        elif self.scale > other.scale:
            self.value = self.value * 10 ** (self.scale - other.scale) + b
            self.scale = other.scale
        else:
            self.value += b * 10 ** (other.scale - self.scale)

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)


def parse(text: str | int | float) -> GoQuantity:
    """ParseQuantity's result for a valid quantity (the API server validated it already)."""
    raw = str(text)
    if raw == "0":
        return GoQuantity(0, 0, DECIMAL_SI, "0")
    m = _NUMBER.match(raw)
    if m is None:
        return GoQuantity(0, 0, DECIMAL_SI)
    sign, num, denom, suffix = m.group(1), m.group(2) or "0", m.group(3) or "", m.group(4)
    negative = sign == "-"
    if suffix in _BINARY:
        fmt, exponent, base2 = BINARY_SI, _BINARY[suffix], True
    elif suffix in _DECIMAL:
        fmt, exponent, base2 = DECIMAL_SI, _DECIMAL[suffix], False
    elif suffix[:1] in ("e", "E"):
        fmt, exponent, base2 = DECIMAL_EXPONENT, int(suffix[1:]), False
    else:
        return GoQuantity(0, 0, DECIMAL_SI)
    shifted = num + denom
    if not base2:
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
        scale, mantissa = exponent, 1
    elif not denom:
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        scale, mantissa = 0, 1 << exponent
    else:
        precision, scale, mantissa = -1, 0, 1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            value = int(shifted) * mantissa
            if value <= _INT64_MAX:
                value = -value if negative else value
                canonical = (exponent % 10 == 0 and int(shifted) & 7 != 0) if base2 else (
                    scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0")
                return GoQuantity(value, scale, fmt, raw if canonical else "")
    # Outside the fast path: an exact value in nano-units (rounded up, as Go rounds).
    units = int(shifted or "0") * (2**exponent if base2 else 1)
    exp10 = (0 if base2 else exponent) - len(denom) + 9
    nanos = units * 10**exp10 if exp10 >= 0 else -(-units // 10**-exp10)
    return GoQuantity(-nanos if negative else nanos, -9, fmt)


def go_string(text: str | int | float) -> str:
    """Quantity.String() of a quantity as the API server decoded it: the input itself where
    ParseQuantity keeps it (`2e0`, `1.500k`), else the canonical form (`0.5` is `500m`). The
    quantity must parse (api.quantity)."""
    return parse(text).s or canonical(text)


def scheduler_quantity(resource: str, amount: int, binary: bool) -> GoQuantity:
    """What scheduler-plugins' util.ResourceList makes of an amount in the scheduler's units:
    NewMilliQuantity for cpu, NewQuantity otherwise (BinarySI or DecimalSI)."""
    if resource == "cpu":
        return GoQuantity(amount, -3, DECIMAL_SI)
    return GoQuantity(amount, 0, BINARY_SI if binary else DECIMAL_SI)


def go_value(q: GoQuantity) -> str:
    """fmt's %v of a Quantity value: its struct fields, the cached string empty after arithmetic."""
    return f"{{{{{q.value} {q.scale}}} {{<nil>}} {q.s} {q.format}}}"


def go_resource_list(items: dict[str, GoQuantity]) -> str:
    """fmt's %v of a ResourceList: `map[k:v ...]`, keys sorted."""
    return "map[" + " ".join(f"{k}:{go_value(items[k])}" for k in sorted(items)) + "]"
