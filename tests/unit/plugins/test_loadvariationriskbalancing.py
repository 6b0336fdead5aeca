"""LoadVariationRiskBalancing: Trimaran's mean + deviation risk on hand-computed values, margin and
sensitivity, recently placed pods, args, and nodes without fresh metrics. Usage comes from a real
UsageService whose Prometheus is FakeTransport (the unit-test stand-in)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import cache_with, make_node, make_pod
from kubesched.plugins.loadvariationriskbalancing import (
    LoadVariationRiskBalancing,
    LoadVariationRiskBalancingArgs,
    risk,
)
from kubesched.usage.queries import Series

from .usagekit import UsageHandle, scores


def setup(args: dict[str, Any] | None = None) -> tuple[LoadVariationRiskBalancing, UsageHandle]:
    handle = UsageHandle(cache_with([make_node(n).capacity(cpu="4", memory="4Gi").obj() for n in ("a", "b", "c")]))
    plugin = LoadVariationRiskBalancing(LoadVariationRiskBalancingArgs.model_validate(args or {}), handle)
    # a: cpu 30% +- 10, memory 20% +- 4; b: cpu 20% +- 36, memory 50% +- 0; c has no stddev series.
    handle.prom.set("cpu", {"a": 0.3, "b": 0.2, "c": 0.1})
    handle.prom.set("cpu", {"a": 0.1, "b": 0.36}, "stddev")
    handle.prom.set("memory", {"a": 0.2, "b": 0.5, "c": 0.1})
    handle.prom.set("memory", {"a": 0.04, "b": 0.0}, "stddev")
    return plugin, handle


POD = make_pod("p").req(cpu="400m").info()  # 10% of 4 cores, no memory request


def test_defaults() -> None:
    a = LoadVariationRiskBalancingArgs()
    assert (a.safe_variance_margin, a.safe_variance_sensitivity, a.aggregation, a.window) == (1.0, 1.0, "avg", 900.0)


def test_reads_mean_and_stddev_over_the_window() -> None:
    plugin, _ = setup({"window": "5m"})
    assert set(plugin.reader.provider.series) == {
        Series("cpu", "avg", 300.0), Series("memory", "avg", 300.0),
        Series("cpu", "stddev", 300.0), Series("memory", "stddev", 300.0),
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"safeVarianceMargin": -1}, "greater than or equal to 0"),
        ({"safeVarianceSensitivity": 0}, "greater than 0"),
        ({"safeVarianceMargin": "inf"}, "finite"),
        ({"aggregation": "stddev"}, "read anyway"),
        ({"aggregation": "latest", "window": 0}, "standard deviation"),
        ({"missingMetrics": "Maybe"}, "FailOpen"),
        ({"estimation": {"cpuFactor": 0}}, "greater than 0"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LoadVariationRiskBalancingArgs.model_validate(args)


def test_risk_function() -> None:
    # (0.4 + 0.1) / 2; margin 2: (0.4 + 0.2) / 2; sensitivity 2: (0.4 + sqrt 0.25) / 2; sigma capped at 1.
    mu, sd = np.array([0.4]), np.array([0.25])
    assert risk(mu, np.array([0.1]), 1, 1)[0] == pytest.approx(0.25)
    assert risk(mu, np.array([0.1]), 2, 1)[0] == pytest.approx(0.3)
    assert risk(mu, sd, 1, 2)[0] == pytest.approx(0.45)
    assert risk(mu, sd, 10, 1)[0] == pytest.approx(0.7)
    assert risk(np.array([1.7]), np.array([0.0]), 1, 1)[0] == pytest.approx(0.5)  # mu capped at 1


async def test_score_is_worst_resource() -> None:
    plugin, handle = setup()
    await handle.refresh()
    # a: cpu (0.3+0.1 + 0.1)/2 = 0.25, memory (0.2 + 0.04)/2 = 0.12 -> 75
    # b: cpu (0.2+0.1 + 0.36)/2 = 0.33, memory (0.5 + 0)/2 = 0.25 -> 67
    assert scores(plugin, handle, POD, ["a", "b"]) == {"a": 75, "b": 67}


async def test_margin_and_sensitivity() -> None:
    plugin, handle = setup({"safeVarianceSensitivity": 2})
    await handle.refresh()
    # a: cpu (0.4 + sqrt 0.1)/2 = 0.358 -> 64; b: cpu (0.3 + 0.6)/2 = 0.45 -> 55
    assert scores(plugin, handle, POD, ["a", "b"]) == {"a": 64, "b": 55}
    plugin, handle = setup({"safeVarianceMargin": 2})
    await handle.refresh()
    # a: cpu (0.4 + 0.2)/2 = 0.3 -> 70; b: cpu (0.3 + 0.72)/2 = 0.51 -> 49
    assert scores(plugin, handle, POD, ["a", "b"]) == {"a": 70, "b": 49}


async def test_memory_request_counts_in_mu() -> None:
    plugin, handle = setup()
    await handle.refresh()
    # 2Gi is half of b's memory: (0.5+0.5 + 0)/2 = 0.5 -> 50; a: memory (0.2+0.5 + 0.04)/2 = 0.37, cpu 0.25 -> 63
    assert scores(plugin, handle, make_pod("p").req(cpu="400m", memory="2Gi").info(), ["a", "b"]) == {"a": 63, "b": 50}


async def test_recently_placed_pods_count_at_their_estimate() -> None:
    plugin, handle = setup()
    await handle.refresh(at=0.0)
    handle.place(make_pod("new").req(cpu="1").info(), "a", at=10.0)
    # 1 core at the cpu factor 0.85 is 850m, 21.25%: (0.3+0.2125+0.1 + 0.1)/2 = 0.35625 -> 64
    assert scores(plugin, handle, POD, ["a"]) == {"a": 64}


async def test_missing_series_fail_open_and_closed() -> None:
    plugin, handle = setup()
    await handle.refresh()
    assert scores(plugin, handle, POD) == {"a": 75, "b": 67, "c": 71}  # c: (75 + 67) / 2
    plugin, handle = setup({"missingMetrics": "FailClosed"})
    await handle.refresh()
    assert scores(plugin, handle, POD) == {"a": 75, "b": 67, "c": 0}


async def test_stale_values_are_missing() -> None:
    plugin, handle = setup({"missingMetrics": "FailClosed", "staleAfter": "1m"})
    await handle.refresh(at=0.0)
    handle.clock.advance_to(61.0)
    assert scores(plugin, handle, POD) == {"a": 0, "b": 0, "c": 0}
