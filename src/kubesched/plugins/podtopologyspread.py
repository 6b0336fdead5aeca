"""PodTopologySpread: spread matching pods evenly across topology domains.

Hard constraints (whenUnsatisfiable: DoNotSchedule) are checked at PreFilter/Filter:
placing the pod on a node must not make the node's domain exceed the global minimum
by more than maxSkew. Soft constraints (ScheduleAnyway, and the cluster-level default
constraints) are scored: fewer matching pods in a node's domains scores higher.

Everything is counted per constraint over label value ids of the NodeTable, so a
cycle costs one pass over the pods matching each selector plus a few bincounts over
the rows, never a Python loop over nodes.

Queueing hints (kube's isSchedulableAfter*) read the rejected pod's hard constraints, as
PreFilter builds them, and the one changed pod or node.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kubesched.api.objects import Node, TopologySpreadConstraint, convert
from kubesched.api.podinfo import PodInfo
from kubesched.api.selectors import Requirement, Selector, SelectorError, compile_label_selector
from kubesched.api.validation.meta import label_key
from kubesched.cache.labels import UntoleratedTaints, first_untolerated_column
from kubesched.cache.nodetable import ABSENT, NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin, PreFilterPlugin, PreScorePlugin, ScorePlugin, SignPlugin
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, FilterResult, PreFilterResult, SignFragment
from kubesched.plugins.nodeaffinity import required_node_affinity_mask

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache

NAME = "PodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

PREFILTER_STATE_KEY = "PreFilter" + NAME
PRESCORE_STATE_KEY = "PreScore" + NAME

# Taint effects that keep a pod off a node (kube's DoNotScheduleTaintsFilterFunc).
_DO_NOT_SCHEDULE_EFFECTS = frozenset({"NoSchedule", "NoExecute"})

# The "no domain at all" global minimum when minDomains is 0: kube starts its critical
# paths at MaxInt32, so the skew can never exceed maxSkew.
_NO_MINIMUM = 2**31 - 1

_FILTER_REASONS: dict[int, tuple[Code, tuple[str, ...]]] = {
    1: (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,)),
    2: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,)),
}


# --- args -------------------------------------------------------------------------------------

_INT32_MAX = 2**31 - 1


class DefaultConstraint(BaseModel):
    """A v1.TopologySpreadConstraint in PodTopologySpreadArgs.defaultConstraints."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    max_skew: int = Field(0, alias="maxSkew")
    topology_key: str = Field("", alias="topologyKey")
    when_unsatisfiable: str = Field("", alias="whenUnsatisfiable")
    # Only accepted so that validation can refuse it with kube's message.
    label_selector: dict[str, Any] | None = Field(None, alias="labelSelector")
    min_domains: int | None = Field(None, alias="minDomains")
    node_affinity_policy: str | None = Field(None, alias="nodeAffinityPolicy")
    node_taints_policy: str | None = Field(None, alias="nodeTaintsPolicy")
    match_label_keys: list[str] = Field(default_factory=list, alias="matchLabelKeys")

    def to_api(self) -> TopologySpreadConstraint:
        result: TopologySpreadConstraint = convert(
            self.model_dump(by_alias=True, exclude_none=True, exclude={"label_selector"}),
            TopologySpreadConstraint,
            "defaultConstraints",
        )
        return result


class PodTopologySpreadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    default_constraints: list[DefaultConstraint] = Field(default_factory=list, alias="defaultConstraints")
    defaulting_type: str = Field("System", alias="defaultingType")

    @model_validator(mode="after")
    def _validate(self) -> PodTopologySpreadArgs:
        errors: list[str] = []
        if self.defaulting_type not in ("System", "List"):
            errors.append(f'defaultingType: Unsupported value: {json.dumps(self.defaulting_type)}: supported values: "System", "List"')
        elif self.defaulting_type == "System" and self.default_constraints:
            errors.append('defaultingType: Invalid value: "System": when .defaultConstraints are not empty')
        seen: dict[tuple[str, str], int] = {}
        for i, c in enumerate(self.default_constraints):
            path = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                errors.append(f"{path}.maxSkew: Invalid value: {c.max_skew}: not in valid range (0, inf)")
            elif c.max_skew > _INT32_MAX:  # an int32 in the API: the skew arithmetic assumes it fits
                errors.append(f"{path}.maxSkew: Invalid value: {c.max_skew}: out of range for a 32-bit integer")
            if c.min_domains is not None and not 0 <= c.min_domains <= _INT32_MAX:
                errors.append(f"{path}.minDomains: Invalid value: {c.min_domains}: out of range for a 32-bit integer")
            if not c.topology_key:
                errors.append(f"{path}.topologyKey: Required value: can not be empty")
            else:
                for msg in label_key(c.topology_key):
                    errors.append(f"{path}.topologyKey: Invalid value: {json.dumps(c.topology_key)}: {msg}")
            if not c.when_unsatisfiable:
                errors.append(f"{path}.whenUnsatisfiable: Required value: can not be empty")
            elif c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errors.append(
                    f"{path}.whenUnsatisfiable: Unsupported value: {json.dumps(c.when_unsatisfiable)}: "
                    f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"'
                )
            if c.label_selector is not None:
                errors.append(f"{path}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod")
            key = (c.topology_key, c.when_unsatisfiable)
            if key in seen:
                errors.append(f"defaultConstraints[{i}]: Duplicate value: " + json.dumps(f"{{{key[0]}, {key[1]}}}"))
            else:
                seen[key] = i
        if errors:
            # One message, as everywhere in kubesched: the first problem, in kube's words.
            raise ValueError(errors[0])
        return self


SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)


# --- constraints ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A constraint with its selector compiled and the API's nil fields resolved to kube's
    defaults (minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def _with_match_label_keys(selector: Selector, keys: Sequence[str], labels: dict[str, str]) -> Selector:
    """AND the pod's own values of matchLabelKeys into the selector. A nil selector (matches
    nothing) stays nil, as in kube."""
    if not keys or selector.nothing:
        return selector
    extra = tuple(Requirement(k, "In", frozenset((labels[k],))) for k in dict.fromkeys(keys) if k in labels)
    if not extra:
        return selector
    return Selector(extra + selector.requirements)


def compile_constraints(
    constraints: Sequence[TopologySpreadConstraint], labels: dict[str, str], action: str
) -> tuple[SpreadConstraint, ...]:
    """The constraints with the given whenUnsatisfiable, compiled."""
    out = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = _with_match_label_keys(compile_label_selector(c.label_selector), c.match_label_keys, labels)
        out.append(
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=1 if c.min_domains is None else c.min_domains,
                honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
                honor_taints=c.node_taints_policy == HONOR,
            )
        )
    return tuple(out)


def merge_selectors(selectors: Sequence[Selector]) -> Selector:
    """One selector requiring everything the given ones require (kube's DefaultSelector merge:
    the workloads all select the pod, so their requirements cannot conflict)."""
    reqs: dict[Requirement, None] = {}
    for sel in selectors:
        for r in sel.requirements:
            reqs[r] = None
    return Selector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class _OwnConstraints:
    hard: tuple[SpreadConstraint, ...]
    soft: tuple[SpreadConstraint, ...]


def _own_constraints(pi: PodInfo) -> _OwnConstraints | None:
    """The pod's own constraints, parsed once per PodInfo; None when it has none."""
    cached: _OwnConstraints | bool | None = pi.extra.get(NAME)
    if cached is None:
        spec = pi.pod.spec.topology_spread_constraints
        if not spec:
            cached = False
        else:
            try:
                cached = _OwnConstraints(
                    compile_constraints(spec, pi.labels, DO_NOT_SCHEDULE),
                    compile_constraints(spec, pi.labels, SCHEDULE_ANYWAY),
                )
            except SelectorError as exc:
                # Not cached: the error is reported in every cycle, as kube does.
                raise SelectorError(f"pod {pi.key}: spec.topologySpreadConstraints: {exc}") from None
        pi.extra[NAME] = cached
    return cached if isinstance(cached, _OwnConstraints) else None


# --- per-row helpers ---------------------------------------------------------------------------


def _value_ids(table: NodeTable, key: str) -> tuple[np.ndarray, int]:
    """Value id per row for a label key (ABSENT where unset) and the key's vocabulary size."""
    col = table.labels.get(key)
    if col is None:
        return np.full(table.size, ABSENT, dtype=np.int32), 0
    return col.ids[: table.size], len(col.values)


def _matching_counts(cache: Cache, selector: Selector, namespace: str, size: int) -> np.ndarray:
    """Matching pods per row: same namespace as the incoming pod, selector matches, not terminating."""
    return cache.pods.counts_matching(selector, (namespace,), size, live_only=True)


class _Inclusion:
    """Rows that count for a constraint's nodeAffinityPolicy / nodeTaintsPolicy; computed on
    first use and shared by every constraint of the pod."""

    __slots__ = ("_affinity", "_pi", "_table", "_taints")

    def __init__(self, table: NodeTable, pi: PodInfo) -> None:
        self._table = table
        self._pi = pi
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None

    def affinity(self) -> np.ndarray:
        size = self._table.size
        if self._affinity is None or len(self._affinity) < size:
            self._affinity = np.asarray(required_node_affinity_mask(self._table, self._pi), dtype=bool)[:size]
        return self._affinity[:size]

    def taints(self) -> np.ndarray:
        size = self._table.size
        if self._taints is None or len(self._taints) < size:
            cols = UntoleratedTaints(self._pi.pod.spec.tolerations, _DO_NOT_SCHEDULE_EFFECTS).columns(self._table)
            untolerated = first_untolerated_column(self._table, cols)
            self._taints = np.ones(size, dtype=bool) if untolerated is None else untolerated[:size] < 0
        return self._taints[:size]

    def mask(self, c: SpreadConstraint, base: np.ndarray) -> np.ndarray:
        out = base
        if c.honor_affinity:
            out = out & self.affinity()
        if c.honor_taints:
            out = out & self.taints()
        return out


def _has_all_keys(node_labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    """Whether a node carries every constraint's topology key (one row of `_all_keys_mask`)."""
    return all(c.topology_key in node_labels for c in constraints)


def _all_keys_mask(table: NodeTable, constraints: Sequence[SpreadConstraint]) -> np.ndarray:
    """Rows carrying every constraint's topology key."""
    mask = table.present[: table.size].copy()
    for key in dict.fromkeys(c.topology_key for c in constraints):
        mask &= _value_ids(table, key)[0] != ABSENT
    return mask


# --- PreFilter / Filter state ---------------------------------------------------------------------


class PreFilterState:
    """Matching-pod counts per domain for each hard constraint.

    `counts[i][v]` is the number of matching pods in the domain whose label value id is v;
    `eligible[i][v]` says whether that domain is one the constraint spreads over (it has a
    node carrying all the topology keys and passing the inclusion policies), which is what
    the global minimum and minDomains are computed over.
    """

    __slots__ = ("constraints", "counts", "eligible", "inclusion", "self_match")

    def __init__(
        self,
        constraints: tuple[SpreadConstraint, ...],
        counts: list[np.ndarray],
        eligible: list[np.ndarray],
        self_match: tuple[bool, ...],
        inclusion: _Inclusion,
    ) -> None:
        self.constraints = constraints
        self.counts = counts
        self.eligible = eligible
        self.self_match = self_match
        self.inclusion = inclusion

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,
            [c.copy() for c in self.counts],
            [e.copy() for e in self.eligible],
            self.self_match,
            self.inclusion,
        )

    def domains(self, i: int) -> int:
        return int(np.count_nonzero(self.eligible[i]))

    def global_min(self, i: int) -> int:
        """The smallest count over eligible domains; 0 while there are fewer eligible domains
        than minDomains."""
        eligible = self.eligible[i]
        n = int(np.count_nonzero(eligible))
        if n < self.constraints[i].min_domains:
            return 0
        if n == 0:
            return _NO_MINIMUM
        return int(self.counts[i][eligible].min())

    def _grow(self, i: int, vocab: int) -> None:
        """Room for label values that appeared after PreFilter."""
        have = self.counts[i].size
        if vocab > have:
            self.counts[i] = np.concatenate([self.counts[i], np.zeros(vocab - have, dtype=np.int64)])
            self.eligible[i] = np.concatenate([self.eligible[i], np.zeros(vocab - have, dtype=bool)])


@dataclass(slots=True)
class PreScoreState:
    constraints: tuple[SpreadConstraint, ...]
    # Per constraint: matching pods per domain value id (zone-like keys), or per row (hostname).
    counts: list[np.ndarray]
    per_row: list[bool]
    weights: list[float]
    # Rows scored 0 and left out of normalization (missing a required topology key), table-wide.
    ignored: np.ndarray
    # `ignored` for the rows of the last Score call, for NormalizeScore.
    scored_ignored: np.ndarray | None = None

    def clone(self) -> PreScoreState:
        # Read-only after PreScore, as in kube.
        return self


def topology_normalizing_weight(size: int) -> float:
    """Weight of a constraint's counts: log(number of domains + 2), so that counts of a
    topology with many small domains are not drowned by one with few big ones."""
    return math.log(size + 2)


# --- the plugin ----------------------------------------------------------------------------------


class PodTopologySpread(Plugin, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name = NAME
    Args = PodTopologySpreadArgs

    has_prefilter_extensions: ClassVar[bool] = True
    has_normalize: ClassVar[bool] = True

    may_refuse_signing = True  # framework.batching asks it first

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        # Placement depends on where the other pods of its spread are, not on the node alone.
        if pi.pod.spec.topology_spread_constraints or self.system_defaulted or self.args.default_constraints:
            return None
        return []

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle) -> None:
        super().__init__(args or PodTopologySpreadArgs(), handle)
        self.handle: Handle = handle
        a: PodTopologySpreadArgs = self.args
        self.system_defaulted = a.defaulting_type == "System"
        defaults: Sequence[TopologySpreadConstraint] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else [c.to_api() for c in a.default_constraints]
        )
        # Labels of the pod only feed matchLabelKeys, which default constraints lose anyway
        # (their selector is replaced by the workloads' one), so compile them once.
        self._default_hard = compile_constraints(defaults, {}, DO_NOT_SCHEDULE)
        self._default_soft = compile_constraints(defaults, {}, SCHEDULE_ANYWAY)

    @property
    def _cache(self) -> Cache:
        return self.handle.cache

    # --- constraints for a pod ---------------------------------------------------------------

    def _defaults_for(self, pi: PodInfo, defaults: tuple[SpreadConstraint, ...]) -> tuple[SpreadConstraint, ...]:
        if not defaults:
            return ()
        selectors = self._cache.selectors_for(pi)
        if not selectors:
            return ()
        selector = merge_selectors(selectors)
        if selector.empty:
            return ()
        return tuple(
            SpreadConstraint(c.max_skew, c.topology_key, selector, c.min_domains, c.honor_affinity, c.honor_taints) for c in defaults
        )

    def hard_constraints(self, pi: PodInfo) -> tuple[SpreadConstraint, ...]:
        own = _own_constraints(pi)
        if own is not None:
            return own.hard
        return self._defaults_for(pi, self._default_hard)

    def soft_constraints(self, pi: PodInfo) -> tuple[SpreadConstraint, ...]:
        own = _own_constraints(pi)
        if own is not None:
            return own.soft
        return self._defaults_for(pi, self._default_soft)

    # --- PreFilter ------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.hard_constraints(pi)
        except SelectorError as exc:
            return None, Status.error(f"obtaining pod's hard topology spread constraints: {exc}")
        if not constraints:
            return None, SKIP
        state.write(PREFILTER_STATE_KEY, self._prefilter_state(pi, constraints))
        return None, None

    def _prefilter_state(self, pi: PodInfo, constraints: tuple[SpreadConstraint, ...]) -> PreFilterState:
        cache = self._cache
        table = cache.table
        size = table.size
        inclusion = _Inclusion(table, pi)
        # Nodes lacking any of the constraints' keys count for none of them.
        base = _all_keys_mask(table, constraints)
        counts: list[np.ndarray] = []
        eligible: list[np.ndarray] = []
        by_selector: dict[Selector, np.ndarray] = {}
        for c in constraints:
            ids, vocab = _value_ids(table, c.topology_key)
            rows = inclusion.mask(c, base)
            domain_ids = ids[rows]
            eligible.append(np.bincount(domain_ids, minlength=vocab)[:vocab] > 0)
            per_row = by_selector.get(c.selector)
            if per_row is None:
                per_row = _matching_counts(cache, c.selector, pi.namespace, size)
                by_selector[c.selector] = per_row
            dom = np.bincount(domain_ids, weights=per_row[rows], minlength=vocab)[:vocab]
            counts.append(dom.astype(np.int64))
        self_match = tuple(c.selector.matches(pi.labels) for c in constraints)
        return PreFilterState(constraints, counts, eligible, self_match, inclusion)

    # --- PreFilter extensions (preemption dry runs) --------------------------------------------

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        self._update_with_pod(state, pi, added, row, 1)
        return None

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        self._update_with_pod(state, pi, removed, row, -1)
        return None

    def harmless_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        # A matching pod in another domain can only raise the minimum the skew is measured
        # against; one in the pod's own domain (another node of its zone) raises its count.
        st: PreFilterState | None = state.read(PREFILTER_STATE_KEY)
        if st is None:
            return False
        table = self._cache.table
        for i, c, vid in self._counting(st, pi, added, row):
            if table.same_label(c.topology_key, row, own_row) or vid >= len(st.eligible[i]) or not st.eligible[i][vid]:
                return False
        return True

    def local_to_row(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> bool:
        # A pod counted anywhere may move the minimum every row's skew is measured against.
        st: PreFilterState | None = state.read(PREFILTER_STATE_KEY)
        return st is not None and next(self._counting(st, pi, added, row), None) is None

    def cannot_help_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        # A matching pod in the pod's own domain only raises its count; one in another domain
        # (or a domain not yet counted) may raise the minimum, or the number of domains.
        st: PreFilterState | None = state.read(PREFILTER_STATE_KEY)
        if st is None:
            return False
        table = self._cache.table
        return all(table.same_label(c.topology_key, row, own_row) for _i, c, _vid in self._counting(st, pi, added, row))

    def _update_with_pod(self, state: CycleState, pi: PodInfo, other: PodInfo, row: int, delta: int) -> None:
        st: PreFilterState | None = state.read(PREFILTER_STATE_KEY)
        if st is None:
            return
        table = self._cache.table
        for i, c, vid in self._counting(st, pi, other, row):
            st._grow(i, len(table.labels[c.topology_key].values))
            st.counts[i][vid] += delta
            # A domain touched here is part of the constraint's domains from now on (kube
            # inserts the topology value into its map).
            st.eligible[i][vid] = True

    def _counting(self, st: PreFilterState, pi: PodInfo, other: PodInfo, row: int) -> Iterator[tuple[int, SpreadConstraint, int]]:
        """The constraints `other` on `row` counts in for the pod: (index, constraint, its
        domain's value id); none when it is in another namespace or the node lacks a key."""
        table = self._cache.table
        if other.namespace != pi.namespace or row >= table.size or not table.present[row]:
            return
        node_labels = table.node_labels[row]
        if not _has_all_keys(node_labels, st.constraints):
            return
        for i, c in enumerate(st.constraints):
            if not c.selector.matches(other.labels):
                continue
            if c.honor_affinity and not st.inclusion.affinity()[row]:
                continue
            if c.honor_taints and not st.inclusion.taints()[row]:
                continue
            yield i, c, table.labels[c.topology_key].vocab[node_labels[c.topology_key]]

    # --- Filter -------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        st: PreFilterState | None = state.read(PREFILTER_STATE_KEY)
        if st is None or not st.constraints:
            return None
        size = table.size
        codes = np.zeros(size, dtype=np.uint8)
        for i, c in enumerate(st.constraints):
            ids, vocab = _value_ids(table, c.topology_key)
            st._grow(i, max(vocab, 1))
            missing = ids == ABSENT
            match = st.counts[i][np.where(missing, 0, ids)]
            limit = c.max_skew + st.global_min(i) - (1 if st.self_match[i] else 0)
            # Constraints are checked in order; a row keeps the first reason it fails with.
            undecided = codes == 0
            codes[undecided & missing] = 2
            codes[undecided & ~missing & (match > limit)] = 1
        codes[~table.present[:size]] = 0
        if not codes.any():
            return None
        return FilterResult.from_reasons(codes, _FILTER_REASONS)

    # --- PreScore / Score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        if not len(table):
            return SKIP
        try:
            constraints = self.soft_constraints(pi)
        except SelectorError as exc:
            return Status.error(f"obtaining pod's soft topology spread constraints: {exc}")
        if not constraints:
            return SKIP
        cache = self._cache
        size = table.size
        present = table.present[:size]
        # System defaults tolerate nodes without a zone label (they still spread by hostname);
        # explicit constraints and List defaults need every key.
        require_all = _own_constraints(pi) is not None or not self.system_defaulted
        all_keys = _all_keys_mask(table, constraints)
        ignored = present & ~all_keys if require_all else np.zeros(size, dtype=bool)
        scored = rows[~ignored[rows]]
        base = all_keys if require_all else present
        inclusion = _Inclusion(table, pi)
        counts: list[np.ndarray] = []
        per_row: list[bool] = []
        weights: list[float] = []
        by_selector: dict[Selector, np.ndarray] = {}
        for c in constraints:
            row_counts = by_selector.get(c.selector)
            if row_counts is None:
                row_counts = _matching_counts(cache, c.selector, pi.namespace, size)
                by_selector[c.selector] = row_counts
            if c.topology_key == LABEL_HOSTNAME:
                # One domain per node: a node's own pods, whatever the inclusion policies.
                counts.append(row_counts)
                per_row.append(True)
                weights.append(topology_normalizing_weight(int(scored.size)))
                continue
            ids, vocab = _value_ids(table, c.topology_key)
            # Without require_all, nodes lacking the key form one more domain (kube reads the
            # missing label as ""), which shares the id of a real "" value if there is one.
            col = table.labels.get(c.topology_key)
            blank = col.vocab.get("", vocab) if col is not None else vocab
            eff = np.where(ids == ABSENT, blank, ids)
            slots = vocab + 1
            domains = np.bincount(eff[scored], minlength=slots)[:slots] > 0
            weights.append(topology_normalizing_weight(int(np.count_nonzero(domains))))
            counted = inclusion.mask(c, base)
            dom = np.bincount(eff[counted], weights=row_counts[counted], minlength=slots)[:slots].astype(np.int64)
            counts.append(dom)
            per_row.append(False)
        state.write(PRESCORE_STATE_KEY, PreScoreState(constraints, counts, per_row, weights, ignored))
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        st: PreScoreState | None = state.read(PRESCORE_STATE_KEY)
        if st is None:
            return np.zeros(rows.size, dtype=np.int64)
        total = np.zeros(rows.size, dtype=np.float64)
        for i, c in enumerate(st.constraints):
            ids = _value_ids(table, c.topology_key)[0][rows]
            has = ids != ABSENT
            counts = st.counts[i]
            if st.per_row[i]:
                cnt = counts[rows]
            else:
                safe = np.where(has & (ids < counts.size), ids, 0)
                cnt = np.where(ids < counts.size, counts[safe], 0)
            # Summed constraint by constraint in float64, as kube does, so rounding agrees.
            total += np.where(has, cnt * st.weights[i] + float(c.max_skew - 1), 0.0)
        ignored = st.ignored[rows]
        st.scored_ignored = ignored
        # math.Round: half away from zero (scores are never negative).
        out = np.floor(total + 0.5).astype(np.int64)
        out[ignored] = 0
        return out

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        st: PreScoreState | None = state.read(PRESCORE_STATE_KEY)
        if st is None or scores.size == 0:
            return scores
        ignored = st.scored_ignored
        if ignored is None or ignored.size != scores.size:
            ignored = np.zeros(scores.size, dtype=bool)
        valid = ~ignored
        out = np.zeros(scores.size, dtype=np.int64)
        if not valid.any():
            return out
        kept = scores[valid]
        lo, hi = int(kept.min()), int(kept.max())
        if hi <= 0:
            # kube's running max starts at 0, so an all-zero field scores full marks.
            out[valid] = MAX_NODE_SCORE
            return out
        # Fewer matching pods is better: invert within [min, max].
        out[valid] = MAX_NODE_SCORE * (hi + lo - kept) // hi
        return out

    # --- events and queueing hints -----------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # An assigned pod that appears, leaves or is relabelled may change a domain's count.
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
                self.is_schedulable_after_assigned_pod_change,
            ),
            # The pod's own labels decide whether it counts itself (and its matchLabelKeys); a new
            # toleration changes which nodes count under nodeTaintsPolicy: Honor.
            ClusterEventWithHint(
                ClusterEvent(TARGET_POD, ActionType.UpdatePodToleration | ActionType.UpdatePodLabel),
                self.is_schedulable_after_target_pod_change,
            ),
            # Nodes bring, move or take away topology domains, and taints change which nodes count.
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_assigned_pod_change(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """Queue when a bound (or nominated) pod of the pod's namespace that a hard constraint
        selects appears or leaves, or is relabelled into or out of a constraint's selector."""
        if (new is not None and not _involved(new, pi)) or (old is not None and not _involved(old, pi)):
            return QueueingHint.QueueSkip
        try:
            constraints = self.hard_constraints(pi)
        except SelectorError:
            return QueueingHint.Queue
        if old is not None and new is not None:
            return _after_label_change(old, new, constraints)
        changed = new if new is not None else old
        if changed is None:
            return QueueingHint.Queue  # nothing to judge by
        if any(c.selector.matches(changed.labels) for c in constraints):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_target_pod_change(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """Queue when the pod got other tolerations and a hard constraint honors taints, or when
        its new labels move it into or out of a constraint's selector."""
        if old is None or new is None:
            return QueueingHint.Queue  # only updates are registered
        try:
            constraints = self.hard_constraints(pi)
        except SelectorError:
            return QueueingHint.Queue
        if new.pod.spec.tolerations != old.pod.spec.tolerations and any(c.honor_taints for c in constraints):
            return QueueingHint.Queue
        return _after_label_change(old, new, constraints)

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when a node carrying every hard constraint's topology key is added or deleted,
        when an update makes it carry them all or not, or, carrying them all, when it changes a
        topology value or its taints."""
        try:
            constraints = self.hard_constraints(pi)
        except SelectorError:
            return QueueingHint.Queue
        old_matching = old is not None and _has_all_keys(old.metadata.labels, constraints)
        new_matching = new is not None and _has_all_keys(new.metadata.labels, constraints)
        if old is not None and new is not None:
            if old_matching != new_matching:
                return QueueingHint.Queue
            if new_matching and (
                _topology_values_changed(old.metadata.labels, new.metadata.labels, constraints) or old.spec.taints != new.spec.taints
            ):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        if new is not None:
            return QueueingHint.Queue if new_matching else QueueingHint.QueueSkip
        if old is not None:
            return QueueingHint.Queue if old_matching else QueueingHint.QueueSkip
        return QueueingHint.Queue  # nothing to judge by


def _involved(other: PodInfo, pi: PodInfo) -> bool:
    """Whether `other` may count in `pi`'s spreading: bound or nominated, in `pi`'s namespace."""
    if not (other.node_name or other.pod.status.nominated_node_name):
        return False
    return other.namespace == pi.namespace


def _after_label_change(old: PodInfo, new: PodInfo, constraints: Sequence[SpreadConstraint]) -> QueueingHint:
    """Queue when a relabelled pod starts or stops matching some constraint's selector."""
    if old.labels == new.labels:
        return QueueingHint.QueueSkip
    for c in constraints:
        if c.selector.matches(old.labels) != c.selector.matches(new.labels):
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


def _topology_values_changed(old: Mapping[str, str], new: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    return any(old.get(c.topology_key, "") != new.get(c.topology_key, "") for c in constraints)


__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
    "PreFilterState",
    "PreScoreState",
    "SpreadConstraint",
    "compile_constraints",
    "merge_selectors",
    "topology_normalizing_weight",
]
