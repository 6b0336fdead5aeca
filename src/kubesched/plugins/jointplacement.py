"""JointPlacement: a pod group's members placed together, as an assignment problem, instead of
greedily one after another (kubesched's own; enable it in a profile's multiPoint).

For a group the cycle is about to place, each member's Filter and Score results on the snapshot
(each member alone) become an integer program over the members' best candidate nodes: every
member on a node where it passes, per node no more requested than is free, at least minCount
placed or none, maximizing the profile's own scores (less how far each falls as members like it
fill a node: jointplan's crowding) plus fragmentation terms that keep whole nodes and large gaps
for the next large group (kubesched.plugins.placement; HiGHS under a time budget,
the greedy per-pod order when the budget runs out or the program finds nothing better). The
group cycle then places each member on its node with every Filter run as usual, and falls back
to the per-pod order if any does not pass (what the program cannot see: pod affinity among the
members, topology spread, ports).

With `bursts: true` the same is done for pods without a PodGroup that arrive together: identical
pending pods of one owner (queue.bursts), as many placed as fit (burstcycle). `burstWindow` lets a
new pod of an owner wait that long for its siblings, so a burst created over a few seconds is
planned as one; 0 (the default) plans only what is already queued together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kubesched.api.durations import Seconds
from kubesched.api.podinfo import PodInfo
from kubesched.framework.handle import Handle
from kubesched.framework.interface import GroupAssignPlugin, Plugin
from kubesched.framework.types import BurstSettings
from kubesched.plugins.placement.joint import PlacementOptions, place_group
from kubesched.plugins.placement.model import GroupInput, Weights

NAME = "JointPlacement"


class JointPlacementArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    # Wall-clock seconds for one group (model, solver, checks); 0: no limit.
    time_budget: Seconds = Field(0.1, alias="timeBudget")
    # The solver's branch-and-bound node limit, independent of the machine's speed: set it (and
    # timeBudget 0) for runs that must repeat exactly, as simulations; 0: none.
    work_limit: int = Field(0, alias="workLimit", ge=0, le=10_000_000)
    # Candidate nodes per kind of member, by score (0: all feasible nodes).
    top_k: int = Field(64, alias="topK", ge=0, le=100_000)
    # Fragmentation, in the profile's score points (kubesched.plugins.placement.model.Weights).
    slot_bonus: int = Field(50, alias="slotBonus", ge=0, le=10_000)
    balance_weight: int = Field(2, alias="balanceWeight", ge=0, le=100)
    empty_node_bonus: int = Field(0, alias="emptyNodeBonus", ge=0, le=100_000)
    # Each member's score on a node falls for every member like it already there, as measured by
    # jointplan (the per-pod cycle's re-scoring); false: the snapshot's scores alone.
    crowding: bool = True
    # Larger groups are placed one pod at a time (each member's Filter and Score run for the program);
    # bursts are cut to this many pods.
    max_members: int = Field(256, alias="maxMembers", ge=1, le=10_000)
    # Identical pending pods of one owner placed jointly too (burstcycle).
    bursts: bool = False
    # How long a new pod of a burst waits for its siblings; 0: only pods already queued together.
    burst_window: Seconds = Field(0.0, alias="burstWindow", le=60.0)


class JointPlacement(Plugin, GroupAssignPlugin):
    name: ClassVar[str] = NAME
    Args = JointPlacementArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, Mapping):
            args = JointPlacementArgs.model_validate(args)
        super().__init__(args or JointPlacementArgs(), handle)
        a: JointPlacementArgs = self.args
        self.options = PlacementOptions(
            time_budget=a.time_budget or None,
            work_limit=a.work_limit or None,
            top_k=a.top_k,
            weights=Weights(slot_bonus=a.slot_bonus, balance_weight=a.balance_weight, empty_node_bonus=a.empty_node_bonus),
        )
        self.last_source = ""  # optimal, feasible, greedy or infeasible: for tests and explanations
        # A seed per call: nodes that tie take turns, as kube breaks ties at random (repeatably).
        self.rng = np.random.default_rng(0)
        self.bursts = BurstSettings(a.burst_window, a.max_members) if a.bursts else None

    def burst_settings(self) -> BurstSettings | None:
        return self.bursts

    def assign_group(self, group: Any, members: Sequence[PodInfo], feasible: np.ndarray, scores: np.ndarray,
                     requests: np.ndarray, free: np.ndarray, allocatable: np.ndarray, min_count: int,
                     crowding: np.ndarray | None = None) -> np.ndarray | None:
        if len(members) > self.args.max_members:
            return None
        problem = GroupInput.build(feasible, scores, requests, free, allocatable, min_count=min(min_count, len(members)),
                                   crowding=crowding if self.args.crowding else None)
        placement = place_group(problem, dataclasses.replace(self.options, seed=int(self.rng.integers(1, 2**31))))
        self.last_source = placement.source.value
        return placement.nodes
