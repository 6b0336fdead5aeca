"""Go durations, as kube reads and prints them: metav1.Duration is Go's time.Duration, int64
nanoseconds, read by time.ParseDuration and shown by Duration.String.

- `parse_go_duration_ns` / `parse_go_duration`: time.ParseDuration to the nanosecond: an optional
  sign, then one or more decimal numbers each with a unit (ns, us, µs, μs, ms, s, m, h), or a bare
  "0"; fractions of a unit are scaled in float64 as Go scales them and truncated to whole
  nanoseconds; anything beyond int64 nanoseconds is refused. Errors carry Go's own messages.
- `format_go_duration_ns` / `format_go_duration`: Duration.String ("1h2m3.5s", "1.5ms", "0s").
- `parse_duration_or_seconds` and `Seconds`: how kubesched's own inputs take a duration (a number
  of seconds, or a Go duration string with spaces around it allowed), leaving bounds to the
  caller, which names the field in its message.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Annotated

from pydantic import BeforeValidator, Field

from kubesched.api.quantity import brief

# time.Duration is int64 nanoseconds: nothing longer is a duration in kube, and timers, subquery
# ranges and timestamps built from a longer one overflow.
MAX_GO_DURATION_NS = 2**63 - 1
MAX_GO_DURATION_SECONDS = MAX_GO_DURATION_NS / 1e9
MAX_GO_DURATION_TEXT = "2562047h47m16.854775807s"

_UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
             "m": 60_000_000_000, "h": 3_600_000_000_000}
_UNIT_SECONDS = {unit: ns / 1e9 for unit, ns in _UNITS_NS.items()}
_DIGITS = frozenset("0123456789")
_TWO_63 = 1 << 63


class GoDurationError(ValueError):
    """A string time.ParseDuration refuses; the message is Go's."""


class GoDurationOverflow(GoDurationError):
    """A duration longer than int64 nanoseconds hold (Go stops there, before reading the rest)."""


def go_quote(text: str) -> str:
    """A string as Go's time package quotes it in an error: ASCII below space and everything
    beyond ASCII as \\x escapes of its UTF-8 bytes, `"` and `\\` escaped."""
    out = ['"']
    for char in text:
        if char < " " or ord(char) >= 0x80:
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    out.append('"')
    return "".join(out)


def _invalid(text: str) -> GoDurationError:
    return GoDurationError(f"time: invalid duration {go_quote(text)}")


def _overflow(text: str) -> GoDurationOverflow:
    return GoDurationOverflow(f"time: invalid duration {go_quote(text)}")


def _sign(text: str) -> tuple[bool, str]:
    if text[:1] in ("-", "+"):
        return text[0] == "-", text[1:]
    return False, text


def _terms(text: str, *, bounded: bool = True) -> Iterator[tuple[str, str, str]]:
    """The (whole digits, fraction digits, unit) of each term after the sign, in order, with
    GoDurationError where Go stops: a term without digits or unit, an unknown unit, and (when
    `bounded`) whole digits past 2**63, which Go refuses before it reads the unit."""
    rest = _sign(text)[1]
    if rest == "0":
        return
    if not rest:
        raise _invalid(text)
    i, n = 0, len(rest)
    while i < n:
        if rest[i] != "." and rest[i] not in _DIGITS:
            raise _invalid(text)
        start = i
        while i < n and rest[i] in _DIGITS:
            i += 1
        whole = rest[start:i]
        if bounded and (len(whole.lstrip("0")) > 19 or int(whole.lstrip("0") or "0") > _TWO_63):
            raise _overflow(text)
        fraction = ""
        if i < n and rest[i] == ".":
            start = i = i + 1
            while i < n and rest[i] in _DIGITS:
                i += 1
            fraction = rest[start:i]
        if not whole and not fraction:
            raise _invalid(text)  # no digits: ".s", "-.s"
        start = i
        while i < n and rest[i] != "." and rest[i] not in _DIGITS:
            i += 1
        unit = rest[start:i]
        if not unit:
            raise GoDurationError(f"time: missing unit in duration {go_quote(text)}")
        if unit not in _UNITS_NS:
            raise GoDurationError(f"time: unknown unit {go_quote(unit)} in duration {go_quote(text)}")
        yield whole, fraction, unit


def _fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: the digits as an integer and 10**len, but digits that would take the
    integer past 2**63 are dropped (precision stops, no error)."""
    value, scale = 0, 1.0
    for digit in digits:
        if value > (_TWO_63 - 1) // 10:
            break
        grown = value * 10 + ord(digit) - 48
        if grown > _TWO_63:
            break
        value, scale = grown, scale * 10
    return value, scale


def parse_go_duration_ns(text: str) -> int:
    """time.ParseDuration: nanoseconds, or GoDurationError (GoDurationOverflow past int64)."""
    total = 0
    for whole, fraction, unit in _terms(text):
        unit_ns = _UNITS_NS[unit]
        value = int(whole or "0")
        if value > _TWO_63 // unit_ns:
            raise _overflow(text)
        value *= unit_ns
        if fraction:
            digits, scale = _fraction(fraction)
            # Go scales in float64 (exact to the nanosecond for fractions of an hour) and truncates.
            value += int(float(digits) * (float(unit_ns) / scale))
            if value > _TWO_63:
                raise _overflow(text)
        total += value
        if total > _TWO_63:
            raise _overflow(text)
    if _sign(text)[0]:
        return -total
    if total > MAX_GO_DURATION_NS:
        raise _overflow(text)
    return total


def parse_go_duration(text: str) -> float:
    """time.ParseDuration, in seconds (the nearest float to the whole nanoseconds)."""
    return parse_go_duration_ns(text) / 10**9


def format_go_duration_ns(ns: int) -> str:
    """Duration.String: "0s"; under a second in the largest of ns, µs, ms that fits ("1.5ms");
    otherwise hours, minutes and seconds with the seconds' fraction ("1h0m0.5s", "2m3s")."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _decimal(ns, size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def format_go_duration(seconds: float) -> str:
    """Seconds as kube shows a metav1.Duration in a message ("15s", "1m30s", "500ms", "2h0m0s")."""
    return format_go_duration_ns(round(seconds * 1e9))


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def parse_duration_or_seconds(value: str | int | float) -> float:
    """A duration as kubesched's inputs give it, in seconds: a number (of seconds), or a Go
    duration string, spaces around it allowed. Not bounded: one longer than Go's int64 nanoseconds
    comes back as the float it reads as (an integer beyond floats as inf), for the caller to
    refuse in its own words. ValueError for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer beyond any float
            return math.inf if value > 0 else -math.inf
    text = str(value).strip()
    if not text:
        raise ValueError("empty duration")
    try:
        return parse_go_duration(text)
    except GoDurationOverflow:
        seconds = _unbounded_seconds(text)
    except GoDurationError:
        seconds = None
    if seconds is None:
        raise ValueError(f"invalid duration {brief(value)}: use a number of seconds or a form like 90s, 5m, 1h30m")
    return seconds


def _unbounded_seconds(text: str) -> float | None:
    """A duration too long for Go as the float it reads as; None if it is malformed as well."""
    try:
        terms = list(_terms(text, bounded=False))
    except GoDurationError:
        return None
    seconds = sum(float(f"{whole or 0}.{fraction or 0}") * _UNIT_SECONDS[unit] for whole, fraction, unit in terms)
    return -seconds if _sign(text)[0] else seconds


def _seconds(value: object) -> object:
    """Seconds' reading: a finite number of seconds no longer than kube's longest duration."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return value  # pydantic refuses it with its own type message
    seconds = parse_duration_or_seconds(value)
    if math.isnan(seconds):
        raise ValueError("must be a duration, not NaN")
    if seconds > MAX_GO_DURATION_SECONDS or seconds == -math.inf:
        raise ValueError(f"must be a duration no longer than {MAX_GO_DURATION_TEXT}")
    return seconds


# A plugin arg holding a duration: "30s", "5m", "1m30s" or a number of seconds, at least 0.
Seconds = Annotated[float, BeforeValidator(_seconds), Field(ge=0)]
