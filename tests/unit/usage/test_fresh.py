"""Recently placed pods and their estimated usage."""

from __future__ import annotations

import numpy as np

from kubesched.api.objects import Container, ObjectMeta, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements
from kubesched.api.podinfo import make_pod_info
from kubesched.usage.args import EstimationArgs, UsageArgs
from kubesched.usage.fresh import FreshPods, estimate, footprint, scheduled_at


def pi(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, scheduled: str = ""):
    res = ResourceRequirements(requests=requests or {}, limits=limits or {})
    conds = [PodCondition(type="PodScheduled", status="True", last_transition_time=scheduled)] if scheduled else []
    pod = Pod(
        metadata=ObjectMeta(name=name, namespace="ns", uid=name),
        spec=PodSpec(containers=[Container(name="c", resources=res)]),
        status=PodStatus(conditions=conds),
    )
    return make_pod_info(pod)


def test_koordinator_estimate_uses_the_larger_of_request_and_limit() -> None:
    args = EstimationArgs()
    assert estimate(footprint(pi("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2"})), args) == (1700.0, 0.7 * 2**30)
    assert estimate(footprint(pi("b")), args) == (250.0, 200.0 * 2**20)  # best effort: the defaults
    fp = footprint(pi("c", {"cpu": "500m"}, {"cpu": "1", "memory": "2Gi"}))
    assert (fp.cpu_request, fp.cpu_limit, fp.memory_request, fp.memory_limit) == (500, 1000, 2 * 2**30, 2 * 2**30)


def test_settle_time_defaults_to_the_window_plus_the_rate_lag() -> None:
    assert EstimationArgs().settle_for(UsageArgs(window="5m")) == 390
    assert EstimationArgs().settle_for(UsageArgs(aggregation="latest")) == 90
    assert EstimationArgs(settleTime="30s").settle_for(UsageArgs()) == 30


def test_pods_count_until_a_sample_taken_settle_time_later() -> None:
    f = FreshPods(capacity=2)
    f.placed(pi("a", {"cpu": "1"}), row=0, when=100.0)
    f.placed(pi("b", {"cpu": "2"}), row=1, when=100.0)
    f.placed(pi("c", {"cpu": "4"}), row=1, when=150.0)  # grows the arrays
    sampled = np.array([160.0, 200.0])  # row 0 sampled 60 s after a; row 1 100 s after b
    slots = f.not_yet_sampled(sampled, settle_time=90.0)
    cpu, _mem = f.estimated_per_row(slots, EstimationArgs(cpuFactor=1.0), rows=2)
    assert cpu.tolist() == [1000.0, 4000.0]  # a still counts; b is in the sample, c is not yet
    f.removed("a")
    f.forget_before(120.0)  # b goes
    assert set(f.slot) == {"c"}
    f.placed(pi("d"), row=0, when=-np.inf)  # placed long ago: never fresh
    assert "d" not in f.slot


def test_pods_bound_by_others_are_placed_at_their_condition_time() -> None:
    p = pi("x", scheduled="2026-11-23T10:00:00Z")
    wall = 1795428000.0 + 30  # 30 s after 2026-11-23T10:00:00Z
    assert scheduled_at(p, now=500.0, wall_now=wall) == 470.0
    assert scheduled_at(pi("y"), now=500.0, wall_now=wall) == -np.inf
    assert scheduled_at(pi("z", scheduled="yesterday"), now=500.0, wall_now=wall) == -np.inf


def test_observed_usage_raises_an_estimate_never_lowers_it() -> None:
    f = FreshPods()
    f.placed(pi("a", {"cpu": "1"}), row=0, when=10.0)
    f.placed(pi("b", {"cpu": "1"}), row=1, when=10.0)
    f.observe({"ns/a": 2500.0, "ns/b": 100.0}, {})
    slots = f.not_yet_sampled(np.array([0.0, 0.0]), settle_time=90.0)
    cpu, _ = f.estimated_per_row(slots, EstimationArgs(), rows=2)
    assert cpu.tolist() == [2500.0, 850.0]
    f.removed("a")
    assert f.keys == {"ns/b": "b"}


def test_placements_are_remembered_as_long_as_the_longest_settle_time() -> None:
    """LoadVariationRiskBalancing's 15-minute window settles in 16.5 minutes: a pod placed then
    must still count until the metrics show it, past the 10-minute default horizon."""
    from kubesched.infra.clock import VirtualClock
    from kubesched.usage.service import FRESH_HORIZON, UsageService

    svc = UsageService(VirtualClock(), lambda coro, name: coro.close())
    assert svc.horizon == FRESH_HORIZON
    svc.remember_for(990.0)
    assert svc.horizon == 1050.0
    svc.remember_for(30.0)
    assert svc.horizon == 1050.0
