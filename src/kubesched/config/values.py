"""How one value of a KubeSchedulerConfiguration is read and shown in a message.

Each reader takes the raw value and its field path and returns the value typed, or raises
ConfigError naming the path: kube's strict decoding (unknown fields, wrong types), the ranges of the
Go types behind the fields (int32, int64, time.Duration), and values shown the way a person can read
them (YAML's .inf, quoted strings, long values cut).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.durations import MAX_GO_DURATION_SECONDS, MAX_GO_DURATION_TEXT, parse_duration_or_seconds
from kubesched.api.validation.meta import dns1123_label, dns1123_subdomain
from kubesched.config.errors import ConfigError

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# Keys shown bare in a field path; others are quoted.
PLAIN_KEY = re.compile(r"[A-Za-z0-9_.\-/]{1,100}")


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def path_key(key: Any) -> str:
    """A mapping key as a path segment: plain names as they are, anything else quoted and cut."""
    if isinstance(key, str) and PLAIN_KEY.fullmatch(key):
        return key
    return show(key)


def show(value: Any) -> str:
    """A value for an error message: JSON-like scalars, a type word for anything bigger."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float) and not math.isfinite(value):
        # As YAML spells them, which is how they reached us.
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        # Python refuses to print integers of thousands of digits; nobody wants to read one either.
        return f"an integer of about {value.bit_length() * 30103 // 100000 + 1} digits"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def invalid(path: str, value: str, detail: str) -> ConfigError:
    """kube's field.Invalid as apimachinery prints it: `<path>: Invalid value: <value>: <detail>`;
    `value` is already rendered (a Go duration, a number, a quoted string)."""
    return ConfigError(f"{path}: Invalid value: {value}: {detail}")


def read_fields(data: Any, path: str, known: Iterable[str], gone: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A mapping with only known keys (None reads as empty), like kube's strict decoding."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'configuration'}: must be a mapping, got {show(data)}")
    known = tuple(known)
    for key in data:
        if key not in known:
            where = join_path(path, path_key(key))
            if gone and key in gone:
                raise ConfigError(f"{where}: unknown field ({gone[key]})")
            raise ConfigError(f"{where}: unknown field (known fields: {', '.join(known)})")
    return dict(data)


def read_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: must be a list, got {show(value)}")
    return value


def read_int(value: Any, path: str, bounds: tuple[int, int] = INT64) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: must be an integer, got {show(value)}")
    if not bounds[0] <= value <= bounds[1]:
        raise ConfigError(f"{path}: out of range for a {'32' if bounds == INT32 else '64'}-bit integer, got {value}")
    return value


def read_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: must be true or false, got {show(value)}")
    return value


def read_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path}: must be a string, got {show(value)}")
    return value


def read_duration(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{path}: must be a duration such as \"15s\", got {show(value)}")
    try:
        seconds = parse_duration_or_seconds(value)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if math.isnan(seconds) or abs(seconds) > MAX_GO_DURATION_SECONDS:
        # Go's durations are int64 nanoseconds: time.ParseDuration refuses anything longer.
        raise ConfigError(f"{path}: invalid duration {show(value)}: must be no longer than {MAX_GO_DURATION_TEXT}")
    return seconds


def dns1123_label_error(value: str) -> str:
    """apimachinery's IsDNS1123Label (a namespace name): its first message, "" when valid."""
    return next(iter(dns1123_label(value)), "")


def dns1123_subdomain_error(value: str) -> str:
    """apimachinery's IsDNS1123Subdomain (an object name): its first message, "" when valid."""
    return next(iter(dns1123_subdomain(value)), "")


def read_percentage(raw: Mapping[str, Any], key: str, path: str, default: int | None) -> int | None:
    if raw.get(key) is None:
        return default
    value = read_int(raw[key], path, INT32)
    if not 0 <= value <= 100:
        raise invalid(path, str(value), "not in valid range [0-100]")
    return value
