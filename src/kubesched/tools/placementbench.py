"""Joint placement against the per-pod order on a fragmented cluster.

    python -m kubesched.tools.placementbench [--nodes 2000] [--seeds 1] [--shape large|small] [--load 1.2] [--budget 0.1]

Builds a seeded cluster of nodes of a few sizes, some empty and the rest partly filled with small
pods in a random pattern, and a stream of gangs (4-64 members of 1-4 CPU each: a JobManager and
TaskManagers of one or two shapes) asking for `load` times the free CPU. Each gang is placed all or
nothing, one gang at a time, on its own copy of the cluster per method, free capacity updated after
every gang, three ways:

- per-pod: kube's own PodGroup cycle, member after member, each one's scores computed afresh with the
  members before it assumed;
- greedy: `place_greedy`, the same order on the scores computed once for the group (the fallback);
- joint: `place_group`.

Scores are the default profile's resource scores (NodeResourcesFit LeastAllocated and
NodeResourcesBalancedAllocation, weight 1 each, cpu and memory), computed on the cluster as it is
when the gang arrives, as the group cycle computes them on its snapshot, with each member's
crowding (how far its score falls with one more like it on the node) as jointplan measures it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from kubesched.plugins.placement.joint import JointAssignment, PlacementOptions, Source, place_greedy, place_group
from kubesched.plugins.placement.model import GroupInput, Weights

GI = 1 << 30
NODE_SHARE = (0.25, 0.35, 0.25, 0.15)


@dataclass(frozen=True)
class Shape:
    """nodes: (CPU cores, memory GiB) of the node sizes (their shares: NODE_SHARE); gib_per_cpu: the
    TaskManager shapes' memory per CPU core, one drawn per shape."""

    nodes: tuple[tuple[int, int], ...]
    gib_per_cpu: tuple[int, ...]


SHAPES = {
    # Large nodes, memory-heavy members (memory is what runs out first).
    "large": Shape(nodes=((8, 32), (16, 64), (32, 128), (64, 256)), gib_per_cpu=(2, 4, 8)),
    # Small nodes, members of the nodes' own CPU:memory ratio or less (a 4-CPU member needs a whole small node).
    "small": Shape(nodes=((4, 16), (8, 32), (16, 64), (32, 128)), gib_per_cpu=(2, 4)),
}
MAX_PODS = 110


@dataclass(frozen=True)
class Cluster:
    alloc: NDArray[np.int64]  # [N, 3]: cpu millicores, memory bytes, pods
    free: NDArray[np.int64]
    usable: NDArray[np.bool_]  # [N] nodes the gangs may use (the rest are tainted)


@dataclass(frozen=True)
class Gang:
    req: NDArray[np.int64]  # [M, 3]


def make_cluster(
    nodes: int, seed: int, shape: str = "large", empty_share: float = 0.15, fill: tuple[float, float] = (0.2, 0.85)
) -> Cluster:
    """`nodes` nodes; `empty_share` of them empty, the rest filled to a random share of CPU in `fill` with
    pods of 100m-2 CPU and 1-8 GiB per CPU; 3% are tainted (no gang member tolerates them)."""
    rng = np.random.default_rng(seed)
    sizes = SHAPES[shape].nodes
    kind = rng.choice(len(sizes), size=nodes, p=NODE_SHARE)
    cores = np.array([s[0] for s in sizes], dtype=np.int64)[kind]
    mem = np.array([s[1] for s in sizes], dtype=np.int64)[kind]
    alloc = np.column_stack([cores * 1000, mem * GI, np.full(nodes, MAX_PODS, dtype=np.int64)])
    used = np.zeros_like(alloc)
    target = rng.uniform(fill[0], fill[1], size=nodes)
    target[rng.random(nodes) < empty_share] = 0.0
    # Small pods, added in rounds to every node still under its target (vectorized over nodes).
    while True:
        under = used[:, 0] < target * alloc[:, 0]
        if not under.any():
            break
        k = int(under.sum())
        cpu = rng.choice(np.array([100, 250, 500, 1000, 2000]), size=k, p=[0.25, 0.3, 0.25, 0.15, 0.05])
        memory = (cpu * rng.choice(np.array([1, 2, 4, 8]), size=k) * (GI // 1000)).astype(np.int64)
        pod = np.column_stack([cpu, memory, np.ones(k, dtype=np.int64)])
        room = (used[under] + pod <= alloc[under]).all(axis=1)
        idx = np.flatnonzero(under)
        used[idx[room]] += pod[room]
        # A node where the pod did not fit stops here (its target is met as far as it can be).
        target[idx[~room]] = 0.0
    usable = rng.random(nodes) >= 0.03
    return Cluster(alloc=alloc, free=alloc - used, usable=usable)


def make_gangs(count: int, seed: int, sizes: tuple[int, int] = (4, 64), shape: str = "large") -> list[Gang]:
    """Gangs of sizes[0]..sizes[1] members (log-uniform): one JobManager (1-2 CPU, 4 GiB per CPU) and
    TaskManagers of one or two shapes (1-4 CPU each)."""
    gib = SHAPES[shape].gib_per_cpu
    rng = np.random.default_rng(seed + 7919)
    gangs = []
    for _ in range(count):
        m = int(np.exp(rng.uniform(np.log(sizes[0]), np.log(sizes[1] + 1))))
        m = max(sizes[0], min(sizes[1], m))
        shapes = [(int(rng.integers(1, 5)), int(rng.choice(gib))) for _ in range(int(rng.integers(1, 3)))]
        jm = (int(rng.integers(1, 3)), 4)
        rows = [jm] + [shapes[int(rng.integers(0, len(shapes)))] for _ in range(m - 1)]
        req = np.array([[c * 1000, c * g * GI, 1] for c, g in rows], dtype=np.int64)
        gangs.append(Gang(req=req))
    return gangs


def default_scores(req: NDArray[np.int64], free: NDArray[np.int64], alloc: NDArray[np.int64]) -> NDArray[np.int64]:
    """[M, N] LeastAllocated + BalancedAllocation (cpu and memory, weight 1 each) as kube computes them with the pod on the node."""
    a = alloc[None, :, :2].astype(np.float64)
    after = (alloc[None, :, :2] - free[None, :, :2] + req[:, None, :2]).astype(np.float64)
    least = np.clip((a - after) * 100 / a, 0, 100).mean(axis=2)
    frac = np.clip(after / a, 0, 1)
    balanced = (1 - np.abs(frac[..., 0] - frac[..., 1]) / 2) * 100
    total: NDArray[np.int64] = least.astype(np.int64) + balanced.astype(np.int64)
    return total


def gang_input(gang: Gang, cluster: Cluster, free: NDArray[np.int64], crowding: bool = True) -> GroupInput:
    """The group cycle's input for `gang` on the cluster with `free` left: fit and taint filters, default scores."""
    fits = (gang.req[:, None, :] <= np.maximum(free, 0)[None, :, :]).all(axis=2)
    feasible = fits & cluster.usable[None, :]
    score = default_scores(gang.req, free, cluster.alloc)
    # How far each member's score falls with one more like it on the node, as jointplan measures it.
    # (its score with itself on the node twice: one copy already there).
    fall = np.maximum(score - default_scores(2 * gang.req, free, cluster.alloc), 0) if crowding else None
    return GroupInput.build(feasible, score, gang.req, free, cluster.alloc, crowding=fall)


@dataclass
class Run:
    name: str
    gangs_placed: int = 0
    members_placed: int = 0
    times: list[float] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)

    def add(self, p: JointAssignment) -> None:
        self.times.append(p.elapsed)
        self.sources[p.source.value] = self.sources.get(p.source.value, 0) + 1
        if p.placed:
            self.gangs_placed += 1
            self.members_placed += p.placed


def per_pod(gang: Gang, cluster: Cluster, free: NDArray[np.int64]) -> JointAssignment:
    """kube's own per-pod cycle for the members in turn: each member's scores computed afresh with
    the members before it assumed (so LeastAllocated spreads them), all or nothing."""
    t0 = time.perf_counter()
    free = free.copy()
    m = gang.req.shape[0]
    nodes = np.full(m, -1, dtype=np.intp)
    for i in range(m):
        req = gang.req[i : i + 1]
        ok = (req <= np.maximum(free, 0)).all(axis=1) & cluster.usable
        if not ok.any():
            nodes[:] = -1
            break
        score = np.where(ok, default_scores(req, free, cluster.alloc)[0], -1)
        j = int(np.argmax(score))
        nodes[i] = j
        free[j] -= gang.req[i]
    placed = int((nodes >= 0).sum())
    return JointAssignment(nodes, Source.GREEDY if placed else Source.INFEASIBLE, placed, 0, time.perf_counter() - t0, placed, 0)


def run_stream(cluster: Cluster, gangs: list[Gang], how: str, options: PlacementOptions, crowding: bool = True
               ) -> tuple[Run, NDArray[np.int64], list[JointAssignment]]:
    """The gangs placed one at a time, each all or nothing: `how` is per-pod, greedy or joint."""
    free = cluster.free.copy()
    run = Run(how)
    placements: list[JointAssignment] = []
    for gang in gangs:
        if how == "per-pod":
            p = per_pod(gang, cluster, free)
        else:
            problem = gang_input(gang, cluster, free, crowding)
            p = place_group(problem, options) if how == "joint" else place_greedy(problem, options.weights)
        run.add(p)
        placements.append(p)
        placed = p.nodes >= 0
        np.subtract.at(free, p.nodes[placed], gang.req[placed])
        if (free < 0).any():
            raise AssertionError("a placement overcommitted a node")
    return run, free, placements


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else 0.0


def stream_for(nodes: int, seed: int, shape: str, load: float) -> tuple[Cluster, list[Gang]]:
    """The cluster and a stream of gangs asking for `load` times its free CPU."""
    cluster = make_cluster(nodes, seed, shape)
    free_cpu = float(np.maximum(cluster.free[:, 0], 0).sum())
    per_gang = float(np.mean([g.req[:, 0].sum() for g in make_gangs(200, seed, shape=shape)]))
    return cluster, make_gangs(int(load * free_cpu / per_gang) + 1, seed, shape=shape)


HOW = ("per-pod", "greedy", "joint")


def report(nodes: int, seeds: list[int], shape: str, load: float, options: PlacementOptions, crowding: bool = True
           ) -> dict[str, object]:
    """Each seed's stream placed three ways; counts summed over the seeds, times pooled."""
    totals: dict[str, dict[str, int]] = {h: {"gangs_placed": 0, "members_placed": 0, "empty_nodes_after": 0} for h in HOW}
    times: dict[str, list[float]] = {h: [] for h in HOW}
    sources: dict[str, dict[str, int]] = {h: {} for h in HOW}
    fallback = {h: 0 for h in HOW}
    exhausted = {h: 0 for h in HOW}
    gangs = empty0 = free_cpu = demand = 0
    for seed in seeds:
        cluster, stream = stream_for(nodes, seed, shape, load)
        gangs += len(stream)
        empty0 += int((cluster.free == cluster.alloc).all(axis=1).sum())
        free_cpu += int(np.maximum(cluster.free[:, 0], 0).sum() // 1000)
        demand += int(sum(int(g.req[:, 0].sum()) for g in stream)) // 1000
        for how in HOW:
            run, free, placements = run_stream(cluster, stream, how, options, crowding)
            t = totals[how]
            t["gangs_placed"] += run.gangs_placed
            t["members_placed"] += run.members_placed
            t["empty_nodes_after"] += int((free == cluster.alloc).all(axis=1).sum())
            times[how] += run.times
            for k, v in run.sources.items():
                sources[how][k] = sources[how].get(k, 0) + v
            exhausted[how] += sum(1 for p in placements if p.budget_exhausted)
            fallback[how] += sum(1 for p in placements if p.budget_exhausted and p.source is Source.GREEDY)
    out: dict[str, object] = {
        "nodes": nodes,
        "shape": shape,
        "seeds": seeds,
        "load": load,
        "gangs": gangs,
        "budget_ms": None if options.time_budget is None else options.time_budget * 1000,
        "top_k": options.top_k,
        "weights": {
            "slot_bonus": options.weights.slot_bonus,
            "balance_weight": options.weights.balance_weight,
            "empty_node_bonus": options.weights.empty_node_bonus,
        },
        "empty_nodes_before": empty0,
        "free_cpu_cores": free_cpu,
        "demand_cpu_cores": demand,
    }
    for how in HOW:
        out[how] = {
            **totals[how],
            "time_p50_ms": round(_pct(times[how], 50) * 1000, 2),
            "time_p99_ms": round(_pct(times[how], 99) * 1000, 2),
            "time_max_ms": round(max(times[how]) * 1000, 2),
            "sources": sources[how],
            "budget_exhausted": exhausted[how],
            "budget_fallback": fallback[how],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kubesched.tools.placementbench", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=1, help="streams to run (seeds 1..N); counts are summed")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="large")
    ap.add_argument("--load", type=float, default=1.2, help="the stream asks for this many times the cluster's free CPU")
    ap.add_argument("--budget", type=float, default=PlacementOptions().time_budget, help="time budget per gang, seconds")
    ap.add_argument("--top-k", type=int, default=PlacementOptions().top_k)
    ap.add_argument("--slot-bonus", type=int, default=Weights().slot_bonus)
    ap.add_argument("--balance-weight", type=int, default=Weights().balance_weight)
    ap.add_argument("--empty-node-bonus", type=int, default=Weights().empty_node_bonus)
    ap.add_argument("--no-crowding", action="store_true", help="scores of the snapshot alone (JointPlacement crowding: false)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    weights = Weights(slot_bonus=args.slot_bonus, balance_weight=args.balance_weight, empty_node_bonus=args.empty_node_bonus)
    options = PlacementOptions(time_budget=args.budget, top_k=args.top_k, weights=weights)
    res = report(args.nodes, list(range(1, args.seeds + 1)), args.shape, args.load, options, not args.no_crowding)
    if args.json:
        json.dump(res, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"{res['nodes']} {res['shape']} nodes x {args.seeds} seed(s) ({res['empty_nodes_before']} empty, "
        f"{res['free_cpu_cores']} free cores), {res['gangs']} gangs asking for {res['demand_cpu_cores']} cores; "
        f"budget {res['budget_ms']} ms, top-k {res['top_k']}, weights {res['weights']}"
    )
    print(f"{'':8} {'gangs':>6} {'members':>8} {'empty':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'fallback':>8}  sources")
    for name in HOW:
        r = res[name]
        assert isinstance(r, dict)
        print(
            f"{name:8} {r['gangs_placed']:>6} {r['members_placed']:>8} {r['empty_nodes_after']:>6} "
            f"{r['time_p50_ms']:>8} {r['time_p99_ms']:>8} {r['time_max_ms']:>8} {r['budget_fallback']:>8}  {r['sources']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
