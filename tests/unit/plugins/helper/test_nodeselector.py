"""Node selector terms as NodeAffinity and VolumeBinding share them: parsing, the node table's
masks, one node's answer (which must agree with its row), and StorageClass topology terms."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from builders import make_node
from kubesched.api.objects import NodeSelector, NodeSelectorTerm
from kubesched.api.storage import TopologySelectorTerm
from kubesched.cache.nodetable import NodeTable
from kubesched.plugins.helper.nodeselector import (
    parse_node_selector,
    parse_term,
    term_mask,
    term_matches,
    term_matches_node,
    terms_mask,
    topology_mask,
)

NODES = {
    "a": {"zone": "z1", "size": "8"},
    "b": {"zone": "z2", "size": "16"},
    "c": {"zone": "z1"},
}


def table() -> NodeTable:
    t = NodeTable()
    for name, labels in NODES.items():
        t.upsert_node(make_node(name).label(labels).obj())
    return t


def term(**raw: Any) -> NodeSelectorTerm:
    return msgspec.convert(raw, NodeSelectorTerm)


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def rows_of(t: NodeTable, mask: np.ndarray) -> set[str]:
    return {t.name_of(int(r)) for r in np.flatnonzero(mask)}


@pytest.mark.parametrize(
    ("raw", "by_name", "want"),
    [
        ({"matchExpressions": [expr("zone", "In", "z1")]}, True, {"a", "c"}),
        ({"matchExpressions": [expr("zone", "NotIn", "z1")]}, True, {"b"}),
        ({"matchExpressions": [expr("size", "Gt", "10")]}, True, {"b"}),
        ({"matchExpressions": [expr("size", "DoesNotExist")]}, True, {"c"}),
        ({"matchFields": [expr("metadata.name", "In", "b")]}, True, {"b"}),
        ({"matchFields": [expr("metadata.name", "NotIn", "b")]}, True, {"a", "c"}),
        # A node known by its labels alone (a PV's node affinity) has the name "".
        ({"matchFields": [expr("metadata.name", "In", "b")]}, False, set()),
        ({"matchFields": [expr("metadata.name", "NotIn", "b")]}, False, {"a", "b", "c"}),
        # Any other field reads "".
        ({"matchFields": [expr("spec.podCIDR", "NotIn", "x")]}, True, {"a", "b", "c"}),
        ({"matchFields": [expr("spec.podCIDR", "In", "x")]}, True, set()),
        (
            {"matchExpressions": [expr("zone", "In", "z1")], "matchFields": [expr("metadata.name", "In", "c")]},
            True,
            {"c"},
        ),
        # Empty and invalid terms match nothing.
        ({}, True, set()),
        ({"matchExpressions": [expr("size", "Gt", "ten")]}, True, set()),
        ({"matchFields": [expr("metadata.name", "In", "a", "b")]}, True, set()),
        ({"matchFields": [expr("metadata.name", "Exists")]}, True, set()),
    ],
)
def test_term_mask_and_one_node_agree(raw: dict[str, Any], by_name: bool, want: set[str]) -> None:
    t = table()
    parsed = parse_term(term(**raw), "t")
    assert rows_of(t, term_mask(t, parsed, by_name=by_name)) == want
    for name, labels in NODES.items():
        assert term_matches(parsed, labels, name if by_name else "") is (name in want)
        if by_name:
            assert term_matches_node(parsed, make_node(name).label(labels).obj()) is (name in want)


def test_parse_errors_name_the_field() -> None:
    parsed = parse_term(term(matchExpressions=[expr("size", "Gt", "ten")],
                             matchFields=[expr("metadata.name", "In", "a", "b")]), "terms[0]")
    assert parsed.errors == (
        "terms[0].matchExpressions[0].values[0]: operator Gt needs an integer, got 'ten'",
        "terms[0].matchFields[0].values: must have exactly one element",
    )
    assert parsed.matches_nothing


def test_selector_terms_are_ored_and_empty_ones_dropped() -> None:
    t = table()
    selector = msgspec.convert({"nodeSelectorTerms": [
        {"matchExpressions": [expr("zone", "In", "z2")]},
        {},
        {"matchFields": [expr("metadata.name", "In", "c")]},
    ]}, NodeSelector)
    terms = parse_node_selector(selector)
    assert len(terms) == 2
    assert rows_of(t, terms_mask(t, terms)) == {"b", "c"}
    assert rows_of(t, terms_mask(t, ())) == set()


def topology(*terms: dict[str, list[str]]) -> list[TopologySelectorTerm]:
    return [
        msgspec.convert({"matchLabelExpressions": [{"key": k, "values": v} for k, v in t.items()]}, TopologySelectorTerm)
        for t in terms
    ]


@pytest.mark.parametrize(
    ("terms", "want"),
    [
        ([], {"a", "b", "c"}),
        (topology({"zone": ["z2"]}), {"b"}),
        (topology({"zone": ["z1"], "size": ["8"]}), {"a"}),
        (topology({"zone": ["z2"]}, {"size": ["8"]}), {"a", "b"}),
        (topology({}), set()),  # an empty term
        (topology({"zone": []}), set()),  # a requirement without values
    ],
)
def test_topology_mask(terms: list[TopologySelectorTerm], want: set[str]) -> None:
    t = table()
    assert rows_of(t, topology_mask(t, terms)) == want
