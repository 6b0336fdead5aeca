"""Quantities in ResourceSlices: parsing them as the API server decodes them (a bad one refuses
the whole object while decoding), and consumable capacity's request policies as
validateRequestPolicy checks them.

DRAFractionalCapacityRange is beta in v1.37 but on by default only with
--min-compatibility-version=1.37; a v1.37.2 API server's default is 1.36, so the gate is off: values
are compared as Quantity.Value() (whole units, rounded up) and must lie within [0, 2^63-1].
FRACTIONAL_CAPACITY_RANGE keeps the gate's other path (milli precision) for when it turns on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from kubesched.api.dra.common import CAPACITY_REQUEST_POLICY_MAX_OPTIONS, RawQuantity
from kubesched.api.dra.slices import CapacityRequestPolicy
from kubesched.api.quantity import NANO, Quantity, QuantityError, parse
from kubesched.api.validation.field import FieldIssue, duplicate, forbidden, invalid, required, too_many

INT64_MAX = 2**63 - 1
FRACTIONAL_CAPACITY_RANGE = False
_NOT_MILLI = "value cannot be represented as a milli value"


@dataclass(slots=True)
class ParsedPolicy:
    default: Quantity | None
    valid_values: list[Quantity]
    has_range: bool
    min: Quantity | None
    max: Quantity | None
    step: Quantity | None


@dataclass(slots=True)
class QuantityIssues:
    """Parses an object's quantities, keeping the first that does not parse: the API server stops
    decoding there."""

    issues: list[FieldIssue] = field(default_factory=list)

    def parse(self, raw: RawQuantity | None, path: str) -> Quantity | None:
        if raw is None:
            return None
        try:
            return parse(raw)
        except QuantityError as exc:
            if not self.issues:
                self.issues.append(FieldIssue(path, exc.reason or str(exc), decode=True))
            return None

    def parse_policy(self, policy: CapacityRequestPolicy, path: str) -> ParsedPolicy | None:
        before = len(self.issues)
        default = self.parse(policy.default, f"{path}.default")
        values = [self.parse(v, f"{path}.validValues[{i}]") for i, v in enumerate(policy.valid_values)]
        rng = policy.valid_range
        lo = self.parse(rng.min, f"{path}.validRange.min") if rng else None
        hi = self.parse(rng.max, f"{path}.validRange.max") if rng else None
        step = self.parse(rng.step, f"{path}.validRange.step") if rng else None
        if len(self.issues) > before:
            return None
        return ParsedPolicy(default, [v for v in values if v is not None], rng is not None, lo, hi, step)


def _dec(q: Quantity) -> Decimal:
    # Values too large for nano-units compare as huge; they are refused by the bounds anyway.
    return Decimal(q.nanos) / NANO if q.nanos is not None else Decimal("1e40") * (-1 if q.negative else 1)


def _fractional(q: Quantity) -> bool:
    return q.nanos is not None and q.nanos % NANO != 0


def _value(q: Quantity) -> int:
    """Quantity.Value(): whole units, rounded up."""
    return -(-q.nanos // NANO) if q.nanos is not None else INT64_MAX


def _key(q: Quantity) -> str:
    """validateSet's key for an option: its exact decimal value with the fractional gate, else
    its Value() (so 0.5 and 1 are the same option)."""
    if not FRACTIONAL_CAPACITY_RANGE:
        return str(_value(q))
    d = _dec(q)
    return str(d.quantize(Decimal(1))) if d == d.to_integral_value() else str(d.normalize())


def request_policy(capacity: Quantity, policy: ParsedPolicy, path: str) -> list[FieldIssue]:
    if policy.valid_values and policy.has_range:
        return [forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time')]
    if policy.valid_values:
        if policy.default is None:
            return [required(f"{path}.default", "required when validValues is defined")]
        return _valid_values(policy.default, capacity, policy.valid_values, f"{path}.validValues")
    if policy.has_range:
        if policy.default is None:
            return [required(f"{path}.default", "required when validRange is defined")]
        return _valid_range(policy.default, capacity, policy, f"{path}.validRange")
    return []


def _valid_values(default: Quantity, capacity: Quantity, values: list[Quantity], path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    for i in range(len(values) - 1):
        if _dec(values[i]) > _dec(values[i + 1]):
            out.append(invalid(f"{path}[{i + 1}]", values[i + 1].canonical(), "values must be sorted in ascending order"))
    found_default = False
    if len(values) > CAPACITY_REQUEST_POLICY_MAX_OPTIONS:
        out.append(too_many(path, len(values), CAPACITY_REQUEST_POLICY_MAX_OPTIONS))
    else:
        seen: set[str] = set()
        for i, option in enumerate(values):
            if _dec(option) > _dec(capacity):
                out.append(invalid(f"{path}[{i}]", option.canonical(), f"option is larger than capacity value: {capacity.canonical()}"))
            if _dec(option) == _dec(default):
                found_default = True
        for i, option in enumerate(values):
            key = _key(option)
            if key in seen:
                out.append(duplicate(f"{path}[{i}]", key))
            seen.add(key)
    if not found_default:
        out.append(invalid(path, default.canonical(), "default value is not valid according to the requestPolicy"))
    return out


def _valid_range(default: Quantity, capacity: Quantity, policy: ParsedPolicy, path: str) -> list[FieldIssue]:
    lo, hi, step = policy.min, policy.max, policy.step
    if lo is None:
        return [required(f"{path}.min", "required when validRange is defined")]
    out: list[FieldIssue] = []
    cap = capacity.canonical()
    if _dec(lo) > _dec(capacity):
        out.append(invalid(f"{path}.min", lo.canonical(), f"min is larger than capacity value: {cap}"))
    if _dec(default) < _dec(lo):
        out.append(invalid(f"{path}.default", default.canonical(), f"default is less than min: {lo.canonical()}"))
    if hi is not None:
        if _dec(lo) > _dec(hi):
            out.append(invalid(f"{path}.max", lo.canonical(), f"min is larger than max: {hi.canonical()}"))
        if _dec(hi) > _dec(capacity):
            out.append(invalid(f"{path}.max", hi.canonical(), f"max is larger than capacity value: {cap}"))
        if _dec(default) > _dec(hi):
            out.append(invalid(f"{path}.default", default.canonical(), f"default is more than max: {hi.canonical()}"))
    named = [("default", default), ("min", lo), ("max", hi), ("step", step)]
    use_milli = FRACTIONAL_CAPACITY_RANGE and any(q is not None and _fractional(q) for _, q in named)
    if use_milli:
        unsafe = [invalid(f"{path}.{name}", q.canonical(), _NOT_MILLI) for name, q in named
                  if q is not None and q.nanos is not None and q.nanos % 10**6 != 0]
        if unsafe:
            return out + unsafe
    if step is None:
        return out
    if _dec(step) <= 0:
        out.append(invalid(f"{path}.step", step.canonical(), "must be greater than zero"))
        return out
    one_step = _dec(lo) + _dec(step)
    if one_step > _dec(capacity):
        out.append(invalid(f"{path}.step", step.canonical(),
                           f"one step {_canonical_sum(lo, step)} is larger than capacity value: {cap}"))
    if not use_milli:
        bounds = [_int64_range(q, f"{path}.{name}") for name, q in named if q is not None]
        bad = [issue for issues in bounds for issue in issues]
        if bad:
            return out + bad
    def units(q: Quantity) -> int:
        return -(-q.nanos // 10**6) if use_milli and q.nanos is not None else _value(q)

    for value in (default, hi):
        if value is not None and (units(value) - units(lo)) % units(step) != 0:
            out.append(invalid(f"{path}.step", value.canonical(),
                               f"value is not a multiple of a given step ({step.canonical()}) from ({lo.canonical()})"))
    return out


def _int64_range(q: Quantity, path: str) -> list[FieldIssue]:
    if q.negative and q.nanos != 0:
        return [invalid(path, q.canonical(), "must be greater than or equal to 0")]
    if _dec(q) > INT64_MAX:
        return [invalid(path, q.canonical(), f"must not be larger than {INT64_MAX}")]
    return []


def _canonical_sum(a: Quantity, b: Quantity) -> str:
    """Quantity.Add's String(): the sum in the first operand's format."""
    if a.nanos is None or b.nanos is None:
        return a.canonical()
    return Quantity(a.nanos + b.nanos, a.format, a.nanos + b.nanos < 0).canonical()
