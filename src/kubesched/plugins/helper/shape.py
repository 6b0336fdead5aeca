"""Scoring shapes: a broken-linear function from utilization (0..100) to a score (0..10 in
configuration), as kube's helper.FunctionShape. NodeResourcesFit's RequestedToCapacityRatio and
VolumeBinding's StorageCapacityScoring are configured with one and score with its table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from kubesched.framework.types import MAX_NODE_SCORE

# A shape point's score is 0..10 in configuration and is scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


class UtilizationShapePoint(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    utilization: int
    score: int


def check_shape(shape: Sequence[UtilizationShapePoint]) -> None:
    """kube's validation of a non-empty shape: utilizations strictly increasing, each point in
    range; the first problem as a ValueError naming its point."""
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ValueError(f"shape[{i}].utilization: Invalid value: {shape[i].utilization}: "
                             "values must be sorted in increasing order")
    for i, p in enumerate(shape):
        if not 0 <= p.utilization <= MAX_UTILIZATION:
            raise ValueError(f"shape[{i}].utilization: Invalid value: {p.utilization}: not in valid range [0, 100]")
        if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ValueError(f"shape[{i}].score: Invalid value: {p.score}: not in valid range [0, 10]")


def _go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def shape_lookup(shape: Sequence[tuple[int, int]]) -> np.ndarray:
    """The broken-linear function of a shape's (utilization, score) points at every utilization
    0..100, scores already scaled to 0..MAX_NODE_SCORE (kube's BuildBrokenLinearFunction)."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    points = [(at, score * scale) for at, score in shape]
    table = np.zeros(MAX_UTILIZATION + 1, dtype=np.int64)
    for u in range(MAX_UTILIZATION + 1):
        value = points[-1][1]
        for i, (at, score) in enumerate(points):
            if u <= at:
                if i == 0:
                    value = score
                else:
                    at0, score0 = points[i - 1]
                    value = score0 + _go_div((score - score0) * (u - at0), at - at0)
                break
        table[u] = value
    return table
