"""Joint placement of a pod group: all members' nodes chosen together by a MILP solver (HiGHS)
under a time budget, with the greedy per-pod order as the fallback. See `joint.place_group`."""

from kubesched.plugins.placement.joint import JointAssignment, PlacementOptions, Source, place_greedy, place_group
from kubesched.plugins.placement.model import GroupInput, Weights

__all__ = ["GroupInput", "JointAssignment", "PlacementOptions", "Source", "Weights", "place_greedy", "place_group"]
