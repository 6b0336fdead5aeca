"""A stand-in for Prometheus in unit tests only: it answers any query mentioning a resource's
default expression with the values the test set, or fails the way the test asks. Integration
tests (tests/integration/usage) use a real Prometheus server."""

from __future__ import annotations

import asyncio

from kubesched.usage.prometheus import PrometheusError, Sample
from kubesched.usage.queries import DEFAULT_QUERIES


class FakePrometheus:
    def __init__(self, address: str = "http://prometheus.test:9090") -> None:
        self.address = address
        self.values: dict[str, dict[str, float]] = {r: {} for r in DEFAULT_QUERIES}
        self.stddev: dict[str, dict[str, float]] = {r: {} for r in DEFAULT_QUERIES}
        self.down = ""
        self.delay = 0.0
        self.queries: list[str] = []
        self.label = "instance"
        self.port = ":9100"

    def set(self, resource: str, **per_node: float) -> None:
        self.values[resource].update({k.replace("_", "-"): v for k, v in per_node.items()})

    async def query(self, promql: str) -> list[Sample]:
        self.queries.append(promql)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.down:
            raise PrometheusError(self.down)
        for resource, expr in DEFAULT_QUERIES.items():
            if expr in promql:
                table = self.stddev if promql.startswith("stddev_over_time") else self.values
                return [Sample({self.label: node + self.port}, v, 0.0) for node, v in table[resource].items()]
        raise PrometheusError(f"fake Prometheus has no answer for {promql!r}")

    async def close(self) -> None:
        pass
