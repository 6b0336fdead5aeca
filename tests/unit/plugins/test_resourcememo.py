"""NodeResourcesFit's Filter and Score and NodeResourcesBalancedAllocation's Score keep their
answers across cycles (cache.rowmemo): a plugin that has seen every change answers as a new one
would, on random clusters changed at random between the pods it is asked about."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.podinfo import make_pod_info
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.plugins.noderesourcesbalancedallocation import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesourcesfit import NodeResourcesFit, NodeResourcesFitArgs

GPU = "example.com/gpu"
STRATEGIES = [
    None,
    {"scoringStrategy": {"type": "MostAllocated"}},
    {"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 2}, {"name": GPU, "weight": 1}],
                         "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}},
]

POD = st.tuples(st.integers(0, 4000), st.integers(0, 8), st.integers(0, 2))  # cpu m, memory Gi, gpus


def shaped_pod(name: str, shape: tuple[int, int, int]):
    cpu, mem, gpus = shape
    builder = make_pod(name).req({GPU: gpus} if gpus else {})
    if cpu:
        builder.req(cpu=f"{cpu}m")
    if mem:
        builder.req(memory=f"{mem}Gi")
    return builder.obj()


def fresh_verdicts(cache: Cache, args, pi) -> tuple[list[int], list[int], list[int]]:
    fit = NodeResourcesFit(NodeResourcesFitArgs.model_validate(args) if args else None, UnitHandle(cache))
    return answers(fit, NodeResourcesBalancedAllocation(None, UnitHandle(cache)), cache, pi)


def answers(fit: NodeResourcesFit, balanced: NodeResourcesBalancedAllocation, cache: Cache, pi) -> tuple[list[int], list[int], list[int]]:
    table = cache.table
    state = CycleState()
    fit.pre_filter(state, pi)
    result = fit.filter(state, pi, table)
    codes = [0] * table.size if result is None else result.codes[: table.size].tolist()
    rows = table.rows()
    fit.pre_score(state, pi, table, rows)
    fit_scores = fit.score(state, pi, table, rows).tolist()
    status = balanced.pre_score(state, pi, table, rows)
    balance = balanced.score(state, pi, table, rows).tolist() if status is None else []
    return codes, fit_scores, balance


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 2)), min_size=1, max_size=12),
    steps=st.lists(st.tuples(st.sampled_from(["place", "place", "unplace", "remove_node", "add_node"]), st.integers(0, 20), POD),
                   max_size=40),
    asked=st.lists(POD, min_size=1, max_size=3),
    strategy=st.sampled_from(STRATEGIES),
)
def test_plugins_kept_across_cycles_answer_as_new_ones(nodes, steps, asked, strategy):
    cache = cache_with([make_node(f"n{i}").capacity(cpu=str(cpu)).capacity({GPU: gpus}).obj() for i, (cpu, gpus) in enumerate(nodes)])
    fit = NodeResourcesFit(NodeResourcesFitArgs.model_validate(strategy) if strategy else None, UnitHandle(cache))
    balanced = NodeResourcesBalancedAllocation(None, UnitHandle(cache))
    placed: list[str] = []
    pods = [make_pod_info(shaped_pod(f"asked{i}", shape)) for i, shape in enumerate(asked)]
    for serial, (kind, which, shape) in enumerate(steps):
        names = sorted(cache.table.index)
        if kind == "place" and names:
            p = shaped_pod(f"p{serial}", shape)
            p.spec.node_name = names[which % len(names)]
            cache.add_pod(make_pod_info(p))
            placed.append(p.metadata.uid)
        elif kind == "unplace" and placed:
            cache.remove_pod(placed.pop(which % len(placed)))
        elif kind == "remove_node" and len(names) > 1:
            name = names[which % len(names)]
            for uid in [u for u in placed if cache.node_of(u) == name]:
                cache.remove_pod(uid)
                placed.remove(uid)
            cache.remove_node(name)
        elif kind == "add_node":
            cache.add_node(make_node(f"m{serial}").capacity(cpu=str(1 + which % 8)).capacity({GPU: which % 3}).obj())
        for pi in pods:  # the kept plugins see every state; the fresh ones only this one
            assert answers(fit, balanced, cache, pi) == fresh_verdicts(cache, strategy, pi)


@settings(max_examples=200, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 2), st.integers(0, 6000), st.sampled_from([0, 1, 110])),
                     min_size=1, max_size=10),
       shape=POD, removed=st.integers(0, 12))
def test_one_row_verdict_is_the_table_verdict(nodes, shape, removed):
    """The plain-Python verdict on one row (used for the few rows a cycle changes) agrees with the
    vectorized one on every row, absent rows and nodes without a resource included."""
    cache = cache_with(
        [make_node(f"n{i}").capacity(cpu=str(cpu), pods=pods).capacity({GPU: gpus}).obj() for i, (cpu, gpus, _, pods) in enumerate(nodes)]
    )
    for i, (_, _, used, _) in enumerate(nodes):
        if used:
            p = shaped_pod(f"u{i}", (used, 1, 0))
            p.spec.node_name = f"n{i}"
            cache.add_pod(make_pod_info(p))
    if removed < len(nodes):
        for uid in [p.uid for p in cache.table.pods[cache.table.row_of(f"n{removed}")].values()]:
            cache.remove_pod(uid)
        cache.remove_node(f"n{removed}")
    table = cache.table
    fit = NodeResourcesFit(None, UnitHandle(cache))
    pi = make_pod_info(shaped_pod("asked", shape))
    checks = fit._checks_of(CycleState(), pi, table)
    whole = fit._codes(checks, table, slice(0, table.size)).tolist()
    assert [fit._row_code(checks, table, r) for r in range(table.size)] == whole
    assert fit._codes(checks, table, np.arange(table.size, dtype=np.intp)).tolist() == whole


def test_pods_requesting_the_same_share_one_set_of_checks():
    cache = cache_with([make_node("n0").obj()])
    fit = NodeResourcesFit(None, UnitHandle(cache))
    a, b = make_pod_info(shaped_pod("a", (100, 1, 1))), make_pod_info(shaped_pod("b", (100, 1, 1)))
    c = make_pod_info(shaped_pod("c", (200, 1, 1)))
    assert fit.checks(a) is fit.checks(b)
    assert fit.checks(c) is not fit.checks(a) and fit.checks(c).amounts.tolist() != fit.checks(a).amounts.tolist()
    assert not fit.checks(a).amounts.flags.writeable  # shared, so never changed in place
