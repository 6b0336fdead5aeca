"""The scoring shape: its broken-linear function and its validation."""

from __future__ import annotations

import pytest

from kubesched.plugins.helper.shape import UtilizationShapePoint, check_shape, shape_lookup


def test_shape_lookup() -> None:
    lookup = shape_lookup([(20, 2), (60, 10)])
    # Flat before the first point and after the last, linear in between, scores x10.
    assert lookup[0] == 20 and lookup[20] == 20 and lookup[60] == 100 and lookup[100] == 100
    assert lookup[40] == 20 + 80 * 20 // 40
    down = shape_lookup([(0, 10), (30, 0)])
    # 100 - 100*7/30 = 100 - 23.33: Go truncates the negative step toward zero -> 77.
    assert down[7] == 77


def points(*pairs: tuple[int, int]) -> list[UtilizationShapePoint]:
    return [UtilizationShapePoint(utilization=u, score=s) for u, s in pairs]


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        (points((0, 0), (0, 10)), "shape[1].utilization: Invalid value: 0: values must be sorted in increasing order"),
        (points((50, 0), (10, 10)), "shape[1].utilization: Invalid value: 10: values must be sorted in increasing order"),
        (points((0, 0), (101, 10)), "shape[1].utilization: Invalid value: 101: not in valid range [0, 100]"),
        (points((-1, 0)), "shape[0].utilization: Invalid value: -1: not in valid range [0, 100]"),
        (points((0, 11)), "shape[0].score: Invalid value: 11: not in valid range [0, 10]"),
    ],
)
def test_check_shape_refuses(shape: list[UtilizationShapePoint], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_shape(shape)
    assert str(caught.value) == message


def test_check_shape_accepts() -> None:
    check_shape(points((0, 10), (50, 5), (100, 0)))
