"""The node-exporter stub scraped by a real Prometheus answers kubesched's queries, through
Prometheus's HTTP API and through kubesched's own client and usage provider, outage included.

Prometheus's discovery manager hands the first targets to the scrape manager only after its
5-second update tick, so the first samples arrive about 5 s after start. rate() over a window
that samples do not cover yet is extrapolated from the samples it has, which under-states it:
the CPU values are waited for until they settle at what the stub was told, a window later.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any

import numpy as np
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from builders import make_node
from integration.harness.prometheus import CPU_QUERY, MEMORY_QUERY, NodeExporterStub, PrometheusQueryError, PrometheusServer
from kubesched.cache.nodetable import NodeTable
from kubesched.infra.clock import RealClock
from kubesched.observe.metrics import SchedulerMetrics
from kubesched.usage.args import PrometheusArgs
from kubesched.usage.prometheus import HttpPrometheus, PrometheusError
from kubesched.usage.queries import DEFAULT_QUERIES, Series
from kubesched.usage.service import UsageService

# The default CPU query with a 5 s window instead of 1 m: a 1 s scrape interval fills it in seconds.
FAST_CPU = CPU_QUERY.format(window="5s")
CPU = {"node-a": 0.2, "node-b": 0.55, "node-c": 0.9}
MEMORY = {"node-a": 0.25, "node-b": 0.5, "node-c": 0.75}
TOLERANCE = 0.02


def test_fast_cpu_query_is_the_default_with_a_shorter_window() -> None:
    assert DEFAULT_QUERIES["cpu"].replace("[1m]", "[5s]") == FAST_CPU
    assert DEFAULT_QUERIES["memory"] == MEMORY_QUERY


def close(values: dict[str, float], expected: dict[str, float], tolerance: float = TOLERANCE) -> bool:
    return values.keys() == expected.keys() and all(abs(values[k] - v) <= tolerance for k, v in expected.items())


def populate(stub: NodeExporterStub) -> None:
    for node in CPU:
        stub.add_node(node, cpu=CPU[node], memory=MEMORY[node])


def wait_settled(prometheus: PrometheusServer, query: str, expected: dict[str, float], timeout: float = 30.0) -> dict[str, float]:
    return prometheus.wait_for_values(query, expected, tolerance=TOLERANCE, timeout=timeout)


def test_prometheus_scrapes_the_stub_and_answers_the_default_queries(node_exporter: NodeExporterStub, prometheus: PrometheusServer) -> None:
    populate(node_exporter)
    t0 = time.monotonic()
    series = prometheus.wait_for_series("node_memory_MemTotal_bytes", len(CPU))
    first_sample = time.monotonic() - t0
    # honor_labels: the stub's instance label (the node's name) wins over the target address.
    assert {s["metric"]["instance"] for s in series} == set(CPU)
    assert {s["metric"]["job"] for s in series} == {"node-exporter"}
    assert close(prometheus.values(MEMORY_QUERY), MEMORY, 1e-6)
    wait_settled(prometheus, FAST_CPU, CPU)
    settled = time.monotonic() - t0
    # 4 CPUs, idle and user, per node.
    assert len(prometheus.query("node_cpu_seconds_total")) == 3 * 4 * 2
    # A change shows within a window and a scrape or two, counters going on from where they were.
    node_exporter.set_cpu("node-a", 0.7)
    node_exporter.set_memory("node-c", 0.1)
    wait_settled(prometheus, FAST_CPU, {**CPU, "node-a": 0.7}, timeout=15)
    wait_settled(prometheus, MEMORY_QUERY, {**MEMORY, "node-c": 0.1}, timeout=5)
    assert prometheus.query('resets(node_cpu_seconds_total[1m]) > 0') == []
    print(f"first samples after {first_sample:.1f} s, cpu settled after {settled:.1f} s")


def test_stop_and_start_keep_port_and_data(node_exporter: NodeExporterStub, prometheus: PrometheusServer) -> None:
    populate(node_exporter)
    prometheus.wait_for_series("node_memory_MemTotal_bytes", len(CPU))
    url = prometheus.url
    prometheus.stop()
    assert not prometheus.running()
    with pytest.raises(PrometheusQueryError, match="Connection refused"):
        prometheus.query("up")
    prometheus.start()
    assert prometheus.url == url
    # What was scraped before the outage is still there.
    data = prometheus.api("query", {"query": "count_over_time(node_memory_MemTotal_bytes[5m])"})
    assert {r["metric"]["instance"] for r in data["result"]} == set(CPU)


# --- kubesched's own client and provider ------------------------------------------------------------


async def test_kubesched_client_reads_the_real_server(node_exporter: NodeExporterStub, prometheus: PrometheusServer) -> None:
    populate(node_exporter)
    await asyncio.to_thread(prometheus.wait_for_series, "node_memory_MemTotal_bytes", len(CPU))
    await asyncio.to_thread(wait_settled, prometheus, FAST_CPU, CPU)
    client = HttpPrometheus(prometheus.url, timeout=2)
    try:
        samples = await client.query(FAST_CPU)
        assert close({s.labels["instance"]: s.value for s in samples}, CPU)
        assert all(s.labels.keys() == {"instance"} for s in samples)  # `by (instance)` keeps that label alone
        assert all(abs(s.timestamp - time.time()) < 30 for s in samples)
        samples = await client.query(MEMORY_QUERY)
        assert close({s.labels["instance"]: s.value for s in samples}, MEMORY, 1e-6)
        assert await client.query('node_memory_MemTotal_bytes{instance="no-such-node"}') == []
        with pytest.raises(PrometheusError, match="bad_data"):
            await client.query("rate(node_cpu_seconds_total[")
        with pytest.raises(PrometheusError, match="not an instant vector"):
            await client.query("node_memory_MemTotal_bytes[10s]")
        prometheus.stop()
        with pytest.raises(PrometheusError, match=f"127.0.0.1:{prometheus.port}"):
            await client.query(MEMORY_QUERY)
    finally:
        await client.close()


def node_table(*names: str) -> NodeTable:
    table = NodeTable()
    for name in names:
        table.upsert_node(make_node(name).exactly(cpu="4", memory="16Gi").obj())
    return table


def exposition(metrics: SchedulerMetrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    text = generate_latest(metrics.registry()).decode()
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


async def test_usage_provider_refreshes_fails_and_recovers(node_exporter: NodeExporterStub, prometheus: PrometheusServer) -> None:
    populate(node_exporter)
    await asyncio.to_thread(prometheus.wait_for_series, "node_memory_MemTotal_bytes", len(CPU))
    await asyncio.to_thread(wait_settled, prometheus, FAST_CPU, CPU)

    tasks: set[asyncio.Task[None]] = set()

    def spawn(coro: Coroutine[Any, Any, None], what: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=what)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    clock = RealClock()
    metrics = SchedulerMetrics()
    service = UsageService(clock, spawn, None, metrics)
    provider = service.provider(PrometheusArgs(address=prometheus.url, refreshInterval=1, timeout=1, queries={"cpu": FAST_CPU}))
    cpu, memory = Series("cpu"), Series("memory")
    averaged = Series("cpu", "avg", 60.0)  # the plugins' default aggregation: a subquery the server must accept
    for s in (cpu, memory, averaged):
        provider.require(s)
    table = node_table(*CPU, "node-without-exporter")
    sources = {(("source", prometheus.url),)}
    # The averaged subquery answers once one of its 15 s steps has a full rate window: until then
    # the answer is empty, which the provider reports as a problem (checked after the restart).
    await asyncio.to_thread(prometheus.wait_for_series, averaged.render(FAST_CPU), len(CPU))
    try:
        await provider.refresh()
        assert provider.problem == "" and provider.refreshes == 1 and not provider.failures
        assert provider.series[averaged].error == "" and provider.series[averaged].query.startswith("avg_over_time((1 - avg by")
        col = provider.column(cpu, table)
        assert close(dict(zip(CPU, col.value[:3].tolist(), strict=True)), CPU)
        assert np.isnan(col.value[3]) and col.fetched[3] == -np.inf  # no series for that node
        fetched_before = col.fetched[:3].copy()
        assert np.all(np.abs(fetched_before - clock.now()) < 5)
        assert close(dict(zip(MEMORY, provider.column(memory, table).value[:3].tolist(), strict=True)), MEMORY, 1e-6)
        assert set(exposition(metrics, "kubesched_usage_available")) == sources
        assert list(exposition(metrics, "kubesched_usage_available").values()) == [1.0]

        # The background refresh on the real event loop's clock, every refreshInterval.
        service.start()
        await asyncio.wait_for(_until(lambda: provider.refreshes >= 3), timeout=10)

        # Outage: refreshes complete without raising, record the problem, keep the old values.
        prometheus.stop()
        failures_at = sum(provider.failures.values())
        await provider.refresh()
        assert provider.problem, "a refresh against a stopped Prometheus recorded no problem"
        assert f"127.0.0.1:{prometheus.port}" in provider.problem
        assert provider.problem_since is not None
        assert sum(provider.failures.values()) >= failures_at + 3  # one per series
        assert set(provider.failures) == {"cpu", "memory", "cpu:avg_1m"}
        col = provider.column(cpu, table)
        assert close(dict(zip(CPU, col.value[:3].tolist(), strict=True)), CPU)  # kept...
        held_since = col.fetched[:3].copy()
        assert list(exposition(metrics, "kubesched_usage_available").values()) == [0.0]
        failed = exposition(metrics, "kubesched_usage_query_failures_total")
        assert failed[(("series", "cpu"), ("source", prometheus.url))] >= 1
        await asyncio.wait_for(_until(lambda: sum(provider.failures.values()) >= failures_at + 6), timeout=10)  # the timer goes on
        col = provider.column(cpu, table)
        assert np.array_equal(col.fetched[:3], held_since) and close(dict(zip(CPU, col.value[:3].tolist(), strict=True)), CPU)  # ...aging
        assert clock.now() - held_since.max() >= 1.0

        # Recovery on the same address.
        await asyncio.to_thread(prometheus.start)
        # A Prometheus that just restarted may answer with no series until it has scraped again:
        # that is reported as a problem too, until the background refreshes get data.
        await asyncio.wait_for(_until(lambda: provider.problem == ""), timeout=20)
        assert provider.problem_since is None
        assert list(exposition(metrics, "kubesched_usage_available").values()) == [1.0]
        # Right after the restart the 5 s window still holds the gap: rate() under-states idle time.
        await asyncio.to_thread(wait_settled, prometheus, FAST_CPU, CPU)
        settled_at = clock.now()
        await asyncio.wait_for(_until(lambda: bool(np.all(provider.column(cpu, table).fetched[:3] > settled_at))), timeout=10)
        assert close(dict(zip(CPU, provider.column(cpu, table).value[:3].tolist(), strict=True)), CPU, 0.05)
    finally:
        await service.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _until(check: Any, interval: float = 0.1) -> None:
    while not check():
        await asyncio.sleep(interval)
