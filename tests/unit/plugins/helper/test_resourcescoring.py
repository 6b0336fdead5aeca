"""The shared resource-scoring helpers: resource name classes and the vectorized scorers checked
against a plain one-node-at-a-time reading of kube's formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kubesched.api.validation.resources import is_extended
from kubesched.plugins.helper import resourcescoring as rs
from kubesched.plugins.helper.shape import shape_lookup


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("nvidia.com/gpu", True, True),
        ("example.com/foo-bar", True, True),
        ("cpu", False, False),
        ("pods", False, False),
        ("hugepages-2Mi", False, True),
        ("kubernetes.io/something", False, True),
        ("attachable-volumes-aws-ebs", False, True),
        ("requests.example.com/foo", False, False),
        ("bad/name!", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended(name) is extended
    assert rs.is_scalar_resource(name) is scalar


# --- references: one node at a time, as kube's Go code reads ------------------------------------


def ref_least(req: list[int], alloc: list[int], weights: list[int]) -> int:
    score = wsum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        score += (0 if r > a else (a - r) * 100 // a) * w
        wsum += w
    return score // wsum if wsum else 0


def ref_most(req: list[int], alloc: list[int], weights: list[int]) -> int:
    score = wsum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        score += min(r, a) * 100 // a * w
        wsum += w
    return score // wsum if wsum else 0


def ref_rtcr(req: list[int], alloc: list[int], weights: list[int], lookup: np.ndarray) -> int:
    score = wsum = 0
    for r, a, w in zip(req, alloc, weights, strict=True):
        if a == 0:
            continue
        s = int(lookup[100 if r > a else r * 100 // a])
        if s > 0:
            score += s * w
            wsum += w
    return math.floor(score / wsum + 0.5) if wsum else 0


def ref_balanced(req: list[int], alloc: list[int]) -> int:
    fractions = [min(r / a, 1.0) for r, a in zip(req, alloc, strict=True) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * 100)


def items(req: np.ndarray, alloc: np.ndarray, weights: np.ndarray) -> list[rs.Item]:
    return [(int(w), r, a) for w, r, a in zip(weights, req, alloc, strict=True)]


def random_case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k, m = 4, 300
    alloc = rng.integers(1, 10**10, size=(k, m))
    alloc[rng.random((k, m)) < 0.2] = 0  # resources some nodes lack
    requested = (alloc * rng.uniform(0, 1.3, size=(k, m))).astype(np.int64)
    weights = rng.integers(1, 101, size=k)
    return requested, alloc.astype(np.int64), weights.astype(np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_vectorized_scorers_match_the_per_node_formulas(seed: int) -> None:
    req, alloc, weights = random_case(seed)
    lookup = shape_lookup([(0, 0), (35, 7), (80, 3), (100, 10)])
    m = req.shape[1]
    least = rs.least_allocated(items(req, alloc, weights), m)
    most = rs.most_allocated(items(req, alloc, weights), m)
    rtcr = rs.requested_to_capacity_ratio(items(req, alloc, weights), m, lookup)
    balanced = rs.balanced(items(req, alloc, weights), m)
    w = weights.tolist()
    for j in range(req.shape[1]):
        r, a = req[:, j].tolist(), alloc[:, j].tolist()
        assert least[j] == ref_least(r, a, w)
        assert most[j] == ref_most(r, a, w)
        assert rtcr[j] == ref_rtcr(r, a, w, lookup)
        assert balanced[j] == ref_balanced(r, a)


def test_rtcr_half_rounds_up() -> None:
    lookup = shape_lookup([(0, 0), (100, 10)])
    req = np.array([[3], [1]], dtype=np.int64)
    alloc = np.array([[4], [2]], dtype=np.int64)
    # 75 and 50, weights 1: 62.5 -> 63
    assert rs.requested_to_capacity_ratio(items(req, alloc, np.array([1, 1])), 1, lookup).tolist() == [63]


def test_nothing_to_score() -> None:
    empty = np.zeros((2, 3), dtype=np.int64)
    weights = np.array([1, 1])
    lookup = shape_lookup([(0, 10)])
    for it in (items(empty, empty, weights), []):
        assert rs.least_allocated(it, 3).tolist() == [0, 0, 0]
        assert rs.most_allocated(it, 3).tolist() == [0, 0, 0]
        assert rs.requested_to_capacity_ratio(it, 3, lookup).tolist() == [0, 0, 0]
        # No resource to compare: the deviation is 0.
        assert rs.balanced(it, 3).tolist() == [100, 100, 100]


@pytest.mark.parametrize("seed", range(3))
def test_all_resources_present_fast_path_matches(seed: int) -> None:
    req, alloc, weights = random_case(seed)
    alloc = np.maximum(alloc, 1)
    m = req.shape[1]
    for k in (1, 2, 3, 4):
        got = rs.balanced(items(req[:k], alloc[:k], weights[:k]), m)
        assert got.tolist() == [ref_balanced(req[:k, j].tolist(), alloc[:k, j].tolist()) for j in range(m)]
