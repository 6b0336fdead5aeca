"""PodGroupPodsCount: among the placements a PodGroup fits on, prefer the one that places the most
of its pods (kube v1.37, TopologyAwareWorkloadScheduling; weight 1 in the default profile).

A placement's raw score is the group's pods already scheduled plus the members it places;
normalized to 0..100 by the best candidate's. minCount plays no part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodInfo
from kubesched.framework.handle import Handle
from kubesched.framework.interface import PlacementScorePlugin, Plugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, GroupPlacement
from kubesched.plugins.helper.args import refuse_args

NAME = "PodGroupPodsCount"
NO_PODS = "no pods from pod group are assigned to any of the candidate placements"


class PodGroupPodsCount(Plugin, PlacementScorePlugin):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    def score_placement(self, group: PodGroup, placement: GroupPlacement, assigned: Sequence[tuple[PodInfo, int]], scheduled: int) -> int:
        return scheduled + len(assigned)

    def normalize_placement_scores(self, scores: list[int]) -> list[int] | Status:
        top = max(scores, default=0)
        if top == 0:
            return Status(Code.ERROR, (NO_PODS,))
        return [s * MAX_NODE_SCORE // top for s in scores]
