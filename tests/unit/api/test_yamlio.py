"""The shared YAML/JSON reader: duplicate keys, alias bombs, depth, documents."""

from __future__ import annotations

import itertools
import time

import pytest

from kubesched.api import yamlio
from kubesched.api.yamlio import MAX_ALIAS_EXPANSION, MAX_DEPTH, YamlError, load_all, load_json, load_one


def laughs(levels: int, width: int = 9) -> str:
    """The "billion laughs" document: `levels` anchors, each `width` aliases of the one before."""
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [" + ", ".join(['"lol"'] * width) + "]"]
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_documents_are_numbered_and_timestamps_stay_strings() -> None:
    docs = list(load_all("a: 1\n---\ncreationTimestamp: 2024-01-02T03:04:05Z\n---\n"))
    assert docs == [(1, {"a": 1}), (2, {"creationTimestamp": "2024-01-02T03:04:05Z"}), (3, None)]


def test_a_repeated_key_is_refused_with_its_place() -> None:
    with pytest.raises(YamlError) as info:
        list(load_all("kind: Pod\n---\nspec:\n  cpu: 1\n  cpu: 2\n"))
    assert (info.value.document, info.value.line, info.value.column) == (2, 5, 3)
    assert str(info.value) == "line 5, column 3: duplicate key 'cpu'"


def test_keys_equal_once_constructed_are_duplicates_too() -> None:
    with pytest.raises(YamlError, match="duplicate key 1"):
        load_one("1: a\n0x1: b\n")


def test_merge_keys_are_not_duplicates() -> None:
    assert load_one("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n") == {"base": {"x": 1}, "d": {"x": 1, "y": 2}}


def test_an_alias_bomb_is_refused_at_once() -> None:
    start = time.monotonic()
    with pytest.raises(YamlError, match=f"more than the limit of {MAX_ALIAS_EXPANSION}"):
        load_one(laughs(9))
    assert time.monotonic() - start < 2


def test_modest_aliases_are_fine() -> None:
    data = load_one(laughs(3))
    assert len(data["l2"]) == 9 and data["l2"][0][0] == ["lol"] * 9


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(YamlError, match="recursive alias"):
        load_one("a: &a [1, *a]\n")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 200000])
def test_deep_nesting_is_refused(depth: int) -> None:
    with pytest.raises(YamlError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        load_one("[" * depth + "]" * depth)


def test_nesting_at_the_limit_is_fine() -> None:
    depth = MAX_DEPTH
    assert load_one("[" * depth + "]" * depth) is not None


def test_an_alias_that_makes_a_document_too_deep_is_refused() -> None:
    anchor = "[" * 60 + "1" + "]" * 60
    with pytest.raises(YamlError, match="nesting deeper"):
        load_one(f"a: &a {anchor}\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n")


def test_load_one_refuses_a_second_document() -> None:
    with pytest.raises(YamlError, match="expected a single document") as info:
        load_one("a: 1\n---\nb: 2\n")
    assert info.value.document == 2


def test_syntax_errors_carry_document_line_and_column() -> None:
    with pytest.raises(YamlError) as info:
        list(load_all("a: 1\n---\nb: [1, 2\n"))
    assert info.value.document == 2 and info.value.line is not None
    assert info.value.problem.startswith("invalid YAML: ")


def test_json_duplicate_keys_depth_and_syntax() -> None:
    assert load_json('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    with pytest.raises(YamlError, match="duplicate key 'a'"):
        load_json('{"a": 1, "a": 2}')
    with pytest.raises(YamlError, match="nesting deeper"):
        load_json("[" * 100000 + "]" * 100000)
    with pytest.raises(YamlError, match="invalid JSON") as info:
        load_json('{"a": 1,}')
    assert info.value.line == 1


def test_the_c_loader_is_used_when_there() -> None:
    import yaml

    if hasattr(yaml, "CSafeLoader"):
        assert issubclass(yamlio._Loader, yaml.CSafeLoader)


def test_a_control_character_is_one_line() -> None:
    with pytest.raises(YamlError) as info:
        load_one("\x1fkind: Pod\n")
    assert "\n" not in str(info.value)
    assert info.value.problem.startswith("invalid YAML: unacceptable character #x001f")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e3", 1000.0),  # YAML 1.1 wants a dot; kube's YAML (go-yaml) does not
        ("1.5e3", 1500.0),
        ("-1E-2", -0.01),
        ("1.5", 1.5),
        (".5", 0.5),
        ("1_000", 1000),
        ("0x1f", 31),
        ("12", 12),
        ("1:30", "1:30"),  # YAML 1.1's base 60; a string for go-yaml
        ("1e1000000", "1e1000000"),  # too large for a float64: go-yaml keeps the string
        (".inf", float("inf")),
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z"),
        ("1e", "1e"),
    ],
)
def test_plain_scalars_resolve_as_kubes_yaml_does(text: str, value: object) -> None:
    got = load_one(f"v: {text}\n")["v"]
    assert got == value and type(got) is type(value)
