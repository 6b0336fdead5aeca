"""NodeResourcesBalancedAllocation: args, kube 1.37's balance-change score on hand-computed values, skips."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import EnqueueExtensions
from kubesched.framework.status import Code
from kubesched.plugins.noderesourcesbalancedallocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)


def make(cache: Cache, args: dict[str, Any] | None = None) -> NodeResourcesBalancedAllocation:
    parsed = NodeResourcesBalancedAllocationArgs.model_validate(args) if args is not None else None
    return NodeResourcesBalancedAllocation(parsed, UnitHandle(cache))


def run_score(plugin: NodeResourcesBalancedAllocation, cache: Cache, pi: PodInfo,
              names: list[str] | None = None) -> list[int]:
    table = cache.table
    rows = np.array([table.row_of(n) for n in (names or list(table.index))], dtype=np.intp)
    state = CycleState()
    assert plugin.pre_score(state, pi, table, rows) is None
    return [int(s) for s in plugin.score(state, pi, table, rows)]


GPU3 = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]}


def test_default_resources() -> None:
    assert [(r.name, r.weight) for r in NodeResourcesBalancedAllocationArgs().resources] == [("cpu", 1), ("memory", 1)]


def test_unset_weight_defaults_to_one() -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": [{"name": "cpu", "weight": 0}]})
    assert args.resources[0].weight == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"resources": [{"name": "cpu", "weight": 2}]}, "must be 1"),
        ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "Duplicate"),
        ({"resource": []}, "Extra inputs"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        NodeResourcesBalancedAllocationArgs.model_validate(args)


def test_two_resources_half_the_difference() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").obj()])
    # With the pod: fractions 0.75 and 0.5, std 0.125, (1 - 0.125) * 100 = 87.5 -> 87; without it
    # the empty node is balanced (100): 50 + (50 + 87 - 100) / 2 = 68 (kube 1.37's change score).
    assert run_score(make(cache), cache, make_pod("p").req(cpu="3", memory="5000").info()) == [68]


def test_perfectly_balanced_node_scores_100() -> None:
    cache = cache_with(
        [make_node("n").capacity(cpu="4", memory="10000").obj()], [make_pod("old").req(cpu="1", memory="2500").node("n").obj()]
    )
    # Balanced before (100) and after (100): the pod changes nothing, 50 + 50 / 2 = 75.
    assert run_score(make(cache), cache, make_pod("p").req(cpu="1", memory="2500").info()) == [75]


def test_fractions_are_capped_at_one() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").obj()])
    # cpu 6000/4000 counts as 1, memory 0.5: std 0.25 -> 75; 50 + (50 + 75 - 100) / 2 = 62
    assert run_score(make(cache), cache, make_pod("p").req(cpu="6", memory="5000").info()) == [62]


def test_uses_plain_requests_not_best_effort_defaults() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").obj()], [make_pod("besteffort").node("n").obj()])
    # The best-effort pod on the node adds nothing; memory 0 still counts as a fraction:
    # cpu 0.5, memory 0 -> std 0.25 -> 75; before, 0 and 0 -> 100: 62.
    assert run_score(make(cache), cache, make_pod("p").req(cpu="2").info()) == [62]


def test_three_resources_standard_deviation() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").capacity({"nvidia.com/gpu": 4}).obj()])
    # fractions 0.25, 0.5, 0.25: mean 1/3, variance 1/72, std 0.11785 -> 88.2 -> 88; before 100: 69
    pi = make_pod("p").req({"nvidia.com/gpu": 1}, cpu="1", memory="5000").info()
    assert run_score(make(cache, GPU3), cache, pi) == [69]


def test_extended_resource_not_requested_is_left_out() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").capacity({"nvidia.com/gpu": 4}).obj()])
    # Without the gpu the two-resource formula applies: 0.25 vs 0.5 -> 87 (before: 100) -> 68.
    assert run_score(make(cache, GPU3), cache, make_pod("p").req(cpu="1", memory="5000").info()) == [68]


def test_node_without_the_extended_resource_scores_on_the_rest() -> None:
    cache = cache_with([make_node("gpu").capacity(cpu="4", memory="10000").capacity({"nvidia.com/gpu": 4}).obj(),
                        make_node("plain").capacity(cpu="4", memory="10000").obj()])
    pi = make_pod("p").req({"nvidia.com/gpu": 1}, cpu="1", memory="5000").info()
    assert run_score(make(cache, GPU3), cache, pi, ["gpu", "plain"]) == [69, 68]  # balances 88 and 87


def test_node_with_only_one_scorable_resource_scores_100() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="0").obj()])
    # One resource: balanced (100) with and without the pod -> 75.
    assert run_score(make(cache), cache, make_pod("p").req(cpu="3", memory="1Gi").info()) == [75]


def test_best_effort_pod_is_skipped() -> None:
    cache = cache_with([make_node("n").obj()])
    plugin = make(cache)
    table = cache.table
    rows = table.rows()
    status = plugin.pre_score(CycleState(), make_pod("p").info(), table, rows)
    assert status is not None and status.code == Code.SKIP
    # Called anyway (no PreScore state), it scores every node 0.
    assert plugin.score(CycleState(), make_pod("p").info(), table, rows).tolist() == [0]


def test_requests_only_outside_the_resources_are_best_effort_too() -> None:
    cache = cache_with([make_node("n").capacity({"nvidia.com/gpu": 4}).obj()])
    status = make(cache).pre_score(CycleState(), make_pod("p").req({"nvidia.com/gpu": 1}).info(),
                                   cache.table, cache.table.rows())
    assert status is not None and status.code == Code.SKIP


def test_no_candidate_rows() -> None:
    cache = cache_with([make_node("n").obj()])
    pi = make_pod("p").req(cpu="1").info()
    state = CycleState()
    empty = np.array([], dtype=np.intp)
    assert make(cache).pre_score(state, pi, cache.table, empty) is None
    assert make(cache).score(state, pi, cache.table, empty).tolist() == []


def test_null_resources_mean_defaults() -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate({"resources": None})
    assert [r.name for r in args.resources] == ["cpu", "memory"]


def test_scoring_a_few_rows_of_a_large_table() -> None:
    cache = cache_with([make_node(f"n{i}").capacity(cpu="4", memory="10000").obj() for i in range(10)],
                       [make_pod("old").req(cpu="1", memory="5000").node("n7").obj()])
    # n7: with the pod 0.5 vs 0.6 -> 95, before 0.25 vs 0.5 -> 87: 50 + (50 + 95 - 87) / 2 = 79;
    # n2: 0.25 vs 0.1 -> 92.5 -> 92, before 100: 71.
    assert run_score(make(cache), cache, make_pod("p").req(cpu="1", memory="1000").info(), ["n7", "n2"]) == [79, 71]


def test_registers_no_events_as_kube() -> None:
    # kube's NodeResourcesBalancedAllocation has no EnqueueExtensions: a Score plugin rejects no pod, so no event needs a hint.
    assert not issubclass(NodeResourcesBalancedAllocation, EnqueueExtensions)
