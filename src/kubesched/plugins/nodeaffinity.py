"""NodeAffinity: a pod's spec.nodeSelector and node affinity, plus the scheduler-enforced
affinity of the plugin's args (addedAffinity).

Filter keeps the nodes that match the pod's nodeSelector AND any one of its required
node selector terms (terms are ORed, the requirements inside a term ANDed), and, when
configured, the added required affinity. Score sums the weights of the preferred terms a
node matches (the pod's and the added ones), normalized so the best node gets 100.

Selector terms are parsed the way kube-scheduler parses them (plugins.helper.nodeselector): a term with an invalid
requirement never matches (other terms of the same selector still can), an empty term
matches nothing, and matchFields supports only metadata.name with In/NotIn and exactly one
value. Invalid preferred terms on a pod make PreScore fail with an error; invalid terms in
addedAffinity are refused when the configuration is read.

The queueing hint (kube's isSchedulableAfterNodeChange) judges one added or relabelled node with
the same parsed terms, matched against that node's labels and name alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, ClassVar

import msgspec
import msgspec.inspect
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kubesched.api.objects import Affinity, Node, NodeSelectorTerm
from kubesched.api.objects import NodeAffinity as NodeAffinitySpec
from kubesched.api.podinfo import PodInfo
from kubesched.api.validation.scheduling import validate_affinity
from kubesched.cache import labels
from kubesched.cache.nodetable import NodeTable
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterMisses,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment, default_normalize
from kubesched.plugins.helper.hints import checked_new
from kubesched.plugins.helper.nodeselector import (
    NODE_NAME_FIELD,
    Term,
    parse_node_selector,
    parse_preferred,
    preferred_score,
    terms_mask,
    terms_match_node,
)

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_CODE_ENFORCED = 1
_CODE_POD = 2
_VERDICTS: dict[int, tuple[Code, tuple[str, ...]]] = {
    _CODE_ENFORCED: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_ENFORCED,)),
    _CODE_POD: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_POD,)),
}


class UnparsableTermsError(ValueError):
    """A node matched none of a pod's required terms, some of which do not parse (kube's
    RequiredNodeAffinity.Match reports their errors then; a hint takes it as Queue)."""


def required_node_affinity_matches(pi: PodInfo, node: Node) -> bool:
    """Whether one node matches the pod's spec.nodeSelector and required node affinity (kube's
    RequiredNodeAffinity.Match); raises UnparsableTermsError where kube's returns an error."""
    info = pod_node_affinity(pi)
    node_labels = node.metadata.labels
    if any(node_labels.get(key) != value for key, value in info.node_selector.items()):
        return False
    if info.required is None:
        return True
    if terms_match_node(info.required, node):
        return True
    errors = [error for term in info.required for error in term.errors]
    if errors:
        raise UnparsableTermsError("; ".join(errors))
    return False


# --- what the plugin derives from a pod once -------------------------------------------------------


@dataclass(slots=True)
class PodNodeAffinity:
    """Parsed once per pod and kept in `pi.extra[NAME]`."""

    node_selector: Mapping[str, str]
    # None: the pod has no required node affinity; (): it has one whose terms select nothing.
    required: tuple[Term, ...] | None
    # PreFilter's narrowing from matchFields metadata.name In; `conflict` when no name survives.
    node_names: frozenset[str] | None
    conflict: bool
    preferred: tuple[tuple[int, Term], ...]
    preferred_errors: tuple[str, ...]
    # (table, generation, size, mask) of the last required mask computed, reused within a cycle.
    memo: tuple[NodeTable, int, int, np.ndarray] | None = None

    @property
    def has_required(self) -> bool:
        return bool(self.node_selector) or self.required is not None


def _names_from_terms(terms: Sequence[NodeSelectorTerm]) -> tuple[frozenset[str] | None, bool]:
    """Nodes the required terms can only match by name: the union over terms of each term's
    intersection of `metadata.name In` sets. None when some term does not pin names (terms are
    ORed, so then any node may match)."""
    union: set[str] = set()
    for term in terms:
        pinned: set[str] | None = None
        for req in term.match_fields:
            if req.key == NODE_NAME_FIELD and req.operator == "In":
                pinned = set(req.values) if pinned is None else pinned & set(req.values)
        if pinned is None:
            return None, False
        union |= pinned
    if not union:
        return None, True
    return frozenset(union), False


def pod_node_affinity(pi: PodInfo) -> PodNodeAffinity:
    cached = pi.extra.get(NAME)
    if isinstance(cached, PodNodeAffinity):
        return cached
    spec = pi.pod.spec
    node_aff = spec.affinity.node_affinity if spec.affinity is not None else None
    required_sel = node_aff.required_during_scheduling_ignored_during_execution if node_aff is not None else None
    required: tuple[Term, ...] | None = None
    node_names: frozenset[str] | None = None
    conflict = False
    if required_sel is not None:
        required = parse_node_selector(required_sel)
        if required_sel.node_selector_terms:
            node_names, conflict = _names_from_terms(required_sel.node_selector_terms)
    preferred: tuple[tuple[int, Term], ...] = ()
    preferred_errors: tuple[str, ...] = ()
    if node_aff is not None and node_aff.preferred_during_scheduling_ignored_during_execution:
        preferred, preferred_errors = parse_preferred(
            node_aff.preferred_during_scheduling_ignored_during_execution,
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        )
    info = PodNodeAffinity(dict(spec.node_selector), required, node_names, conflict, preferred, preferred_errors)
    pi.extra[NAME] = info
    return info


def required_node_affinity_mask(table: NodeTable, pi: PodInfo) -> np.ndarray:
    """Rows whose node matches the pod's spec.nodeSelector and required node affinity (all True
    when the pod has neither): kube's RequiredNodeAffinity match, as PodTopologySpread's
    nodeAffinityPolicy=Honor uses it.

    The array is shared (kept for the rest of the cycle) and read-only: copy it before
    modifying it."""
    info = pod_node_affinity(pi)
    memo = info.memo
    if memo is not None and memo[0] is table and memo[1] == table.generation and memo[2] == table.size:
        return memo[3]
    mask = np.ones(table.size, dtype=bool)
    if info.node_selector:
        mask &= labels.match_labels_mask(table, info.node_selector)
    if info.required is not None:
        mask &= terms_mask(table, info.required)
    mask.flags.writeable = False
    info.memo = (table, table.generation, table.size, mask)
    return mask


# --- args ------------------------------------------------------------------------------------------


def _affinity_errors(aff: NodeAffinitySpec) -> list[str]:
    errors: list[str] = []
    required = aff.required_during_scheduling_ignored_during_execution
    if required is not None:
        for term in parse_node_selector(required, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"):
            errors.extend(term.errors)
    _, pref_errors = parse_preferred(
        aff.preferred_during_scheduling_ignored_during_execution,
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
    )
    errors.extend(pref_errors)
    return errors


class NodeAffinityArgs(BaseModel):
    """kube's NodeAffinityArgs: affinity the scheduler adds to every pod of the profile."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, arbitrary_types_allowed=True)

    added_affinity: NodeAffinitySpec | None = Field(default=None, alias="addedAffinity")

    @field_validator("added_affinity", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if value is None or isinstance(value, NodeAffinitySpec):
            return value
        # kube decodes the config strictly: a misspelt field is an error, not ignored.
        unknown = _unknown_field(value, msgspec.inspect.type_info(NodeAffinitySpec), "addedAffinity")
        if unknown:
            raise ValueError(f"{unknown}: unknown field")
        try:
            return msgspec.convert(value, NodeAffinitySpec, strict=False)
        except msgspec.ValidationError as exc:
            # msgspec says "<problem> - at `$.a[0].b`": put the place first, as every message does.
            found = re.fullmatch(r"(.*) - at `\$(.*)`", str(exc))
            if found:
                raise ValueError(f"addedAffinity{found.group(2)}: {found.group(1)}") from None
            raise ValueError(f"addedAffinity: {exc}") from None

    @model_validator(mode="after")
    def _parse(self) -> NodeAffinityArgs:
        added = self.added_affinity
        if added is not None:
            # What the API server checks on a pod's node affinity (in its words), then what the
            # scheduler's parsing refuses besides (a Gt/Lt value that is not an integer).
            issues = validate_affinity(Affinity(node_affinity=added), "addedAffinity")
            if issues:
                raise ValueError(str(issues[0]).replace("addedAffinity.nodeAffinity.", "addedAffinity.", 1))
            errors = _affinity_errors(added)
            if errors:
                raise ValueError(errors[0])
        return self


def _unknown_field(value: Any, info: Any, path: str) -> str | None:
    """The path of the first key in `value` that the msgspec type described by `info` lacks."""
    if isinstance(info, msgspec.inspect.UnionType):
        for option in info.types:
            if isinstance(option, (msgspec.inspect.StructType, msgspec.inspect.ListType)):
                return _unknown_field(value, option, path)
        return None
    if isinstance(info, msgspec.inspect.StructType) and isinstance(value, Mapping):
        fields = {f.encode_name: f.type for f in info.fields}
        for key, item in value.items():
            if key not in fields:
                return f"{path}.{key}"
            found = _unknown_field(item, fields[key], f"{path}.{key}")
            if found:
                return found
    elif isinstance(info, msgspec.inspect.ListType) and isinstance(value, list):
        for i, item in enumerate(value):
            found = _unknown_field(item, info.item_type, f"{path}[{i}]")
            if found:
                return found
    return None


# --- the plugin ------------------------------------------------------------------------------------


class NodeAffinity(Plugin, PreFilterPlugin, FilterPlugin, FilterMisses, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = NodeAffinityArgs
    has_normalize: ClassVar[bool] = True

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return signers.node_affinity(pi)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, Mapping):
            args = NodeAffinityArgs.model_validate(args)
        super().__init__(args or NodeAffinityArgs(), handle)
        added: NodeAffinitySpec | None = self.args.added_affinity
        self.added_required: tuple[Term, ...] | None = None
        self.added_preferred: tuple[tuple[int, Term], ...] = ()
        if added is not None:
            errors = _affinity_errors(added)
            if errors:
                raise ValueError("; ".join(errors))
            if added.required_during_scheduling_ignored_during_execution is not None:
                self.added_required = parse_node_selector(added.required_during_scheduling_ignored_during_execution)
            self.added_preferred, _ = parse_preferred(added.preferred_during_scheduling_ignored_during_execution)
        self._added_memo: tuple[NodeTable, int, int, np.ndarray] | None = None

    # --- events and queueing hints ------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only a node that appears, or whose labels change, can start matching.
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeLabel), self.is_schedulable_after_node_change
            )
        ]

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when the added node matches the scheduler-enforced affinity and the pod's, or an
        updated node matching both did not match the pod's before."""
        new = checked_new(NAME, Node, old, new)
        if self.added_required is not None and not terms_match_node(self.added_required, new):
            return QueueingHint.QueueSkip
        try:
            if not required_node_affinity_matches(pi, new):
                return QueueingHint.QueueSkip
            if old is None:
                return QueueingHint.Queue
            return QueueingHint.QueueSkip if required_node_affinity_matches(pi, old) else QueueingHint.Queue
        except UnparsableTermsError:
            # kube's hint returns the parse error, which queues the pod.
            return QueueingHint.Queue

    # --- filtering ---------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        info = pod_node_affinity(pi)
        if not info.has_required and self.added_required is None:
            return None, Status(Code.SKIP)
        if info.conflict:
            return None, Status.unresolvable(ERR_REASON_CONFLICT, plugin=NAME)
        if info.node_names is not None:
            return PreFilterResult(info.node_names), None
        return None, None

    def added_mask(self, table: NodeTable) -> np.ndarray | None:
        """Rows matching the scheduler-enforced required affinity; None when there is none."""
        if self.added_required is None:
            return None
        memo = self._added_memo
        if memo is not None and memo[0] is table and memo[1] == table.generation and memo[2] == table.size:
            return memo[3]
        mask = terms_mask(table, self.added_required)
        self._added_memo = (table, table.generation, table.size, mask)
        return mask

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        info = pod_node_affinity(pi)
        added = self.added_mask(table)
        pod_ok = required_node_affinity_mask(table, pi) if info.has_required else None
        if added is None and pod_ok is None:
            return None
        # The enforced affinity is checked first, so a node failing both reports it.
        codes = np.zeros(table.size, dtype=np.int8)
        if pod_ok is not None:
            codes[~pod_ok] = _CODE_POD
        if added is not None:
            codes[~added] = _CODE_ENFORCED
        if not (codes.astype(bool) & table.present[: table.size]).any():
            return None
        return FilterResult(codes, _VERDICTS.__getitem__)

    # --- what a rejected node lacks (explanations) -----------------------------------------------

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """One step per nodeSelector label the node does not carry as asked, at least one."""
        wrong = np.zeros(rows.size)
        for key, want in pod_node_affinity(pi).node_selector.items():
            column = table.labels.get(key)
            want_id = column.vocab.get(want, -2) if column is not None else -2  # -2: no node has it
            wrong += table.label_ids(key)[rows] != want_id
        out: np.ndarray = np.maximum(wrong, 1.0)
        return out

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        node = table.nodes[row]
        if node is None:
            return ""
        info = pod_node_affinity(pi)
        labels = node.metadata.labels
        parts = []
        for key, want in sorted(info.node_selector.items()):
            have = labels.get(key)
            if have != want:
                parts.append(f"label {key}={want} (node has {key}={have})" if have is not None else f"label {key}={want}")
        added = self.added_mask(table)
        if added is not None and not added[row]:
            parts.append("the profile's added node affinity")
        elif info.required is not None and not terms_match_node(info.required, node):
            parts.append("a match for one of the pod's required node affinity terms")
        return "needs " + ", ".join(parts) if parts else ""

    # --- scoring -----------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        info = pod_node_affinity(pi)
        if info.preferred_errors:
            return Status.error("; ".join(info.preferred_errors), plugin=NAME)
        if not info.preferred and not self.added_preferred:
            return Status(Code.SKIP)
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        # Unparsable pod terms are reported by PreScore; should Score run without it, they count 0.
        info = pod_node_affinity(pi)
        return preferred_score(table, tuple(chain(self.added_preferred, info.preferred)), rows)

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores)
