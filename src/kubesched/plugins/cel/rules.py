"""Rules compiled once, evaluated for a pod over node table rows: vectorized where the rule is in
the subset vector.py handles, node by node with the library otherwise, same results either way.

A rule's result on a row is a value (bool, int or double) or an error (a missing map key, an
integer overflow, a division by zero, the cost limit). Errors carry the library's message: the
vectorized path finds the rows, then asks the library about the first to get its words.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.infra.celtree import Checked
from kubesched.plugins.cel.cost import NOMINAL_ENTRIES, estimate, rule_sizes, size_dependent
from kubesched.plugins.cel.env import ENV, NODE_VARIABLES, POD_DEPENDENT, Compiled, CompileError, compile_expression
from kubesched.plugins.cel.inputs import NodeData, collection_sizes, pod_data, resource_keys
from kubesched.plugins.cel.vector import Inputs, Unsupported, encoded_names, evaluate, vectorizable

# Kubernetes' limit for one CEL expression evaluation in admission (celconfig.PerCallLimit).
DEFAULT_COST_LIMIT = 1_000_000


@functools.lru_cache(maxsize=4096)
def compile_cached(source: str) -> Compiled:
    """Compiling is pure: the args validator and the plugin share one compilation per source."""
    return compile_expression(source)


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled rule."""

    name: str
    compiled: Compiled
    cost: int  # the bound at nominal sizes (exact when not size_dependent)
    size_dependent: bool
    vectorized: bool

    @property
    def checked(self) -> Checked:
        return self.compiled.checked


def compile_rule(name: str, source: str, want: Sequence[str], cost_limit: int) -> Rule:
    """Compiles and checks a rule: its result type one of `want`, its cost bound within the
    limit. CompileError otherwise, with a message that names the rule."""
    try:
        compiled = compile_cached(source)
    except CompileError as exc:
        raise CompileError(f"rule {name!r}: {exc}") from None
    if compiled.result_type not in want:
        raise CompileError(f"rule {name!r}: the expression must give {' or '.join(want)}, it gives {compiled.result_type}")
    cost = estimate(compiled.checked)
    if cost > cost_limit:
        raise CompileError(
            f"rule {name!r}: estimated cost {cost} exceeds costLimit {cost_limit} "
            f"(for maps and lists of {NOMINAL_ENTRIES} entries)"
        )
    return Rule(name, compiled, cost, size_dependent(compiled.checked), vectorizable(compiled.checked))


@dataclass(slots=True)
class Outcome:
    """One rule on some rows: `value` per row (False/0 where an error), `err` per row, and the
    message of the first error (in row order)."""

    rows: np.ndarray
    value: np.ndarray
    err: np.ndarray
    message: str = ""
    error_row: int = -1


@dataclass(slots=True)
class _Cycle:
    """What every rule reads in one evaluation pass: the pod's data, the resource keys."""

    pi: PodInfo
    table: NodeTable
    keys: list[str]
    scalars: dict[str, Any]
    usage: Mapping[str, np.ndarray] | None
    activations: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict)


class RuleSet:
    """The rules of one plugin instance."""

    def __init__(self, rules: Sequence[Rule], cost_limit: int, *, vectorize: bool = True) -> None:
        self.rules = list(rules)
        self.cost_limit = cost_limit
        self.vectorize = vectorize
        self.variables = frozenset().union(*(r.compiled.variables for r in self.rules)) if self.rules else frozenset()
        self.resources = frozenset().union(*(r.compiled.resources for r in self.rules)) if self.rules else frozenset()
        self.usage_keys = frozenset().union(*(r.compiled.usage_keys for r in self.rules)) if self.rules else frozenset()
        self.node_data = NodeData(self.variables & NODE_VARIABLES)
        self._names_key: tuple[int, int, int] = (-1, -1, -1)
        self._names: tuple[np.ndarray, dict[str, int]] = (np.zeros(0, dtype=np.int64), {})
        self._costs: dict[tuple[int, tuple[tuple[str, int], ...], int], int] = {}

    @property
    def pod_dependent(self) -> bool:
        """Whether a rule reads what changes as pods come and go (requested, free, usage)."""
        return bool(self.variables & POD_DEPENDENT)

    def begin(self, pi: PodInfo, table: NodeTable, namespace_labels: Mapping[str, str],
              usage: Mapping[str, np.ndarray] | None) -> _Cycle:
        keys = resource_keys(table, self.resources)
        scalars = pod_data(pi, namespace_labels, keys, self.variables - NODE_VARIABLES)
        return _Cycle(pi, table, keys, scalars, usage)

    def evaluate(self, cycle: _Cycle, rule: Rule, rows: np.ndarray) -> Outcome:
        """The rule on `rows` (table row indices)."""
        if self.vectorize and rule.vectorized:
            try:
                return self._vector(cycle, rule, rows)
            except Unsupported:  # not expected: vectorizable() accepted it
                pass
        return self._interpret(cycle, rule, rows)

    # --- vectorized -------------------------------------------------------------------------
    def _encoded_names(self, table: NodeTable) -> tuple[np.ndarray, dict[str, int]]:
        key = (id(table), table.node_generation, table.capacity)
        if key != self._names_key:
            self._names_key, self._names = key, encoded_names(table)
        return self._names

    def _vector(self, cycle: _Cycle, rule: Rule, rows: np.ndarray) -> Outcome:
        table = cycle.table
        inputs = Inputs(table, rows, cycle.scalars, frozenset(cycle.keys), cycle.usage, lambda: self._encoded_names(table))
        result = evaluate(rule.checked, inputs)
        out = Outcome(rows, result.val, result.err)
        bad = np.flatnonzero(result.err)
        if bad.size:
            row = int(rows[bad[0]])
            value, message = self._one(cycle, rule, row)
            out.message, out.error_row = message or f"evaluation error (the interpreter gave {value!r})", row
        return out

    # --- interpreted ------------------------------------------------------------------------
    def _activation(self, cycle: _Cycle, row: int) -> tuple[Any, dict[str, Any]]:
        hit = cycle.activations.get(row)
        if hit is None:
            data = dict(cycle.scalars)
            data.update(self.node_data.row(cycle.table, row, cycle.keys, cycle.usage))
            hit = cycle.activations[row] = (ENV.Activation(data), data)
        return hit

    def _bound(self, rule: Rule, data: Mapping[str, Any]) -> int:
        entries, longest = collection_sizes(data)
        key = (id(rule), tuple(sorted(entries.items())), longest)
        cost = self._costs.get(key)
        if cost is None:
            widest = max(entries.values(), default=0)
            cost = estimate(rule.checked, rule_sizes(lambda name: entries.get(name, widest), longest))
            if len(self._costs) > 10_000:
                self._costs.clear()
            self._costs[key] = cost
        return cost

    def _one(self, cycle: _Cycle, rule: Rule, row: int) -> tuple[Any, str]:
        """The rule on one row with the library: (value, "") or (None, error message)."""
        activation, data = self._activation(cycle, row)
        if rule.size_dependent:
            bound = self._bound(rule, data)
            if bound > self.cost_limit:
                return None, f"cost limit exceeded: this evaluation could cost {bound}, costLimit is {self.cost_limit}"
        result = rule.compiled.evaluate(activation)
        value = result.value()
        if result.type() == ENV_ERROR:
            return None, str(value)
        return value, ""

    def _interpret(self, cycle: _Cycle, rule: Rule, rows: np.ndarray) -> Outcome:
        dtype = {"bool": bool, "int": np.int64, "double": np.float64}.get(rule.compiled.result_type, object)
        values = np.zeros(rows.size, dtype=dtype)
        err = np.zeros(rows.size, dtype=bool)
        out = Outcome(rows, values, err)
        for i, row in enumerate(rows.tolist()):
            value, message = self._one(cycle, rule, row)
            if message:
                err[i] = True
                if not out.message:
                    out.message, out.error_row = message, row
            else:
                values[i] = value
        return out


def _error_type() -> Any:
    probe = ENV.compile("1 / 0").eval()
    return probe.type()


ENV_ERROR = _error_type()


def rule_summary(rule: Rule) -> str:
    """How a rule is evaluated, for logs and docs: vectorized or per node, and its cost bound."""
    how = "vectorized" if rule.vectorized else "per node"
    return f"{rule.name}: {how}, cost {'up to ' if rule.size_dependent else ''}{rule.cost}"


__all__ = ["DEFAULT_COST_LIMIT", "Outcome", "Rule", "RuleSet", "compile_rule", "rule_summary"]


