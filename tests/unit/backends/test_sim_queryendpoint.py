"""The simulated Prometheus: kubesched's node-exporter queries answered from the usage model, with lag."""

from __future__ import annotations

import numpy as np
import pytest

from builders import make_node, make_pod
from kubesched.backends.sim.queryendpoint import SimPrometheus
from kubesched.backends.sim.usagemodel import UsageModel, parse_usage
from kubesched.infra.clock import VirtualClock
from kubesched.usage.prometheus import PrometheusError, Sample
from kubesched.usage.queries import DEFAULT_QUERIES, Series

CPU = DEFAULT_QUERIES["cpu"]
MEMORY = DEFAULT_QUERIES["memory"]


class World:
    """Two 4-CPU nodes scraped every 15 s; `at(t)` runs the scrapes up to t and stops there."""

    def __init__(self, outages: list[tuple[float, float]] | None = None, **kwargs) -> None:
        self.clock = VirtualClock()
        self.model = UsageModel(
            self.clock,
            [
                make_node("a").capacity(memory="8Gi").without("pods", "ephemeral-storage").obj(),
                make_node("b").capacity(memory="8Gi").without("pods", "ephemeral-storage").obj(),
            ],
            **kwargs,
        )
        self.prom = SimPrometheus(self.model, self.clock, outages=outages or [])
        self.model.start()

    def at(self, t: float) -> World:
        while (nxt := self.clock.next_time()) is not None and nxt <= t:
            self.clock.advance_to(nxt)
            self.clock.run_due()
        self.clock.advance_to(t)
        return self

    async def values(self, promql: str) -> dict[str, float]:
        samples = await self.prom.query(promql)
        assert all(s.timestamp == self.clock.now() for s in samples)
        return {s.labels["instance"]: s.value for s in samples}


async def test_cpu_rate_lags_a_bind() -> None:
    w = World()
    w.at(100).model.pod_started(make_pod("p").uid("p").req(cpu="1", memory="2Gi").obj(), "a")
    assert await w.at(100).values(CPU) == {"a": 0.0, "b": 0.0}
    # Window (55, 115]: scrapes 60..105; of the three intervals only the last saw the pod, a third of it.
    partial = (await w.at(115).values(CPU))["a"]
    assert partial == pytest.approx(0.25 / 9)
    # (70, 130]: 75..120, intervals ending at 90 (nothing), 105 (a third), 120 (all of it).
    assert (await w.at(130).values(CPU))["a"] == pytest.approx(0.25 * (1 / 3 + 1) / 3)
    assert (await w.at(175).values(CPU))["a"] == pytest.approx(0.25)
    assert (await w.at(175).values(CPU))["b"] == 0.0


async def test_rate_needs_two_scrapes_in_its_window() -> None:
    w = World()
    assert await w.at(0).values(CPU) == {}
    assert await w.at(10).values(CPU) == {}
    assert set(await w.at(15).values(CPU)) == {"a", "b"}
    # A 15s window never holds two scrapes 15s apart (left-open), a 30s one does.
    assert await w.at(200).values(CPU.replace("[1m]", "[15s]")) == {}
    assert set(await w.at(200).values(CPU.replace("[1m]", "[30s]"))) == {"a", "b"}


async def test_rate_window_and_stop() -> None:
    w = World()
    w.at(0).model.pod_started(make_pod("p").uid("p").req(cpu="2", memory="2Gi").obj(), "b")
    w.at(300).model.pod_stopped("p")
    assert (await w.at(300).values(CPU))["b"] == pytest.approx(0.5)
    # 5 minutes later the 1m rate has forgotten the pod, a 10m window still remembers half of it.
    assert (await w.at(600).values(CPU))["b"] == 0.0
    ten = (await w.at(600).values(CPU.replace("[1m]", "[10m]")))["b"]
    assert ten == pytest.approx(0.5 * (300 - 15) / (600 - 15))


async def test_queries_are_whitespace_insensitive() -> None:
    w = World()
    w.at(0).model.pod_started(make_pod("p").uid("p").req(cpu="1", memory="2Gi").obj(), "a")
    w.at(120)
    variants = [
        '1-avg by(instance)(rate(node_cpu_seconds_total{mode="idle"}[1m]))',
        "1 - avg  by (instance) (\n  rate(node_cpu_seconds_total{mode='idle'}[1m])\n)",
        '1 - avg(rate(node_cpu_seconds_total{mode="idle"}[1m])) by (instance)',
    ]
    expected = await w.values(CPU)
    for q in variants:
        assert await w.values(q) == expected
    assert await w.values(" 1-node_memory_MemAvailable_bytes/node_memory_MemTotal_bytes ") == await w.values(MEMORY)


async def test_memory_is_the_last_scrape_within_the_lookback() -> None:
    w = World()
    w.at(100).model.pod_started(make_pod("p").uid("p").req(cpu="1", memory="2Gi").obj(), "a")
    assert (await w.at(104).values(MEMORY))["a"] == 0.0
    assert (await w.at(105).values(MEMORY))["a"] == 0.25
    w.model.stop()  # no more scrapes: the last one goes stale after 5 minutes
    assert (await w.at(404).values(MEMORY))["a"] == 0.25
    assert await w.at(405).values(MEMORY) == {}


async def test_subqueries_aggregate_the_inner_expression() -> None:
    w = World(pod_usage={"p": (parse_usage("diurnal:1,amplitude=0.8,period=10m", "cpu"), None)})
    w.at(0).model.pod_started(make_pod("p").uid("p").req(cpu="1", memory="2Gi").obj(), "a")
    w.at(1000)
    now = 1000.0
    # The inner expression at the multiples of 1m in (now-10m, now].
    inner = []
    for tau in np.arange(420.0, 1001.0, 60.0):
        w.clock._now = tau  # evaluate as of tau: nothing was scraped after it that it could see
        inner.append((await w.values(CPU))["a"])
    w.clock._now = now
    inner_arr = np.array(inner)
    assert len(inner) == 10 and inner_arr.std() > 0.01

    def q(agg: str) -> str:
        return Series("cpu", agg, 600.0, 60.0).render(CPU)

    assert (await w.values(q("avg")))["a"] == pytest.approx(inner_arr.mean())
    assert (await w.values(q("max")))["a"] == pytest.approx(inner_arr.max())
    assert (await w.values(q("stddev")))["a"] == pytest.approx(inner_arr.std())
    # Prometheus's quantile: rank q * (n - 1), linear between the neighbours.
    ordered = np.sort(inner_arr)
    rank = 0.9 * 9
    expected = ordered[8] + (rank - 8) * (ordered[9] - ordered[8])
    assert (await w.values(q("p90")))["a"] == pytest.approx(expected)
    assert (await w.values(q("p50")))["b"] == 0.0
    mem = Series("memory", "max", 300.0, 15.0).render(MEMORY)
    assert (await w.values(mem))["a"] == pytest.approx(2 / 8)


async def test_subquery_skips_times_without_data() -> None:
    query = Series("cpu", "max", 60.0, 15.0).render(CPU)
    w = World()
    w.model.pod_started(make_pod("p").uid("p").req(cpu="4", memory="2Gi").obj(), "a")
    # At 10 the times in (-50, 10] are -45..0: no rate anywhere yet (one scrape at most).
    assert await w.at(10).values(query) == {}
    # At 20 only tau=15 has a rate (scrapes 0 and 15); the rest are skipped, not zeros.
    assert await w.at(20).values(query) == {"a": 1.0, "b": 0.0}


async def test_unknown_query_is_refused_by_name() -> None:
    w = World().at(60)
    for q in ("up", 'sum(rate(container_cpu_usage_seconds_total[5m])) by (node)', "avg_over_time((up)[5m:1m])"):
        with pytest.raises(PrometheusError) as info:
            await w.prom.query(q)
        message = str(info.value)
        assert "answers only kubesched's default node-exporter queries" in message
        assert repr(q) in message


async def test_outage_refuses_connections() -> None:
    w = World(outages=[(500.0, 560.0)])
    await w.at(499).values(CPU)
    with pytest.raises(PrometheusError, match="connection refused"):
        await w.at(500).prom.query(CPU)
    with pytest.raises(PrometheusError, match="connection refused"):
        await w.at(559).prom.query(MEMORY)
    assert set(await w.at(560).values(CPU)) == {"a", "b"}


async def test_samples_are_labelled_by_node() -> None:
    w = World().at(30)
    samples = await w.prom.query(MEMORY)
    assert samples == [Sample({"instance": "a"}, 0.0, 30.0), Sample({"instance": "b"}, 0.0, 30.0)]
    await w.prom.close()
    assert w.prom.queries[MEMORY] == 1


async def test_many_overlapping_outages_are_looked_up_by_bisection() -> None:
    outages = [(float(s), float(s) + 10.0) for s in range(10_000, 0, -100)]  # unsorted on purpose
    outages.append((5_000.0, 5_500.0))  # overlaps several
    w = World(outages=outages)
    assert set(await w.at(99).values(CPU)) == {"a", "b"}
    with pytest.raises(PrometheusError, match="outage from 100s to 110s"):
        await w.at(105).prom.query(CPU)
    assert set(await w.at(110).values(MEMORY)) == {"a", "b"}
    with pytest.raises(PrometheusError, match="outage from 5000s to 5500s"):
        await w.at(5_450).prom.query(CPU)
    assert set(await w.at(5_550).values(MEMORY)) == {"a", "b"}
    with pytest.raises(PrometheusError, match="outage from 10000s to 10010s"):
        await w.at(10_005).prom.query(CPU)


async def test_a_subquery_over_too_many_samples_fails_as_prometheus_does() -> None:
    w = World().at(60)
    huge = Series("cpu", "avg", 10 * 365 * 86400.0, 1.0).render(CPU)
    with pytest.raises(PrometheusError, match="query processing would load too many samples into memory"):
        await w.prom.query(huge)
