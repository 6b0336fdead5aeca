"""Cost bounds: exact for size-independent expressions, scaling with collection sizes otherwise."""

from __future__ import annotations

from kubesched.plugins.cel.cost import NOMINAL, estimate, rule_sizes, size_dependent
from kubesched.plugins.cel.env import compile_expression


def bound(source: str, entries: int = 100, longest: int = 256) -> int:
    return estimate(compile_expression(source).checked, rule_sizes(lambda _n: entries, longest))


def test_plain_expressions_cost_their_calls_and_reads() -> None:
    checked = compile_expression('node.labels["zone"] == "a" && node.free.cpu > 100').checked
    assert not size_dependent(checked)
    # &&, ==, [], node.labels, >, select .cpu, node.free: 7 (literals are free)
    assert estimate(checked) == 7
    assert estimate(checked, rule_sizes(lambda _n: 10**6, 10**6)) == 7


def test_comprehensions_scale_with_their_range() -> None:
    one = "node.labels.exists(k, k == \"zone\")"
    assert size_dependent(compile_expression(one).checked)
    assert bound(one, entries=1000) > 9 * bound(one, entries=100)
    nested = "node.labels.all(a, node.labels.exists(b, a == b))"
    assert bound(nested, entries=200) > 3.5 * bound(nested, entries=100)  # quadratic


def test_string_functions_scale_with_length() -> None:
    src = 'pod.annotations["note"].contains("x")'
    assert size_dependent(compile_expression(src).checked)
    assert bound(src, longest=10_000) > bound(src, longest=10) + 900


def test_nominal_sizes_are_the_documented_ones() -> None:
    assert NOMINAL.entries("node.labels") == 100 and NOMINAL.longest == 256
