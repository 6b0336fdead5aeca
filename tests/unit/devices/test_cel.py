"""DRA's device CEL environment: the variables, the quantity and semver libraries, compile and
runtime errors with kube's messages, the cache, the API server's checks, batch evaluation.
(tests/integration/devices compares all this with the real k8s.io/dynamic-resource-allocation/cel.)"""

from __future__ import annotations

import random

import pytest

from kubesched.api.quantity import parse as q
from kubesched.devices.cel import (
    NO_SUCH_KEY_HINT,
    DeviceInput,
    SelectorCache,
    SelectorCompileError,
    SelectorRuntimeError,
    ValidationProblem,
    VersionValue,
    compile_selector,
    selector_compile_error,
    selector_error,
    type_name,
    validate_selector,
)
from kubesched.devices.celvector import evaluate_batch, vectorized

GPU = DeviceInput(
    "gpu.example.com",
    {"model": "a100", "cores": 64, "ecc": True, "driverVersion": VersionValue("1.2.3-rc.1"), "other.io/zone": "a"},
    {"memory": q("40Gi"), "other.io/bw": q("1500m")},
    allow_multiple_allocations=True,
)


def run(expression: str, device: DeviceInput = GPU) -> bool:
    return compile_selector(expression).matches(device)


def failure(expression: str, device: DeviceInput = GPU) -> str:
    with pytest.raises(SelectorRuntimeError) as exc:
        run(expression, device)
    return str(exc.value)


@pytest.mark.parametrize("expression", [
    'device.driver == "gpu.example.com"',
    "device.allowMultipleAllocations",
    'device.attributes["gpu.example.com"].model == "a100"',
    'device.attributes["other.io"].zone == "a"',
    'device.attributes["gpu.example.com"].cores > 8 && device.attributes["gpu.example.com"].ecc',
    'has(device.attributes["gpu.example.com"].model) && !has(device.attributes["nope.io"].model)',
    '"gpu.example.com" in device.attributes && !("nope.io" in device.attributes)',
    'cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.cores == 64)',
    'device.attributes["gpu.example.com"].?absent.orValue(3) == 3',
    'device.attributes["gpu.example.com"].model.upperAscii() == "A100"',
    # quantities
    'device.capacity["gpu.example.com"].memory == quantity("40960Mi")',
    'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0',
    'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("39Gi"))',
    'device.capacity["other.io"].bw.isLessThan(quantity("2"))',
    '!device.capacity["other.io"].bw.isInteger() && device.capacity["gpu.example.com"].memory.isInteger()',
    'device.capacity["gpu.example.com"].memory.asInteger() == 42949672960',
    'device.capacity["other.io"].bw.asApproximateFloat() == 1.5',
    'device.capacity["other.io"].bw.add(1) == quantity("2500m") && device.capacity["other.io"].bw.sub(quantity("0.5")).asInteger() == 1',
    'sign(quantity("-1")) == -1 && sign(quantity("0")) == 0 && isQuantity("1Ki") && !isQuantity("1x")',
    # versions
    'device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))',
    'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.3-alpha"))',
    'device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.2.3-rc.1+x")) == 0',
    'device.attributes["gpu.example.com"].driverVersion == semver("1.2.3-rc.1")',
    'device.attributes["gpu.example.com"].driverVersion.major() == 1 && semver("v1.5", true).minor() == 5',
    'semver("1.2.3").patch() == 3 && isSemver("1.2.3") && !isSemver("v1.2") && isSemver("v1.2", true)',
])
def test_matches(expression: str) -> None:
    assert run(expression) is True


def test_missing_keys_and_domains() -> None:
    assert failure('device.attributes["gpu.example.com"].absent == 1') == "no such key: absent" + NO_SUCH_KEY_HINT
    # A domain the device has not got is an empty map.
    assert failure('device.attributes["nope.io"].model == "x"') == "no such key: model" + NO_SUCH_KEY_HINT
    assert run('device.attributes["nope.io"].size() == 0') is True


@pytest.mark.parametrize(("expression", "message"), [
    ('quantity("1x").isInteger()', "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ('quantity("1kk").isInteger()', "unable to parse quantity's suffix"),
    ('semver("1.2").major() == 1', "No Major.Minor.Patch elements found"),
    ('quantity("1.5").asInteger() == 1', "cannot convert value to integer"),
    ('device.attributes["gpu.example.com"].cores / 0 == 1', "division by zero"),
    ('device.attributes["gpu.example.com"].cores',
     "CEL result of type int could not be converted to bool: unsupported type conversion from 'int' to bool"),
    ('device.attributes["gpu.example.com"].driverVersion',
     "CEL result of type kubernetes.Semver could not be converted to bool: type conversion error from 'Semver' to 'bool'"),
])
def test_runtime_errors(expression: str, message: str) -> None:
    assert failure(expression) == message


def test_bad_version_attribute() -> None:
    device = DeviceInput("d", {"v": VersionValue("1.2")})
    assert failure("true", device) == "attribute v: parse semantic version: No Major.Minor.Patch elements found"


@pytest.mark.parametrize(("expression", "detail"), [
    ("x == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x == 1\n | ^"),
    ("device.nothing", "compilation failed: ERROR: <input>:1:7: undefined field 'nothing'\n | device.nothing\n | ......^"),
    ('device.capacity["a"].m > 1',
     "compilation failed: ERROR: <input>:1:24: found no matching overload for '_>_' applied to '(kubernetes.Quantity, int)'\n"
     ' | device.capacity["a"].m > 1\n | .......................^'),
    # cel-cpp's extra errors, which cel-go does not report: "no parse tree" after a syntax error, and
    # a complaint about an operand that failed already.
    ("a ? b", "compilation failed: ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting ':'\n | a ? b\n | .....^"),
    ("nodes.exists(n, true)",
     "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nodes' (in container '')\n | nodes.exists(n, true)\n | ^"),
    ("isQuantity(1) || false",
     "compilation failed: ERROR: <input>:1:11: found no matching overload for 'isQuantity' applied to '(int)'\n"
     " | isQuantity(1) || false\n | ..........^"),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ('device.capacity["a"].m', "must evaluate to bool or the unknown type, not kubernetes.Quantity"),
])
def test_compile_errors(expression: str, detail: str) -> None:
    with pytest.raises(SelectorCompileError) as exc:
        compile_selector(expression)
    assert exc.value.detail == detail
    assert validate_selector(expression) == [ValidationProblem("Invalid", detail)]


def test_validation_limits() -> None:
    assert validate_selector("true") == []
    assert validate_selector("true && " * 2000 + "true") == [ValidationProblem("TooLong", "may not be more than 10240 bytes")]
    heavy = "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, device.attributes[e].all(j, true))))"
    assert validate_selector(heavy) == [ValidationProblem("Forbidden", "too complex, exceeds cost limit")]
    assert validate_selector("device.attributes.all(d, device.attributes[d].all(k, true))") == []


def test_type_names() -> None:
    assert type_name("MAP<STRING, LIST<INT>>") == "map(string, list(int))"
    assert type_name("NULL") == "null_type" and type_name("kubernetes.Semver") == "kubernetes.Semver"


def test_cache_is_bounded_and_keeps_only_successes() -> None:
    cache = SelectorCache(size=2)
    first = cache.get_or_compile("true")
    assert cache.get_or_compile("true") is first
    cache.get_or_compile("false")
    cache.get_or_compile("1 == 1")
    assert len(cache) == 2 and cache.get_or_compile("true") is not first
    with pytest.raises(SelectorCompileError):
        cache.get_or_compile("1 +")
    assert len(cache) == 2


def test_allocator_messages() -> None:
    assert selector_error("class gpu", 0, "gpu.example.com/pool/dev-0", "no such key: x") == \
        "class gpu: selector #0 on device gpu.example.com/pool/dev-0: CEL runtime error: no such key: x"
    assert selector_compile_error("claim ns/c", 1, "boom") == "claim ns/c: selector #1: CEL compile error: boom"


def _devices(n: int) -> list[DeviceInput]:
    rng = random.Random(7)
    out = []
    for _ in range(n):
        attributes: dict[str, object] = {}
        if rng.random() < 0.8:
            attributes["model"] = rng.choice(["a100", "h100", 3, True])
        if rng.random() < 0.8:
            attributes["cores"] = rng.choice([8, 64, "64", False])
        if rng.random() < 0.5:
            attributes["ecc"] = rng.choice([True, False, 1])
        capacity = {"memory": q(rng.choice(["40Gi", "80Gi", "1500m"]))} if rng.random() < 0.8 else {}
        out.append(DeviceInput(rng.choice(["gpu.example.com", "nic.example.org"]), attributes, capacity, rng.random() < 0.5))  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize(("expression", "is_vectorized"), [
    ('device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"', True),
    ('device.attributes["gpu.example.com"].cores >= 64 || device.attributes["gpu.example.com"].ecc', True),
    ('!has(device.attributes["gpu.example.com"].ecc) || device.allowMultipleAllocations', True),
    ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) > 0', True),
    ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("40Gi")) && device.driver != "nic.example.org"', True),
    ('device.attributes["gpu.example.com"].model.startsWith("a")', False),
])
def test_batch_equals_one_by_one(expression: str, is_vectorized: bool) -> None:
    devices = _devices(300)
    selector = compile_selector(expression)
    try:
        vectorized(selector, devices[:1])
        shaped = True
    except Exception:
        shaped = False
    assert shaped is is_vectorized
    batch, each = evaluate_batch(selector, devices), selector.matches_each(devices)
    assert batch.matches.tolist() == each.matches.tolist() and batch.errors == each.errors
    assert any(each.matches) and not all(each.matches)  # the devices exercise both outcomes
