"""PromQL rendering of (resource, aggregation, window) series, and reading it back."""

from __future__ import annotations

import pytest

from kubesched.usage.queries import DEFAULT_QUERIES, Series, format_promql_duration, parse_rendered

CPU = DEFAULT_QUERIES["cpu"]


def test_latest_is_the_expression_itself() -> None:
    assert Series("cpu").render(CPU) == CPU


@pytest.mark.parametrize(
    ("aggregation", "prefix"),
    [("avg", "avg_over_time("), ("max", "max_over_time("), ("stddev", "stddev_over_time("), ("p95", "quantile_over_time(0.95, ")],
)
def test_aggregations_wrap_a_subquery(aggregation: str, prefix: str) -> None:
    q = Series("cpu", aggregation, 300, 30).render(CPU)
    assert q == f"{prefix}({CPU})[5m:30s])"
    expr, series = parse_rendered(q)
    assert expr == CPU
    assert (series.aggregation, series.window, series.step) == (aggregation, 300, 30)


def test_parse_of_a_plain_expression_is_latest() -> None:
    expr, series = parse_rendered(f"  {CPU} ")
    assert expr == CPU and series.aggregation == "latest"


def test_durations() -> None:
    # Reading durations is api.durations.parse_duration_or_seconds's (tested there, "5 minutes" refused too).
    assert [format_promql_duration(s) for s in (30, 60, 90, 3600)] == ["30s", "1m", "90s", "1h"]
    _, series = parse_rendered(f"avg_over_time(({CPU})[1h30m:45s])")
    assert (series.window, series.step) == (5400, 45)


def test_labels_name_series_for_metrics() -> None:
    assert Series("cpu").label == "cpu"
    assert Series("memory", "p99", 600).label == "memory:p99_10m"
