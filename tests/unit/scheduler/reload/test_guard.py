"""The SLO guard's objectives, measure by measure (reload.guard). The scheduler here is the real one
on a simulated cluster; the signals of the ratio tests are written out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod
from kubesched.config.extensions import SLOGuardSettings
from kubesched.scheduler.reload.guard import BIND_FAILURES, ERRORS, PENDING, PENDING_AGE, UNSCHEDULABLE, Signals, SLOGuard, _Watch
from unit.scheduler.test_generation import drain, scheduler
from unit.simkit import config_text


def guard() -> SLOGuard:
    sched, _ = scheduler(config_text({}))
    return SLOGuard(sched, lambda objective, detail: None, lambda gen: None)


def watch(g: SLOGuard, before: Signals, at: Signals, **objectives: Any) -> _Watch:
    settings = SLOGuardSettings.model_validate({"minAttempts": 10, "objectives": objectives})
    return _Watch(g.scheduler.generation, settings, at, before, 0.0, 0)


def sig(t: float, attempts: int = 0, unschedulable: int = 0, errors: int = 0, binds: int = 0, bind_failures: int = 0,
        pending: int = 0) -> Signals:
    return Signals(t, attempts, unschedulable, errors, binds, bind_failures, pending)


@pytest.mark.parametrize(
    ("now", "broken"),
    [
        (sig(60, attempts=200, unschedulable=10 + 40), None),  # 40/100 = 40%: +30 points over 10%, allowed 35
        (sig(60, attempts=200, unschedulable=10 + 50), UNSCHEDULABLE),  # 50%: +40 points
        (sig(60, attempts=105, unschedulable=10 + 5), None),  # 5 attempts only: no verdict yet
        (sig(60, attempts=200, errors=11), ERRORS),  # 11% errors, 0% before
        (sig(60, attempts=200, binds=200, bind_failures=12), BIND_FAILURES),
        (sig(60, attempts=200, pending=80 + 41), PENDING),  # +41 pods over 80 is more than 50%
        (sig(60, attempts=200, pending=80 + 40), None),
    ],
)
def test_each_objective_against_the_window_before_the_reload(now: Signals, broken: str | None) -> None:
    g = guard()
    w = watch(g, sig(-300), sig(0, attempts=100, unschedulable=10, binds=100, pending=80),
              maxUnschedulableRatioIncrease=0.35, maxErrorRatioIncrease=0.1, maxBindFailureRatioIncrease=0.1,
              maxPendingPodsIncreasePercent=50, minPendingPodsIncrease=5)
    result = g.evaluate(w, now)
    assert (result[0] if result else None) == broken, result


def test_pending_pods_need_at_least_the_minimum_increase() -> None:
    g = guard()
    w = watch(g, sig(-300), sig(0, pending=2), maxPendingPodsIncreasePercent=100, minPendingPodsIncrease=20)
    assert g.evaluate(w, sig(60, pending=22)) is None  # +20: within the minimum, though it is +1000%
    broken = g.evaluate(w, sig(60, pending=23))
    assert broken is not None and broken[0] == PENDING and "23 pods pending, 2 at the reload" in broken[1]


def test_the_pending_age_counts_only_pods_first_tried_since_the_reload() -> None:
    # Twelve pods that cannot fit anywhere, tried long before the reload.
    sched, _ = scheduler(
        config_text({}),
        [
            make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
            *[make_pod(f"old-{i}").req(cpu="2", memory="100Mi").manifest() for i in range(12)],
        ],
    )
    drain(sched)
    g = SLOGuard(sched, lambda objective, detail: None, lambda gen: None)
    sched.clock.advance_to(1000.0)
    age, aged = g.pending_age(900.0)
    assert (age, aged) == (0.0, 0)  # the stuck pods are older than that: they count in neither window
    age, aged = g.pending_age(0.0)
    assert aged == 12 and age == pytest.approx(1000.0)
    w = _Watch(sched.generation, SLOGuardSettings.model_validate({"objectives": {"maxPendingAgeIncrease": "60s"}}),
               sig(900.0, pending=12), sig(600.0, pending=12), 0.0, 0)
    assert g.evaluate(w, sig(1000.0, pending=12)) is None
    # Ten new pods that fit nowhere either, tried after the reload, waiting 100 s: that is a breach.
    for i in range(10):
        from kubesched.backends.sim.manifests import load_objects

        sched.on_pod_add(load_objects([make_pod(f"new-{i}").req(cpu="2", memory="100Mi").manifest()]).pods[0].pod)
    drain(sched)
    sched.clock.advance_to(1100.0)
    broken = g.evaluate(w, sig(1100.0, pending=22))
    assert broken is not None and broken[0] == PENDING_AGE and "the 10 pods first tried since the reload" in broken[1]


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="window: must be at least one interval long"):
        SLOGuardSettings.model_validate({"window": "5s", "interval": "10s"})
