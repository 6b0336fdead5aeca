"""The metrics under kube-scheduler's names, rendered by prometheus_client's own parser."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubesched.framework.interface import ClusterEvent
from kubesched.observe.metrics import FOLD_AT, BatchedHistogram, SchedulerMetrics
from unit.simkit import node, pod, run


def samples(metrics: SchedulerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry()).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_histogram_buckets_are_inclusive_and_cumulative():
    h = BatchedHistogram("x_seconds", "doc", ["a"], [0.1, 1.0])
    for v in (0.05, 0.1, 0.5, 1.0, 7.0):
        h.observe(("l",), v)
    family = h.collect()
    got = {(s.name, s.labels.get("le")): s.value for s in family.samples}
    assert got[("x_seconds_bucket", "0.1")] == 2  # 0.05 and exactly 0.1
    assert got[("x_seconds_bucket", "1")] == 4
    assert got[("x_seconds_bucket", "+Inf")] == 5
    assert got[("x_seconds_count", None)] == 5
    assert abs(got[("x_seconds_sum", None)] - 8.65) < 1e-9


def test_histogram_folds_long_buffers_without_losing_observations():
    h = BatchedHistogram("y", "doc", [], [1.0])
    for _ in range(FOLD_AT * 2 + 3):
        h.observe((), 0.5)
    assert len(h._pending[()]) == 3  # folded twice already
    assert h.count(()) == FOLD_AT * 2 + 3
    family = h.collect()
    assert {s.labels.get("le"): s.value for s in family.samples if s.name == "y_bucket"}["1"] == FOLD_AT * 2 + 3


def test_event_labels_follow_kube_names():
    assert ClusterEvent("Node", "Add").label == "NodeAdd"
    assert ClusterEvent("Node", "UpdateNodeTaint").label == "NodeTaintChange"
    assert ClusterEvent("Pod", "Delete").label == "AssignedPodDelete"


def test_a_simulation_fills_the_kube_scheduler_metrics():
    objects = [node("n1", cpu="1"), pod("a", cpu="600m"), pod("b", cpu="600m")]
    result, sim = run(objects)
    assert result.pods_scheduled == 1
    got = samples(sim.scheduler.metrics)
    assert got[("scheduler_schedule_attempts_total", (("profile", "default-scheduler"), ("result", "scheduled")))] == 1
    assert got[("scheduler_schedule_attempts_total", (("profile", "default-scheduler"), ("result", "unschedulable")))] >= 1
    assert got[("scheduler_pending_pods", (("queue", "unschedulable"),))] == 1
    assert got[("scheduler_pending_pods", (("queue", "active"),))] == 0
    filter_count = [v for (name, labels), v in got.items()
                    if name == "scheduler_framework_extension_point_duration_seconds_count"
                    and ("extension_point", "Filter") in labels]
    assert sum(filter_count) >= 2
    assert got[("scheduler_queue_incoming_pods_total", (("event", "PodAdd"), ("queue", "active")))] == 2
    assert got[("scheduler_queue_incoming_pods_total", (("event", "ScheduleAttemptFailure"), ("queue", "unschedulable")))] >= 1
    # The first cycle of every ten has its plugins timed one by one.
    plugin_counts = {labels: v for (name, labels), v in got.items() if name == "scheduler_plugin_execution_duration_seconds_count"}
    assert any(("plugin", "NodeResourcesFit") in labels for labels in plugin_counts)


def test_preemption_is_counted():
    objects = [
        node("n1", cpu="1"),
        pod("low", cpu="800m", priority=1),
        pod("high", cpu="800m", priority=100, annotations={"sim.kubesched.io/arrival": "5s"}),
    ]
    result, sim = run(objects)
    assert result.preempted == ["default/low"]
    got = samples(sim.scheduler.metrics)
    assert got[("scheduler_preemption_attempts_total", ())] == 1
    assert got[("scheduler_preemption_victims_sum", ())] == 1
