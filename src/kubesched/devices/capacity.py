"""Consumable capacity, as kube's incubating allocator checks and books it (DRAConsumableCapacity,
beta and on in v1.37.2; DRAFractionalCapacityRange off for a default binary, so a request policy's
range is computed on Quantity.Value(), whole units rounded up).

A device with allowMultipleAllocations can be shared by several claims and requests: each share
consumes, per capacity of the device, what the request asks (or the policy's default, or the
whole capacity when the request names none), rounded up by the policy (the next valid value, or
the next step from min), and the shares together must stay within the capacity. A request that
names a capacity the device lacks does not fit the device; one the policy refuses (over max, off
step, not a valid value) neither. A negative or unrepresentable amount stops the allocation.

Amounts are exact integers in nano-units (apimachinery's quantities have nano precision), so sums
and comparisons are exact as Quantity.Cmp is; what a result reports keeps the quantity's format.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from kubesched.api.dra import CapacityRequestPolicy, CapacityRequestPolicyRange, DeviceCapacity
from kubesched.api.objects import Quantity as RawQuantity
from kubesched.api.quantity import INT64_MAX, NANO, Quantity, QuantityError, parse

# Consumed amounts by capacity name, in nano-units (kube's ConsumedCapacity).
Consumed = dict[str, int]

NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"
NEGATIVE = "capacity value is negative"


class CapacityError(Exception):
    """The amount a request would consume cannot be computed (kube aborts the allocation); the
    message is kube's, starting with the capacity's name."""


@functools.lru_cache(maxsize=4096)
def quantity(raw: RawQuantity) -> Quantity:
    """A quantity of a slice or claim, parsed once per spelling ("80Gi" on a thousand GPUs);
    beyond nano-unit integers (over 10^40) is refused."""
    try:
        parsed = parse(raw)
    except QuantityError as exc:
        raise CapacityError(f"quantity {raw}: {exc}") from None
    if parsed.nanos is None:
        raise CapacityError(f"quantity {raw}: too large for consumable capacity")
    return parsed


def nanos(raw: RawQuantity) -> int:
    value = quantity(raw).nanos
    assert value is not None  # quantity() refuses the rest
    return value


def _value(q: Quantity) -> int:
    """Quantity.Value(): whole units, rounded up."""
    assert q.nanos is not None
    return -(-q.nanos // NANO)


def _go_remainder_nonzero(a: int, b: int) -> bool:
    """Go's a % b != 0 (truncated division: only the magnitudes matter for zero)."""
    return abs(a) % abs(b) != 0


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncated toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def consumed_by_request(requested: RawQuantity | None, capacity: DeviceCapacity, name: str) -> Quantity:
    """calculateConsumedCapacity: what one share consumes of the capacity `name`."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return quantity(policy.default)
        return quantity(capacity.value)
    asked = quantity(requested)
    if policy is None:
        return asked
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(asked, policy.valid_range, name)
    for valid in policy.valid_values:
        option = quantity(valid)
        if _n(asked) <= _n(option):
            return option
    return asked


def _n(q: Quantity) -> int:
    assert q.nanos is not None
    return q.nanos


def _round_up_range(asked: Quantity, valid_range: CapacityRequestPolicyRange, name: str) -> Quantity:
    assert valid_range.min is not None
    low = quantity(valid_range.min)
    if _n(asked) < _n(low):
        return low
    if valid_range.step is None:
        return asked
    step = quantity(valid_range.step)
    if _n(asked) > INT64_MAX * NANO:
        raise CapacityError(f'capacity "{name}": {NOT_REPRESENTABLE}: request {asked.canonical()} exceeds MaxInt64')
    added = _value(asked) - _value(low)
    stride = _value(step)
    steps = _go_div(added, stride) + (1 if _go_remainder_nonzero(added, stride) else 0)
    if _value(low) >= 0 and steps > (INT64_MAX - _value(low)) // stride:
        raise CapacityError(f'capacity "{name}": {NOT_REPRESENTABLE}: rounding request {asked.canonical()} '
                            "up to the next step passes MaxInt64")
    result = _value(low) + stride * steps
    return Quantity(result * NANO, step.format, result < 0)


def violates_policy(consumed: Quantity, policy: CapacityRequestPolicy | None) -> bool:
    """violatesPolicy. kube first lets the policy's default through; the API server checked that
    the default satisfies the policy, so the policy's own check gives the same answer for it."""
    if policy is None:
        return False
    if policy.default is not None and _n(consumed) == nanos(policy.default):
        return False
    if policy.valid_range is not None:
        valid_range = policy.valid_range
        if valid_range.max is not None and _n(consumed) > nanos(valid_range.max):
            return True
        if valid_range.step is not None:
            low = _value(quantity(valid_range.min)) if valid_range.min is not None else 0
            return _go_remainder_nonzero(_value(consumed) - low, _value(quantity(valid_range.step)))
        return False
    if policy.valid_values:
        return all(_n(consumed) != nanos(v) for v in policy.valid_values)
    return False


def share_of_request(requests: Mapping[str, RawQuantity] | None,
                     capacities: Mapping[str, DeviceCapacity]) -> dict[str, Quantity]:
    """What one share of the device consumes per capacity (kube's GetConsumedCapacityFromRequest
    and the first half of CmpRequestOverCapacity); CapacityError names the capacity at fault."""
    out: dict[str, Quantity] = {}
    for name, capacity in capacities.items():
        consumed = consumed_by_request(requests.get(name) if requests else None, capacity, name)
        if consumed.negative and _n(consumed) != 0:
            raise CapacityError(f'capacity "{name}": {NEGATIVE}')
        out[name] = consumed
    return out


def request_fits(requests: Mapping[str, RawQuantity] | None, capacities: Mapping[str, DeviceCapacity],
                 allocated: Mapping[str, int] | None, allocating: Mapping[str, int] | None) -> bool:
    """CmpRequestOverCapacity: whether one more share of the request fits beside what allocated
    claims (`allocated`) and this allocation's earlier picks (`allocating`) consume."""
    if requests and any(name not in capacities for name in requests):
        return False
    share = share_of_request(requests, capacities)
    for name, capacity in capacities.items():
        consumed = share[name]
        if violates_policy(consumed, capacity.request_policy):
            return False
        total = _n(consumed) + (allocated or {}).get(name, 0) + (allocating or {}).get(name, 0)
        if total > nanos(capacity.value):
            return False
    return True


def add_consumed(book: dict[tuple[str, str, str], Consumed], device_id: tuple[str, str, str], share: Mapping[str, int]) -> None:
    """ConsumedCapacityCollection.Insert: the entry is created (even empty: it marks the device as
    shared) or each amount added."""
    entry = book.get(device_id)
    if entry is None:
        book[device_id] = dict(share)
        return
    for name, amount in share.items():
        entry[name] = entry.get(name, 0) + amount


def remove_consumed(book: dict[tuple[str, str, str], Consumed], device_id: tuple[str, str, str], share: Mapping[str, int]) -> None:
    """ConsumedCapacityCollection.Remove: amounts subtracted; an entry left all zero is dropped."""
    entry = book.get(device_id)
    if entry is None:
        return
    for name, amount in share.items():
        if name in entry:
            entry[name] -= amount
    if all(amount == 0 for amount in entry.values()):
        del book[device_id]
