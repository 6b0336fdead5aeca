"""Joint placement of a pod group: every member's node chosen together, under a time budget.

`place_group` is what the group cycle calls. It

1. groups interchangeable members into classes (`model.group_members`),
2. runs the greedy baseline (`place_greedy`: the per-pod order kube uses), which is the fallback,
3. builds a small integer program over each class's best candidate nodes (`model.build_model`, which
   always includes the nodes the greedy result used, so the program has the greedy result as a
   solution) and hands it to the MILP solver (HiGHS, `kubesched.plugins.placement.highs`) with what is left
   of the time budget,
4. keeps the solver's answer if it places more members, or as many with a better objective, than
   greedy; otherwise, or when the budget ran out before the solver had anything better, the greedy
   result.

The objective, compared lexicographically: the number of members placed, then the sum of the
profile's scores of the placed members, less their crowding (how a node's score falls as members of
a class pile onto it: GroupInput.crowding), plus the fragmentation terms of `Weights`.

What the model cannot see. Only per-node capacity (sum of requests <= free, per resource) and the
`conflicts` groups (at most one member of a group per node) tie members together. Every other
inter-member constraint (pod affinity or anti-affinity among members on other topology keys,
topology spread, volume limits, DRA) is the caller's: it re-validates the assignment by assuming
the members one by one on its snapshot and running the real filters for each, and if a member then
fails it places the group with the greedy order instead (`place_greedy`, or its own per-pod loop).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from kubesched.plugins.placement.highs import solve as solve_model
from kubesched.plugins.placement.model import (
    BALANCE_POINTS,
    CPU,
    MEMORY,
    Classes,
    FloatArray,
    GroupInput,
    IntArray,
    Model,
    Weights,
    build_model,
    capacity_counts,
    group_members,
    slot_request,
    slots,
    tie_rank,
)

# Objective values closer than this are equal (the balance term is a float).
TOLERANCE = 1e-6
# How much wider the candidates are when the pruned program is infeasible.
RETRY_WIDER = 4


class Source(enum.Enum):
    """Where a placement came from."""

    OPTIMAL = "optimal"  # the solver proved it optimal (over the pruned candidates)
    FEASIBLE = "feasible"  # the solver's best within the budget, better than greedy, not proven optimal
    GREEDY = "greedy"  # the greedy order: the budget ran out, or the solver found nothing better
    INFEASIBLE = "infeasible"  # nothing placed: proven that no assignment places min_count members


@dataclass(frozen=True)
class PlacementOptions:
    """time_budget: wall-clock seconds for the whole call (model, solver, checks); None: no wall-clock limit.
    work_limit: the solver's branch-and-bound node limit, a budget that does not depend on the machine's
        speed; the simulator sets it (and time_budget=None) so that its runs are reproducible. It does not
        bound the work at the root node (presolve, the first LP, heuristics).
    top_k: candidate nodes per class by score (and as many best fits among partly used nodes); <= 0 keeps all.
    group_identical: members with equal requests, feasibility, scores and conflicts share one class
        (one integer count per node instead of one variable per member and node).
    seed: the solver's, and which of tied nodes wins (model.tie_rank): 0, the lower index.
    """

    time_budget: float | None = 0.1
    work_limit: int | None = None
    top_k: int = 64
    weights: Weights = field(default_factory=Weights)
    seed: int = 0
    group_identical: bool = True


@dataclass(frozen=True)
class ModelStats:
    classes: int
    candidates: int  # distinct candidate nodes
    variables: int
    constraints: int


@dataclass(frozen=True)
class JointAssignment:
    """Which node each member of a group was given by one call, and who chose (the solver or the
    greedy order). nodes[m]: the node index of member m, or -1 (not placed; all -1 when fewer than
    min_count fit)."""

    nodes: NDArray[np.intp]
    source: Source
    placed: int
    objective: float  # profile scores + fragmentation terms of the placed members (`evaluate`; not counting `placed`)
    elapsed: float  # seconds, the whole call
    greedy_placed: int
    greedy_objective: float
    budget_exhausted: bool = False  # the solver stopped on the time budget or work limit
    stats: ModelStats | None = None

    @property
    def from_solver(self) -> bool:
        return self.source in (Source.OPTIMAL, Source.FEASIBLE)


def greedy_assignment(problem: GroupInput, classes: Classes | None = None, rank: IntArray | None = None) -> NDArray[np.intp]:
    """[M] the greedy order's node for each member (-1: not placed; all -1 if fewer than min_count fit).

    Each member in turn (problem.order) takes its best-scoring feasible node among those with room left
    for its requests (and holding no member of a conflict group it is in), its score there less its
    crowding for each member of its class already there; ties go to the node of higher `rank`
    (model.tie_rank: the lower index by default).
    Work per member is one argmax over N; after each placement only the chosen node's column is
    re-evaluated, so no Python loop runs over nodes.
    """
    if classes is None:
        classes = group_members(problem)
    m = problem.members
    out = np.full(m, -1, dtype=np.intp)
    if m == 0 or problem.nodes == 0:
        return out
    c_req = problem.req[classes.rep]
    free = np.maximum(problem.free, 0)
    caps = capacity_counts(c_req, free)
    c_feas = problem.feasible[classes.rep]
    c_score = problem.score[classes.rep].copy()
    c_groups: list[list[int]] = [[] for _ in range(classes.rep.size)]
    group_classes: list[NDArray[np.intp]] = []
    for gi, g in enumerate(problem.conflicts):
        cs = np.unique(classes.of_member[list(g)]).astype(np.intp)
        group_classes.append(cs)
        for c in cs.tolist():
            c_groups[c].append(gi)
    lowest = np.iinfo(np.int64).min
    c_crowd = problem.crowding[classes.rep] if problem.crowding is not None else None
    masked: IntArray = np.where(c_feas & (caps > 0), c_score, lowest)
    placed = 0
    for i in problem.order.tolist():
        c = int(classes.of_member[i])
        row = masked[c]
        j = int(np.argmax(row))
        if row[j] == lowest:
            continue
        if rank is not None:
            tied = np.flatnonzero(row == row[j])
            j = int(tied[np.argmax(rank[tied])])
        out[i] = j
        placed += 1
        free[j] -= problem.req[i]
        room = capacity_counts(c_req, free[j : j + 1])[:, 0] > 0
        if c_crowd is not None:
            c_score[c, j] -= c_crowd[c, j]  # the next member of the class there scores this much less
        masked[:, j] = np.where(c_feas[:, j] & room & (masked[:, j] != lowest), c_score[:, j], lowest)
        for gi in c_groups[c]:
            masked[group_classes[gi], j] = lowest
    if placed < problem.min_count:
        out[:] = -1
    return out


def evaluate(problem: GroupInput, nodes: NDArray[np.intp], weights: Weights, classes: Classes | None = None) -> float:
    """The objective of an assignment, as the solver maximizes it once the count is fixed: the placed
    members' scores less their crowding, minus the slots it breaks, the imbalance it adds and the empty
    nodes it starts using, on the nodes it uses (see Weights)."""
    placed = np.flatnonzero(nodes >= 0)
    if placed.size == 0:
        return 0.0
    j = nodes[placed]
    total = float(problem.score[placed, j].sum())
    if problem.crowding is not None:
        total -= float(crowding_cost(problem, nodes, classes or group_members(problem)))
    used = np.unique(j)
    before = np.maximum(problem.free[used], 0)
    after = before.copy()
    np.subtract.at(after, np.searchsorted(used, j), problem.req[placed])
    if weights.empty_node_bonus:
        empty = ~(problem.free[used] != problem.alloc[used]).any(axis=1)
        total -= weights.empty_node_bonus * int(empty.sum())
    if weights.slot_bonus:
        ref = slot_request(problem, weights)
        total -= weights.slot_bonus * int((slots(ref, before) - slots(ref, after)).sum())
    if weights.balance_weight and problem.req.shape[1] > MEMORY:
        total -= weights.balance_weight * BALANCE_POINTS * float((imbalance(problem, used, after) - imbalance(problem, used, before)).sum())
    return total


def crowding_cost(problem: GroupInput, nodes: NDArray[np.intp], classes: Classes) -> int:
    """Sum over (class, node) of crowding * k * (k - 1) / 2 for the k members of the class placed there."""
    if problem.crowding is None:
        return 0
    placed = np.flatnonzero(nodes >= 0)
    pairs, k = np.unique(np.stack([classes.of_member[placed], nodes[placed]]), axis=1, return_counts=True)
    d = problem.crowding[classes.rep[pairs[0]], pairs[1]]
    return int((d * k * (k - 1) // 2).sum())


def imbalance(problem: GroupInput, nodes: NDArray[np.intp], free: IntArray) -> FloatArray:
    """|CPU share used - memory share used| of `nodes` when they have `free` left."""
    alloc = np.maximum(problem.alloc[nodes][:, [CPU, MEMORY]], 1).astype(np.float64)
    share = (problem.alloc[nodes][:, [CPU, MEMORY]] - free[:, [CPU, MEMORY]]) / alloc
    return np.abs(share[:, 0] - share[:, 1])


def violations(problem: GroupInput, nodes: NDArray[np.intp]) -> list[str]:
    """What is wrong with an assignment, if anything: infeasible nodes, overcommitted capacity, conflicts, min_count."""
    out: list[str] = []
    placed = np.flatnonzero(nodes >= 0)
    if placed.size and (nodes[placed] >= problem.nodes).any():
        return ["a member is placed on a node that does not exist"]
    if placed.size and not problem.feasible[placed, nodes[placed]].all():
        out.append("a member is placed on a node where it is not feasible")
    if 0 < placed.size < problem.min_count:
        out.append(f"{placed.size} members placed, fewer than min_count {problem.min_count}")
    if problem.min_count > 0 and placed.size == 0:
        pass
    used = np.zeros_like(problem.free)
    np.add.at(used, nodes[placed], problem.req[placed])
    over = (used > np.maximum(problem.free, 0)) & (used > 0)
    if over.any():
        out.append(f"capacity exceeded on nodes {sorted(set(np.nonzero(over)[0].tolist()))[:10]}")
    for g in problem.conflicts:
        on = nodes[list(g)]
        on = on[on >= 0]
        if np.unique(on).size != on.size:
            out.append(f"conflict group {g} shares a node")
    return out


def place_greedy(problem: GroupInput, weights: Weights | None = None) -> JointAssignment:
    """The greedy baseline as a JointAssignment (for comparison, and what place_group falls back to)."""
    t0 = time.perf_counter()
    weights = weights or Weights()
    nodes = greedy_assignment(problem)
    placed = int((nodes >= 0).sum())
    obj = evaluate(problem, nodes, weights)
    source = Source.GREEDY if placed or problem.min_count == 0 else Source.INFEASIBLE
    return JointAssignment(nodes, source, placed, obj, time.perf_counter() - t0, placed, obj)


def place_group(problem: GroupInput, options: PlacementOptions | None = None) -> JointAssignment:
    """Place the group jointly (see the module doc); never worse than the greedy order on the objective.

    The candidates are pruned to each class's top_k (see `model.candidate_mask`). When the pruned
    program is proven infeasible and pruning dropped a node, it is solved once more with RETRY_WIDER
    times the candidates if at least half the budget is left (without a time budget: over every
    feasible node, so the answer is exact); Source.INFEASIBLE means proven over every feasible node.
    """
    options = options or PlacementOptions()
    t0 = time.perf_counter()
    weights = options.weights
    classes = group_members(problem, options.group_identical)
    rank = tie_rank(problem.nodes, options.seed)
    g_nodes = greedy_assignment(problem, classes, rank)
    g_placed = int((g_nodes >= 0).sum())
    merged = classes if options.group_identical else group_members(problem)  # crowding is by identical members
    g_obj = evaluate(problem, g_nodes, weights, merged)

    def finish(nodes: NDArray[np.intp], source: Source, obj: float, exhausted: bool, stats: ModelStats | None) -> JointAssignment:
        placed = int((nodes >= 0).sum())
        return JointAssignment(nodes, source, placed, obj, time.perf_counter() - t0, g_placed, g_obj, exhausted, stats)

    def remaining() -> float | None:
        return None if options.time_budget is None else options.time_budget - (time.perf_counter() - t0)

    if problem.members == 0:
        return finish(g_nodes, Source.OPTIMAL, 0, False, None)
    top_k = options.top_k
    while True:
        model = build_model(problem, classes, weights, top_k, g_nodes, rank)
        stats = ModelStats(int(classes.rep.size), model.candidates, model.variables, model.constraints)
        if model.variables == 0:
            # No member has a feasible node with room for it.
            return finish(g_nodes, Source.INFEASIBLE if problem.min_count > 0 else Source.OPTIMAL, 0, False, stats)
        left = remaining()
        if left is not None and left <= 0:
            return finish(g_nodes, Source.GREEDY, g_obj, True, stats)
        # No starting solution: HiGHS 1.16 given the greedy one as a start declared it optimal on a
        # 3-member instance whose optimum is better (found by the brute-force property test).
        res = solve_model(model, left, options.work_limit, None, options.seed)
        if res.counts is not None:
            nodes = _assign(model, classes, res.counts, problem.members)
            if violations(problem, nodes):  # never trust a solver's answer blindly
                return finish(g_nodes, Source.GREEDY, g_obj, res.limit_reached, stats)
            placed = int((nodes >= 0).sum())
            obj = evaluate(problem, nodes, weights, merged)
            if placed > g_placed or (placed == g_placed and (obj > g_obj + TOLERANCE or (res.optimal and obj >= g_obj - TOLERANCE))):
                return finish(nodes, Source.OPTIMAL if res.optimal else Source.FEASIBLE, obj, res.limit_reached, stats)
            return finish(g_nodes, Source.GREEDY, g_obj, res.limit_reached, stats)
        if not res.infeasible or g_placed:
            return finish(g_nodes, Source.GREEDY, g_obj, res.limit_reached, stats)
        if not model.pruned:
            return finish(g_nodes, Source.INFEASIBLE, 0, False, stats)
        # Proven only over the pruned candidates: widen them once, if there is time for a larger program.
        if options.time_budget is None:
            top_k = 0
            continue
        left = remaining()
        if top_k == options.top_k and left is not None and left > options.time_budget / 2:
            top_k *= RETRY_WIDER
            continue
        return finish(g_nodes, Source.GREEDY, g_obj, False, stats)


def model_point(problem: GroupInput, model: Model, classes: Classes, nodes: NDArray[np.intp]) -> FloatArray:
    """An assignment (such as greedy's) as values of the model's variables, e.g. to check it is a solution."""
    hint = np.zeros(model.variables, dtype=np.float64)
    placed = np.flatnonzero(nodes >= 0)
    key = model.pair_class.astype(np.int64) * (1 << 32) + model.pair_node
    order = np.argsort(key)
    mkey = classes.of_member[placed].astype(np.int64) * (1 << 32) + nodes[placed]
    pos = order[np.searchsorted(key, mkey, sorter=order)]
    np.add.at(hint, pos, 1.0)
    p, o, s, b = model.pair_class.size, model.open_node.size, model.slot_node.size, model.balance_node.size
    if o:
        hint[p : p + o] = np.isin(model.open_node, nodes[placed])
    # Free capacity of every candidate node after the greedy assignment.
    cand = np.unique(model.pair_node)
    after = np.maximum(problem.free[cand], 0)
    np.subtract.at(after, np.searchsorted(cand, nodes[placed]), problem.req[placed])
    if s:
        hint[p + o : p + o + s] = slots(model.slot_request, after[np.searchsorted(cand, model.slot_node)])
    if b:
        hint[p + o + s : p + o + s + b] = imbalance(problem, model.balance_node, after[np.searchsorted(cand, model.balance_node)])
    if model.crowd_pair.size:
        k = hint[model.crowd_pair]
        d = problem.crowding[classes.rep[model.pair_class[model.crowd_pair]], model.pair_node[model.crowd_pair]] \
            if problem.crowding is not None else np.zeros(k.size)
        hint[p + o + s + b :] = d * k * (k - 1) / 2
    return hint


def _assign(model: Model, classes: Classes, counts: IntArray, members: int) -> NDArray[np.intp]:
    """Hand each class's members (in greedy order) to its pairs' nodes (in node order) per the counts."""
    out = np.full(members, -1, dtype=np.intp)
    counts = np.rint(counts).astype(np.int64)
    use = np.flatnonzero(counts > 0)
    order = use[np.lexsort((model.pair_node[use], model.pair_class[use]))]
    for c in np.unique(model.pair_class[order]).tolist():
        sel = order[model.pair_class[order] == c]
        targets = np.repeat(model.pair_node[sel], counts[sel])
        ms = classes.members[c][: targets.size]
        out[ms] = targets[: ms.size]
    return out
