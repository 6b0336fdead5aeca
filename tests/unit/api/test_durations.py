"""api.durations against Go's time.ParseDuration and Duration.String.

Every expected value and message below is what Go 1.26's time package returns for the input (run
once through a small Go program on this machine), so a change that drifts from Go fails here.
"""

from __future__ import annotations

import math

import pytest
from pydantic import BaseModel, ValidationError

from kubesched.api.durations import (
    MAX_GO_DURATION_NS,
    MAX_GO_DURATION_SECONDS,
    MAX_GO_DURATION_TEXT,
    GoDurationError,
    GoDurationOverflow,
    Seconds,
    format_go_duration,
    format_go_duration_ns,
    go_quote,
    parse_duration_or_seconds,
    parse_go_duration,
    parse_go_duration_ns,
)

S = 1_000_000_000
MIN_NS = -(2**63)


@pytest.mark.parametrize(("text", "ns"), [
    ("0", 0), ("+0", 0), ("-0", 0), ("0s", 0), ("-0s", 0),
    ("5s", 5 * S), ("+5s", 5 * S), ("-5s", -5 * S), ("30s", 30 * S), ("1478s", 1478 * S),
    ("5.0s", 5 * S), ("5.6s", 5_600_000_000), ("5.s", 5 * S), (".5s", S // 2), ("-.5s", -S // 2),
    ("1.004s", 1_004_000_000), ("100.00100s", 100_001_000_000),
    ("10ns", 10), ("11us", 11_000), ("12µs", 12_000), ("12μs", 12_000), ("13ms", 13_000_000),
    ("15m", 15 * 60 * S), ("16h", 16 * 3600 * S),
    ("3h30m", 12_600 * S), ("10.5s4m", 250_500_000_000), ("-2m3.4s", -123_400_000_000),
    ("1h2m3s4ms5us6ns", 3_723_004_005_006), ("39h9m14.425s", 140_954_425_000_000),
    ("1h2m3.5s", 3_723_500_000_000), ("-1.5h", -5_400_000_000_000), ("1.5h30m", 7_200 * S),
    ("1s1s", 2 * S), ("5m5m", 600 * S),  # Go adds repeated units up
    ("52763797000ns", 52_763_797_000), ("9007199254740993ns", 9_007_199_254_740_993),
    ("00000000000000000000000001s", S),  # leading zeros are not digits that overflow
    # Fractions: scaled in float64 and truncated, digits past 2**63 dropped.
    ("0.3333333333333333333h", 1_200_000_000_000), ("1.9999999999ns", 1), (".5ns", 0),
    ("0.100000000000000000000h", 360_000_000_000), ("0.830103483285477580700h", 2_988_372_539_827),
    ("123456789.123456789s", 123_456_789_123_456_789),
    # The edges of int64.
    ("9223372036854775807ns", MAX_GO_DURATION_NS), ("9223372036854775.807us", MAX_GO_DURATION_NS),
    ("9223372036s854ms775us807ns", MAX_GO_DURATION_NS), ("2562047h47m16.854775807s", MAX_GO_DURATION_NS),
    ("-9223372036854775808ns", MIN_NS), ("-2562047h47m16.854775808s", MIN_NS),
])
def test_parse_as_go_does(text: str, ns: int) -> None:
    assert parse_go_duration_ns(text) == ns
    assert parse_go_duration(text) == ns / 10**9


@pytest.mark.parametrize(("text", "message"), [
    ("", 'time: invalid duration ""'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".s", 'time: invalid duration ".s"'),
    ("-.s", 'time: invalid duration "-.s"'),
    (" 5s", 'time: invalid duration " 5s"'),
    ("x5s", 'time: invalid duration "x5s"'),
    ("3", 'time: missing unit in duration "3"'),
    ("-3", 'time: missing unit in duration "-3"'),
    ("00", 'time: missing unit in duration "00"'),
    ("1s.5", 'time: missing unit in duration "1s.5"'),
    ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
    ("1.5e3s", 'time: unknown unit "e" in duration "1.5e3s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("5S", 'time: unknown unit "S" in duration "5S"'),
    ("5s ", 'time: unknown unit "s " in duration "5s "'),
    ("5 s", 'time: unknown unit " s" in duration "5 s"'),
    ("1.5.5s", 'time: missing unit in duration "1.5.5s"'),
    ("-1h-1m", 'time: unknown unit "h-" in duration "-1h-1m"'),
    # Go quotes what it cannot print byte by byte, and escapes quotes and backslashes.
    ("1µx", r'time: unknown unit "\xc2\xb5x" in duration "1\xc2\xb5x"'),
    ("1\ts", r'time: unknown unit "\x09s" in duration "1\x09s"'),
    ('1"s', r'time: unknown unit "\"s" in duration "1\"s"'),
    ("1\\s", r'time: unknown unit "\\s" in duration "1\\s"'),
])
def test_refused_with_gos_message(text: str, message: str) -> None:
    with pytest.raises(GoDurationError) as caught:
        parse_go_duration_ns(text)
    assert str(caught.value) == message
    assert not isinstance(caught.value, GoDurationOverflow)


@pytest.mark.parametrize("text", [
    "9223372036854775808ns", "-9223372036854775809ns", "2562048h", "2562047h47m16.854775808s",
    "9223372036s854ms775us808ns", "3000000h", "99999999999999999999ns", "1" * 5000 + "h",
    # Go stops at the overflowing number before it reads what follows.
    "99999999999999999999x", "99999999999999999999", "99999999999999999999h1x",
])
def test_overflow_of_int64_nanoseconds_is_refused(text: str) -> None:
    with pytest.raises(GoDurationOverflow) as caught:
        parse_go_duration_ns(text)
    assert str(caught.value) == f"time: invalid duration {go_quote(text)}"


@pytest.mark.parametrize(("ns", "text"), [
    (0, "0s"), (1, "1ns"), (-1, "-1ns"), (999, "999ns"), (1000, "1µs"), (1500, "1.5µs"), (1_000_000, "1ms"),
    (1_500_000, "1.5ms"), (-1_500_000, "-1.5ms"), (999_999_999, "999.999999ms"), (S, "1s"), (S + 1, "1.000000001s"),
    (1_500_000_000, "1.5s"), (60 * S, "1m0s"), (90 * S, "1m30s"), (60 * S + 1, "1m0.000000001s"),
    (3600 * S, "1h0m0s"), (7200 * S, "2h0m0s"), (3_723_500_000_000, "1h2m3.5s"), (-5_400_000_000_000, "-1h30m0s"),
    (MAX_GO_DURATION_NS, MAX_GO_DURATION_TEXT), (MIN_NS, "-2562047h47m16.854775808s"),
])
def test_format_as_go_does(ns: int, text: str) -> None:
    assert format_go_duration_ns(ns) == text
    if ns != MIN_NS:
        assert parse_go_duration_ns(text) == ns  # Go reads back what it prints


@pytest.mark.parametrize(("seconds", "text"), [
    (15.0, "15s"), (90.0, "1m30s"), (1.5, "1.5s"), (0.5, "500ms"), (0.1, "100ms"), (7200.0, "2h0m0s"),
    (0.0, "0s"), (-3.0, "-3s"), (2**31 - 1, "596523h14m7s"), (600000 * 3600.0, "600000h0m0s"),
])
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text


def test_the_int64_bound() -> None:
    assert MAX_GO_DURATION_NS == 2**63 - 1
    assert format_go_duration_ns(MAX_GO_DURATION_NS) == MAX_GO_DURATION_TEXT
    assert MAX_GO_DURATION_SECONDS == (2**63 - 1) / 1e9
    assert int(MAX_GO_DURATION_SECONDS) == 9223372036


# kubesched's own inputs: a number of seconds, or a Go duration string.

@pytest.mark.parametrize(("raw", "seconds"), [
    ("30s", 30), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), (7, 7.0),
    (" 15s ", 15.0), ("0", 0.0), ("-1.5h", -5400.0), (2.5, 2.5), (-3, -3.0),
])
def test_durations_or_seconds(raw: str | int | float, seconds: float) -> None:
    assert parse_duration_or_seconds(raw) == pytest.approx(seconds)


def test_bad_duration() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration_or_seconds("5 minutes")


@pytest.mark.parametrize(("raw", "message"), [
    ("5 minutes", "invalid duration '5 minutes': use a number of seconds or a form like 90s, 5m, 1h30m"),
    ("90", "invalid duration '90': use a number of seconds or a form like 90s, 5m, 1h30m"),
    ("1e3s", "invalid duration '1e3s': use a number of seconds or a form like 90s, 5m, 1h30m"),
    ("99999999999999999999h1x", "invalid duration '99999999999999999999h1x': use a number of seconds or a form like "
                                "90s, 5m, 1h30m"),
    ("x" * 150, f"invalid duration {'x' * 100!r}...(50 more): use a number of seconds or a form like 90s, 5m, 1h30m"),
    ("", "empty duration"),
    ("   ", "empty duration"),
])
def test_durations_or_seconds_refused(raw: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration_or_seconds(raw)
    assert str(caught.value) == message


@pytest.mark.parametrize(("raw", "seconds"), [
    ("3000000h", 3000000 * 3600.0), ("-3000000h", -3000000 * 3600.0), ("1" * 400 + "h", math.inf),
    (10**400, math.inf), (-(10**400), -math.inf), (math.inf, math.inf),
])
def test_too_long_for_go_is_left_to_the_caller(raw: str | int | float, seconds: float) -> None:
    assert parse_duration_or_seconds(raw) == seconds


class _Args(BaseModel):
    window: Seconds = 60.0


@pytest.mark.parametrize(("raw", "seconds"), [("30s", 30.0), ("1m30s", 90.0), (45, 45.0), (0.5, 0.5), ("0", 0.0)])
def test_seconds_in_plugin_args(raw: str | float, seconds: float) -> None:
    assert _Args.model_validate({"window": raw}).window == seconds


@pytest.mark.parametrize(("raw", "message"), [
    (math.nan, "must be a duration, not NaN"),
    (math.inf, f"must be a duration no longer than {MAX_GO_DURATION_TEXT}"),
    (-math.inf, f"must be a duration no longer than {MAX_GO_DURATION_TEXT}"),
    ("3000000h", f"must be a duration no longer than {MAX_GO_DURATION_TEXT}"),
    (10**400, f"must be a duration no longer than {MAX_GO_DURATION_TEXT}"),
    ("soon", "invalid duration 'soon'"),
    ("-5s", "greater than or equal to 0"),
    ([1], "valid number"),
])
def test_seconds_refused(raw: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _Args.model_validate({"window": raw})
