"""Shadow profiles: a candidate configuration deciding beside the live one, binding nothing.

For a sample of the pods a live profile schedules, each of its shadows (config.extensions.ShadowProfile)
chooses a node on the same snapshot the live cycle just decided on (before the live decision is
assumed, so neither sees the other), through the same node choice as the live cycle
(scheduler.nodechoice: the nominated node as the live cycle sees it, the same sampling), and the
two decisions are compared:

- same_node: the shadow would choose the live node (or ties it with its own choice);
- different_node: another node, with the score gap, under the shadow's own scores, between its
  choice and the live node (when the shadow scored the live node);
- shadow_unschedulable / live_unschedulable / both_unschedulable: one or both found no node;
- shadow_error: the shadow's plugins failed.

Nothing is assumed, reserved, nominated or written, no metric of the live profile moves, and
the live cycle's random tie-breaks are untouched (the shadow has its own generator). Its cost is
bounded twice: `samplingPercentage` of the live cycles, and `maxOverheadPercentage` of the live
cycles' own time, measured over a decaying window; past it sampled cycles are skipped, and
counted, until the share is back under.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code, Status, fit_error_message
from kubesched.observe.metrics import BatchedHistogram, LabelledCounter, SchedulerMetrics
from kubesched.scheduler.generation import Shadow
from kubesched.scheduler.nodechoice import Nominations, choose_node

SAME = "same_node"
DIFFERENT = "different_node"
SHADOW_UNSCHEDULABLE = "shadow_unschedulable"
LIVE_UNSCHEDULABLE = "live_unschedulable"
BOTH_UNSCHEDULABLE = "both_unschedulable"
SHADOW_ERROR = "shadow_error"
OUTCOMES = (SAME, DIFFERENT, SHADOW_UNSCHEDULABLE, LIVE_UNSCHEDULABLE, BOTH_UNSCHEDULABLE, SHADOW_ERROR)

# The overhead budget looks at about the last thousand live cycles: each one weighs the sums by this.
DECAY = 0.999

@dataclass(slots=True)
class ShadowDecision:
    shadow: str  # the shadow profile's schedulerName
    node: str | None
    outcome: str
    gap: int | None = None  # different_node: the shadow's score of its node minus its score of the live node
    message: str = ""  # why the shadow placed nowhere (its FitError text, without PostFilter)

    def as_dict(self) -> dict[str, object]:
        return {"profile": self.shadow, "node": self.node, "outcome": self.outcome, "gap": self.gap, "message": self.message}


@dataclass(slots=True)
class _Budget:
    live: float = 0.0  # decayed seconds of the live profile's cycles
    shadow: float = 0.0  # decayed seconds the shadow took

    def over(self, limit_percent: float) -> bool:
        return self.live > 0 and self.shadow > self.live * limit_percent / 100.0


class ShadowRunner:
    def __init__(self, metrics: SchedulerMetrics, seed: int | None = None) -> None:
        # Not the scheduler's generator: a shadow must not change which tied node the live cycle picks.
        self.rng = np.random.default_rng(None if seed is None else seed + 7919)
        self._budgets: dict[tuple[str, str], _Budget] = {}
        self.decisions = LabelledCounter(
            "kubesched_shadow_decisions_total",
            "Live scheduling cycles a shadow profile also decided, by how its decision compares with the live one "
            f"({', '.join(OUTCOMES)}).",
            ["profile", "shadow", "outcome"],
        )
        self.skipped = LabelledCounter(
            "kubesched_shadow_skipped_total",
            "Live scheduling cycles a shadow profile did not decide: not sampled, or over its overhead budget.",
            ["profile", "shadow", "reason"],
        )
        self.gap = BatchedHistogram(
            "kubesched_shadow_score_gap",
            "When a shadow would choose another node: its score of its own choice minus its score of the live node.",
            ["profile", "shadow"],
            [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
        )
        self.seconds = LabelledCounter(
            "kubesched_shadow_seconds_total", "Time shadow profiles spent deciding, in seconds.", ["profile", "shadow"]
        )
        metrics.counters.extend([self.decisions, self.skipped, self.seconds])
        metrics.histograms.append(self.gap)
        metrics.add_gauge(
            "kubesched_shadow_overhead_ratio",
            "A shadow's share of its live profile's scheduling time, over about the last thousand live cycles.",
            ["profile", "shadow"],
            lambda: {key: (b.shadow / b.live if b.live else 0.0) for key, b in self._budgets.items()},
        )

    def summary(self) -> dict[str, dict[str, int]]:
        """Per shadow profile, how many of its decisions came out each way."""
        out: dict[str, dict[str, int]] = {}
        for (_profile, shadow, outcome), n in self.decisions.values.items():
            counts = out.setdefault(shadow, {})
            counts[outcome] = counts.get(outcome, 0) + int(n)
        return out

    def live_cycle(self, profile: str, shadows: Sequence[Shadow], seconds: float) -> None:
        """A live cycle of `profile` ended, having taken `seconds` (the shadows' time not included)."""
        for shadow in shadows:
            budget = self._budgets.setdefault((profile, shadow.framework.name), _Budget())
            budget.live = budget.live * DECAY + seconds
            budget.shadow *= DECAY

    def decide(
        self, profile: str, shadows: Sequence[Shadow], pi: PodInfo, live_node: str | None, nominations: Nominations
    ) -> tuple[list[ShadowDecision], float]:
        """Each sampled shadow's decision for the pod the live profile just decided on, and the
        seconds they took."""
        out: list[ShadowDecision] = []
        took = 0.0
        for shadow in shadows:
            name = shadow.framework.name
            key = (profile, name)
            budget = self._budgets.setdefault(key, _Budget())
            if self.rng.random() * 100.0 >= shadow.settings.sampling_percentage:
                self.skipped.inc((profile, name, "not_sampled"))
                continue
            if budget.over(shadow.settings.max_overhead_percentage):
                self.skipped.inc((profile, name, "over_budget"))
                continue
            started = time.perf_counter()
            decision = self._decide(shadow, pi, live_node, nominations)
            seconds = time.perf_counter() - started
            budget.shadow += seconds
            took += seconds
            self.seconds.inc(key, seconds)
            self.decisions.inc((profile, name, decision.outcome))
            if decision.gap is not None:
                self.gap.observe(key, float(decision.gap))
            out.append(decision)
        return out, took

    def _decide(self, shadow: Shadow, pi: PodInfo, live_node: str | None, nominations: Nominations) -> ShadowDecision:
        fwk = shadow.framework
        name = fwk.name
        table = fwk.cache.table
        with fwk.dry():
            choice = choose_node(fwk, CycleState(), pi, nominations, self.rng)
        if choice.node is None:
            if choice.failure is not None:
                if choice.failure.code == Code.ERROR or choice.found.failure is None:  # Filter or Score failed
                    return self._error(name, choice.failure)
                return self._unplaced(name, live_node, choice.failure.message())
            d = choice.found.diagnosis
            return self._unplaced(name, live_node, fit_error_message(d.num_nodes, d.reasons.items(), d.pre_filter_msg))
        scored = choice.scored
        if scored is None or live_node is None:  # taken without scoring
            return self._compare(name, choice.node, live_node, None)
        live_score: int | None = None
        live_row = table.index.get(live_node)
        where = np.flatnonzero(scored.rows == live_row) if live_row is not None else np.empty(0, dtype=np.int64)
        if where.size:
            live_score = int(scored.totals[int(where[0])])
        best = int(scored.totals[choice.pick])
        return self._compare(name, choice.node, live_node, None if live_score is None else best - live_score)

    @staticmethod
    def _compare(name: str, node: str, live_node: str | None, gap: int | None) -> ShadowDecision:
        if live_node is None:
            return ShadowDecision(name, node, LIVE_UNSCHEDULABLE)
        if node == live_node or gap == 0:  # the live node ties the shadow's own choice
            return ShadowDecision(name, node, SAME)
        return ShadowDecision(name, node, DIFFERENT, gap)

    @staticmethod
    def _unplaced(name: str, live_node: str | None, message: str) -> ShadowDecision:
        return ShadowDecision(name, None, BOTH_UNSCHEDULABLE if live_node is None else SHADOW_UNSCHEDULABLE, message=message)

    @staticmethod
    def _error(name: str, status: Status) -> ShadowDecision:
        return ShadowDecision(name, None, SHADOW_ERROR, message=status.message())
