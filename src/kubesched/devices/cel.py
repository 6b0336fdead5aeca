"""DRA's device selectors: CEL expressions compiled once and evaluated against devices, with the
behaviour and messages of k8s.io/dynamic-resource-allocation/cel v0.37.2 (the environment itself
is in celenv.py).

- `compile_selector` is what the scheduler's cache does (`Cache.GetOrCompile`): compile, check
  that the result is bool (or the attribute type, dyn), keep successful results in a bounded LRU.
- `validate_selector` is what the API server does on create: the length limit, compiling, and
  the estimated cost against the limit (`too complex, exceeds cost limit`).
- `Selector.matches` evaluates on one `DeviceInput` (`DeviceMatches`); celvector.evaluate_batch on
  many, vectorized where the expression's shape allows.
- `selector_error` words a failure as the allocator does ("class gpu: selector #0 on device
  driver/pool/dev: CEL runtime error: no such key: model. consider using ...").

A device's attributes are grouped by domain: a name without a domain ("model") belongs to the
driver's domain, so `device.attributes["gpu.example.com"].model` reads it when the driver is
gpu.example.com. Indexing a domain the device has not got gives an empty map (kube's map default),
so `device.attributes["other.example.com"].model` fails with "no such key: model", and
`has(device.attributes["other.example.com"].model)` is false.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api import quantity as quantities
from kubesched.devices import semver
from kubesched.devices.celcost import estimate_cost
from kubesched.devices.celenv import CHECKER, QUANTITY_TYPE, RUNNER, SEMVER_TYPE, quantity_carrier, version_carrier
from kubesched.infra.celtree import Checked, Node, read_checked

# resourceapi.CELSelectorExpressionMaxCost and CELSelectorExpressionMaxLength.
COST_LIMIT = 1_000_000
EXPRESSION_MAX_LENGTH = 10 * 1024
# The scheduler's DynamicResources plugin keeps this many compiled selectors (cel.NewCache(10, ...)).
SCHEDULER_CACHE_SIZE = 10

NO_SUCH_KEY_HINT = ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields"


@dataclass(frozen=True, slots=True)
class VersionValue:
    """A version attribute, as the slice holds it (the text is parsed when an expression reads it)."""

    text: str


AttributeValue = int | bool | str | VersionValue


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """What a selector sees of one device: a slice's device converts to this.

    `attributes` and `capacity` are keyed by qualified name ("model" or "gpu.example.com/model")."""

    driver: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, quantities.Quantity] = field(default_factory=dict)
    allow_multiple_allocations: bool = False


class SelectorCompileError(ValueError):
    """An expression that does not compile; `detail` is kube's (apiservercel.Error's Detail)."""

    def __init__(self, detail: str, *, internal: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.internal = internal


class SelectorRuntimeError(Exception):
    """An evaluation that failed; the message is DeviceMatches' error, made as helpful as
    EnhanceRuntimeError makes it."""


def split_qualified(name: str, driver: str) -> tuple[str, str]:
    """(domain, id) of a qualified name; the driver's name is the domain of a bare one."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


# --- compiling ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector."""

    expression: str
    checked: Checked  # the tree as CHECKER typed it
    program: Any  # RUNNER's compiled expression
    # Domains the expression indexes with a constant, filled with an empty map when a device has
    # none (kube's default), unless the expression also looks at which domains there are.
    attribute_domains: frozenset[str]
    capacity_domains: frozenset[str]

    def matches(self, device: DeviceInput) -> bool:
        """DeviceMatches: True or False, SelectorRuntimeError with kube's message otherwise."""
        result = self.program.eval(RUNNER.Activation(self.activation(device)))
        return _outcome(result)

    def activation(self, device: DeviceInput) -> dict[str, Any]:
        attributes: dict[str, dict[str, Any]] = {d: {} for d in self.attribute_domains}
        for name, value in device.attributes.items():
            domain, ident = split_qualified(name, device.driver)
            attributes.setdefault(domain, {})[ident] = _attribute(name, value)
        capacity: dict[str, dict[str, bytes]] = {d: {} for d in self.capacity_domains}
        for name, amount in device.capacity.items():
            domain, ident = split_qualified(name, device.driver)
            capacity.setdefault(domain, {})[ident] = quantity_carrier(amount.nanos, amount.negative)
        return {
            "device.driver": device.driver,
            "device.allowMultipleAllocations": device.allow_multiple_allocations,
            "device.attributes": attributes,
            "device.capacity": capacity,
        }

    def matches_each(self, devices: Sequence[DeviceInput]) -> BatchResult:
        """The selector on every device, one by one (celvector.evaluate_batch is the fast way)."""
        result = BatchResult(np.zeros(len(devices), dtype=bool), {})
        for i, device in enumerate(devices):
            try:
                result.matches[i] = self.matches(device)
            except SelectorRuntimeError as exc:
                result.errors[i] = str(exc)
        return result


@dataclass(slots=True)
class BatchResult:
    """Per device: whether it matches (False where it failed), and the failures' messages."""

    matches: np.ndarray
    errors: dict[int, str]


def _attribute(name: str, value: AttributeValue) -> Any:
    if isinstance(value, VersionValue):
        try:
            return version_carrier(semver.parse(value.text))
        except semver.SemverError as exc:
            raise SelectorRuntimeError(f"attribute {name}: parse semantic version: {exc}") from None
    return value


@functools.lru_cache(maxsize=4096)
def _version_parses(text: str) -> bool:
    try:
        semver.parse(text)
    except semver.SemverError:
        return False
    return True


def versions_parse(device: DeviceInput) -> bool:
    """Whether every version attribute of the device parses (else every selector fails on it)."""
    return all(_version_parses(v.text) for v in device.attributes.values() if isinstance(v, VersionValue))


def _compile(expression: str) -> Selector:
    try:
        checked_program = CHECKER.compile(expression)
    except RuntimeError as exc:
        raise SelectorCompileError("compilation failed: " + _issues(str(exc))) from None
    result = type_name(str(checked_program.return_type()))
    if result not in ("bool", "dyn"):
        raise SelectorCompileError(f"must evaluate to bool or the unknown type, not {result}")
    checked = read_checked(checked_program.serialize())
    try:
        program = RUNNER.compile(expression)
    except RuntimeError as exc:  # not expected: RUNNER accepts all CHECKER accepts
        raise SelectorCompileError(f"program instantiation failed: {_issues(str(exc))}", internal=True) from None
    attribute_domains, capacity_domains = _indexed_domains(checked)
    return Selector(expression, checked, program, attribute_domains, capacity_domains)


_DEVICE_FIELD = re.compile(r"undeclared reference to 'device\.([^']*)' \(in container ''\)")
_NEXT_ERROR = re.compile(r"\n(?=ERROR: )")
# Errors cel-go does not report: the parser's note that it built no tree (after the syntax errors
# that say why), and the checker's complaints about an operand that failed to check already.
_NOT_IN_CEL_GO = re.compile(r"^ERROR: <input>:-1:-1: <<nil>> parsetree$|\*error\*")


def _issues(message: str) -> str:
    """cel-cpp's compile error as cel-go's Issues.String() prints it. `device` is an object to
    cel-go (here its fields are variables of their own), so a misspelt field is an undefined one."""
    text = message.removeprefix("INVALID_ARGUMENT: ").removesuffix(" [INVALID_ARGUMENT]")
    errors = _NEXT_ERROR.split(_DEVICE_FIELD.sub(r"undefined field '\1'", text))
    return "\n".join([e for e in errors if not _NOT_IN_CEL_GO.search(e.split("\n", 1)[0])] or errors)


_TYPE_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*|<|>|,\s*")
_TYPE_NAMES = {"BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string", "BYTES": "bytes",
               "DYN": "dyn", "NULL": "null_type", "MAP": "map", "LIST": "list", "TYPE": "type", "ERROR": "*error*",
               "TIMESTAMP": "google.protobuf.Timestamp", "DURATION": "google.protobuf.Duration", "optional_type": "optional_type"}


def type_name(cpp: str) -> str:
    """A cel-cpp type as cel-go names it: MAP<STRING, LIST<INT>> -> map(string, list(int))."""
    out = []
    for token in _TYPE_TOKEN.findall(cpp):
        if token == "<":
            out.append("(")
        elif token == ">":
            out.append(")")
        elif token.startswith(","):
            out.append(", ")
        else:
            out.append(_TYPE_NAMES.get(token, token))
    return "".join(out)


def _variable(checked: Checked, node: Node) -> str:
    return checked.references.get(node.id, node.name) if node.kind == "ident" else ""


def _indexed_domains(checked: Checked) -> tuple[frozenset[str], frozenset[str]]:
    """The constant domains indexed on device.attributes and device.capacity, per map; none for a
    map whose set of domains the expression looks at (`in`, has(), size(), a comprehension),
    which must not see padded domains."""
    indexed: dict[str, set[str]] = {"device.attributes": set(), "device.capacity": set()}
    observed: set[str] = set()
    stack = [checked.root]
    while stack:
        n = stack.pop()
        stack.extend(n.children())
        for child in n.children():
            holder = _variable(checked, child)
            if holder not in indexed:
                continue
            if n.kind == "call" and n.name in ("_[_]", "_[?_]") and n.args and n.args[0] is child:
                key = n.args[1]
                if key.kind == "const" and isinstance(key.value, str):
                    indexed[holder].add(key.value)
            elif n.kind == "select" and not n.test_only:
                indexed[holder].add(n.name)
            else:
                observed.add(holder)
    return (
        frozenset() if "device.attributes" in observed else frozenset(indexed["device.attributes"]),
        frozenset() if "device.capacity" in observed else frozenset(indexed["device.capacity"]),
    )


class SelectorCache:
    """Compiled selectors by expression, the least recently used dropped beyond `size`; failed
    compilations are not kept (as kube's cache)."""

    def __init__(self, size: int = SCHEDULER_CACHE_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[str, Selector] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> Selector:
        with self._lock:
            hit = self._entries.get(expression)
            if hit is not None:
                self._entries.move_to_end(expression)
                return hit
        selector = _compile(expression)
        with self._lock:
            self._entries[expression] = selector
            self._entries.move_to_end(expression)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return selector

    def __len__(self) -> int:
        return len(self._entries)


def compile_selector(expression: str) -> Selector:
    """Compiles (uncached): SelectorCompileError with kube's detail when it does not compile."""
    return _compile(expression)


# --- the API server's checks --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidationProblem:
    """One field error of a selector expression: `kind` is TooLong, Invalid, Forbidden or
    InternalError (field.ErrorType's words), `detail` kube's."""

    kind: str
    detail: str


def validate_selector(expression: str) -> list[ValidationProblem]:
    """The API server's checks of a new selector expression (validateCELExpression)."""
    if len(expression) > EXPRESSION_MAX_LENGTH:
        return [ValidationProblem("TooLong", f"may not be more than {EXPRESSION_MAX_LENGTH} bytes")]
    try:
        selector = _compile(expression)
    except SelectorCompileError as exc:
        return [ValidationProblem("InternalError" if exc.internal else "Invalid", exc.detail)]
    if estimate_cost(selector.checked) > COST_LIMIT:
        return [ValidationProblem("Forbidden", "too complex, exceeds cost limit")]
    return []


# --- evaluating ---------------------------------------------------------------------------------


def _outcome(result: Any) -> bool:
    value = result.value()
    kind = str(result.type())
    if kind == "BOOL":
        return bool(value)
    if kind == "ERROR":
        raise SelectorRuntimeError(enhance(runtime_message(str(value))))
    name = _result_type_name(kind, value)
    raise SelectorRuntimeError(f"CEL result of type {name} could not be converted to bool: {_conversion_error(name)}")


def _result_type_name(kind: str, value: Any) -> str:
    if kind == "BYTES" and isinstance(value, (bytes, bytearray)):
        return {b"Q": QUANTITY_TYPE, b"S": SEMVER_TYPE}.get(bytes(value[:1]), "bytes")
    return type_name(kind)


def _conversion_error(name: str) -> str:
    """What cel-go's ConvertToNative(bool) says for a value of this type."""
    if name in ("int", "uint", "double", "string", "bytes", "null_type"):
        return f"unsupported type conversion from '{name}' to bool"
    if name in (QUANTITY_TYPE, SEMVER_TYPE):
        return f"type conversion error from '{name.removeprefix('kubernetes.')}' to 'bool'"
    return f"type conversion error from '{name}' to 'bool'"


_STATUS = re.compile(r"^[A-Z_]+: ")
_NO_KEY = re.compile(r'^Key not found in map : "?(.*?)"?$', re.DOTALL)


def runtime_message(cpp: str) -> str:
    """A cel-cpp evaluation error as cel-go words it."""
    text = _STATUS.sub("", cpp, count=1)
    m = _NO_KEY.match(text)
    if m:
        return f"no such key: {m.group(1)}"
    if text == "divide by zero":
        return "division by zero"
    if text == "modulus by zero":
        return "modulus by zero"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    return text


def enhance(message: str) -> str:
    """EnhanceRuntimeError: a hint after a missing key."""
    return message + NO_SUCH_KEY_HINT if "no such key:" in message else message


def selector_error(owner: str, index: int, device_id: str, message: str) -> str:
    """The allocator's words for a selector that failed on a device; `owner` is "class NAME" or
    "claim NAMESPACE/NAME"."""
    return f"{owner}: selector #{index} on device {device_id}: CEL runtime error: {message}"


def selector_compile_error(owner: str, index: int, detail: str) -> str:
    """The allocator's words for a selector that does not compile."""
    return f"{owner}: selector #{index}: CEL compile error: {detail}"
