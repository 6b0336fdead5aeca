"""LoadAware on the real scheduler and simulated cluster, with usage from FakePrometheus (a
unit-test stand-in for Prometheus; tests/integration/usage use a real server)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_with, make_node, make_pod
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config
from kubesched.framework.events import ASSIGNED_POD, NODE, POD, UNSCHEDULED_POD, ClusterEvent
from kubesched.framework.events import ActionType as A
from kubesched.infra.clock import VirtualClock
from kubesched.plugins.loadaware import NO_METRICS, LoadAware, LoadAwareArgs, parse_thresholds
from kubesched.scheduler.core import Scheduler
from kubesched.usage.service import USAGE_UPDATE, UsageService, UsageTransport

from ..simkit import profile_config
from ..usage.fakeprom import FakePrometheus
from .usagekit import UsageHandle


def load_aware_config(score_only: bool = True, **args: Any) -> dict:
    plugins: dict[str, Any] = {"multiPoint": {"enabled": [{"name": "LoadAware"}]}}
    if score_only:
        plugins["score"] = {"disabled": [{"name": "*"}], "enabled": [{"name": "LoadAware"}]}
    return profile_config({
        "schedulerName": "default-scheduler",
        "plugins": plugins,
        "pluginConfig": [{"name": "LoadAware", "args": {"aggregation": "latest", **args}}],
    })


class Cluster:
    """A simulated cluster run step by step, so a test can change usage between bursts."""

    def __init__(self, nodes: list[dict], config: dict) -> None:
        self.clock = VirtualClock()
        self.prom = FakePrometheus()
        self.sim = SimCluster(self.clock)
        self.sched = Scheduler(
            parse_config(config), self.sim, self.clock, shared=[UsageTransport(lambda a: self.prom)], seed=1
        )
        self.sim.scheduler = self.sched
        for n in load_objects(nodes).nodes:
            self.sched.on_node_add(n)

    async def settle(self) -> None:
        self.clock.run_due()
        await self.sched.drain_bindings()
        while self.sched.schedule_one():
            pass
        await self.sched.drain_bindings()

    async def at(self, t: float) -> None:
        while (nxt := self.clock.next_time()) is not None and nxt <= t:
            self.clock.advance_to(nxt)
            await self.settle()
        self.clock.advance_to(t)
        await self.settle()

    async def create(self, *pods: dict) -> None:
        for p in load_objects(list(pods)).pods:
            self.sim.create_pod(p.pod)
        await self.settle()

    def placements(self) -> dict[str, str]:
        return {p.metadata.name: p.spec.node_name for p in self.sim.pods.values()}

    def message(self, name: str) -> str:
        record = self.sched.recorder.latest.get(f"default/{name}")
        return record.message if record else ""


NODES = [make_node(n).capacity(cpu="16", memory="64Gi").without("ephemeral-storage").manifest() for n in ("a", "b", "c")]


async def test_filter_keeps_pods_off_a_hot_node_and_says_why() -> None:
    c = Cluster(NODES, load_aware_config())
    c.prom.set("cpu", a=0.9, b=0.2, c=0.3)
    c.prom.set("memory", a=0.2, b=0.2, c=0.2)
    await c.at(0)
    await c.create(*(make_pod(f"p{i}").req(cpu="100m", memory="100Mi").manifest() for i in range(6)))
    assert "a" not in c.placements().values()
    c.prom.set("cpu", b=0.95, c=0.7)
    await c.at(30)
    await c.create(make_pod("late").req(cpu="100m", memory="100Mi").manifest())
    assert c.placements()["late"] == ""
    # Usage is resolvable (Unschedulable, as Koordinator's): preemption is tried and finds nothing.
    assert c.message("late").startswith("0/3 nodes are available: 3 node(s) cpu usage exceed threshold. preemption:")


async def test_a_node_annotation_raises_its_threshold() -> None:
    nodes = [
        make_node("a").capacity(cpu="16", memory="64Gi").without("ephemeral-storage").manifest(),
        make_node("b").capacity(cpu="16", memory="64Gi").without("ephemeral-storage").manifest(),
    ]
    nodes[0]["metadata"]["annotations"] = {"kubesched.io/usage-thresholds": "cpu=95"}
    c = Cluster(nodes, load_aware_config())
    c.prom.set("cpu", a=0.8, b=0.9)
    c.prom.set("memory", a=0.1, b=0.1)
    await c.at(0)
    await c.create(make_pod("p").req(cpu="100m", memory="100Mi").manifest())
    assert c.placements()["p"] == "a"


def test_threshold_annotation_forms() -> None:
    assert parse_thresholds("cpu=80, memory=90%") == {"cpu": 80.0, "memory": 90.0}
    assert parse_thresholds('{"cpu": 70}') == {"cpu": 70.0}
    for bad in ("cpu:80", "cpu=180", "[1]", "cpu=hot"):
        with pytest.raises(ValueError):
            parse_thresholds(bad)


async def test_score_is_the_weighted_headroom() -> None:
    c = Cluster(NODES, load_aware_config(resourceWeights={"cpu": 3, "memory": 1}, thresholds={}))
    c.prom.set("cpu", a=0.2, b=0.5, c=0.6)
    c.prom.set("memory", a=0.9, b=0.1, c=0.1)
    await c.at(0)
    await c.create(make_pod("p").req(cpu="0", memory="0").manifest())
    record = c.sched.recorder.latest["default/p"]
    # a: (3*80 + 1*10)/4 = 62.5; b: (3*50 + 90)/4 = 60; c: (3*40 + 90)/4 = 52.5 (less the pod's default estimate)
    assert c.placements()["p"] == "a"
    assert record.top[0][0] == "a"


async def test_a_burst_spreads_by_estimates_instead_of_piling_onto_the_coldest_node() -> None:
    c = Cluster(NODES, load_aware_config(thresholds={}))
    c.prom.set("cpu", a=0.10, b=0.30, c=0.50)
    c.prom.set("memory", a=0.1, b=0.1, c=0.1)
    await c.at(0)
    await c.create(*(make_pod(f"p{i}").req(cpu="1", memory="1Gi").manifest() for i in range(24)))
    counts = {n: list(c.placements().values()).count(n) for n in "abc"}
    # Each pod is estimated at 0.85 CPU (5.3% of a node): a takes ~4 before it looks like b, then they share.
    assert counts["a"] < 16 and counts["b"] > 3 and counts["c"] > 0, counts
    load = c.sched.frameworks["default-scheduler"].filter[-1]
    service = c.sched.shared.find(UsageService)
    assert service is not None and len(service.fresh) == 24
    # Once samples taken settleTime after the burst cover the pods, the estimates are dropped.
    c.prom.set("cpu", a=0.5, b=0.5, c=0.5)
    await c.at(200)
    est = load.reader.read(c.sched.cache.table).estimated["cpu"][:3]  # type: ignore[attr-defined]
    assert np.allclose(est, 0.5)


async def test_fail_open_keeps_scheduling_through_an_outage_and_says_so_once() -> None:
    c = Cluster(NODES, load_aware_config(staleAfter="60s"))
    c.prom.set("cpu", a=0.9, b=0.9, c=0.9)
    c.prom.set("memory", a=0.1, b=0.1, c=0.1)
    await c.at(0)
    c.prom.down = "connection refused"
    await c.at(120)  # the last values are 120 s old: stale
    await c.create(*(make_pod(f"p{i}").req(cpu="100m", memory="100Mi").manifest() for i in range(3)))
    assert all(c.placements().values())
    warnings = [e for e in c.sim.events if e.reason == "UsageMetricsUnavailable"]
    assert len(warnings) == 1 and "connection refused" in warnings[0].message and "FailOpen" in warnings[0].message


async def test_fail_closed_filters_nodes_without_fresh_metrics() -> None:
    c = Cluster(NODES, load_aware_config(staleAfter="60s", missingMetrics="FailClosed"))
    c.prom.set("cpu", a=0.1, b=0.1)  # c never reports
    c.prom.set("memory", a=0.1, b=0.1)
    await c.at(0)
    await c.create(make_pod("p").req(cpu="100m", memory="100Mi").manifest())
    assert c.placements()["p"] in ("a", "b")
    c.prom.down = "timeout"
    await c.at(120)
    await c.create(make_pod("q").req(cpu="100m", memory="100Mi").manifest())
    assert c.placements()["q"] == ""
    assert c.message("q").startswith(f"0/3 nodes are available: 3 {NO_METRICS}.")
    c.prom.down = ""
    await c.at(150)  # the refresh moves the pod back to the active queue
    assert c.placements()["q"] in ("a", "b")


def test_bad_args_are_refused_with_the_field() -> None:
    with pytest.raises(ValueError, match="between 0 and 100"):
        LoadAwareArgs(thresholds={"cpu": 120})
    with pytest.raises(ConfigError, match="missingMetrics"):
        parse_config(load_aware_config(missingMetrics="Sometimes"))
    with pytest.raises(ConfigError, match="aggregation"):
        parse_config(load_aware_config(aggregation="p42"))


def test_events_new_samples_a_pod_gone_and_any_node_change() -> None:
    events = LoadAware(None, UsageHandle(cache_with([]))).events_to_register()
    assert events == [USAGE_UPDATE, ClusterEvent(POD, A.Delete), ClusterEvent(NODE, A.Add), ClusterEvent(NODE, A.Update)]
    covered = [
        (ASSIGNED_POD, A.Delete),
        (UNSCHEDULED_POD, A.Delete),
        (NODE, A.Add),
        (NODE, A.UpdateNodeAnnotation),
        (NODE, A.UpdateNodeAllocatable),
    ]
    for resource, action in covered:
        assert any(isinstance(e, ClusterEvent) and e.covers(ClusterEvent(resource, action)) for e in events), (resource, action)
    assert not any(isinstance(e, ClusterEvent) and e.covers(ClusterEvent(ASSIGNED_POD, A.Add)) for e in events)
