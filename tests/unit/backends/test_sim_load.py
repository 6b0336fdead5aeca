"""Simulations with real usage: the load figures in the result, pending times, the scrape timers, and
the simulated Prometheus feeding load-aware plugins."""

from __future__ import annotations

import asyncio

import pytest

from builders import make_node, make_pod
from kubesched.backends.sim.engine import SimResult, Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.backends.sim.scenarios import load_scenario
from kubesched.config.parse import default_config, parse_config
from tests.unit.simkit import profile_config


def annotated(obj: dict, **annotations: str) -> dict:
    obj["metadata"].setdefault("annotations", {}).update({f"sim.kubesched.io/{k.replace('_', '-')}": v
                                                         for k, v in annotations.items()})
    return obj


def simulate(objects: list[dict], config: dict | None = None, seed: int = 0) -> tuple[SimResult, Simulation]:
    cfg = parse_config(config) if config else default_config()
    sim = Simulation(load_objects(objects), cfg, seed=seed)
    result = asyncio.run(asyncio.wait_for(sim.run(), timeout=60))
    return result, sim


def hot_and_cold() -> list[dict]:
    return [
        annotated(make_node("hot").capacity(cpu="10", memory="10Gi").without("ephemeral-storage").manifest(), background_cpu="steady:75%"),
        annotated(make_node("cold").capacity(cpu="10", memory="10Gi").without("ephemeral-storage").manifest(), background_cpu="steady:5%"),
    ]


def test_load_figures_of_a_small_run() -> None:
    pods = [annotated(make_pod(f"p{i}").req(cpu="1", memory="1Gi").manifest(), duration="150", usage_cpu="steady:100%") for i in range(2)]
    result, sim = simulate(hot_and_cold() + pods)
    # Requests alone: one pod on each node. The hot one runs at 85% for the pods' 150 s.
    assert sorted(result.placements.values()) == ["cold", "hot"]
    assert result.virtual_seconds == 150.0
    assert result.hotspot_node_seconds == 150.0
    assert result.node_cpu_util_p99 == 85.0
    assert result.node_cpu_util_stddev == 35.0
    assert result.pending_seconds_p99 == 0.0
    data = result.as_dict()
    for key in ("profile", "pods_total", "pods_scheduled", "pods_unschedulable", "pods_gated", "wall_seconds",
                "pods_per_second", "virtual_seconds", "cycles", "placements", "unschedulable", "preempted",
                "cycle_ms_p50", "cycle_ms_p99", "events", "hotspot_node_seconds", "node_cpu_util_p99",
                "node_cpu_util_stddev", "pending_seconds_p99"):
        assert key in data
    assert sim.usage.times.tolist() == [float(t) for t in range(0, 151, 15)]


def test_pending_time_counts_until_bind_or_the_end() -> None:
    objects = [
        make_node("n").capacity(cpu="2").without("ephemeral-storage").manifest(),
        annotated(make_pod("first").req(cpu="2", memory="100Mi").manifest(), duration="100"),
        annotated(make_pod("second").req(cpu="2", memory="100Mi").manifest(), arrival="10", duration="50"),
        annotated(make_pod("never").req(cpu="3", memory="100Mi").manifest(), arrival="20"),
    ]
    result, sim = simulate(objects)
    uid = {sp.pod.metadata.name: sp.pod.metadata.uid for sp in sim.input.pods}
    assert sim.cluster.bound_at[uid["second"]] - sim.cluster.created_at[uid["second"]] == pytest.approx(90.0, abs=1.0)
    assert uid["never"] not in sim.cluster.bound_at
    assert result.pods_unschedulable == 1
    # never: created at 20, pending till the run ends (150 = 100 + 50) -> 130 s, the largest.
    assert result.virtual_seconds == 150.0
    assert result.pending_seconds_p99 == pytest.approx(90 + 0.98 * 40, abs=1.0)


def test_a_run_with_only_scrape_timers_left_ends() -> None:
    result, sim = simulate(
        [
            make_node("n").without("ephemeral-storage").manifest(),
            make_pod("p").req(cpu="100m", memory="100Mi").manifest(),
            annotated(make_pod("late").req(cpu="100m", memory="100Mi").manifest(), arrival="40"),
        ]
    )
    assert result.pods_scheduled == 2
    assert result.virtual_seconds == 40.0
    assert sim.usage.samples == 3  # 0, 15, 30; the timer for 45 is cancelled at the end
    assert sim.cluster.external_pending == 0


def test_scrape_interval_from_the_simulation_configmap() -> None:
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubesched-simulation"},
                "data": {"scrapeInterval": "1m", "prometheusOutages": "0-90"}}
    result, sim = simulate(
        [
            settings,
            make_node("n").without("ephemeral-storage").manifest(),
            annotated(make_pod("p").req(cpu="100m", memory="100Mi").manifest(), duration="300"),
        ]
    )
    assert sim.usage.times.tolist() == [0.0, 60.0, 120.0, 180.0, 240.0, 300.0]
    assert sim.prometheus.outages == [(0.0, 90.0)]
    assert result.pods_scheduled == 1


LOAD_AWARE = profile_config({
    "schedulerName": "default-scheduler",
    "plugins": {"multiPoint": {"enabled": [{"name": "LoadAware", "weight": 5}]}},
})


def test_load_aware_profile_reads_the_simulated_prometheus() -> None:
    pods = [
        annotated(make_pod(f"p{i}").req(cpu="500m", memory="100Mi").manifest(), arrival=str(300 + 60 * i), duration="600") for i in range(4)
    ]
    result, sim = simulate(hot_and_cold() + pods, LOAD_AWARE)
    assert result.pods_scheduled == 4
    assert set(result.placements.values()) == {"cold"}
    assert sim.prometheus.queries  # the provider asked, and was answered from the scrapes
    assert result.hotspot_node_seconds == 0.0
    requests_only, _ = simulate(hot_and_cold() + pods)
    assert set(requests_only.placements.values()) == {"hot", "cold"}


def test_flink_burst_makes_hotspots_for_a_requests_only_profile() -> None:
    cluster = load_scenario("flink-burst")
    assert cluster.settings.scrape_interval == 15.0
    assert 250 <= len(cluster.nodes) <= 400 and 1000 <= len(cluster.pods) <= 3000
    result = asyncio.run(Simulation(cluster, default_config()).run())
    assert result.pods_unschedulable == 0 and result.pods_scheduled == result.pods_total
    assert result.pending_seconds_p99 < 5
    assert result.hotspot_node_seconds > 10_000
    assert result.node_cpu_util_p99 > 80
