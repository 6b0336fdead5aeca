"""HotValue: Crane's count of recent placements per window on hand-computed values, the window
boundary, pods deleted or bound by others, args, and a burst on the simulated scheduler."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from builders import cache_with, make_node, make_pod
from kubesched.api.objects import PodCondition
from kubesched.api.podinfo import make_pod_info
from kubesched.plugins.hotvalue import HotValue, HotValueArgs

from ..simkit import profile_config, run
from .usagekit import UsageHandle, scores


def setup(args: dict[str, Any] | None = None) -> tuple[HotValue, UsageHandle]:
    handle = UsageHandle(cache_with([make_node(n).obj() for n in "abcdef"]))
    return HotValue(HotValueArgs.model_validate(args or {}), handle), handle


def place_all(handle: UsageHandle, placements: list[tuple[float, str]]) -> None:
    for i, (when, name) in enumerate(sorted(placements)):
        handle.place(make_pod(f"p{i}").info(), name, at=when)


def test_defaults_are_cranes() -> None:
    a = HotValueArgs()
    assert [(w.time_range, w.divisor) for w in a.windows] == [(300.0, 5), (60.0, 2)]
    assert a.penalty_per_unit == 10


def test_crane_spelling_of_the_divisor() -> None:
    a = HotValueArgs.model_validate({"windows": [{"timeRange": "2m", "count": 3}]})
    assert [(w.time_range, w.divisor) for w in a.windows] == [(120.0, 3)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"windows": []}, "at least one window"),
        ({"windows": [{"timeRange": "11m", "divisor": 1}]}, "must be at most 10m, how long placements are remembered"),
        ({"windows": [{"timeRange": "1m", "divisor": 1}] * 17}, "windows: Too many: 17: must have at most 16 items"),
        ({"windows": [{"timeRange": "0s", "divisor": 1}]}, "greater than 0"),
        ({"windows": [{"timeRange": "1m", "divisor": 0}]}, "greater than or equal to 1"),
        ({"windows": [{"timeRange": "1m"}]}, "Field required"),
        ({"windows": [{"timeRange": "soon", "divisor": 1}]}, "duration"),
        ({"penaltyPerUnit": -1}, "greater than or equal to 0"),
        ({"hotValue": []}, "Extra inputs"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HotValueArgs.model_validate(args)


def test_no_placements_scores_100() -> None:
    plugin, handle = setup()
    assert set(scores(plugin, handle, make_pod("p").info()).values()) == {100}


def test_hot_value_per_window() -> None:
    plugin, handle = setup()
    placements = [(t, "a") for t in (590, 595, 598)]
    placements += [(t, "b") for t in (320, 400, 450, 500, 550, 580, 590)]
    placements += [(550 + i, "d") for i in range(12)]
    placements += [(570, "e")] * 25
    placements += [(100, "f")] * 9  # older than every window
    place_all(handle, placements)
    handle.clock.advance_to(600)
    # a: 3//5 + 3//2 = 1 -> 90; b: 7//5 + 3//2 = 2 -> 80; d: 12//5 + 12//2 = 8 -> 20;
    # e: 25//5 + 25//2 = 17 -> 0 (not below); c and f: 0 -> 100
    assert scores(plugin, handle, make_pod("p").info()) == {"a": 90, "b": 80, "c": 100, "d": 20, "e": 0, "f": 100}


def test_a_placement_counts_while_strictly_younger_than_the_window() -> None:
    plugin, handle = setup({"windows": [{"timeRange": "1m", "divisor": 1}], "penaltyPerUnit": 7.5})
    place_all(handle, [(540, "a"), (541, "a"), (541, "b")])
    handle.clock.advance_to(600)
    # a: 1 placement younger than 60 s (the one at 540 is exactly 60 s old); 7.5 -> 92.5 -> 93 (half up)
    assert scores(plugin, handle, make_pod("p").info(), ["a", "b", "c"]) == {"a": 93, "b": 93, "c": 100}


def test_deleted_pods_no_longer_count() -> None:
    plugin, handle = setup({"windows": [{"timeRange": "1m", "divisor": 1}]})
    gone = make_pod("gone").info()
    handle.place(gone, "a", at=10)
    handle.place(make_pod("stays").info(), "a", at=11)
    assert scores(plugin, handle, make_pod("p").info(), ["a"]) == {"a": 80}
    handle.usage.pod_removed(gone.uid)
    assert scores(plugin, handle, make_pod("p").info(), ["a"]) == {"a": 90}


def test_pods_bound_by_others_count_from_their_scheduled_time() -> None:
    plugin, handle = setup({"windows": [{"timeRange": "1m", "divisor": 1}]})
    wall = datetime(2024, 1, 1, 0, 10, tzinfo=UTC).timestamp()
    handle.usage.wall_clock = lambda: wall
    handle.clock.advance_to(1000)
    for name, at in (("recent", "2024-01-01T00:09:30Z"), ("old", "2024-01-01T00:08:00Z")):
        p = make_pod(name).obj()
        p.status.conditions = [PodCondition(type="PodScheduled", status="True", last_transition_time=at)]
        handle.usage.pod_placed(make_pod_info(p), handle.cache.table.row_of("a" if name == "recent" else "b"), False)
    # "recent" was placed 30 s ago (on the scheduler's clock, 970), "old" 120 s ago.
    assert scores(plugin, handle, make_pod("p").info(), ["a", "b"]) == {"a": 90, "b": 100}


def test_needs_a_handle() -> None:
    with pytest.raises(ValueError, match="handle"):
        HotValue()


def test_spreads_a_burst_that_most_allocated_would_pile_up() -> None:
    nodes = [make_node(n).capacity(cpu="4").without("ephemeral-storage").manifest() for n in ("n1", "n2", "n3")]
    pods = [make_pod(f"p{i}").req(cpu="500m", memory="100Mi").manifest() for i in range(6)]
    packing: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit"}]}},
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
    }
    packed, _ = run(nodes + pods, profile_config(packing))
    assert len(set(packed.placements.values())) == 1
    hot = {
        **packing,
        "plugins": {"score": {"disabled": [{"name": "*"}],
                              "enabled": [{"name": "NodeResourcesFit"}, {"name": "HotValue", "weight": 3}]}},
        "pluginConfig": [*packing["pluginConfig"],
                         {"name": "HotValue", "args": {"windows": [{"timeRange": "1m", "divisor": 1}]}}],
    }
    spread, _ = run(nodes + pods, profile_config(hot))
    per_node = sorted(list(spread.placements.values()).count(n) for n in ("n1", "n2", "n3"))
    assert per_node == [2, 2, 2]
