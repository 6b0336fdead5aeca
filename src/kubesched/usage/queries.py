"""The PromQL kubesched sends: one instant query per (resource, aggregation), all nodes at once.

A resource's query is an expression of its utilization as a fraction of the node (0..1), one
series per node. An aggregation over a window wraps it in a subquery, so any expression can be
averaged, taken at a percentile, or measured for its spread without the user writing it twice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubesched.api.durations import parse_duration_or_seconds

# node-exporter's series, as every kube-prometheus installation has them.
DEFAULT_QUERIES: dict[str, str] = {
    "cpu": '1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[1m]))',
    "memory": "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
}

AGGREGATIONS = ("latest", "avg", "max", "stddev", "p50", "p90", "p95", "p99")


def format_promql_duration(seconds: float) -> str:
    """A PromQL range in whole seconds, in its largest exact unit ("90s", "5m", "1h"): what
    Prometheus reads in a subquery and what a series label shows (not Go's "5m0s")."""
    s = round(seconds)
    if s % 3600 == 0 and s:
        return f"{s // 3600}h"
    if s % 60 == 0 and s:
        return f"{s // 60}m"
    return f"{s}s"


@dataclass(frozen=True, slots=True)
class Series:
    """One thing a plugin reads per node: a resource's utilization, aggregated over a window."""

    resource: str
    aggregation: str = "latest"
    window: float = 0.0  # seconds; 0 with "latest"
    step: float = 15.0  # subquery resolution

    def render(self, expression: str) -> str:
        """The PromQL for this series, given the resource's instant expression."""
        if self.aggregation == "latest":
            return expression
        rng = f"[{format_promql_duration(self.window)}:{format_promql_duration(self.step)}]"
        inner = f"({expression}){rng}"
        if self.aggregation == "avg":
            return f"avg_over_time({inner})"
        if self.aggregation == "max":
            return f"max_over_time({inner})"
        if self.aggregation == "stddev":
            return f"stddev_over_time({inner})"
        quantile = int(self.aggregation[1:]) / 100
        return f"quantile_over_time({quantile:g}, {inner})"

    @property
    def label(self) -> str:
        if self.aggregation == "latest":
            return self.resource
        return f"{self.resource}:{self.aggregation}_{format_promql_duration(self.window)}"


_WRAPPED = re.compile(
    r"^(?P<fn>avg|max|stddev|quantile)_over_time\(\s*(?:(?P<q>[0-9.]+)\s*,\s*)?\((?P<expr>.*)\)"
    r"\[(?P<window>[0-9hms]+):(?P<step>[0-9hms]+)\]\s*\)$",
    re.S,
)


def parse_rendered(query: str) -> tuple[str, Series]:
    """The inverse of `Series.render` (expression, series with resource left empty): the
    simulated Prometheus uses it to know what it is asked. ValueError if not of that form."""
    m = _WRAPPED.match(query.strip())
    if m is None:
        return query.strip(), Series("", "latest")
    fn = m["fn"]
    if fn == "quantile":
        if m["q"] is None:
            raise ValueError(f"quantile_over_time without a quantile: {query}")
        aggregation = f"p{round(float(m['q']) * 100)}"
    else:
        aggregation = fn
    window, step = parse_duration_or_seconds(m["window"]), parse_duration_or_seconds(m["step"])
    return m["expr"].strip(), Series("", aggregation, window, step)
