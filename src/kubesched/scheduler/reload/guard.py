"""The SLO guard: after a reload, the scheduler's own health is watched over a window, and a
configuration that makes it worse than before is rolled back.

Every `interval` (of the scheduler's clock: real time in `kubesched run`, virtual time in a
simulation) the guard samples its signals: scheduling attempts by result, binding cycles by
result, pending pods (gated ones left out) and how long each has waited since its first attempt.
At a reload it fixes the baseline, the same measures over the `window` before it; then, at each
sample until the window is over, it compares (config.extensions.GuardObjectives):

- unschedulable ratio: unschedulable attempts / attempts since the reload, against the baseline's;
- error ratio: attempts that ended in a scheduler error, likewise;
- bind failure ratio: failed binding cycles / binding cycles, likewise;
- pending pods: how many wait now, against how many waited at the reload;
- pending age: the 90th percentile wait of the pods first tried since the reload and still
  pending, against the same of the pods first tried in the window before it, at the reload
  (so pods stuck since long before count in neither, and a change that frees them is no breach).

Ratios need `minAttempts` attempts since the reload (binding ratios as many binding cycles), the
age at least 10 pods, before they are judged. The first objective broken rolls back at once; a
window that passes makes the configuration known-good. Nothing is judged but a reload, and a
rollback is not one, so the guard cannot flap between two configurations.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kubesched.config.extensions import SLOGuardSettings
from kubesched.infra.clock import Timer
from kubesched.scheduler.generation import Generation

if TYPE_CHECKING:
    from kubesched.scheduler.reload.target import ReloadTarget

MIN_AGED_PODS = 10
AGE_QUANTILE = 90.0
# Samples kept: the longest window at the shortest interval the settings allow, and some.
MAX_SAMPLES = 10_002

UNSCHEDULABLE = "unschedulableRatio"
ERRORS = "errorRatio"
BIND_FAILURES = "bindFailureRatio"
PENDING = "pendingPods"
PENDING_AGE = "pendingAge"


@dataclass(slots=True, frozen=True)
class Signals:
    time: float
    attempts: int  # scheduling attempts that ended: bound, unschedulable, or an error
    unschedulable: int
    errors: int
    binds: int  # binding cycles that ended: bound or failed
    bind_failures: int
    pending: int  # pending pods, gated ones left out


@dataclass(slots=True)
class _Watch:
    generation: Generation
    settings: SLOGuardSettings
    at: Signals  # at the reload
    before: Signals  # `window` before it (or as early as the guard has)
    age_before: float  # p90 wait of the pods first tried in the window before the reload, at it
    aged_before: int  # how many those were


def _ratio(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


class SLOGuard:
    def __init__(
        self,
        scheduler: ReloadTarget,
        on_breach: Callable[[str, str], None],
        on_pass: Callable[[Generation], None],
    ) -> None:
        self.scheduler = scheduler
        self.clock = scheduler.clock
        self.on_breach = on_breach  # (objective, detail)
        self.on_pass = on_pass
        self.samples: deque[Signals] = deque(maxlen=MAX_SAMPLES)
        self._watch: _Watch | None = None
        self._timer: Timer | None = None

    @property
    def active(self) -> bool:
        return self._watch is not None

    @property
    def settings(self) -> SLOGuardSettings:
        return self.scheduler.config.kubesched.slo_guard

    def start(self) -> None:
        """Starts sampling (a baseline needs signals from before a reload)."""
        if self._timer is None:
            self.samples.append(self.signals())
            self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        self._timer = self.clock.call_at(self.clock.now() + self.settings.interval, self._tick)

    def signals(self) -> Signals:
        s = self.scheduler.stats
        counts = self.scheduler.pending.counts()
        return Signals(
            self.clock.now(),
            s.scheduled + s.unschedulable + s.errors,
            s.unschedulable,
            s.errors,
            s.scheduled + s.bind_failures,
            s.bind_failures,
            counts.active + counts.backoff + counts.unschedulable,
        )

    def pending_age(self, since: float) -> tuple[float, int]:
        """The p90 wait, at this moment, of pending (not gated) pods first tried at or after `since`,
        and how many they are."""
        now = self.clock.now()
        firsts = [
            first
            for qpi in self.scheduler.pending.pods.values()
            if qpi.where != "gated"
            and (first := qpi.initial_attempt_timestamp if qpi.initial_attempt_timestamp is not None else qpi.timestamp) >= since
        ]
        if not firsts:
            return 0.0, 0
        ages = now - np.fromiter(firsts, dtype=np.float64, count=len(firsts))
        return float(np.percentile(ages, AGE_QUANTILE)), len(firsts)

    # --- a reload to watch ---------------------------------------------------------------------------

    def watch(self, gen: Generation) -> bool:
        """Watches `gen`, just put in force, for its window; False when its guard is disabled."""
        settings = gen.config.kubesched.slo_guard
        if not settings.enabled:
            self._watch = None
            return False
        self.start()
        at = self.signals()
        horizon = at.time - settings.window
        before = next((s for s in self.samples if s.time >= horizon), at)
        age, aged = self.pending_age(horizon)
        self._watch = _Watch(gen, settings, at, before, age, aged)
        self.stop()  # sampling restarts from the reload, at the new configuration's interval
        self.samples.append(at)
        self._arm()
        return True

    def _tick(self) -> None:
        self._timer = None
        now = self.signals()
        self.samples.append(now)
        watch = self._watch
        if watch is not None and self.scheduler.generation is not watch.generation:
            self._watch = watch = None  # replaced meanwhile by a reload the controller handles
        if watch is not None:
            broken = self.evaluate(watch, now)
            if broken is not None:
                self._watch = None
                self.on_breach(*broken)
            elif now.time - watch.at.time >= watch.settings.window:
                self._watch = None
                self.on_pass(watch.generation)
        self._arm()

    def evaluate(self, watch: _Watch, now: Signals) -> tuple[str, str] | None:
        """The first objective `now` breaks, with what was measured; None if none is."""
        o = watch.settings.objectives
        at, before = watch.at, watch.before
        attempts = now.attempts - at.attempts
        base_attempts = at.attempts - before.attempts
        if attempts >= watch.settings.min_attempts:
            for name, limit, part, base_part in (
                (UNSCHEDULABLE, o.max_unschedulable_ratio_increase, now.unschedulable - at.unschedulable,
                 at.unschedulable - before.unschedulable),
                (ERRORS, o.max_error_ratio_increase, now.errors - at.errors, at.errors - before.errors),
            ):
                ratio, base = _ratio(part, attempts), _ratio(base_part, base_attempts)
                if ratio - base > limit:
                    return name, (f"{ratio:.0%} of {attempts} attempts since the reload, {base:.0%} of {base_attempts} "
                                  f"in the {watch.settings.window:g}s before (at most +{limit:.0%})")
        binds = now.binds - at.binds
        if binds >= watch.settings.min_attempts:
            base_binds = at.binds - before.binds
            ratio = _ratio(now.bind_failures - at.bind_failures, binds)
            base = _ratio(at.bind_failures - before.bind_failures, base_binds)
            if ratio - base > o.max_bind_failure_ratio_increase:
                return BIND_FAILURES, (f"{ratio:.0%} of {binds} binding cycles failed since the reload, {base:.0%} of "
                                       f"{base_binds} before (at most +{o.max_bind_failure_ratio_increase:.0%})")
        allowed = max(at.pending * o.max_pending_pods_increase_percent / 100.0, float(o.min_pending_pods_increase))
        if now.pending - at.pending > allowed:
            return PENDING, f"{now.pending} pods pending, {at.pending} at the reload (at most +{allowed:g})"
        age, aged = self.pending_age(at.time)
        if aged >= MIN_AGED_PODS and age - watch.age_before > o.max_pending_age_increase:
            return PENDING_AGE, (f"the 90th percentile wait of the {aged} pods first tried since the reload and still pending "
                                 f"is {age:.0f}s, {watch.age_before:.0f}s before it (at most +{o.max_pending_age_increase:g}s)")
        return None
