"""What CELFilter and CELScore share: the common args (costLimit, usage), compiling the rules of
the args with messages that name the plugin and the rule, the per-cycle inputs (the namespace's
labels, the usage columns), the events that may change a rule's answer, and the queueing hint."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.api.quantity import QuantityError, resource_value
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.plugins.cel.env import CompileError
from kubesched.plugins.cel.rules import DEFAULT_COST_LIMIT, Rule, RuleSet, compile_rule
from kubesched.usage.args import EstimationArgs, UsageArgs

CONFIG = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
# A rule's name: what messages, explanations and metrics call it (a DNS-label-like word).
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
MAX_RULES = 64


def check_name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError("must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
    return value


class RulesArgs(BaseModel):
    """Args both plugins take besides their rules."""

    model_config = CONFIG

    # The largest cost one evaluation of one rule on one node may have (kube's per-call limit
    # for CEL in admission by default). Rules over it at nominal sizes are refused at load time.
    cost_limit: int = Field(DEFAULT_COST_LIMIT, alias="costLimit", gt=0, le=10**12)
    # Where `usage` comes from, as LoadAware's args say it (Prometheus, window, staleness). Only
    # used when a rule reads `usage`; its resources are those with a query.
    usage: UsageArgs = Field(default_factory=UsageArgs)
    # Evaluate the rules in the vectorized subset with numpy (false: every rule node by node with
    # the library; for comparison and measurements).
    vectorize: bool = True


def compile_all(plugin: str, rules: Sequence[tuple[str, str, Sequence[str]]], cost_limit: int,
                usage_resources: Sequence[str]) -> list[Rule]:
    """Every rule (name, expression, the result types it may have) compiled; ValueError naming
    `rules[i].expression` and the rule otherwise (the config loader joins it to the args' path)."""
    seen: dict[str, int] = {}
    out = []
    for i, (name, source, want) in enumerate(rules):
        if name in seen:
            raise ValueError(f"rules[{i}].name: Duplicate value: {name!r} (rules[{seen[name]}] has it)")
        seen[name] = i
        try:
            rule = compile_rule(name, source, want, cost_limit)
        except CompileError as exc:
            raise ValueError(f"rules[{i}].expression: {plugin} {exc}") from None
        missing = sorted(rule.compiled.usage_keys - set(usage_resources))
        if missing:
            raise ValueError(
                f"rules[{i}].expression: {plugin} rule {name!r} reads usage.{missing[0]}, but usage.prometheus.queries "
                f"has no query for {missing[0]!r} (it has {', '.join(sorted(usage_resources))})"
            )
        out.append(rule)
    return out


class Inputs:
    """Per-cycle inputs of a plugin's rules: the namespace's labels and the node usage columns."""

    def __init__(self, handle: Handle | None, ruleset: RuleSet, usage: UsageArgs) -> None:
        self.handle = handle
        self.ruleset = ruleset
        # One reader per resource: a node missing one resource's value still has the others.
        self.readers: dict[str, Any] = {}
        if "usage" in ruleset.variables and handle is not None:
            from kubesched.usage.load import LoadReader  # only plugins reading usage start the service

            for resource in sorted(usage.prometheus.queries):
                self.readers[resource] = LoadReader(handle, usage, EstimationArgs(), [resource])

    def close(self) -> None:
        """The plugin is dropped (a reload retired it): its usage readers let go of the provider."""
        for reader in self.readers.values():
            reader.close()
        self.readers = {}

    def namespace_labels(self, pi: PodInfo) -> Mapping[str, str]:
        if self.handle is None or "namespaceObject.labels" not in self.ruleset.variables:
            return {}
        return self.handle.cache.namespace_labels.get(pi.namespace, {})

    def usage(self, state: CycleState, table: NodeTable, key: str) -> Mapping[str, np.ndarray] | None:
        """Per resource, each row's utilization (0..1; NaN where missing or stale): the last sample
        plus the estimated usage of pods placed since, as LoadAware estimates it (the incoming pod
        not included)."""
        if not self.readers:
            return None
        out: dict[str, np.ndarray] = {}
        for resource, reader in self.readers.items():
            out[resource] = reader.cycle_load(state, table, f"{key}/usage/{resource}").estimated[resource]
        return out


# What a node update must change for a rule reading each variable to answer differently.
_NODE_FIELDS: dict[str, ActionType] = {
    "node.labels": ActionType.UpdateNodeLabel,
    "node.annotations": ActionType.UpdateNodeAnnotation,
    "node.taints": ActionType.UpdateNodeTaint,
    "node.unschedulable": ActionType.UpdateNodeTaint,
    "node.allocatable": ActionType.UpdateNodeAllocatable,
    "node.free": ActionType.UpdateNodeAllocatable,
}


def events(ruleset: RuleSet, hint: Any) -> list[ClusterEventWithHint | ClusterEvent]:
    """The cluster events that may change what the rules say about a node: a new node; a node
    update that changes what they read (with `hint` telling whether it did); pods coming and
    going when they read requested or free amounts; new usage samples when they read usage; the
    pod's own labels when they read them."""
    variables = ruleset.variables
    update = ActionType(0)
    for var, action in _NODE_FIELDS.items():
        if var in variables:
            update |= action
    out: list[ClusterEventWithHint | ClusterEvent] = [ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add))]
    if update:
        out.append(ClusterEventWithHint(ClusterEvent(NODE, update), hint))
    if variables & {"node.requested", "node.free"}:
        out.append(ClusterEvent(ASSIGNED_POD, ActionType.Add | ActionType.Delete | ActionType.UpdatePodScaleDown
                                | ActionType.UpdatePodScaleUp))
    if "usage" in variables:
        from kubesched.usage.service import USAGE_UPDATE

        out.append(USAGE_UPDATE)
    if "pod.labels" in variables:
        out.append(ClusterEvent(TARGET_POD, ActionType.UpdatePodLabel))
    return out


def _allocatable(node: Node) -> dict[str, int]:
    out = {}
    for res, raw in node.status.allocatable.items():
        try:
            out[res] = resource_value(res, raw)
        except QuantityError:
            out[res] = -1
    return out


def node_changed(ruleset: RuleSet, old: Node | None, new: Node | None) -> QueueingHint:
    """Queue when a node update changed something a rule reads; skip otherwise."""
    if not isinstance(new, Node) or not isinstance(old, Node):
        return QueueingHint.Queue
    v = ruleset.variables
    checks = (
        ("node.labels", lambda n: n.metadata.labels),
        ("node.annotations", lambda n: n.metadata.annotations),
        ("node.taints", lambda n: [(t.key, t.value, t.effect) for t in n.spec.taints]),
        ("node.unschedulable", lambda n: n.spec.unschedulable),
        ("node.allocatable", _allocatable),
        ("node.free", _allocatable),
    )
    for var, read in checks:
        if var in v and read(old) != read(new):
            return QueueingHint.Queue
    return QueueingHint.QueueSkip
