"""`kubesched run` with the LoadAware plugin against a real kube-apiserver and a real Prometheus.

A node-exporter stub reports one node hot (90% CPU) and the others cool; Prometheus scrapes it
every second. The hot node is the largest, so every resource-based score prefers it: only
LoadAware keeps pods off it. Prometheus is then stopped mid-run: with missingMetrics FailOpen
scheduling goes on (on the last values while they are fresh, blind once they are stale), the
outage shows in kubesched's /metrics, and a restart brings everything back. With FailClosed, a
pod arriving once the values are stale waits, unschedulable, until Prometheus answers again.

The CPU query is the default one with a 5 s rate window (1 m would take a minute to fill), and
aggregation is `latest`: the plugins' default (avg over 1 m, 15 s steps) has no points yet on a
Prometheus that started seconds ago.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import Kubesched, kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.prometheus import CPU_QUERY, NodeExporterStub, PrometheusServer
from integration.harness.rest import JSON, Kube
from kubesched.plugins.loadaware import NO_METRICS
from kubesched.tools.devcluster.procs import wait_until

SCHEDULER = "kubesched"
FAST_CPU = CPU_QUERY.format(window="5s")
HOT, COOL = 0.9, (0.1, 0.15, 0.2)


def loadaware_profile(prometheus_url: str, **args: Any) -> dict[str, Any]:
    return {
        "plugins": {"multiPoint": {"enabled": [{"name": "LoadAware", "weight": 10}]}},
        "pluginConfig": [
            {
                "name": "LoadAware",
                "args": {
                    "prometheus": {"address": prometheus_url, "refreshInterval": "1s", "timeout": "1s", "queries": {"cpu": FAST_CPU}},
                    "aggregation": "latest",
                    **args,
                },
            }
        ],
    }


def cluster(make_node: Callable[..., JSON], exporter: NodeExporterStub) -> tuple[str, list[str]]:
    """One hot node, the largest (resource scores prefer it), and three cool ones; all exported."""
    hot = make_node(cpu="16", memory="64Gi")["metadata"]["name"]
    cool = [make_node(cpu="4", memory="16Gi")["metadata"]["name"] for _ in COOL]
    exporter.add_node(hot, cpu=HOT, memory=0.3)
    for name, cpu in zip(cool, COOL, strict=True):
        exporter.add_node(name, cpu=cpu, memory=0.3)
    return hot, cool


def wait_prometheus_ready(prometheus: PrometheusServer, hot: str, cool: list[str]) -> None:
    """Until Prometheus's answer to the CPU query is what the exporter says (its rate window full)."""
    prometheus.wait_for_values(FAST_CPU, {hot: HOT, **dict(zip(cool, COOL, strict=True))}, tolerance=0.02, timeout=30)


def wait_metric(ks: Kubesched, what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
    try:
        wait_until(check, timeout=timeout, what=what, watch=[ks.process])
    except Exception as e:
        raise AssertionError(f"{e}\n--- kubesched log:\n{ks.log()}") from None


def usage(ks: Kubesched, name: str, **labels: str) -> float:
    return ks.metric(f"kubesched_usage_{name}", **labels)


def bind_all(kube: Kube, ks: Kubesched, namespace: str, names: list[str], timeout: float = 20.0) -> dict[str, str]:
    for name in names:
        create_pod(kube, name, namespace, cpu="100m", memory="128Mi", scheduler_name=SCHEDULER)
    placed = {}
    for name in names:
        try:
            placed[name] = wait_bound(kube, namespace, name, timeout=timeout)
        except Exception as e:
            pod = kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/{name}")
            conditions = (pod or {}).get("status", {}).get("conditions")
            raise AssertionError(f"{name} not bound: {e}; conditions {conditions}\n--- kubesched log:\n{ks.log()}") from None
    return placed


def events(kube: Kube, namespace: str, reason: str) -> list[JSON]:
    return [e for e in kube.list(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events") if e.get("reason") == reason]


def test_pods_avoid_the_hot_node_and_a_prometheus_outage_fails_open(
    control_plane: ControlPlane,
    kube: Kube,
    namespace: str,
    make_node: Callable[..., JSON],
    node_exporter: NodeExporterStub,
    prometheus: PrometheusServer,
    tmp_path: Path,
) -> None:
    hot, cool = cluster(make_node, node_exporter)
    wait_prometheus_ready(prometheus, hot, cool)
    stale_after = 6.0
    profile = loadaware_profile(prometheus.url, staleAfter=f"{stale_after:g}s")
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig, extra_profile=profile)) as ks:
        wait_metric(ks, "usage available", lambda: usage(ks, "available") == 1 and usage(ks, "nodes", series="cpu") >= 4)
        assert usage(ks, "available", source=prometheus.url) == 1
        assert usage(ks, "query_failures_total") == 0

        # 1. Metrics flowing: nothing on the hot node, though every other score prefers it.
        placed = bind_all(kube, ks, namespace, [f"before-{i}" for i in range(8)])
        assert hot not in placed.values(), placed
        assert set(placed.values()) <= set(cool), placed

        # 2. Prometheus goes away: the outage shows, failures count up, scheduling goes on.
        prometheus.stop()
        wait_metric(ks, "usage unavailable", lambda: usage(ks, "available") == 0)
        # Still fresh (a refresh or two old): the last values keep the hot node out.
        age = usage(ks, "oldest_value_age_seconds", series="cpu")
        assert age < stale_after - 2, f"usage already {age:.1f} s old when the outage showed"
        placed = bind_all(kube, ks, namespace, [f"outage-{i}" for i in range(4)])
        assert hot not in placed.values(), placed
        failures = usage(ks, "query_failures_total", series="cpu")
        assert failures >= 1 and usage(ks, "query_failures_total", series="memory") >= 1
        wait_metric(ks, "failures counting up", lambda: usage(ks, "query_failures_total", series="cpu") >= failures + 2)
        # Stale: FailOpen passes every node (and says so once, in an event); pods keep binding.
        wait_metric(ks, "values stale", lambda: usage(ks, "oldest_value_age_seconds", series="cpu") > stale_after + 1)
        blind = bind_all(kube, ks, namespace, [f"blind-{i}" for i in range(4)])
        warnings = events(kube, namespace, "UsageMetricsUnavailable")
        assert warnings, f"no UsageMetricsUnavailable event\n{ks.log()}"
        assert "missingMetrics: FailOpen" in warnings[0]["note"] and prometheus.url in warnings[0]["note"], warnings[0]["note"]
        assert warnings[0]["type"] == "Warning"
        # Nothing holds the largest node back now.
        assert hot in blind.values(), blind
        assert ks.running()

        # 3. Back: available again, fresh values, the hot node avoided again.
        prometheus.start()
        wait_metric(ks, "usage available again", lambda: usage(ks, "available") == 1)
        wait_prometheus_ready(prometheus, hot, cool)
        settled = time.monotonic()  # values fetched before this may still hold the outage's gap
        wait_metric(ks, "values fetched since", lambda: usage(ks, "oldest_value_age_seconds", series="cpu") < time.monotonic() - settled)
        after = bind_all(kube, ks, namespace, [f"after-{i}" for i in range(6)])
        assert hot not in after.values(), after
        assert ks.metric("scheduler_schedule_attempts_total", result="error", profile=SCHEDULER) == 0


def test_fail_closed_holds_pods_while_usage_is_stale(
    control_plane: ControlPlane,
    kube: Kube,
    namespace: str,
    make_node: Callable[..., JSON],
    node_exporter: NodeExporterStub,
    prometheus: PrometheusServer,
    tmp_path: Path,
) -> None:
    hot, cool = cluster(make_node, node_exporter)
    wait_prometheus_ready(prometheus, hot, cool)
    stale_after = 3.0
    profile = loadaware_profile(prometheus.url, staleAfter=f"{stale_after:g}s", missingMetrics="FailClosed")
    with run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig, extra_profile=profile)) as ks:
        wait_metric(ks, "usage available", lambda: usage(ks, "available") == 1 and usage(ks, "nodes", series="cpu") >= 4)
        placed = bind_all(kube, ks, namespace, ["first"])
        assert placed["first"] in cool

        prometheus.stop()
        wait_metric(ks, "values stale", lambda: usage(ks, "oldest_value_age_seconds", series="cpu") > stale_after + 1)
        create_pod(kube, "held", namespace, cpu="100m", memory="128Mi", scheduler_name=SCHEDULER)
        path = f"/api/v1/namespaces/{namespace}/pods/held"

        def unschedulable(p: JSON) -> bool:
            return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in p["status"].get("conditions", []))

        pod = kube.wait_for(path, unschedulable, timeout=20)
        cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert cond["reason"] == "Unschedulable"
        assert NO_METRICS in cond["message"], cond["message"]
        assert cond["message"].startswith(f"0/{len(kube.list('/api/v1/nodes'))} nodes are available: ")
        failed = [e for e in events(kube, namespace, "FailedScheduling") if e["regarding"]["name"] == "held"]
        assert failed and NO_METRICS in failed[0]["note"], failed
        warnings = events(kube, namespace, "UsageMetricsUnavailable")
        assert warnings and "missingMetrics: FailClosed" in warnings[0]["note"], warnings
        time.sleep(2)  # more refreshes fail, more attempts: still held
        assert not kube.get(path)["spec"].get("nodeName")
        assert usage(ks, "available") == 0

        # Usage comes back: the pod is retried on the usage update and lands on a cool node.
        prometheus.start()
        try:
            node = wait_bound(kube, namespace, "held", timeout=30)
        except Exception as e:
            raise AssertionError(f"held pod not bound after Prometheus came back: {e}\n{kube.get(path)['status']}\n{ks.log()}") from None
        assert node in cool, (node, hot)
        assert usage(ks, "available") == 1
