"""The metrics under kube-scheduler's names, rendered by prometheus_client's own parser."""

from __future__ import annotations

import numpy as np
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from builders import make_node, make_pod
from kubesched.framework.events import ASSIGNED_POD, EVENT_UNSCHEDULABLE_TIMEOUT, NODE, ActionType, ClusterEvent
from kubesched.observe.metrics import FOLD_AT, BatchedHistogram, DurationHistogram, SchedulerMetrics
from unit.simkit import run


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
    assert ClusterEvent(NODE, ActionType.Add).label == "NodeAdd"
    assert ClusterEvent(NODE, ActionType.UpdateNodeTaint).label == "NodeUpdateNodeTaint"
    assert ClusterEvent(ASSIGNED_POD, ActionType.Delete).label == "AssignedPodDelete"
    assert EVENT_UNSCHEDULABLE_TIMEOUT.label == "UnschedulableTimeout"


def test_a_simulation_fills_the_kube_scheduler_metrics():
    objects = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("a").req(cpu="600m", memory="100Mi").manifest(),
        make_pod("b").req(cpu="600m", memory="100Mi").manifest(),
    ]
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
    assert got[("scheduler_queue_incoming_pods_total", (("event", "UnscheduledPodAdd"), ("queue", "active")))] == 2
    assert got[("scheduler_queue_incoming_pods_total", (("event", "ScheduleAttemptFailure"), ("queue", "unschedulable")))] >= 1
    # The first cycle of every ten has its plugins timed one by one.
    plugin_counts = {labels: v for (name, labels), v in got.items() if name == "scheduler_plugin_execution_duration_seconds_count"}
    assert any(("plugin", "NodeResourcesFit") in labels for labels in plugin_counts)


def test_preemption_is_counted():
    objects = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("low").req(cpu="800m", memory="100Mi").priority(1).manifest(),
        make_pod("high").req(cpu="800m", memory="100Mi").arrival("5s").priority(100).manifest(),
    ]
    result, sim = run(objects)
    assert result.preempted == ["default/low"]
    got = samples(sim.scheduler.metrics)
    assert got[("scheduler_preemption_attempts_total", ())] == 1
    assert got[("scheduler_preemption_victims_sum", ())] == 1


def test_duration_histogram_quantiles_are_within_the_stated_error_of_the_exact_ones():
    rng = np.random.default_rng(7)
    # Cycle-like durations: log-normal around 200 microseconds, a long tail, a few outliers.
    values = np.concatenate([rng.lognormal(np.log(2e-4), 0.8, 50_000), [3e-7, 5e-2, 4e3]])
    h = DurationHistogram()
    for v in values.tolist():
        h.observe(v)
    exact = np.sort(values)
    bound = 2 ** (1 / 64)  # half a bucket of 2**(1/32)
    for q in (0.001, 0.5, 0.9, 0.99, 0.999):  # q=0 and q=1 are the clamped outliers
        want = exact[min(len(exact) - 1, int(q * len(exact)))]
        got = h.quantile(q)
        assert want / bound <= got <= want * bound, (q, want, got)
    assert h.count == len(values) and abs(h.total - values.sum()) < 1e-6
    assert len(h._counts) == 32 * 32  # fixed, however many cycles are observed


def test_duration_histogram_edges():
    h = DurationHistogram()
    assert h.quantile(0.5) == 0.0
    h.observe(0.0)  # below the range: the first bucket
    h.observe(1e9)  # above it: the last
    assert h.quantile(0.0) < 2e-6
    assert 3000 < h.quantile(0.99) < h.high


def test_sli_attempts_label_is_capped_as_kube_caps_it():
    metrics = SchedulerMetrics()
    for attempts in (1, 14, 15, 16, 1000):
        metrics.scheduled_after(attempts, 1.0)
    got = samples(metrics)
    labels = {dict(k[1])["attempts"] for k in got if k[0] == "scheduler_pod_scheduling_sli_duration_seconds_count"}
    assert labels == {"1", "14", "15+"}
    assert got[("scheduler_pod_scheduling_sli_duration_seconds_count", (("attempts", "15+"),))] == 3


def test_filter_rejections_and_deciding_score_plugins_are_counted():
    objects = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="8").without("ephemeral-storage").manifest(),
        make_node("n3")
        .capacity(cpu="4")
        .without("ephemeral-storage")
        .taints([{"key": "k", "value": "v", "effect": "NoSchedule"}])
        .manifest(),
        make_pod("a").req(cpu="2", memory="100Mi").manifest(),
        make_pod("b").req(cpu="100m", memory="100Mi").manifest(),
    ]
    result, sim = run(objects)
    assert result.pods_scheduled == 2
    got = samples(sim.scheduler.metrics)
    rejected = {dict(labels)["reason"]: v for (name, labels), v in got.items() if name == "kubesched_filter_rejections_total"}
    assert rejected == {"node(s) had untolerated taint(s)": 2, "Insufficient cpu": 1}
    decided = {dict(labels)["plugin"]: v for (name, labels), v in got.items() if name == "kubesched_score_decided_total"}
    assert sum(decided.values()) == 1  # `a` fit n2 alone; `b` chose between n1 and n2 by score
    assert set(decided) <= {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "(tie)"}


def test_filter_reason_labels_are_bounded():
    from kubesched.observe.metrics import OTHER_REASON, REASONS_PER_PLUGIN, SchedulerMetrics

    m = SchedulerMetrics()
    for i in range(REASONS_PER_PLUGIN + 10):
        m.outcome("p", [("NodeResourcesFit", f"Insufficient example.com/r{i}", 1)], None)
    m.outcome("p", [("NodeResourcesFit", "Insufficient example.com/r0", 2)], None)
    values = m.filter_rejections.values
    assert len(values) == REASONS_PER_PLUGIN + 1
    assert values[("p", "NodeResourcesFit", OTHER_REASON)] == 10
    assert values[("p", "NodeResourcesFit", "Insufficient example.com/r0")] == 3
