"""CELFilter: node requirements written as CEL expressions in the profile's pluginConfig.

Each rule is a boolean expression over `pod`, `node`, `namespace` and `usage` (kubesched.plugins.cel.env
lists the variables). A node passes when every rule is true on it. Rules are checked in order,
and the first false rule rejects the node with that rule's message (`node(s) didn't satisfy rule
"<name>"` by default): a later rule is not evaluated on a node an earlier one rejected, so a rule
can rely on an earlier guard (`"gpu" in node.labels`, then `node.labels["gpu"] == "a100"`).

A rule that fails to evaluate on a node (a missing map key, an integer overflow, the cost limit)
fails the scheduling cycle with an error naming the rule and the node, as a Filter plugin's error
does in kube-scheduler: the pod goes back to the queue with backoff and the event says why.

A rejection is UnschedulableAndUnresolvable (preemption cannot help) unless the rule reads what
evicting pods changes (`node.requested`, `node.free`, `usage`): then it is Unschedulable.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterMisses, FilterPlugin, Plugin
from kubesched.framework.status import Code
from kubesched.framework.types import FilterResult
from kubesched.plugins.cel.env import POD_DEPENDENT
from kubesched.plugins.cel.plugin import CONFIG, MAX_RULES, Inputs, RulesArgs, check_name, compile_all, events, node_changed
from kubesched.plugins.cel.rules import Outcome, Rule, RuleSet

NAME = "CELFilter"
ERROR_CODE = 255  # the verdict of a node a rule failed to evaluate on


class CELFilterRule(BaseModel):
    model_config = CONFIG

    name: str
    expression: str
    # The reason a rejected node shows in the FailedScheduling message; default below.
    message: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    @field_validator("message")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value or len(value) > 256:
            raise ValueError("must be one line of at most 256 characters")
        return value

    @property
    def reason(self) -> str:
        return self.message or f'node(s) didn\'t satisfy rule "{self.name}"'


def _compile(args: CELFilterArgs) -> list[Rule]:
    rules = [(r.name, r.expression, ("bool",)) for r in args.rules]
    return compile_all(NAME, rules, args.cost_limit, sorted(args.usage.prometheus.queries))


class CELFilterArgs(RulesArgs):
    rules: list[CELFilterRule] = Field(min_length=1, max_length=MAX_RULES)

    @model_validator(mode="after")
    def _compile(self) -> CELFilterArgs:
        _compile(self)
        return self


class CELFilter(Plugin, FilterPlugin, FilterMisses, EnqueueExtensions):
    name: ClassVar[str] = NAME
    Args = CELFilterArgs

    def __init__(self, args: CELFilterArgs, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.rules: list[Rule] = _compile(args)
        self.specs = list(args.rules)
        self.ruleset = RuleSet(self.rules, args.cost_limit, vectorize=args.vectorize)
        self.inputs = Inputs(handle, self.ruleset, args.usage)
        self.verdicts: list[tuple[Code, tuple[str, ...]]] = [(Code.SUCCESS, ())]
        for spec, rule in zip(self.specs, self.rules, strict=True):
            code = Code.UNSCHEDULABLE if rule.compiled.variables & POD_DEPENDENT else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            self.verdicts.append((code, (spec.reason,)))

    def close(self) -> None:
        """A reload dropped this instance (framework.generation.retire): stop reading usage."""
        self.inputs.close()

    def events_to_register(self) -> list[ClusterEventWithHint | ClusterEvent]:
        return events(self.ruleset, self.is_schedulable_after_node_change)

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when the update changed something a rule reads (labels, taints, allocatable...)."""
        return node_changed(self.ruleset, old, new)

    def _outcomes(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> tuple[np.ndarray, list[Outcome]]:
        """Per row of `rows`: 0 (passes), the 1-based index of the first rule false on it, or
        ERROR_CODE; and each rule's outcome on the rows it was evaluated on."""
        cycle = self.ruleset.begin(pi, table, self.inputs.namespace_labels(pi), self.inputs.usage(state, table, NAME))
        verdict = np.zeros(rows.size, dtype=np.uint8)
        outcomes: list[Outcome] = []
        alive = np.arange(rows.size)
        for i, rule in enumerate(self.rules, start=1):
            if alive.size == 0:
                break
            out = self.ruleset.evaluate(cycle, rule, rows[alive])
            outcomes.append(out)
            failed = out.err | ~out.value.astype(bool)
            verdict[alive[out.err]] = ERROR_CODE
            verdict[alive[~out.err & ~out.value.astype(bool)]] = i
            alive = alive[~failed]
        return verdict, outcomes

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        rows = table.rows()
        verdict, outcomes = self._outcomes(state, pi, table, rows)
        if not verdict.any():
            return None
        codes = np.zeros(table.capacity, dtype=np.uint8)
        codes[rows] = verdict
        describe = self.verdicts
        if (verdict == ERROR_CODE).any():
            error = self._error(table, outcomes)
            return FilterResult(codes, lambda c: error if c == ERROR_CODE else describe[c])
        return FilterResult(codes, describe.__getitem__)

    def _error(self, table: NodeTable, outcomes: list[Outcome]) -> tuple[Code, tuple[str, ...]]:
        """The first rule (in order) that failed to evaluate, on its first node."""
        for rule, out in zip(self.rules, outcomes, strict=False):
            if out.message:
                node = table.name_of(out.error_row)
                return Code.ERROR, (f"rule {rule.name!r} on node {node!r}: {out.message}",)
        return Code.ERROR, ("a rule failed to evaluate",)

    # --- explanations ---------------------------------------------------------------------------

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Rules against the node, evaluated all (not stopping at the first), as the distance."""
        cycle = self.ruleset.begin(pi, table, self.inputs.namespace_labels(pi), self.inputs.usage(state, table, NAME))
        against = np.zeros(rows.size)
        for rule in self.rules:
            out = self.ruleset.evaluate(cycle, rule, rows)
            against += out.err | ~out.value.astype(bool)
        return against

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        """Every rule the node fails, by name, with the first rule's expression."""
        cycle = self.ruleset.begin(pi, table, self.inputs.namespace_labels(pi), self.inputs.usage(state, table, NAME))
        failed = []
        for rule in self.rules:
            out = self.ruleset.evaluate(cycle, rule, np.array([row]))
            if out.err[0]:
                failed.append(f"rule {rule.name!r} failed: {out.message}")
            elif not out.value[0]:
                failed.append(f"rule {rule.name!r} is false: {rule.compiled.source}" if not failed else f"rule {rule.name!r} is false")
        return "; ".join(failed)
