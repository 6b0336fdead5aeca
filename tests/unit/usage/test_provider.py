"""The usage provider: batched background refreshes, per-row columns with fetch times, failures
that keep old values and say what is wrong. Prometheus is the unit-test stand-in FakePrometheus."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import numpy as np
import pytest

from builders import make_node
from kubesched.cache.nodetable import NodeTable
from kubesched.infra.clock import VirtualClock
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.usage.args import PrometheusArgs
from kubesched.usage.provider import node_key
from kubesched.usage.queries import Series
from kubesched.usage.service import UsageService

from .fakeprom import FakePrometheus


def table_of(*names: str, ips: dict[str, str] | None = None) -> NodeTable:
    t = NodeTable()
    for n in names:
        addresses = [{"type": "InternalIP", "address": (ips or {})[n]}] if n in (ips or {}) else []
        t.upsert_node(make_node(n).exactly(cpu="4").status(addresses=addresses).obj())
    return t


class Harness:
    def __init__(self, **args: Any) -> None:
        self.clock = VirtualClock()
        self.prom = FakePrometheus()
        self.tasks: list[asyncio.Task[None]] = []
        self.metrics = SchedulerMetrics()
        self.service = UsageService(self.clock, self.spawn, lambda a: self.prom, self.metrics)
        self.provider = self.service.provider(PrometheusArgs(**args))

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        self.tasks.append(asyncio.get_running_loop().create_task(coro))

    async def advance(self, to: float) -> None:
        while True:
            nxt = self.clock.next_time()
            if nxt is None or nxt > to:
                break
            self.clock.advance_to(nxt)
            self.clock.run_due()
            await asyncio.gather(*self.tasks)
            self.tasks.clear()
        self.clock.advance_to(to)


def test_node_label_values_map_to_hosts() -> None:
    assert node_key("node-1:9100") == "node-1"
    assert node_key("10.0.0.5:9100") == "10.0.0.5"
    assert node_key("[fd00::1]:9100") == "fd00::1"
    assert node_key("node-1") == "node-1"
    assert node_key("fd00::1") == "fd00::1"


async def test_one_query_per_series_for_all_nodes_on_the_refresh_interval() -> None:
    h = Harness(refreshInterval="30s")
    cpu = Series("cpu", "avg", 60)
    h.provider.require(cpu)
    h.provider.require(Series("memory"))
    h.provider.require(cpu)  # asked twice, queried once
    h.prom.set("cpu", a=0.5, b=0.25)
    h.prom.set("memory", a=0.1)
    h.provider.start()
    await h.advance(0)
    assert len(h.prom.queries) == 2
    await h.advance(95)
    assert len(h.prom.queries) == 2 * 4  # at 0, 30, 60 and 90 s
    t = table_of("a", "b", "c")
    col = h.provider.column(cpu, t)
    assert col.value[:3].tolist()[:2] == [0.5, 0.25] and np.isnan(col.value[2])
    assert col.fetched[:2].tolist() == [90.0, 90.0] and col.fetched[2] == -np.inf


async def test_series_are_found_by_node_address_too() -> None:
    h = Harness()
    h.provider.require(Series("cpu"))
    h.prom.values["cpu"] = {"10.0.0.7": 0.75}
    await h.provider.refresh()
    t = table_of("a", "b", ips={"b": "10.0.0.7"})
    assert h.provider.column(Series("cpu"), t).value[1] == 0.75


async def test_a_failed_refresh_keeps_old_values_and_reports() -> None:
    h = Harness()
    h.provider.require(Series("cpu"))
    h.prom.set("cpu", a=0.5)
    await h.provider.refresh()
    h.prom.down = "connection refused"
    h.clock.advance_to(40)
    await h.provider.refresh()
    t = table_of("a")
    col = h.provider.column(Series("cpu"), t)
    assert col.value[0] == 0.5 and col.fetched[0] == 0.0  # old value, aging
    assert h.provider.problem == "connection refused" and h.provider.problem_since == 40
    assert h.provider.failures == {"cpu": 1}
    text = h.metrics.registry().get_sample_value
    assert text("kubesched_usage_available", {"source": h.provider.args.address}) == 0.0
    assert text("kubesched_usage_query_failures_total", {"source": h.provider.args.address, "series": "cpu"}) == 1.0
    assert text("kubesched_usage_oldest_value_age_seconds", {"source": h.provider.args.address, "series": "cpu"}) == 40.0
    h.prom.down = ""
    await h.provider.refresh()
    assert h.provider.problem == "" and h.provider.problem_since is None
    assert text("kubesched_usage_available", {"source": h.provider.args.address}) == 1.0


async def test_a_slow_prometheus_times_out_without_blocking() -> None:
    h = Harness(timeout=0.05)
    h.provider.require(Series("cpu"))
    h.prom.delay = 1.0
    await asyncio.wait_for(h.provider.refresh(), 0.5)
    assert "did not answer within 0.05s" in h.provider.problem


def test_a_resource_without_a_query_is_refused() -> None:
    h = Harness()
    with pytest.raises(ValueError, match="no query for resource 'gpu'"):
        h.provider.require(Series("gpu"))


def test_args_validation() -> None:
    with pytest.raises(ValueError, match="http"):
        PrometheusArgs(address="prometheus:9090")
    with pytest.raises(ValueError, match="greater than 0"):
        PrometheusArgs(refreshInterval="0s")
    args = PrometheusArgs(queries={"cpu": "my_cpu_ratio"})
    assert args.queries["cpu"] == "my_cpu_ratio" and "memory" in args.queries


async def test_one_provider_per_source() -> None:
    h = Harness()
    assert h.service.provider(PrometheusArgs()) is h.provider
    assert h.service.provider(PrometheusArgs(address="http://other:9090")) is not h.provider


async def test_pod_queries_feed_observed_usage_of_fresh_pods() -> None:
    from kubesched.usage.prometheus import Sample

    from .test_fresh import pi

    h = Harness(podQueries={"cpu": "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[1m]))"})
    h.provider.require(Series("cpu"))
    h.service.fresh.placed(pi("a", {"cpu": "100m"}), row=0, when=0.0)

    async def answer(promql: str) -> list[Sample]:
        if "container_cpu" in promql:
            return [Sample({"namespace": "ns", "pod": "a"}, 1.5, 0.0), Sample({"pod": "no-namespace"}, 9.0, 0.0)]
        return []

    h.prom.query = answer  # type: ignore[method-assign]
    await h.provider.refresh()
    assert h.provider.pod_usage["cpu"] == {"ns/a": 1500.0}
    assert h.service.fresh.observed[h.service.fresh.slot["a"]].tolist() == [1500.0, 0.0]
    with pytest.raises(ValueError, match="only cpu and memory"):
        PrometheusArgs(podQueries={"gpu": "x"})


async def test_an_empty_answer_is_a_problem_too() -> None:
    h = Harness()
    h.provider.require(Series("cpu"))
    await h.provider.refresh()  # FakePrometheus has no values: an empty vector
    assert "no series for" in h.provider.problem and h.provider.failures == {"cpu": 1}
