"""MultiDimensionalScore: each dimension (cpu and memory headroom, latency label, topology distance
to peers) and their weighted mean on hand-computed values, what missing information scores, and
args. Usage comes from a real UsageService whose Prometheus is FakeTransport (the unit-test
stand-in)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.api.objects import Node, Pod
from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.plugins.multidimensionalscore import (
    MultiDimensionalScore,
    MultiDimensionalScoreArgs,
    parse_latency,
)

from .usagekit import UsageHandle, scores

ZONE = "topology.kubernetes.io/zone"
RACK = "topology.kubernetes.io/rack"
LATENCY = "kubesched.io/network-latency-ms"
INSTANCE = "app.kubernetes.io/instance"


def make(args: dict[str, Any], nodes: list[Node], pods: list[Pod] | None = None) -> tuple[MultiDimensionalScore, UsageHandle]:
    handle = UsageHandle(cache_with(nodes, pods or []))
    return MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(args), handle), handle


def only(dimension: str) -> dict[str, Any]:
    return {"weights": {d: (1 if d == dimension else 0) for d in ("cpu", "memory", "latency", "topology")}}


def dims(plugin: MultiDimensionalScore, handle: UnitHandle, pi: PodInfo) -> dict[str, dict[str, float]]:
    table = handle.cache.table
    names = list(table.index)
    rows = np.array([table.row_of(n) for n in names], dtype=np.intp)
    out = plugin.dimensions(CycleState(), pi, table, rows)
    return {d: {n: round(float(v), 3) for n, v in zip(names, values, strict=True)} for d, values in out.items()}


# --- args ----------------------------------------------------------------------------------------


def test_defaults_are_the_articles_weights() -> None:
    a = MultiDimensionalScoreArgs()
    assert (a.weights.cpu, a.weights.memory, a.weights.latency, a.weights.topology) == (0.4, 0.3, 0.2, 0.3)
    assert (a.latency_label, a.peer_label, a.rack_label, a.zone_label) == (LATENCY, INSTANCE, RACK, ZONE)
    assert a.max_latency_ms == 500


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"weights": {"cpu": -1}}, "greater than or equal to 0"),
        ({"weights": {"cpu": 0, "memory": 0, "latency": 0, "topology": 0}}, "at least one"),
        ({"weights": {"disk": 1}}, "Extra inputs"),
        ({"rackLabel": "not a key!"}, "not a valid label key"),
        ({"peerLabel": "/x"}, "prefix part must be non-empty"),
        ({"maxLatencyMs": 0}, "greater than 0"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MultiDimensionalScoreArgs.model_validate(args)


def test_without_cpu_or_memory_weight_nothing_is_read_from_prometheus() -> None:
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(only("latency")), UnitHandle(cache_with([])))
    assert plugin.reader is None


# --- cpu and memory ------------------------------------------------------------------------------

HEADROOM_NODES = [make_node(n).capacity(cpu="4", memory="8Gi").obj() for n in ("a", "b", "c")]
POD = make_pod("p").req(cpu="400m", memory="1Gi").info()  # estimated 340m (8.5%) and 0.7Gi (8.75%)


async def test_headroom_is_100_minus_estimated_utilization() -> None:
    plugin, handle = make({}, HEADROOM_NODES, [make_pod("old").req(cpu="1", memory="2Gi").node("c").obj()])
    handle.prom.set("cpu", {"a": 0.2, "b": 0.6})
    handle.prom.set("memory", {"a": 0.5, "b": 0.1})
    await handle.refresh()
    got = dims(plugin, handle, POD)
    # c has no metrics: FailOpen falls back to requests, (1000+400)/4000 and (2+1)/8 Gi.
    assert got == {"cpu": {"a": 71.5, "b": 31.5, "c": 65.0}, "memory": {"a": 41.25, "b": 81.25, "c": 62.5}}
    # Latency and topology say nothing here, so they drop out: a (0.4*71.5 + 0.3*41.25)/0.7 = 58.5
    # b (0.4*31.5 + 0.3*81.25)/0.7 = 52.8; c (0.4*65 + 0.3*62.5)/0.7 = 63.9
    assert scores(plugin, handle, POD) == {"a": 59, "b": 53, "c": 64}


async def test_missing_metrics_fail_closed_scores_zero_headroom() -> None:
    plugin, handle = make({"missingMetrics": "FailClosed"}, HEADROOM_NODES)
    handle.prom.set("cpu", {"a": 0.2})
    handle.prom.set("memory", {"a": 0.5})
    await handle.refresh()
    got = dims(plugin, handle, POD)
    assert got == {"cpu": {"a": 71.5, "b": 0.0, "c": 0.0}, "memory": {"a": 41.25, "b": 0.0, "c": 0.0}}


async def test_stale_metrics_fall_back_and_an_outage_is_reported() -> None:
    plugin, handle = make({}, HEADROOM_NODES)
    handle.prom.set("cpu", {"a": 0.9, "b": 0.9, "c": 0.9})
    handle.prom.set("memory", {"a": 0.9, "b": 0.9, "c": 0.9})
    await handle.refresh(at=0.0)
    handle.prom.down = "timeout"
    await handle.refresh(at=200.0)
    got = dims(plugin, handle, POD)
    assert got["cpu"] == {"a": 90.0, "b": 90.0, "c": 90.0}  # 400m of 4 cores requested
    assert [e[2] for e in handle.events] == ["UsageMetricsUnavailable"]


# --- latency -------------------------------------------------------------------------------------


def latency_nodes() -> list[Node]:
    values = {"l0": "0", "l100": "100", "l600": "600", "lms": "12ms", "lbad": "fast"}
    return [make_node(n).label({LATENCY: v}).obj() for n, v in values.items()] + [make_node("lnone").obj()]


def test_parse_latency() -> None:
    assert [parse_latency(v) for v in ("0", "2.5", "12ms", " 7 ")] == [0.0, 2.5, 12.0, 7.0]
    assert all(np.isnan(parse_latency(v)) for v in ("", "fast", "-3", "inf", "nan"))


def test_latency_scores_and_missing_labels_score_the_mean() -> None:
    handle = UnitHandle(cache_with(latency_nodes()))
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(only("latency")), handle)
    # 0 -> 100, 100 -> 80, 600 (over 500) -> 0, 12 -> 97.6; unreadable and absent: the mean 69.4
    expected = {"l0": 100, "l100": 80, "l600": 0, "lms": 98, "lbad": 69, "lnone": 69}
    assert scores(plugin, handle, POD) == expected


def test_max_latency_and_a_custom_label() -> None:
    args = {**only("latency"), "maxLatencyMs": 200, "latencyLabel": "example.com/rtt"}
    cache = cache_with([make_node("x").label({"example.com/rtt": "100"}).obj(), make_node("y").label({"example.com/rtt": "50"}).obj()])
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(args), UnitHandle(cache))
    assert scores(plugin, UnitHandle(cache), POD) == {"x": 50, "y": 75}


def test_no_latency_labels_anywhere_drops_the_dimension() -> None:
    cache = cache_with([make_node("x").obj(), make_node("y").obj()])
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(only("latency")), UnitHandle(cache))
    assert dims(plugin, UnitHandle(cache), POD) == {}
    assert scores(plugin, UnitHandle(cache), POD) == {"x": 50, "y": 50}


# --- topology ------------------------------------------------------------------------------------


def topology_nodes() -> list[Node]:
    return [
        make_node("n1").label({ZONE: "z1", RACK: "r1"}).obj(),
        make_node("n2").label({ZONE: "z1", RACK: "r1"}).obj(),
        make_node("n3").label({ZONE: "z1", RACK: "r2"}).obj(),
        make_node("n4").label({ZONE: "z2", RACK: "r1"}).obj(),  # rack r1 of another zone: another rack
        make_node("n5").label({ZONE: "z2"}).obj(),
        make_node("n6").obj(),
    ]


WEB = make_pod("incoming").label({INSTANCE: "web"}).info()


def test_distance_to_the_nearest_peer() -> None:
    pods = [
        make_pod("peer").label({INSTANCE: "web"}).node("n1").obj(),
        make_pod("stranger").ns("other").label({INSTANCE: "web"}).node("n5").obj(),  # not a peer: namespace
        make_pod("db").label({INSTANCE: "db"}).node("n3").obj(),  # not a peer: another instance
    ]
    cache = cache_with(topology_nodes(), pods)
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(only("topology")), UnitHandle(cache))
    # n1 runs a peer (0), n2 shares its rack (1), n3 its zone (2), the rest are farther (3)
    assert scores(plugin, UnitHandle(cache), WEB) == {"n1": 100, "n2": 67, "n3": 33, "n4": 0, "n5": 0, "n6": 0}
    cache.add_pod(make_pod("peer-2").label({INSTANCE: "web"}).node("n5").info())
    assert scores(plugin, UnitHandle(cache), WEB) == {"n1": 100, "n2": 67, "n3": 33, "n4": 33, "n5": 100, "n6": 0}


def test_custom_topology_labels() -> None:
    nodes = [make_node("a").label({"dc/row": "1", "dc/room": "x"}).obj(), make_node("b").label({"dc/row": "1", "dc/room": "x"}).obj(),
             make_node("c").label({"dc/row": "2", "dc/room": "x"}).obj(), make_node("d").label({ZONE: "x"}).obj()]
    cache = cache_with(nodes, [make_pod("peer").label({"team/app": "api"}).node("a").obj()])
    args = {**only("topology"), "rackLabel": "dc/row", "zoneLabel": "dc/room", "peerLabel": "team/app"}
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(args), UnitHandle(cache))
    incoming = make_pod("incoming").label({"team/app": "api"}).info()
    assert scores(plugin, UnitHandle(cache), incoming) == {"a": 100, "b": 67, "c": 33, "d": 0}


def test_no_peers_drops_the_dimension() -> None:
    cache = cache_with(topology_nodes(), [make_pod("peer").label({INSTANCE: "web"}).node("n1").obj()])
    plugin = MultiDimensionalScore(MultiDimensionalScoreArgs.model_validate(only("topology")), UnitHandle(cache))
    assert dims(plugin, UnitHandle(cache), make_pod("loner").info()) == {}
    assert dims(plugin, UnitHandle(cache), make_pod("first").label({INSTANCE: "new"}).info()) == {}


# --- all four ------------------------------------------------------------------------------------


async def test_weighted_mean_of_all_dimensions() -> None:
    nodes = [
        make_node("a").capacity(cpu="4", memory="8Gi").label({LATENCY: "100", ZONE: "z1"}).obj(),
        make_node("b").capacity(cpu="4", memory="8Gi").label({LATENCY: "0", ZONE: "z2"}).obj(),
    ]
    plugin, handle = make({}, nodes, [make_pod("peer").label({INSTANCE: "web"}).node("a").obj()])
    handle.prom.set("cpu", {"a": 0.2, "b": 0.6})
    handle.prom.set("memory", {"a": 0.5, "b": 0.1})
    await handle.refresh()
    incoming = make_pod("p").req(cpu="400m", memory="1Gi").label({INSTANCE: "web"}).info()
    # a: (0.4*71.5 + 0.3*41.25 + 0.2*80 + 0.3*100) / 1.2 = 72.5 (72.48)
    # b: (0.4*31.5 + 0.3*81.25 + 0.2*100 + 0.3*0) / 1.2 = 47.4
    assert scores(plugin, handle, incoming) == {"a": 72, "b": 47}
