"""The checks resource.k8s.io's validation (pkg/apis/resource/validation) shares between classes,
claims and slices: names (drivers, pools, devices, requests, qualified attribute names), CEL
selectors (compiled by a `SelectorCheck` the caller hands in: the device CEL environment is in
devices/, above this layer), opaque configuration, tolerations and taints, binding conditions,
and kube's list and map helpers.

Two lists, as the API server builds its answer. Since v1.36 the API server runs the declarative
validation generated from the types' tags next to the handwritten one; a handwritten error that
an enforced (beta) declarative rule covers is replaced by the declarative one, and those are
appended after all handwritten errors. `Found.hand` holds the handwritten errors, `Found.declared`
the declarative ones (the covered rules), so that the first message is the API server's.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import msgspec

from kubesched.api.dra.common import (
    BINDING_CONDITIONS_MAX_SIZE,
    BINDING_FAILURE_CONDITIONS_MAX_SIZE,
    CEL_EXPRESSION_MAX_LENGTH,
    DEVICE_MAX_DOMAIN_LENGTH,
    DEVICE_MAX_ID_LENGTH,
    DEVICE_SELECTORS_MAX_SIZE,
    DRIVER_NAME_MAX_LENGTH,
    POOL_NAME_MAX_LENGTH,
    TAINT_EFFECTS,
    TOLERATION_OP_EQUAL,
    TOLERATION_OP_EXISTS,
    DeviceConfiguration,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
)
from kubesched.api.quantity import QuantityError, canonical
from kubesched.api.validation.field import (
    FieldIssue,
    duplicate,
    forbidden,
    go_json,
    internal_error,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from kubesched.api.validation.meta import (
    dns1123_label,
    dns1123_subdomain,
    dns1123_subdomain_caseless,
    label_key,
    label_value,
    regex_error,
)

T = TypeVar("T")

# Attribute and capacity names: a domain (63) and a C identifier (32).
QUALIFIED_NAME_MAX_LENGTH = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                     "alphanumeric characters or '_'")
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile(_C_IDENTIFIER_FMT, re.ASCII)
EMPTY_CEL = ("compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' expecting "
             "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}")


@dataclass(slots=True)
class Found:
    """What the API server reports for one object: handwritten errors first, then the declarative
    validation's (the rules it covers)."""

    hand: list[FieldIssue] = field(default_factory=list)
    declared: list[FieldIssue] = field(default_factory=list)

    def all(self) -> list[FieldIssue]:
        return self.hand + self.declared


# --- kube's list and map helpers (validateSlice, validateSet, validateMap) ------------------------------


def over_limit(f: Found, items: Sized, limit: int, path: str, *, covered: bool) -> bool:
    """The size check every list starts with; beyond the limit nothing else of it is checked."""
    if limit >= 0 and len(items) > limit:
        (f.declared if covered else f.hand).append(too_many(path, len(items), limit))
        return True
    return False


def duplicates(f: Found, items: Sequence[T], key: Callable[[T], Hashable], path: str, *, covered: bool,
               shown_as: Callable[[T], str] | None = None) -> None:
    """validateSet's uniqueness: every repeat of an earlier key is a Duplicate at its index. The
    declarative rule shows the whole item (json.Marshal), the handwritten one its key."""
    seen: set[Hashable] = set()
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            if covered:
                f.declared.append(duplicate(f"{path}[{i}]", shown_as(item) if shown_as else k, rendered=shown_as is not None))
            else:
                f.hand.append(duplicate(f"{path}[{i}]", k))
        else:
            seen.add(k)


def item_json(item: msgspec.Struct) -> str:
    """An API struct as the API server prints it in a message (json.Marshal of the v1 type, where
    a quantity is its canonical string)."""
    return go_json(_quantities_as_strings(msgspec.to_builtins(item)))


# Keys whose values are quantities, and maps whose values all are.
_QUANTITY_KEYS = frozenset({"default", "min", "max", "step"})
_QUANTITY_MAPS = frozenset({"requests", "consumedCapacity"})


def _canonical(value: Any) -> Any:
    try:
        return canonical(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else value
    except QuantityError:
        return value


def _quantities_as_strings(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        if key in _QUANTITY_MAPS and all(not isinstance(v, (dict, list)) for v in value.values()):
            return {k: _canonical(v) for k, v in value.items()}
        out = {}
        for k, v in value.items():
            quantity = k in _QUANTITY_KEYS or (k == "value" and set(value) <= {"value", "requestPolicy"})
            out[k] = _canonical(v) if quantity else _quantities_as_strings(v, k)
        return out
    if isinstance(value, list):
        if key == "validValues":
            return [_canonical(v) for v in value]
        return [_quantities_as_strings(v) for v in value]
    return value


def map_key_path(path: str, key: str, limit: int) -> str:
    """validateMap's path for a key, cut in the middle beyond `limit` (at least 16) characters."""
    limit = max(limit, 16)
    if len(key) > limit:
        remaining = limit - 3
        key = key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]
    return f"{path}[{key}]"


# --- names ------------------------------------------------------------------------------------------


def dns_label(value: str, path: str) -> list[FieldIssue]:
    return [invalid(path, value, msg) for msg in dns1123_label(value)]


def dns_subdomain(value: str, path: str) -> list[FieldIssue]:
    return [invalid(path, value, msg) for msg in dns1123_subdomain(value)]


def driver_name(f: Found, name: str, path: str, *, covered: bool = False) -> None:
    """ValidateCSIDriverName; `covered` where the declarative rules take it over (opaque
    configuration, allocation results): there the length error reads as MaxLength's."""
    out = f.declared if covered else f.hand
    if not name:
        out.append(required(path))
        return
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        out.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    if covered:
        # The declarative LongNameCaseless checks the name as written, in its own words.
        out.extend(invalid(path, name, msg) for msg in dns1123_subdomain_caseless(name))
    else:
        out.extend(invalid(path, name, msg) for msg in dns1123_subdomain(name.lower()))



def driver_issues(name: str, path: str) -> list[FieldIssue]:
    f = Found()
    driver_name(f, name, path)
    return f.hand


def pool_name(f: Found, name: str, path: str, *, covered: bool = False) -> None:
    """validatePoolName: DNS subdomains separated by '/'; the declarative rule (ResourcePoolName)
    names the segment in its messages."""
    if not name:
        (f.declared if covered else f.hand).append(required(path))
        return
    if not covered:
        if len(name) > POOL_NAME_MAX_LENGTH:
            f.hand.append(too_long(path, POOL_NAME_MAX_LENGTH))
        for part in name.split("/"):
            f.hand.extend(invalid(path, part, msg) for msg in dns1123_subdomain(part))
        return
    if len(name) > POOL_NAME_MAX_LENGTH:
        f.declared.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for i, part in enumerate(name.split("/")):
        if not part:
            f.declared.append(invalid(path, name, f"segment {i}: must not be empty"))
            continue
        f.declared.extend(invalid(path, part, f"segment {i}: {msg}") for msg in dns1123_subdomain(part))


def c_identifier(value: str, path: str) -> list[FieldIssue]:
    out: list[FieldIssue] = []
    if len(value) > DEVICE_MAX_ID_LENGTH:
        out.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _is_c_identifier(value):
        out.append(invalid(path, value, regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")))
    return out


def _is_c_identifier(value: str) -> bool:
    return _C_IDENTIFIER.fullmatch(value) is not None


def qualified_name(name: str, path: str) -> list[FieldIssue]:
    """validateQualifiedName: a C identifier, optionally after a driver-name domain and '/'. (Like
    kube, more than one '/' is not checked at all.) A slice repeats its attribute names on every
    device: the verdict on a name is kept."""
    return [FieldIssue(path, body) for body in _qualified_name_bodies(name)]


@functools.lru_cache(maxsize=4096)
def _qualified_name_bodies(name: str) -> tuple[str, ...]:
    return tuple(issue.body for issue in _qualified_name(name, ""))


def _qualified_name(name: str, path: str) -> list[FieldIssue]:
    parts = name.split("/")
    out: list[FieldIssue] = []
    if len(parts) == 1:
        out.extend(c_identifier(parts[0], path))
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            out.append(invalid(path, "", "the domain must not be empty"))
        else:
            out.extend(driver_issues(domain, path))
        if not ident:
            out.append(invalid(path, "", "the name must not be empty"))
        else:
            out.extend(c_identifier(ident, path))
    return out


def fully_qualified_name(name: str, path: str) -> list[FieldIssue]:
    out = qualified_name(name, path)
    if "/" not in name:
        out.append(invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))
    return out


# --- selectors, configuration, tolerations, taints ------------------------------------------------------


class SelectorProblem(Protocol):
    """One thing a CEL environment refuses in a selector expression: `kind` is field.ErrorType's
    word (Invalid, Forbidden, TooLong, Required or InternalError), `detail` kube's."""

    @property
    def kind(self) -> str: ...

    @property
    def detail(self) -> str: ...


# What the API server's CEL environment says of an expression (devices.cel.validate_selector).
SelectorCheck = Callable[[str], Sequence[SelectorProblem]]


def no_cel(_expression: str) -> Sequence[SelectorProblem]:
    """The check without a CEL environment: an expression is judged on presence and length only."""
    return ()


def selectors(f: Found, items: Sequence[DeviceSelector], path: str, check: SelectorCheck) -> None:
    """validateSelectorSlice: a selector needs `cel`; an expression longer than 10 KiB is refused
    without compiling; what `check` (the CEL environment) refuses comes next, in the selectors'
    order among the other handwritten errors."""
    if over_limit(f, items, DEVICE_SELECTORS_MAX_SIZE, path, covered=True):
        return
    for i, selector in enumerate(items):
        at = f"{path}[{i}].cel.expression"
        if selector.cel is None:
            f.hand.append(required(f"{path}[{i}].cel"))
        elif len(selector.cel.expression.encode()) > CEL_EXPRESSION_MAX_LENGTH:
            f.hand.append(too_long(at, CEL_EXPRESSION_MAX_LENGTH))
        elif not selector.cel.expression:
            # The one compile error that needs no CEL: CEL's parser on empty input.
            f.hand.append(invalid(at, "", EMPTY_CEL))
        else:
            f.hand.extend(_selector_issue(problem, at, selector.cel.expression) for problem in check(selector.cel.expression))


def _selector_issue(problem: SelectorProblem, path: str, expression: str) -> FieldIssue:
    """convertCELErrorToValidationError, and the cost and length verdicts, as field errors."""
    if problem.kind == "Invalid":
        return invalid(path, expression, problem.detail)
    if problem.kind == "Forbidden":
        return forbidden(path, problem.detail)
    if problem.kind == "TooLong":
        return too_long(path, CEL_EXPRESSION_MAX_LENGTH)
    if problem.kind == "Required":
        return required(path, problem.detail)
    return internal_error(path, problem.detail)


def raw_extension(value: Any, path: str, limit: int) -> list[FieldIssue]:
    """validateRawExtension on create: a JSON object, at most `limit` bytes as sent."""
    if value is None:
        return [required(path)]
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        # YAML's .inf and .nan have no JSON form: kubectl cannot send them.
        return [invalid(path, "<value omitted>", "error parsing data as JSON: json: unsupported value: non-finite number")]
    if len(text.encode()) > limit:
        return [too_long(path, limit)]
    if not isinstance(value, dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def configuration(f: Found, config: DeviceConfiguration, path: str, opaque_limit: int) -> None:
    if config.opaque is None:
        f.hand.append(required(f"{path}.opaque"))
        return
    driver_name(f, config.opaque.driver, f"{path}.opaque.driver", covered=True)
    f.hand.extend(raw_extension(config.opaque.parameters, f"{path}.opaque.parameters", opaque_limit))


def toleration(f: Found, t: DeviceToleration, path: str) -> None:
    if t.key:
        f.declared.extend(invalid(f"{path}.key", t.key, msg) for msg in label_key(t.key))
    if t.operator == TOLERATION_OP_EXISTS:
        if t.value:
            f.hand.append(invalid(f"{path}.value", t.value, "must be empty for operator `Exists`"))
    elif t.operator == TOLERATION_OP_EQUAL:
        f.hand.extend(invalid(f"{path}.value", t.value, msg) for msg in label_value(t.value))
    elif not t.operator:
        f.declared.append(required(f"{path}.operator"))
    else:
        f.declared.append(not_supported(f"{path}.operator", t.operator, (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS)))
    if t.effect and t.effect not in TAINT_EFFECTS:
        f.declared.append(not_supported(f"{path}.effect", t.effect, TAINT_EFFECTS))


def taint(f: Found, t: DeviceTaint, path: str) -> None:
    # ValidateLabelName: an empty key is refused by the name part's checks.
    f.hand.extend(invalid(f"{path}.key", t.key, msg) for msg in label_key(t.key))
    if t.value:
        f.hand.extend(invalid(f"{path}.value", t.value, msg) for msg in label_value(t.value))
    if not t.effect:
        f.declared.append(required(f"{path}.effect"))
    elif t.effect not in TAINT_EFFECTS:
        f.declared.append(not_supported(f"{path}.effect", t.effect, TAINT_EFFECTS))


def binding_conditions(f: Found, conditions: Sequence[str], failures: Sequence[str], path: str) -> None:
    """validateDeviceBindingParameters: label-name conditions, at most 4 of each, no repeats, no
    overlap, and either both lists or neither."""
    for name, items, limit in (("bindingConditions", conditions, BINDING_CONDITIONS_MAX_SIZE),
                               ("bindingFailureConditions", failures, BINDING_FAILURE_CONDITIONS_MAX_SIZE)):
        if not over_limit(f, items, limit, f"{path}.{name}", covered=True):
            for i, c in enumerate(items):
                f.hand.extend(invalid(f"{path}.{name}[{i}]", c, msg) for msg in label_key(c))
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        if c in seen:
            f.hand.append(duplicate(f"{path}.bindingConditions[{i}]", c))
        seen.add(c)
    seen_failures: set[str] = set()
    for i, c in enumerate(failures):
        if c in seen_failures:
            f.hand.append(duplicate(f"{path}.bindingFailureConditions[{i}]", c))
        seen_failures.add(c)
        if c in seen:
            f.hand.append(invalid(f"{path}.bindingFailureConditions[{i}]", c,
                                  "bindingFailureConditions must not overlap with bindingConditions"))
    if not conditions and failures:
        f.hand.append(invalid(f"{path}.bindingConditions", "null",
                              "bindingConditions are required to use bindingFailureConditions", rendered=True))
    if not failures and conditions:
        f.hand.append(invalid(f"{path}.bindingFailureConditions", "null",
                              "bindingFailureConditions are required to use bindingConditions", rendered=True))


def request_name_ref(f: Found, name: str, path: str, names: Mapping[str, frozenset[str] | None]) -> None:
    """validateRequestNameRef: `request` or `request/subrequest` naming one in the claim."""
    bad = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
    segments = name.split("/")
    if len(segments) > 2:
        f.hand.append(invalid(path, name, bad))
        return
    for segment in segments:
        f.hand.extend(dns_label(segment, path))
    if not _has_request(names, segments):
        f.hand.append(invalid(path, name, bad))


def _has_request(names: Mapping[str, frozenset[str] | None], segments: list[str]) -> bool:
    if segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    subs = names[segments[0]]
    return subs is not None and segments[1] in subs


Sized = Sequence[Any] | Mapping[Any, Any]
