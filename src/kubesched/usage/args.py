"""Plugin args shared by every load-aware plugin: where usage comes from, how old it may be,
what missing usage means, and how a freshly placed pod is estimated until the metrics show it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from kubesched.api.durations import Seconds, format_go_duration
from kubesched.api.quantity import QuantityError, to_int, to_milli
from kubesched.usage.queries import AGGREGATIONS, DEFAULT_QUERIES

# The longest aggregation window: a subquery reads window/15s points per node on every refresh
# (5,760 at a day), and usage averaged over more than a day says little about a node's load now.
MAX_WINDOW_SECONDS = 86400.0
# Querying Prometheus more often than every second only loads it: it scrapes far less often.
MIN_REFRESH_SECONDS = 1.0
# The longest settleTime: placements are remembered for the longest settle time in use (the
# provider's remember_for), so this bounds how many are kept, like the window above.
MAX_SETTLE_SECONDS = MAX_WINDOW_SECONDS

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class PrometheusArgs(BaseModel):
    """The Prometheus server and the queries that give each resource's node utilization (0..1)."""

    model_config = _CONFIG

    address: str = "http://prometheus-k8s.monitoring.svc:9090"
    timeout: Seconds = 5.0
    refresh_interval: Seconds = Field(30.0, alias="refreshInterval")
    # The series label naming the node: its value is a node name or address, with or without ":port".
    node_label: str = Field("instance", alias="nodeLabel")
    queries: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_QUERIES))
    # Optional per-pod usage (cpu in cores, memory in bytes, one series per pod with `namespace`
    # and `pod` labels, e.g. cAdvisor's container_cpu_usage_seconds_total summed by pod). When
    # set, a freshly placed pod counts with the larger of its estimate and what it is seen using.
    pod_queries: dict[str, str] = Field(default_factory=dict, alias="podQueries")
    bearer_token_file: str | None = Field(None, alias="bearerTokenFile")

    @field_validator("address")
    @classmethod
    def _check_address(cls, value: str) -> str:
        # The value itself is shown by the caller, in kube's "Invalid value: <value>: ..." form.
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        # What every request would trip on later (and only show in a log): no host, a bad port.
        try:
            parts = urlsplit(value)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"must be a valid URL: {exc}") from None
        if not parts.hostname:
            raise ValueError("must name a host")
        if port == 0:
            raise ValueError("port 0 cannot be connected to")
        return value.rstrip("/")

    @field_validator("refresh_interval", "timeout")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be greater than 0")
        return value

    @field_validator("refresh_interval")
    @classmethod
    def _not_too_often(cls, value: float) -> float:
        if value < MIN_REFRESH_SECONDS:
            raise ValueError("must be at least 1s")
        return value

    @field_validator("pod_queries")
    @classmethod
    def _check_pod_queries(cls, value: dict[str, str]) -> dict[str, str]:
        for resource, query in value.items():
            if resource not in ("cpu", "memory"):
                raise ValueError(f"podQueries.{resource}: only cpu and memory are estimated per pod")
            if not query.strip():
                raise ValueError(f"podQueries.{resource}: must not be empty")
        return value

    @field_validator("queries")
    @classmethod
    def _merge_defaults(cls, value: dict[str, str]) -> dict[str, str]:
        merged = dict(DEFAULT_QUERIES)
        for resource, query in value.items():
            if not query.strip():
                raise ValueError(f"queries.{resource}: must not be empty")
            merged[resource] = query
        return merged


class UsageArgs(BaseModel):
    """How a load-aware plugin reads usage: which aggregation over which window, when a value is
    too old to trust, and what a node without a trustworthy value gets."""

    model_config = _CONFIG

    prometheus: PrometheusArgs = Field(default_factory=PrometheusArgs)
    aggregation: str = "avg"
    window: Seconds = 60.0
    # Koordinator's default expiry: a node whose newest value is older than this has no usage.
    stale_after: Seconds = Field(180.0, alias="staleAfter")
    # FailOpen: such a node is neither filtered nor penalised (a neutral score); FailClosed: it is
    # filtered out, and scores as the worst node.
    missing_metrics: Literal["FailOpen", "FailClosed"] = Field("FailOpen", alias="missingMetrics")

    @field_validator("aggregation")
    @classmethod
    def _check_aggregation(cls, value: str) -> str:
        if value not in AGGREGATIONS:
            raise ValueError(f"{value!r} is not one of {', '.join(AGGREGATIONS)}")
        return value

    @model_validator(mode="after")
    def _window_needed(self) -> UsageArgs:
        if self.aggregation != "latest" and self.window <= 0:
            raise ValueError(f"window: must be greater than 0 with aggregation {self.aggregation}")
        # The subquery range is written in whole seconds: a shorter window would read as 0s.
        if self.aggregation != "latest" and self.window < 1:
            shown = format_go_duration(self.window)
            raise ValueError(f"window: Invalid value: {shown}: must be at least 1s with aggregation {self.aggregation}")
        if self.window > MAX_WINDOW_SECONDS:
            raise ValueError(f"window: Invalid value: {format_go_duration(self.window)}: must be at most 24h0m0s")
        return self


_INT64_MAX = 2**63 - 1


def _quantity(value: object, convert: Callable[[str | int | float], int]) -> object:
    """A quantity as kube's int64 Value()/MilliValue(): anything beyond int64 is refused here, as
    the API server refuses it, rather than overflowing the numpy columns it is added to."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return value
    try:
        result = convert(value)
    except (QuantityError, ArithmeticError, ValueError) as exc:  # decimal.Overflow is an ArithmeticError
        raise ValueError(str(exc) or f"cannot read quantity {value!r}") from None
    if abs(result) > _INT64_MAX:
        raise ValueError("quantity too large (beyond a 64-bit integer)")
    return result


def _millis(value: object) -> object:
    return _quantity(value, to_milli)


def _bytes(value: object) -> object:
    return _quantity(value, to_int) if isinstance(value, str) else value


# Resource quantities in args: "250m" or 0.25 CPU as millicores, "200Mi" as bytes.
Millicores = Annotated[int, BeforeValidator(_millis)]
Bytes = Annotated[int, BeforeValidator(_bytes)]


class EstimationArgs(BaseModel):
    """The usage a pod placed since the last sample is assumed to have: factor * max(request, limit)
    per resource (Koordinator's estimator), or the default below for a container requesting nothing."""

    model_config = _CONFIG

    cpu_factor: float = Field(0.85, alias="cpuFactor", gt=0, le=10)
    memory_factor: float = Field(0.70, alias="memoryFactor", gt=0, le=10)
    default_cpu_millis: Millicores = Field(250, alias="defaultCPU", ge=0)
    default_memory_bytes: Bytes = Field(200 * 1024 * 1024, alias="defaultMemory", ge=0)
    # A pod placed up to this long before a sample is not (fully) in it yet: the scrape interval,
    # the rate window and the aggregation window delay it. Such a pod counts with its estimate as
    # well. Default: the aggregation window plus 90 s (node-exporter's rate[1m] and a scrape).
    settle_time: Seconds | None = Field(None, alias="settleTime")

    @field_validator("settle_time")
    @classmethod
    def _remembered(cls, value: float | None) -> float | None:
        if value is not None and value > MAX_SETTLE_SECONDS:
            raise ValueError("must be at most 24h0m0s")
        return value

    def settle_for(self, usage: UsageArgs) -> float:
        if self.settle_time is not None:
            return self.settle_time
        return (usage.window if usage.aggregation != "latest" else 0.0) + 90.0
