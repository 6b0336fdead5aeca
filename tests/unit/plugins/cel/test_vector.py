"""The vectorized path against the library, node by node: random expressions of the vectorized
subset (and some outside it) on random node tables must give the same value or the same error on
every row, and the same first error message. Plus the subset's edges one by one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_with, make_node, make_pod
from kubesched.cache.nodetable import NodeTable
from kubesched.plugins.cel.env import CompileError
from kubesched.plugins.cel.rules import Outcome, Rule, RuleSet, compile_rule
from unit.fuzz.budget import examples

LIMIT = 10**9
KEYS = ["zone", "gpu", "tier", "example.com/x"]
VALUES = ["a", "b", "1", "-3", "2.5", "", "9223372036854775808", " 7", "0x10", "1e3"]
RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "example.com/none"]
INTS = ["0", "1", "-1", "-7", "3", "7", "1000", "-4000", "4611686018427387904", "9223372036854775807",
        "(-9223372036854775807 - 1)"]
DOUBLES = ["0.0", "1.5", "-2.25", "1e300", "0.5", "(0.0 / 0.0)", "-9223372036854775808.0", "9223372036854775807.0",
           "-9223372036854774784.0"]


def q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


KEY = st.sampled_from(KEYS).map(q)
RES = st.sampled_from(RESOURCES).map(q)
STRINGS = st.one_of(
    st.sampled_from(VALUES).map(q),
    KEY.map(lambda k: f"node.labels[{k}]"),
    KEY.map(lambda k: f"pod.labels[{k}]"),
    KEY.map(lambda k: f"namespaceObject.labels[{k}]"),
    st.sampled_from(["node.name", "pod.name", "namespaceObject.name", '"n1"', '"n3"', "node.labels.zone"]),
)
LEAVES = {
    "int": st.one_of(
        st.sampled_from(INTS),
        st.builds(lambda m, r: f"{m}[{r}]", st.sampled_from(["node.allocatable", "node.requested", "node.free", "pod.requests"]),
                  RES),
        st.sampled_from(["pod.priority", 'quantity("1Gi")', 'millicores("250m")', "node.free.cpu"]),
    ),
    "double": st.one_of(st.sampled_from(DOUBLES), st.sampled_from(["usage.cpu", 'usage["memory"]'])),
    "bool": st.one_of(
        st.sampled_from(["true", "false", "node.unschedulable", "has(usage.cpu)", "has(node.labels.zone)",
                         "has(pod.labels.zone)", '("cpu" in node.allocatable)', '("example.com/none" in node.free)']),
        st.builds(lambda k, m: f"({k} in {m})", KEY, st.sampled_from(["node.labels", "pod.labels", "usage",
                                                                       "namespaceObject.labels"])),
    ),
}
# Outside the subset: the library evaluates these on both paths.
OUTSIDE = ['node.labels.exists(k, k.startsWith("z"))', "(size(node.labels) > 2)", '("x" in node.annotations)',
           'node.taints.exists(t, t.effect == "NoSchedule")']
# Productions per kind, repeated to weigh them: binary operators most.
PRODUCTIONS = {
    "int": ["leaf", "binary", "binary", "binary", "ternary", "neg", "convert", "parse"],
    "double": ["leaf", "binary", "binary", "binary", "ternary", "neg", "convert", "parse"],
    "bool": ["leaf", "logic", "logic", "logic", "not", "ternary", "compare", "compare", "compare", "strings", "strings",
             "outside"],
}


@st.composite
def expressions(draw: st.DrawFn, kind: str, depth: int) -> str:
    """A well-typed expression of `kind` (bool, int or double), at most `depth` operators deep."""
    production = "leaf" if depth <= 0 else draw(st.sampled_from(PRODUCTIONS[kind]))
    sub = expressions(kind, depth - 1)
    if production == "leaf":
        return draw(LEAVES[kind])
    if production == "ternary":
        return f"({draw(expressions('bool', depth - 1))} ? {draw(sub)} : {draw(sub)})"
    if production == "neg":
        return f"-({draw(sub)})"
    if production == "not":
        return f"!({draw(sub)})"
    if production == "binary":
        ops = ["+", "-", "*", "/", "%"] if kind == "int" else ["+", "-", "*", "/"]
        return f"({draw(sub)} {draw(st.sampled_from(ops))} {draw(sub)})"
    if production == "convert":
        other = "double" if kind == "int" else "int"
        return f"{kind}({draw(expressions(other, depth - 1))})"
    if production == "parse":
        return f"{kind}({draw(STRINGS)})"
    if production == "logic":
        return f"({draw(sub)} {draw(st.sampled_from(['&&', '||', '==', '!=']))} {draw(sub)})"
    if production == "compare":
        operand = expressions(draw(st.sampled_from(["int", "double"])), depth - 1)
        return f"({draw(operand)} {draw(st.sampled_from(['<', '<=', '>', '>=', '==', '!=']))} {draw(operand)})"
    if production == "strings":
        return f"({draw(STRINGS)} {draw(st.sampled_from(['==', '!=']))} {draw(STRINGS)})"
    return draw(st.sampled_from(OUTSIDE))


ANY = st.sampled_from(["bool", "int", "double"]).flatmap(lambda kind: expressions(kind, 3))


@st.composite
def tables(draw: st.DrawFn) -> tuple[NodeTable, dict[str, np.ndarray]]:
    count = draw(st.integers(1, 10))
    nodes, placed = [], []
    for i in range(count):
        labels = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4))
        extra = draw(st.dictionaries(st.just("nvidia.com/gpu"), st.integers(0, 8), max_size=1))
        cpu = draw(st.sampled_from(["1", "4", "250m", "9223372036854775"]))
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if draw(st.booleans()) else []
        nodes.append(
            make_node(f"n{i}")
            .capacity(cpu=cpu, memory=draw(st.sampled_from(["1Gi", "32Gi", "0"])))
            .capacity(extra)
            .label(labels)
            .taints(taints)
            .unschedulable(draw(st.booleans()))
            .obj()
        )
        if draw(st.booleans()):
            placed.append(make_pod(f"on{i}").req(cpu="500m", memory="1Gi").node(f"n{i}").obj())
    table = cache_with(nodes, placed).table
    usage = {}
    for r in ("cpu", "memory"):
        column = np.full(table.capacity, np.nan)
        column[:count] = draw(st.lists(st.sampled_from([np.nan, 0.0, 0.25, 0.9, 1.5]), min_size=count, max_size=count))
        usage[r] = column
    return table, usage


POD = make_pod("p").req(cpu="1", memory="1Gi").label(zone="a", gpu="1", tier="").priority(5).info()


def both(source: str, table: NodeTable, usage: dict[str, np.ndarray]) -> tuple[Rule, Outcome, Outcome]:
    rule = compile_rule("r", source, ("bool", "int", "double"), LIMIT)
    rows = table.rows()
    fast, slow = RuleSet([rule], LIMIT), RuleSet([rule], LIMIT, vectorize=False)
    labels = {"zone": "b", "example.com/x": "1"}
    return (rule, fast.evaluate(fast.begin(POD, table, labels, usage), rule, rows),
            slow.evaluate(slow.begin(POD, table, labels, usage), rule, rows))


def assert_same(fast: Outcome, slow: Outcome, source: str) -> None:
    assert np.array_equal(fast.err, slow.err), source
    ok = ~fast.err
    a, b = fast.value[ok], slow.value[ok]
    if a.dtype == np.float64:
        assert np.array_equal(a, b, equal_nan=True), source
    else:
        assert np.array_equal(a, b), source
    assert (fast.error_row, fast.message) == (slow.error_row, slow.message), source


@settings(max_examples=examples(300))
@given(ANY, tables())
def test_vectorized_equals_interpreted(source: str, data: tuple[NodeTable, dict[str, np.ndarray]]) -> None:
    table, usage = data
    try:
        _, fast, slow = both(source, table, usage)
    except CompileError as exc:  # the generator is typed: nothing it makes may be refused
        pytest.fail(f"{source}: {exc}")
    assert_same(fast, slow, source)


def test_the_generator_mostly_stays_in_the_subset() -> None:
    """The differential test is worth something only if most of what it draws is vectorized."""
    drawn: list[bool] = []

    @settings(max_examples=100)
    @given(ANY)
    def draw(source: str) -> None:
        drawn.append(compile_rule("r", source, ("bool", "int", "double"), LIMIT).vectorized)

    draw()
    assert sum(drawn) > 0.6 * len(drawn)


SMALL = cache_with(
    [make_node("n0").label(zone="a", gpu="1").obj(), make_node("n1").capacity({"nvidia.com/gpu": 2}).label(zone="b").obj(),
     make_node("n2").capacity(cpu="9223372036854775").obj()],
    [make_pod("x").req(cpu="1").node("n1").obj()],
).table


@pytest.mark.parametrize(
    ("source", "vectorized"),
    [
        ('node.labels["zone"] == pod.labels["zone"]', True),
        ('node.labels["gpu"] == "1"', True),  # an error where the label is missing
        ('"gpu" in node.labels && node.labels["gpu"] == "1"', True),
        ("node.allocatable.cpu * 1000000 > 0", True),  # overflow on n2
        ('node.free["cpu"] / (node.allocatable["cpu"] - 4000) > 0', True),  # division by zero on n0
        ("-(node.allocatable.cpu - 9223372036854775807 - 1) > 0", True),
        ("-(node.allocatable.cpu * 0 - 9223372036854775807 - 1) > 0", True),  # -INT_MIN overflows
        ("node.allocatable.cpu * 3000000000000000 > 0", True),  # past 2**63, short of 2**64
        ("node.allocatable.cpu * 2305843009213693 > 0", True),  # just short of 2**63 on n0 and n1
        ("node.allocatable.cpu + 9223372036854775807 > 0", True),
        ('int(node.labels["gpu"]) == 1', True),
        ("double(node.requested.cpu) / 0.0 > 1.0", True),
        ("int(usage.cpu * 1e30) > 0", True),
        ("-node.allocatable.cpu / 3000 == -1 && -node.allocatable.cpu % 3000 == -1000", True),  # truncated, as CEL
        ("node.allocatable.cpu / -3000 == -1 && node.allocatable.cpu % -3000 == 1000", True),
        ("int(-9223372036854775808.0 + double(node.free.cpu) * 0.0) < 0", True),  # out of range, by a hair
        ("int(-9223372036854774784.0 + double(node.free.cpu) * 0.0) < 0", True),  # the nearest double that fits
        ('(node.labels.zone == "a" ? 1 / 0 : 2) == 2', True),  # the branch not taken does not fail
        ('node.labels["zone"] == node.labels["gpu"]', True),
        ('node.name == "n1" || pod.labels["nope"] == "x"', True),
        ('false && pod.labels["nope"] == "x"', True),
        ('pod.labels["nope"] == "x" || node.labels.zone == "a"', True),
        ('(pod.priority > 3 ? node.labels.zone : "z") == "a"', False),  # a string conditional: per node
        ('node.labels.exists(k, k == "zone")', False),
        ('node.annotations["a"] == "b"', False),
    ],
)
def test_subset_edges(source: str, vectorized: bool) -> None:
    usage = {"cpu": np.array([0.5, np.nan, 2.0] + [np.nan] * (SMALL.capacity - 3)), "memory": np.zeros(SMALL.capacity)}
    rule, fast, slow = both(source, SMALL, usage)
    assert rule.vectorized is vectorized
    assert_same(fast, slow, source)


def test_errors_carry_the_librarys_message_and_the_first_row() -> None:
    _, fast, _ = both('node.labels["gpu"] == "1"', SMALL, {})
    assert fast.err.tolist() == [False, True, True]
    assert fast.error_row == 1 and "gpu" in fast.message
