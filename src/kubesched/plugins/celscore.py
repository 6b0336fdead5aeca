"""CELScore: node preferences written as CEL expressions in the profile's pluginConfig.

A rule is either a condition with a score (`expression` gives a bool; when it is true on a node,
`score` is added) or a value (`expression` gives an int or a double, added as it is; a double is
truncated toward zero, as CEL's int() does). Each rule's contribution is held within
-MAX_CONTRIBUTION..MAX_CONTRIBUTION. A node's raw score is the sum over the rules; NormalizeScore
clamps it to 0..100, so a rule's points mean the same on every node and in every cycle (a
relative normalization would turn "add 80" into whatever the best node happens to have). With
the plugin's weight w, a matched "add 80" rule adds 80*w to the node's total.

A rule that fails to evaluate on a node (a missing map key, an integer overflow, a value that is
not a finite number, the cost limit) fails the scheduling cycle with an error naming the rule and
the node, as a Score plugin's error does in kube-scheduler. The rules run in PreScore, on the
nodes to be scored, so that the error can be returned; Score reads what PreScore kept.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, Plugin, PreScorePlugin, ScorePlugin
from kubesched.framework.status import Status
from kubesched.framework.types import MAX_NODE_SCORE, MIN_NODE_SCORE
from kubesched.plugins.cel.plugin import CONFIG, MAX_RULES, Inputs, RulesArgs, check_name, compile_all, events, node_changed
from kubesched.plugins.cel.rules import Rule, RuleSet

NAME = "CELScore"
log = logging.getLogger(__name__)
MAX_CONTRIBUTION = 1_000_000  # per rule, either sign: sums of up to 64 rules stay exact in int64


class CELScoreRule(BaseModel):
    model_config = CONFIG

    name: str
    expression: str
    # With a score, `expression` is a condition (bool) and the score is added where it holds;
    # without, `expression` gives the number (int or double) to add.
    score: int | None = Field(None, ge=-MAX_CONTRIBUTION, le=MAX_CONTRIBUTION)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)


def _want(rule: CELScoreRule) -> tuple[str, ...]:
    return ("bool",) if rule.score is not None else ("int", "double")


def _compile(args: CELScoreArgs) -> list[Rule]:
    rules = [(r.name, r.expression, _want(r)) for r in args.rules]
    return compile_all(NAME, rules, args.cost_limit, sorted(args.usage.prometheus.queries))


class CELScoreArgs(RulesArgs):
    rules: list[CELScoreRule] = Field(min_length=1, max_length=MAX_RULES)

    @model_validator(mode="after")
    def _compile(self) -> CELScoreArgs:
        _compile(self)
        return self


@dataclass(slots=True)
class _Scores:
    """PreScore's result for one cycle: the raw score per scored row, and which rules matched."""

    rows: np.ndarray
    raw: np.ndarray
    parts: list[np.ndarray]  # per rule, its contribution per row


class CELScore(Plugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME
    Args = CELScoreArgs

    def __init__(self, args: CELScoreArgs, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.specs = list(args.rules)
        self.rules = _compile(args)
        self.ruleset = RuleSet(self.rules, args.cost_limit, vectorize=args.vectorize)
        self.inputs = Inputs(handle, self.ruleset, args.usage)
        self._warned = -math.inf

    def close(self) -> None:
        """A reload dropped this instance (framework.generation.retire): stop reading usage."""
        self.inputs.close()

    def events_to_register(self) -> list[ClusterEventWithHint | ClusterEvent]:
        # Scores change no pod's fate in the queue; the events are those CELFilter would use, so
        # a profile with both retries a pod for the same reasons.
        return events(self.ruleset, self.is_schedulable_after_node_change)

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        return node_changed(self.ruleset, old, new)

    def contributions(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> tuple[_Scores, str]:
        """Each rule's contribution on each row and the raw sums; and the first error, if any
        ("rule 'x' on node 'n': message"), in rule order."""
        cycle = self.ruleset.begin(pi, table, self.inputs.namespace_labels(pi), self.inputs.usage(state, table, NAME))
        parts: list[np.ndarray] = []
        error = ""
        for spec, rule in zip(self.specs, self.rules, strict=True):
            out = self.ruleset.evaluate(cycle, rule, rows)
            if spec.score is not None:
                part = np.where(out.value.astype(bool) & ~out.err, spec.score, 0).astype(np.int64)
            elif out.value.dtype == np.float64:
                finite = np.isfinite(out.value)
                bad = ~finite & ~out.err
                if bad.any() and not error:
                    row = int(rows[np.flatnonzero(bad)[0]])
                    error = f"rule {rule.name!r} on node {table.name_of(row)!r}: the score {out.value[bad][0]} is not a finite number"
                part = np.trunc(np.clip(np.where(finite, out.value, 0.0), -MAX_CONTRIBUTION, MAX_CONTRIBUTION)).astype(np.int64)
            else:
                part = np.clip(out.value.astype(np.int64), -MAX_CONTRIBUTION, MAX_CONTRIBUTION)
            if out.message and not error:
                error = f"rule {rule.name!r} on node {table.name_of(out.error_row)!r}: {out.message}"
            parts.append(part)
        raw = np.zeros(rows.size, dtype=np.int64)
        for part in parts:
            raw += part
        return _Scores(rows, raw, parts), error

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        scores, error = self.contributions(state, pi, table, rows)
        if error:
            return Status.error(error)
        state.write(NAME + "/scores", scores)
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        kept: _Scores | None = state.read(NAME + "/scores")
        if kept is None or not np.array_equal(kept.rows, rows):
            # Enabled at score without preScore: a failed rule adds nothing, and says so in the log.
            kept, error = self.contributions(state, pi, table, rows)
            if error:
                self._warn(f"{pi.key}: {error} (enable {NAME} at preScore too, or with multiPoint, "
                           "to fail the cycle instead)")
        raw: np.ndarray = kept.raw
        return raw

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._warned >= 60.0:
            self._warned = now
            log.warning("%s: %s", NAME, message)

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        """The raw sum clamped to 0..100: points mean the same on every node."""
        clamped: np.ndarray = np.clip(scores, MIN_NODE_SCORE, MAX_NODE_SCORE)
        return clamped

    def explain_score(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        """The rules that gave the node points, for explanations: 'gpu-memory +80, busy -20'."""
        scores, error = self.contributions(state, pi, table, np.array([row]))
        parts = [f"{spec.name} {int(p[0]):+d}" for spec, p in zip(self.specs, scores.parts, strict=True) if p[0]]
        if error:
            parts.append(error)
        return ", ".join(parts) if parts else "no rule matched"
