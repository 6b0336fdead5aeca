"""TargetLoadPacking: Trimaran's piecewise score around the target on hand-computed values, the
CPU prediction of pods, recently placed pods, args, and nodes without fresh metrics. Usage comes
from a real UsageService whose Prometheus is FakeTransport (the unit-test stand-in)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import cache_with, make_node, make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.plugins.targetloadpacking import (
    TargetLoadPacking,
    TargetLoadPackingArgs,
    predict_cpu,
    target_score,
)

from .usagekit import UsageHandle, scores

NODES = ["a", "b", "c", "d"]


def setup(args: dict[str, Any] | None = None, nodes: list[str] = NODES) -> tuple[TargetLoadPacking, UsageHandle]:
    handle = UsageHandle(cache_with([make_node(n).capacity(cpu="4").obj() for n in nodes]))
    plugin = TargetLoadPacking(TargetLoadPackingArgs.model_validate(args or {}), handle)
    return plugin, handle


def limited(name: str, request: str, limit: str) -> PodInfo:
    c = {"name": "c", "image": "app", "resources": {"requests": {"cpu": request}, "limits": {"cpu": limit}}}
    return make_pod(name).containers(c).info()


def test_defaults_are_trimarans() -> None:
    a = TargetLoadPackingArgs()
    assert (a.target_utilization, a.default_requests.cpu, a.default_requests_multiplier) == (40, 1000, 1.5)
    assert (a.aggregation, a.missing_metrics) == ("avg", "FailOpen")


def test_trimaran_arg_spellings() -> None:
    a = TargetLoadPackingArgs.model_validate(
        {"targetUtilization": 70, "defaultRequests": {"cpu": "2"}, "defaultRequestsMultiplier": "2.5"}
    )
    assert (a.target_utilization, a.default_requests.cpu, a.default_requests_multiplier) == (70, 2000, 2.5)
    assert TargetLoadPackingArgs.model_validate({"requestsMultiplier": 3}).default_requests_multiplier == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"targetUtilization": 0}, "greater than or equal to 1"),
        ({"targetUtilization": 100}, "less than or equal to 99"),
        ({"defaultRequests": {"cpu": "lots"}}, "lots"),
        ({"defaultRequests": {"memory": "1Gi"}}, "Extra inputs"),
        ({"defaultRequestsMultiplier": 0}, "greater than 0"),
        ({"defaultRequestsMultiplier": "nan"}, "finite"),
        ({"missingMetrics": "Ignore"}, "FailOpen"),
        ({"aggregation": "p42"}, "not one of"),
        ({"settleTime": "soon"}, "duration"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TargetLoadPackingArgs.model_validate(args)


def test_score_curve() -> None:
    u = np.array([0.0, 20.0, 40.0, 70.0, 100.0, 100.5, np.inf, np.nan])
    # X=40: 0 -> 40; 20 -> 60*20/40+40 = 70; 40 -> 100; 70 -> 40*30/60 = 20; 100 -> 0; above -> 0
    assert target_score(u, 40.0).tolist() == [40, 70, 100, 20, 0, 0, 0, 0]
    # X=80: 10 -> 20*10/80+80 = 82.5 -> 83 (half up); 90 -> 80*10/20 = 40
    assert target_score(np.array([10.0, 90.0]), 80.0).tolist() == [83, 40]


def test_prediction_is_limit_else_scaled_request_else_default() -> None:
    got = predict_cpu(np.array([500, 500, 0, 333]), np.array([2000, 0, 0, 0]), 1.5, 1000.0)
    assert got.tolist() == [2000, 750, 1000, 500]  # 333 * 1.5 = 499.5 rounds half up


async def test_score_on_measured_cpu() -> None:
    plugin, handle = setup()
    handle.prom.set("cpu", {"a": 0.0, "b": 0.2, "c": 0.5, "d": 0.95})
    await handle.refresh()
    # The pod requests 400m: predicted 600m, 15% of 4 cores. U: a 15, b 35, c 65, d 110.
    # a: 60*15/40+40 = 62.5 -> 63; b: 60*35/40+40 = 92.5 -> 93; c: 40*35/60 = 23.3 -> 23; d: 0.
    assert scores(plugin, handle, make_pod("p").req(cpu="400m").info()) == {"a": 63, "b": 93, "c": 23, "d": 0}


async def test_incoming_pod_limit_and_default() -> None:
    plugin, handle = setup()
    handle.prom.set("cpu", {n: 0.0 for n in NODES})
    await handle.refresh()
    # A 2-core limit is 50%: 40*50/60 = 33.3 -> 33. No request: 1000m, 25%: 60*25/40+40 = 77.5 -> 78.
    assert scores(plugin, handle, limited("p", "500m", "2"), ["a"]) == {"a": 33}
    assert scores(plugin, handle, make_pod("q").info(), ["a"]) == {"a": 78}


async def test_recently_placed_pods_count_until_sampled() -> None:
    plugin, handle = setup()
    handle.prom.set("cpu", {n: 0.0 for n in NODES})
    await handle.refresh(at=0.0)
    handle.place(make_pod("old").req(cpu="2").info(), "b", at=5.0)
    handle.place(make_pod("new").req(cpu="1").info(), "a", at=10.0)
    # a: 1000m * 1.5 = 1500m recent + 600m for the pod = 52.5%: 40*47.5/60 = 31.7 -> 32.
    # b: 3000m + 600m = 90%: 40*10/60 = 6.7 -> 7.
    got = scores(plugin, handle, make_pod("p").req(cpu="400m").info(), ["a", "b", "c"])
    assert got == {"a": 32, "b": 7, "c": 63}
    # A sample taken more than settleTime (window 60 s + 90 s) after a placement includes it.
    await handle.refresh(at=160.0)
    got = scores(plugin, handle, make_pod("p").req(cpu="400m").info(), ["a", "b", "c"])
    assert got == {"a": 32, "b": 63, "c": 63}


async def test_settle_time_is_configurable() -> None:
    plugin, handle = setup({"settleTime": "10s"})
    handle.prom.set("cpu", {n: 0.0 for n in NODES})
    handle.place(make_pod("new").req(cpu="1").info(), "a", at=0.0)
    await handle.refresh(at=30.0)
    assert scores(plugin, handle, make_pod("p").req(cpu="400m").info(), ["a"]) == {"a": 63}


async def test_missing_node_fail_open_scores_the_mean() -> None:
    plugin, handle = setup()
    handle.prom.set("cpu", {"a": 0.0, "b": 0.2})  # c and d have no series
    await handle.refresh()
    got = scores(plugin, handle, make_pod("p").req(cpu="400m").info())
    assert got == {"a": 63, "b": 93, "c": 78, "d": 78}  # (63 + 93) / 2


async def test_missing_node_fail_closed_scores_zero() -> None:
    plugin, handle = setup({"missingMetrics": "FailClosed"})
    handle.prom.set("cpu", {"a": 0.0, "b": 0.2})
    await handle.refresh()
    assert scores(plugin, handle, make_pod("p").req(cpu="400m").info()) == {"a": 63, "b": 93, "c": 0, "d": 0}


async def test_stale_values_are_missing_and_an_outage_is_reported() -> None:
    plugin, handle = setup({"missingMetrics": "FailClosed"})
    handle.prom.set("cpu", {n: 0.2 for n in NODES})
    await handle.refresh(at=0.0)
    handle.prom.down = "connection refused"
    await handle.refresh(at=100.0)  # fails: the values from t=0 are kept, 100 s old
    assert set(scores(plugin, handle, make_pod("p").req(cpu="400m").info()).values()) == {93}
    handle.clock.advance_to(181.0)  # older than staleAfter (180 s)
    assert set(scores(plugin, handle, make_pod("p").req(cpu="400m").info()).values()) == {0}
    assert [e[2] for e in handle.events] == ["UsageMetricsUnavailable"]
    assert "connection refused" in handle.events[0][3] and "FailClosed" in handle.events[0][3]


async def test_node_without_allocatable_cpu_scores_zero() -> None:
    handle = UsageHandle(cache_with([make_node("a").capacity(cpu="4").obj(), make_node("z").capacity(cpu="0").obj()]))
    plugin = TargetLoadPacking(None, handle)
    handle.prom.set("cpu", {"a": 0.0, "z": 0.0})
    await handle.refresh()
    assert scores(plugin, handle, make_pod("p").req(cpu="400m").info()) == {"a": 63, "z": 0}
