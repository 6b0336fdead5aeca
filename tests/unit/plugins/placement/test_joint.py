"""Joint placement of a group: the solver against brute force and the greedy order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.plugins.placement.joint import (
    PlacementOptions,
    Source,
    evaluate,
    greedy_assignment,
    model_point,
    place_greedy,
    place_group,
    violations,
)
from kubesched.plugins.placement.model import GroupInput, Weights, build_model, group_members
from kubesched.tools import placementbench as bench

EXACT = PlacementOptions(time_budget=None, top_k=0)


def make(
    free: list[list[int]],
    req: list[list[int]],
    score: list[list[int]] | None = None,
    feasible: list[list[bool]] | None = None,
    alloc: list[list[int]] | None = None,
    min_count: int | None = None,
    order: list[int] | None = None,
    conflicts: tuple[tuple[int, ...], ...] = (),
    crowding: list[list[int]] | None = None,
) -> GroupInput:
    m, n = len(req), len(free)
    return GroupInput.build(
        feasible=np.ones((m, n), dtype=bool) if feasible is None else np.array(feasible, dtype=bool),
        score=np.zeros((m, n), dtype=np.int64) if score is None else np.array(score),
        req=np.array(req),
        free=np.array(free),
        alloc=np.array(free if alloc is None else alloc),
        order=order,
        min_count=min_count,
        conflicts=conflicts,
        crowding=None if crowding is None else np.array(crowding),
    )


def brute_force(problem: GroupInput, weights: Weights) -> tuple[int, float]:
    """The best (members placed, objective) over every assignment that violates nothing."""
    best = (0, 0.0)
    choices = range(-1, problem.nodes)
    for combo in itertools.product(choices, repeat=problem.members):
        nodes = np.array(combo, dtype=np.intp)
        placed = int((nodes >= 0).sum())
        if placed == 0 or violations(problem, nodes):
            continue
        best = max(best, (placed, evaluate(problem, nodes, weights)))
    return best


@st.composite
def small_problems(draw: st.DrawFn) -> GroupInput:
    m = draw(st.integers(1, 5))
    n = draw(st.integers(1, 4))
    r = 2
    free = [[draw(st.integers(0, 8)) for _ in range(r)] for _ in range(n)]
    alloc = [[f + draw(st.sampled_from([0, 0, 2, 4])) for f in row] for row in free]
    shapes = [[draw(st.integers(0, 4)) for _ in range(r)] for _ in range(draw(st.integers(1, 3)))]
    kind = [draw(st.integers(0, len(shapes) - 1)) for _ in range(m)]
    req = [shapes[k] for k in kind]
    score = [[draw(st.integers(0, 50)) for _ in range(n)] for _ in range(m)]
    feasible = [[draw(st.booleans()) or draw(st.booleans()) for _ in range(n)] for _ in range(m)]
    crowding = None
    if draw(st.booleans()):
        # Members of one shape identical in every row (a burst), so classes form and crowding counts.
        by_kind = {k: ([draw(st.integers(0, 50)) for _ in range(n)], [draw(st.booleans()) or draw(st.booleans()) for _ in range(n)],
                       [draw(st.integers(0, 20)) for _ in range(n)]) for k in set(kind)}
        score = [by_kind[k][0] for k in kind]
        feasible = [by_kind[k][1] for k in kind]
        crowding = [by_kind[k][2] for k in kind]
    conflicts: tuple[tuple[int, ...], ...] = ()
    if m > 1 and draw(st.booleans()):
        conflicts = (tuple(draw(st.lists(st.integers(0, m - 1), min_size=2, max_size=m, unique=True))),)
    return make(free, req, score, feasible, alloc, min_count=draw(st.integers(0, m)), conflicts=conflicts, crowding=crowding)


WEIGHTS = st.sampled_from(
    [Weights(), Weights(slot_bonus=0, balance_weight=0), Weights(slot_bonus=30, balance_weight=1, empty_node_bonus=40)]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems(), WEIGHTS)
def test_solver_is_optimal_against_brute_force(problem: GroupInput, weights: Weights) -> None:
    options = PlacementOptions(time_budget=None, top_k=0, weights=weights)
    p = place_group(problem, options)
    assert violations(problem, p.nodes) == []
    assert p.placed == 0 or p.placed >= problem.min_count
    assert p.objective == pytest.approx(evaluate(problem, p.nodes, weights))
    best = brute_force(problem, weights)
    assert p.placed == best[0] and p.objective == pytest.approx(best[1], abs=1e-4)
    assert p.placed > p.greedy_placed or p.objective >= p.greedy_objective - 1e-9


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problems(), WEIGHTS, st.integers(1, 2))
def test_pruned_and_greedy_respect_every_constraint(problem: GroupInput, weights: Weights, top_k: int) -> None:
    g = greedy_assignment(problem)
    assert violations(problem, g) == []
    assert int((g >= 0).sum()) in (0,) or int((g >= 0).sum()) >= problem.min_count
    p = place_group(problem, PlacementOptions(time_budget=None, top_k=top_k, weights=weights))
    assert violations(problem, p.nodes) == []
    assert p.placed > p.greedy_placed or (p.placed == p.greedy_placed and p.objective >= p.greedy_objective - 1e-9)
    assert p.placed == 0 or p.placed >= problem.min_count


def test_all_or_nothing() -> None:
    # Three members of 2 CPU, room for two of them.
    problem = make(free=[[2], [2]], req=[[2], [2], [2]])
    p = place_group(problem, EXACT)
    assert p.placed == 0 and (p.nodes == -1).all() and p.source is Source.INFEASIBLE
    assert place_greedy(problem).placed == 0
    some = make(free=[[2], [2]], req=[[2], [2], [2]], min_count=2)
    p = place_group(some, EXACT)
    assert p.placed == 2 and violations(some, p.nodes) == []


def test_more_members_placed_before_better_scores() -> None:
    # min_count 1: one member on the high-scoring node, or two members on the low-scoring one.
    problem = make(free=[[4], [2]], req=[[2], [2], [2]], score=[[0, 90]] * 3, alloc=[[4], [4]], min_count=1)
    p = place_group(problem, EXACT)
    assert p.placed == 3


def test_joint_fits_a_gang_that_greedy_cannot() -> None:
    # The small member goes first, takes the best node (the only one with room for the large member)
    # and the large member no longer fits anywhere: greedy places nothing; jointly both fit.
    problem = make(
        free=[[4000, 16], [1000, 4], [1000, 4]],
        alloc=[[8000, 32]] * 3,
        req=[[1000, 4], [4000, 16]],
        score=[[100, 50, 50], [100, 50, 50]],
    )
    g = place_greedy(problem)
    assert g.placed == 0
    p = place_group(problem)
    assert p.placed == 2 and p.from_solver
    assert p.nodes[1] == 0 and p.nodes[0] in (1, 2)
    assert violations(problem, p.nodes) == []


def test_greedy_follows_the_given_order() -> None:
    problem = make(free=[[4000, 16], [1000, 4]], req=[[1000, 4], [4000, 16]], score=[[100, 50]] * 2, order=[1, 0])
    assert greedy_assignment(problem).tolist() == [1, 0]


def test_budget_exhausted_falls_back_to_greedy() -> None:
    cluster = bench.make_cluster(300, seed=3)
    gang = bench.make_gangs(1, seed=3, sizes=(40, 40))[0]
    problem = bench.gang_input(gang, cluster, cluster.free)
    greedy = greedy_assignment(problem)
    assert (greedy >= 0).all()
    p = place_group(problem, PlacementOptions(time_budget=1e-9))
    assert p.source is Source.GREEDY and p.budget_exhausted
    assert p.nodes.tolist() == greedy.tolist()
    assert violations(problem, p.nodes) == []


def test_work_limit_is_a_deterministic_budget() -> None:
    cluster = bench.make_cluster(400, seed=5)
    gangs = bench.make_gangs(6, seed=5, sizes=(20, 64))
    free = cluster.free.copy()
    for gang in gangs:
        problem = bench.gang_input(gang, cluster, free)
        options = PlacementOptions(time_budget=None, work_limit=20)
        a, b = place_group(problem, options), place_group(problem, options)
        assert a.nodes.tolist() == b.nodes.tolist() and a.objective == b.objective and a.source == b.source
        placed = a.nodes >= 0
        np.subtract.at(free, a.nodes[placed], gang.req[placed])


def test_deterministic() -> None:
    cluster = bench.make_cluster(500, seed=11)
    gangs = bench.make_gangs(8, seed=11)
    runs = []
    for _ in range(2):
        free = cluster.free.copy()
        out = []
        for gang in gangs:
            p = place_group(bench.gang_input(gang, cluster, free), PlacementOptions(time_budget=5.0))
            out.append((p.nodes.tolist(), p.objective, p.source))
            placed = p.nodes >= 0
            np.subtract.at(free, p.nodes[placed], gang.req[placed])
        runs.append(out)
    assert runs[0] == runs[1]


def test_identical_members_form_one_class_with_the_same_optimum() -> None:
    rng = np.random.default_rng(4)
    n = 12
    free = rng.integers(0, 9, size=(n, 2)) * 1000
    alloc = free + rng.integers(0, 3, size=(n, 2)) * 1000
    score = np.tile(rng.integers(0, 100, size=n), (9, 1))
    score[6:] = rng.integers(0, 100, size=n)  # three members of a second shape
    req = np.array([[1000, 1000]] * 6 + [[2000, 3000]] * 3)
    problem = GroupInput.build(np.ones((9, n), dtype=bool), score, req, free, alloc)
    classes = group_members(problem)
    assert classes.rep.size == 2 and sorted(classes.count.tolist()) == [3, 6]
    grouped = place_group(problem, EXACT)
    single = place_group(problem, PlacementOptions(time_budget=None, top_k=0, group_identical=False))
    assert grouped.stats is not None and single.stats is not None
    assert grouped.stats.classes == 2 and single.stats.classes == 9
    assert grouped.stats.variables < single.stats.variables
    assert grouped.source is Source.OPTIMAL and single.source is Source.OPTIMAL
    assert (grouped.placed, grouped.objective) == (single.placed, single.objective)


def test_members_that_differ_are_not_grouped() -> None:
    problem = make(free=[[4], [4]], req=[[1], [1], [1], [2]], score=[[1, 2], [1, 2], [2, 1], [1, 2]],
                   feasible=[[True, True], [True, True], [True, True], [True, False]])
    classes = group_members(problem)
    assert classes.of_member.tolist() == [0, 0, 1, 2]
    with_conflict = make(free=[[4], [4]], req=[[1]] * 3, conflicts=((0, 1),))
    assert group_members(with_conflict).of_member.tolist() == [0, 0, 1]


def test_conflicting_members_never_share_a_node() -> None:
    # Four identical members that may not share a node (anti-affinity on the hostname), five nodes.
    problem = make(free=[[8]] * 5, req=[[1]] * 4, score=[[50, 40, 30, 20, 10]] * 4, conflicts=((0, 1, 2, 3),))
    p = place_group(problem, EXACT)
    assert p.placed == 4 and sorted(p.nodes.tolist()) == [0, 1, 2, 3]
    g = greedy_assignment(problem)
    assert sorted(g.tolist()) == [0, 1, 2, 3]
    too_few = make(free=[[8]] * 3, req=[[1]] * 4, conflicts=((0, 1, 2, 3),))
    assert place_group(too_few, EXACT).placed == 0


def test_slots_keep_room_for_the_next_large_member() -> None:
    # A 1-CPU member: node 0 has exactly one 4-CPU slot free, node 1 has a 3-CPU gap. With equal
    # scores the slot bonus sends it into the gap; without it, ties go to the lower index.
    problem = make(free=[[4000], [3000]], alloc=[[8000], [8000]], req=[[1000]], score=[[60, 60]])
    ref = Weights(slot_request=(4000,))
    p = place_group(problem, PlacementOptions(time_budget=None, weights=ref))
    assert p.nodes.tolist() == [1]
    assert place_group(problem, PlacementOptions(time_budget=None, weights=Weights(slot_bonus=0))).nodes.tolist() == [0]
    # A higher score than the slot is worth wins.
    better = make(free=[[4000], [3000]], alloc=[[8000], [8000]], req=[[1000]], score=[[200, 60]])
    assert place_group(better, PlacementOptions(time_budget=None, weights=ref)).nodes.tolist() == [0]


def test_empty_node_bonus_keeps_a_node_empty() -> None:
    problem = make(free=[[8], [4]], alloc=[[8], [8]], req=[[2], [2]], score=[[80, 50]] * 2)
    weights = Weights(slot_bonus=0, empty_node_bonus=100)
    p = place_group(problem, PlacementOptions(time_budget=None, weights=weights))
    assert p.nodes.tolist() == [1, 1]
    no_bonus = place_group(problem, PlacementOptions(time_budget=None, weights=Weights(slot_bonus=0)))
    assert no_bonus.nodes.tolist() == [0, 0]


def test_pruned_model_retried_over_every_node_when_infeasible() -> None:
    # Member 0 (1 CPU) goes first; its single best-scoring candidate is node 0, which the large member
    # needs. Node 1 is empty, so it is not among the best fits of partly used nodes either.
    problem = make(free=[[4], [1]], alloc=[[8], [1]], req=[[1], [4]], score=[[90, 10], [90, 0]])
    assert greedy_assignment(problem).tolist() == [-1, -1]
    p = place_group(problem, PlacementOptions(time_budget=None, top_k=1))
    assert p.nodes.tolist() == [1, 0]
    assert p.stats is not None and p.stats.candidates == 2
    # Under a time budget the retry widens the candidates (here to every node) once.
    assert place_group(problem, PlacementOptions(time_budget=5.0, top_k=1)).nodes.tolist() == [1, 0]
    # Proven infeasible over every feasible node.
    too_big = make(free=[[4], [1]], alloc=[[8], [1]], req=[[4], [4]], score=[[90, 10], [90, 0]])
    assert place_group(too_big, PlacementOptions(time_budget=5.0, top_k=1)).source is Source.INFEASIBLE


def test_model_size_is_bounded_by_pruning() -> None:
    sizes = {}
    for n in (1000, 5000):
        cluster = bench.make_cluster(n, seed=2)
        gang = bench.make_gangs(1, seed=2, sizes=(200, 200))[0]
        problem = bench.gang_input(gang, cluster, cluster.free)
        classes = group_members(problem)
        top_k = 64
        model = build_model(problem, classes, Weights(), top_k, greedy_assignment(problem, classes))
        bound = int(np.maximum(classes.count, top_k).sum()) + top_k * classes.rep.size + problem.members
        assert model.pair_class.size <= bound
        sizes[n] = model.variables
        full = build_model(problem, classes, Weights(), 0)
        assert not full.pruned and model.pruned
        assert full.pair_class.size > 3 * model.pair_class.size
    # Five times the nodes, not five times the model.
    assert sizes[5000] < 2 * sizes[1000]


def test_large_gang_on_5000_nodes() -> None:
    cluster = bench.make_cluster(5000, seed=9)
    gang = bench.make_gangs(1, seed=9, sizes=(300, 300))[0]
    problem = bench.gang_input(gang, cluster, cluster.free)
    p = place_group(problem, PlacementOptions(time_budget=2.0))
    assert p.placed == 300 and violations(problem, p.nodes) == []
    assert p.stats is not None and p.stats.classes <= 3 and p.stats.candidates < 1000


def test_nothing_feasible() -> None:
    problem = make(free=[[4], [4]], req=[[1], [1]], feasible=[[False, False], [True, False]])
    p = place_group(problem)
    assert p.placed == 0 and p.source is Source.INFEASIBLE
    assert place_group(make(free=[[4]], req=[[1]], feasible=[[False]], min_count=0)).placed == 0


def test_zero_requests_and_overcommitted_nodes() -> None:
    # A node already over its allocatable (free < 0) takes no member that requests that resource,
    # but a member requesting nothing of it still fits there.
    problem = make(free=[[-1000, 4], [2000, 4]], req=[[0, 1], [1000, 1]], score=[[90, 10], [90, 10]], alloc=[[4000, 8]] * 2)
    p = place_group(problem, EXACT)
    assert p.nodes.tolist() == [0, 1]
    assert violations(problem, p.nodes) == []


def test_empty_group() -> None:
    problem = GroupInput.build(np.ones((0, 1), dtype=bool), np.zeros((0, 1)), np.zeros((0, 1)), np.ones((1, 1)), np.ones((1, 1)))
    p = place_group(problem)
    assert p.placed == 0 and p.nodes.size == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"score": np.zeros((2, 3))}, "score must have shape"),
        ({"req": np.zeros((3, 1))}, "req must be"),
        ({"free": np.zeros((3, 1))}, "free and alloc"),
        ({"order": [0, 0]}, "twice"),
        ({"order": [5]}, "does not exist"),
        ({"min_count": 3}, "min_count"),
        ({"conflicts": [[0, 7]]}, "does not exist"),
    ],
)
def test_input_checked(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "feasible": np.ones((2, 2), dtype=bool),
        "score": np.zeros((2, 2)),
        "req": np.ones((2, 1)),
        "free": np.ones((2, 1)),
        "alloc": np.ones((2, 1)),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        GroupInput.build(**args)  # type: ignore[arg-type]


def test_solver_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    problem = make(free=[[4000, 16], [1000, 4]], alloc=[[8000, 32]] * 2, req=[[1000, 4], [4000, 16]], score=[[100, 50]] * 2)
    place_group(problem)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_the_greedy_assignment_is_a_solution_of_the_model() -> None:
    # Why the joint answer is never worse than greedy: the pruned program contains greedy's assignment.
    cluster = bench.make_cluster(600, seed=8)
    free = cluster.free.copy()
    for gang in bench.make_gangs(5, seed=8):
        problem = bench.gang_input(gang, cluster, free)
        classes = group_members(problem)
        greedy = greedy_assignment(problem, classes)
        model = build_model(problem, classes, Weights(empty_node_bonus=100), 16, greedy)
        x = model_point(problem, model, classes, greedy)
        row = np.zeros(model.constraints)
        np.add.at(row, model.rows, model.vals * x[model.cols])
        assert (row >= model.row_lb - 1e-9).all() and (row <= model.row_ub + 1e-9).all()
        assert (x >= 0).all() and (x <= model.ub + 1e-9).all()
        integral = ~model.continuous
        assert (x[integral] == np.rint(x[integral])).all()
        placed = greedy >= 0
        np.subtract.at(free, greedy[placed], gang.req[placed])


def test_crowding_spreads_a_class_the_snapshot_scores_would_pile_up() -> None:
    # Four identical members; node 0 scores 60 alone, node 1 50, each member on a node costs the
    # next one there 20 (LeastAllocated falls as a node fills). Without crowding all four go to
    # node 0; with it two and two (60 + 40 + 50 + 30 beats 60 + 40 + 20 + 0).
    base = dict(free=[[8, 8], [8, 8]], req=[[1, 1]] * 4, score=[[60, 50]] * 4)
    flat = place_group(make(**base), PlacementOptions(time_budget=None, top_k=0, weights=Weights(slot_bonus=0, balance_weight=0)))
    assert sorted(flat.nodes.tolist()) == [0, 0, 0, 0]
    problem = make(**base, crowding=[[20, 20]] * 4)
    for p in (place_group(problem, PlacementOptions(time_budget=None, top_k=0, weights=Weights(slot_bonus=0, balance_weight=0))),
              place_greedy(problem, Weights(slot_bonus=0, balance_weight=0))):
        assert sorted(p.nodes.tolist()) == [0, 0, 1, 1]
        assert p.objective == 60 + 40 + 50 + 30


def test_the_greedy_assignment_is_a_solution_of_the_model_with_crowding() -> None:
    problem = make(free=[[8, 8], [8, 8], [3, 3]], req=[[1, 1]] * 5, score=[[60, 50, 70]] * 5, crowding=[[10, 5, 30]] * 5)
    classes = group_members(problem)
    greedy = greedy_assignment(problem, classes)
    model = build_model(problem, classes, Weights(), 0, greedy)
    assert model.crowd_pair.size == 3
    x = model_point(problem, model, classes, greedy)
    row = np.zeros(model.constraints)
    np.add.at(row, model.rows, model.vals * x[model.cols])
    assert (row >= model.row_lb - 1e-9).all() and (row <= model.row_ub + 1e-9).all()
    assert (x >= 0).all() and (x <= model.ub + 1e-9).all()
