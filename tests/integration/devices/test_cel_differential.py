"""Differential test of DRA's device CEL environment (devices/cel.py) against the real
k8s.io/dynamic-resource-allocation/cel v0.37.2 (tools/k8s/dracel): generated expressions x
generated devices, the compile error, the cost verdict and every device's result or runtime
error compared to the character.

DRACEL_CASES sets how many expressions (default 400); the seed is fixed, DRACEL_SEED changes it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

from integration.harness.dracel import Oracle
from kubesched.api.quantity import parse as parse_quantity
from kubesched.devices.cel import (
    COST_LIMIT,
    DeviceInput,
    SelectorCompileError,
    SelectorRuntimeError,
    VersionValue,
    compile_selector,
    validate_selector,
)

DRIVERS = ["gpu.example.com", "nic.example.org"]
DOMAINS = ["gpu.example.com", "nic.example.org", "other.io"]
VERSIONS = ["1.2.3", "1.2.3-rc.1", "1.2.3-rc.2", "1.2.3-alpha", "1.2.3+build.5", "2.0.0", "0.9.12", "1.10.0"]
QUANTITIES = ["40Gi", "16Gi", "40960Mi", "1500m", "1.5", "1e3", "0.5Ki", "8Ei", "100", "0", "-2", "123456789n"]
BAD_QUANTITIES = ["1x", "", "Gi", "1.2.3", "--1"]
SEMVER_TEXTS = ["1.2.3", "v1.2", "01.2.3", "1.2", "1.2.3-", "1.2.3-01", "1.2.3+", "1.2.3-a_b", "x.1.2", "1.2.3-rc.1+meta", "v01.002"]
STRINGS = ["a100", "h100", "zone-a", ""]


def _device(rng: random.Random) -> dict[str, Any]:
    driver = rng.choice(DRIVERS)
    attributes: dict[str, dict[str, Any]] = {}
    pool: list[tuple[str, dict[str, Any]]] = [
        ("model", {"string": rng.choice(STRINGS)}),
        ("cores", {"int": rng.choice([0, 8, 64, -3, 2**62])}),
        ("ecc", {"bool": rng.random() < 0.5}),
        ("driverVersion", {"version": rng.choice(VERSIONS)}),
        ("other.io/zone", {"string": rng.choice(STRINGS)}),
        ("gpu.example.com/index", {"int": rng.randrange(8)}),
        ("mixed", rng.choice([{"int": 1}, {"string": "1"}, {"bool": True}, {"version": "1.0.0"}])),
    ]
    for name, value in pool:
        if rng.random() < 0.75:
            attributes[name] = value
    capacity = {name: rng.choice(QUANTITIES) for name in ("memory", "other.io/bandwidth") if rng.random() < 0.75}
    device: dict[str, Any] = {"driver": driver, "attributes": attributes, "capacity": capacity}
    if rng.random() < 0.6:
        device["allowMultipleAllocations"] = rng.random() < 0.5
    return device


def _to_input(device: dict[str, Any]) -> DeviceInput:
    attributes: dict[str, Any] = {}
    for name, value in device["attributes"].items():
        ((kind, raw),) = value.items()
        attributes[name] = VersionValue(raw) if kind == "version" else raw
    capacity = {name: parse_quantity(text) for name, text in device["capacity"].items()}
    return DeviceInput(device["driver"], attributes, capacity, bool(device.get("allowMultipleAllocations", False)))


def _literal(rng: random.Random) -> str:
    return rng.choice([str(rng.choice([0, 1, 8, 64, -3])), f'"{rng.choice(STRINGS)}"', rng.choice(["true", "false"]), "1.5", "2u"])


def _atom(rng: random.Random) -> str:
    dom = rng.choice(DOMAINS)
    attr = rng.choice(["model", "cores", "ecc", "driverVersion", "zone", "index", "mixed", "absent"])
    cap = rng.choice(["memory", "bandwidth", "absent"])
    op = rng.choice(["==", "!=", "<", ">", "<=", ">="])
    q = rng.choice(QUANTITIES + BAD_QUANTITIES[:1])
    v = rng.choice([*VERSIONS, "bad"])
    a = f'device.attributes["{dom}"].{attr}'
    c = f'device.capacity["{dom}"].{cap}'
    forms = [
        lambda: f'device.driver == "{rng.choice(DRIVERS)}"',
        lambda: f"{a} {op} {_literal(rng)}",
        lambda: f"has({a})",
        lambda: f'"{attr}" in device.attributes["{dom}"]',
        lambda: f'"{dom}" in device.attributes',
        lambda: f"{a}",
        lambda: f'{c}.compareTo(quantity("{q}")) {op} 0',
        lambda: f'{c}.isGreaterThan(quantity("{q}"))',
        lambda: f'{c}.isLessThan(quantity("{q}"))',
        lambda: f'{c} == quantity("{q}")',
        lambda: f"{c}.isInteger()",
        lambda: f"{c}.asInteger() {op} {rng.choice([0, 1000, 2**40])}",
        lambda: f"{c}.asApproximateFloat() {op} {rng.choice(['1.5', '1e3', '4.294967296e10'])}",
        lambda: f'{c}.add({rng.choice([1, -1, 1000])}).isLessThan(quantity("{q}"))',
        lambda: f'sign({c}.sub(quantity("{q}"))) {op} 0',
        lambda: f'isQuantity("{rng.choice(QUANTITIES + BAD_QUANTITIES)}")',
        lambda: f'quantity("{rng.choice(BAD_QUANTITIES)}").isInteger()',
        lambda: f'{a}.isGreaterThan(semver("{v}"))',
        lambda: f'{a}.compareTo(semver("{v}")) {op} 0',
        lambda: f"{a}.major() {op} {rng.choice([0, 1, 2])}",
        lambda: f'{a} == semver("{v}")',
        lambda: f'semver("{rng.choice(SEMVER_TEXTS)}", {rng.choice(["true", "false"])}).minor() {op} 2',
        lambda: f'isSemver("{rng.choice(SEMVER_TEXTS)}"{rng.choice(["", ", true"])})',
        lambda: f'semver("{rng.choice(SEMVER_TEXTS)}").patch() == 3',
        lambda: "device.allowMultipleAllocations",
        lambda: f'cel.bind(x, device.attributes["{dom}"], has(x.{attr}) && x.{attr} {op} {_literal(rng)})',
        lambda: f"{a.replace('].', '].?')}.orValue({_literal(rng)}) {op} {_literal(rng)}",
        lambda: f'device.attributes["{dom}"].size() {op} {rng.randrange(4)}',
        lambda: f'device.attributes["{dom}"].exists(k, k.startsWith("{attr[:2]}"))',
        lambda: f'{a}.upperAscii() == "{rng.choice(STRINGS).upper()}"',
        lambda: f"{a} + 1 {op} 9",
        lambda: f"{a} / {rng.choice([0, 2])} {op} 1",
        lambda: f"{c} > 1",
        lambda: f"device.driver + 1 == {_literal(rng)}",
        lambda: rng.choice(["x == 1", "1 +", "device.nothing", "1", '"s"', f"{c}", "device.attributes", "[true][1]"]),
        lambda: "device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, device.attributes[e].all(j, true))))",
        lambda: "device.attributes.all(d, device.attributes[d].all(k, true))",
    ]
    return rng.choice(forms)()


def _expression(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth >= 2 or roll < 0.5:
        return _atom(rng)
    if roll < 0.65:
        return f"!({_expression(rng, depth + 1)})"
    op = rng.choice(["&&", "||"])
    return f"({_expression(rng, depth + 1)}) {op} ({_expression(rng, depth + 1)})"


def _cases(count: int, seed: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    rng = random.Random(seed)
    for _ in range(count):
        yield _expression(rng), [_device(rng) for _ in range(6)]


def _ours(expression: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    answer: dict[str, Any] = {}
    problems = validate_selector(expression)
    answer["validation"] = next((p.detail for p in problems if p.kind == "Invalid"), "")
    answer["too_complex"] = any(p.kind == "Forbidden" for p in problems)
    try:
        selector = compile_selector(expression)
    except SelectorCompileError as exc:
        answer["scheduler"] = exc.detail
        return answer
    answer["scheduler"] = ""
    results = []
    for device in devices:
        try:
            results.append({"matches": selector.matches(_to_input(device)), "error": ""})
        except SelectorRuntimeError as exc:
            results.append({"matches": False, "error": str(exc)})
    answer["results"] = results
    return answer


def _theirs(raw: dict[str, Any]) -> dict[str, Any]:
    validation = raw["validation"]
    answer: dict[str, Any] = {
        "validation": validation.get("error", ""),
        "too_complex": validation.get("maxCost", 0) > COST_LIMIT,
        "scheduler": raw["scheduler"].get("error", ""),
    }
    if not answer["scheduler"]:
        answer["results"] = [{"matches": r.get("matches", False), "error": r.get("error", "")} for r in raw["results"] or []]
    return answer


def _known_divergence(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Where the two evaluations are known to part (docs/compatibility.md, DRA selectors): both
    fail on a device but with another error, because cel-cpp and cel-go pick a different one of
    several errors in `&&`/`||`, or word a runtime "no such overload" without its signature."""
    if {k: v for k, v in ours.items() if k != "results"} != {k: v for k, v in theirs.items() if k != "results"}:
        return False
    for mine, kube in zip(ours.get("results", []), theirs.get("results", []), strict=True):
        if mine == kube:
            continue
        if not (mine["error"] and kube["error"]):
            return False
    return True


def test_generated_expressions_match_kube(oracle: Oracle) -> None:
    count = int(os.environ.get("DRACEL_CASES", "400"))
    seed = int(os.environ.get("DRACEL_SEED", "31"))
    mismatches = []
    known = 0
    for expression, devices in _cases(count, seed):
        theirs = _theirs(oracle.ask(expression, devices))
        ours = _ours(expression, devices)
        if ours == theirs:
            continue
        if _known_divergence(ours, theirs):
            known += 1
            continue
        mismatches.append((expression, devices, ours, theirs))
    print(f"{count} expressions: {count - known - len(mismatches)} identical, {known} with another error wording")
    detail = "\n\n".join(f"{e}\n  devices: {d}\n  ours:   {o}\n  kube's: {t}" for e, d, o, t in mismatches[:8])
    # Known open differences (about 2.5% of the default cases, docs/compatibility.md): comparing a
    # quantity or version with another type by == (kube: an error, here false), the checker's
    # words for a non-bool operand of && / ||, the API server's type name google.protobuf.Any
    # for an attribute in "must evaluate to bool", and a missing domain indexed by an expression
    # that also asks which domains there are. Anything beyond that budget is a regression.
    assert len(mismatches) <= count * 3 // 100, f"{len(mismatches)} of {count} expressions differ from kube's, first ones:\n{detail}"
