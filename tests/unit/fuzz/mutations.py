"""Mutating valid documents into nearly valid ones, for the fuzz tests of configuration readers.

A mutation picks any place in the document uniformly and replaces it with junk (edge numbers,
non-finite floats, odd strings, wrong types, nested junk), drops it, duplicates a list item, adds
an unknown field, or puts an alias bomb there (a list shared eight levels deep: a few hundred bytes
of YAML, 168 million items to anything that walks it whole).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import strategies as st

# Values that have broken loaders before: the edges of int32/int64/float32, non-finite floats,
# durations and quantities past what kube can hold, and strings of the wrong shape.
EDGES: list[Any] = [
    0, -1, 1, 100, 101, 2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 10**400,
    math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, 3.5e38, 0.5, -0.0,
    "", " ", "0", "-1", "1e400", "1e1000000", "99999999999999999999Ti", ".inf", "NaN", "1e30",
    "0s", "-1s", "1ns", "9" * 400 + "h", "2562048h", "1h1m1s1ms", "15s", "5m", "soon",
    "x" * 5000, "é\u0000\u202e😀", "http://", "module:Class", "os:path", "*", "null", True, False, None,
]
SCALARS = st.one_of(
    st.sampled_from(EDGES),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    st.text(max_size=20),
    st.booleans(),
    st.none(),
)
JUNK = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.text(max_size=8), inner, max_size=3),
), max_leaves=6)


def _bomb() -> list[Any]:
    """One list shared eight levels deep: safe_dump writes it with anchors and aliases in a few
    hundred bytes, and anything that walks it whole visits 10 * 8**8 (168 million) items."""
    bomb: list[Any] = ["x"] * 10
    for _ in range(8):
        bomb = [bomb] * 8
    return bomb


def _places(tree: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in the tree, each shared container once (a bomb is small)."""
    out: list[tuple[Any, Any]] = []
    stack = [tree]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append((node, key))
            stack.append(child)
    return out


@st.composite
def mutations_of(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """A deep copy of one of `seeds` with one to four mutations."""
    tree = copy.deepcopy(draw(st.sampled_from(seeds)))
    # A uniform choice of place: hypothesis's integers lean towards 0, which would be apiVersion.
    rnd = draw(st.randoms(use_true_random=True))
    for _ in range(draw(st.integers(1, 4))):
        places = _places(tree)
        if not places:
            break
        container, key = rnd.choice(places)
        op = draw(st.sampled_from(["replace", "replace", "replace", "drop", "duplicate", "unknown", "bomb"]))
        if op == "replace":
            container[key] = draw(JUNK)
        elif op == "bomb":
            container[key] = _bomb()
        elif op == "drop":
            del container[key]
        elif op == "duplicate" and isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
        elif isinstance(container[key], dict):
            container[key][draw(st.text(min_size=1, max_size=12))] = draw(JUNK)
    return tree
