"""InterPodAffinity: required and preferred pod (anti-)affinity, as kube-scheduler applies them.

Filter checks three things per node, in kube's order:
  1. the incoming pod's required affinity: every term's topology key is on the node, and the
     node's domain holds a pod matching all the terms (or no such pod exists anywhere and the pod
     matches its own terms: the first pod of a self-affine group may go anywhere);
  2. the incoming pod's required anti-affinity: no matching pod in the node's domain of any term;
  3. existing pods' required anti-affinity: no existing pod whose term matches the incoming pod
     has the node in its domain.
Score sums, per topology domain, the incoming pod's preferred terms (weights, negative for
anti-affinity), existing pods' preferred terms that match the incoming pod, and existing pods'
required affinity terms that match it (scaled by hardPodAffinityWeight); NormalizeScore maps the
result min-max onto 0..100.

Counts live per topology key as one integer array indexed by the table's label value id, plus a
trailing always-zero slot so that a node without the key (id -1) reads 0: Filter and Score are
then a handful of fancy-index operations over the whole table.

Queueing hints (kube's isSchedulableAfter*) decide from the rejected pod's parsed required terms
and the one changed object whether an event may let the pod in; they match terms as kube's do.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.api.objects import LabelSelector, LabelSelectorRequirement, Node, PodAffinityTerm
from kubesched.api.podinfo import PodInfo
from kubesched.api.selectors import Selector, SelectorError, compile_label_selector
from kubesched.cache.cache import Cache
from kubesched.cache.nodetable import NodeTable
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    RowFilter,
    ScorePlugin,
    SignPlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, FilterResult, PreFilterResult, SignFragment

NAME = "InterPodAffinity"
PRE_FILTER_KEY = "PreFilter" + NAME
PRE_SCORE_KEY = "PreScore" + NAME

ERR_AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI_AFFINITY_RULES = "node(s) didn't satisfy existing pods anti-affinity rules"

MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_AFFINITY, _ANTI, _EXISTING = 1, 2, 3
_REASONS: dict[int, tuple[Code, tuple[str, ...]]] = {
    # Preemption cannot create a matching pod, so a failed affinity is unresolvable.
    _AFFINITY: (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_AFFINITY_RULES,)),
    _ANTI: (Code.UNSCHEDULABLE, (ERR_ANTI_AFFINITY_RULES,)),
    _EXISTING: (Code.UNSCHEDULABLE, (ERR_EXISTING_ANTI_AFFINITY_RULES,)),
}


class InterPodAffinityArgs(BaseModel):
    """kubescheduler.config.k8s.io/v1 InterPodAffinityArgs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    hard_pod_affinity_weight: int = Field(1, alias="hardPodAffinityWeight")
    ignore_preferred_terms_of_existing_pods: bool = Field(False, alias="ignorePreferredTermsOfExistingPods")

    @field_validator("hard_pod_affinity_weight")
    @classmethod
    def _weight_in_range(cls, value: int) -> int:
        if not MIN_HARD_POD_AFFINITY_WEIGHT <= value <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ValueError(
                f"hardPodAffinityWeight: Invalid value: {value}: not in valid range "
                f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
            )
        return value


# --- terms --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, weakref_slot=True)
class AffinityTerm:
    """A parsed PodAffinityTerm of some pod (kube's framework.AffinityTerm), with its weight
    for preferred terms. Equal terms of different pods are interned to one object, so a cycle
    evaluates each distinct term once however many replicas carry it."""

    topology_key: str
    selector: Selector
    namespaces: frozenset[str]
    # NOTHING for a nil namespaceSelector, an empty Selector for {} (every namespace).
    namespace_selector: Selector
    weight: int = 0

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        """Whether `pod` is selected; `namespace_labels` are the labels of the pod's namespace."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class ResolvedTerm:
    """A term of the incoming pod with its namespaceSelector expanded against the cluster's
    namespaces for this cycle. `namespaces` None means every namespace."""

    topology_key: str
    selector: Selector
    namespaces: frozenset[str] | None
    weight: int = 0

    def matches(self, pod: PodInfo) -> bool:
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return self.selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's pod (anti-)affinity terms, parsed once and cached on its PodInfo."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()
    errors: tuple[str, ...] = ()
    # The fields above whose terms failed to parse (and are therefore left empty).
    unparsed: frozenset[str] = frozenset()


_NO_TERMS = PodTerms()
_interned: weakref.WeakValueDictionary[AffinityTerm, AffinityTerm] = weakref.WeakValueDictionary()


def _merge_label_keys(term: PodAffinityTerm, pod_labels: Mapping[str, str]) -> LabelSelector | None:
    """matchLabelKeys / mismatchLabelKeys folded into the selector with the owning pod's label
    values (`key In (v)` / `key NotIn (v)`), as the API server does when the pod is created.
    Keys the pod does not carry are ignored, and a nil selector stays nil (it selects nothing)."""
    sel = term.label_selector
    if sel is None or not (term.match_label_keys or term.mismatch_label_keys):
        return sel
    # A pod read back from an API server already carries the merged requirement, with the value
    # its labels had at creation; merging again (perhaps with a newer value) would change it.
    merged = {(e.key, e.operator) for e in sel.match_expressions}
    extra: list[LabelSelectorRequirement] = []
    for keys, op in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn")):
        for key in keys:
            value = pod_labels.get(key)
            if value is not None and (key, op) not in merged:
                extra.append(LabelSelectorRequirement(key=key, operator=op, values=[value]))
    if not extra:
        return sel
    return LabelSelector(match_labels=dict(sel.match_labels), match_expressions=[*sel.match_expressions, *extra])


def _parse_term(pi: PodInfo, term: PodAffinityTerm, weight: int) -> AffinityTerm:
    selector = compile_label_selector(_merge_label_keys(term, pi.labels))
    namespace_selector = compile_label_selector(term.namespace_selector)
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pi.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    parsed = AffinityTerm(term.topology_key, selector, namespaces, namespace_selector, weight)
    return _interned.setdefault(parsed, parsed)


def _parse_group(pi: PodInfo, what: str, terms: Iterable[tuple[PodAffinityTerm, int]], errors: list[str]) -> tuple[AffinityTerm, ...]:
    # One bad term drops its whole group, as kube's PodInfo does.
    try:
        return tuple(_parse_term(pi, term, weight) for term, weight in terms)
    except SelectorError as exc:
        errors.append(f"{what}: {exc}")
        return ()


def parse_pod_terms(pi: PodInfo) -> PodTerms:
    affinity = pi.pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return _NO_TERMS
    errors: list[str] = []
    unparsed: set[str] = set()
    groups: list[tuple[AffinityTerm, ...]] = []
    for what, suffix, spec in (
        ("Affinity", "affinity", affinity.pod_affinity),
        ("AntiAffinity", "anti_affinity", affinity.pod_anti_affinity),
    ):
        if spec is None:
            groups += [(), ()]
            continue
        required = ((t, 0) for t in spec.required_during_scheduling_ignored_during_execution)
        preferred = ((w.pod_affinity_term, w.weight) for w in spec.preferred_during_scheduling_ignored_during_execution)
        for kind, terms in (("required", required), ("preferred", preferred)):
            seen = len(errors)
            groups.append(_parse_group(pi, f"{kind}{what}Terms", terms, errors))
            if len(errors) > seen:
                unparsed.add(f"{kind}_{suffix}")
    return PodTerms(groups[0], groups[2], groups[1], groups[3], tuple(errors), frozenset(unparsed))


def pod_terms(pi: PodInfo) -> PodTerms:
    """The pod's parsed terms, cached on the PodInfo (a pod's spec and labels are fixed per PodInfo)."""
    cached = pi.extra.get(NAME)
    if cached is None:
        cached = parse_pod_terms(pi)
        pi.extra[NAME] = cached
    terms: PodTerms = cached
    return terms


def resolve_term(term: AffinityTerm, namespace_labels: Mapping[str, Mapping[str, str]]) -> ResolvedTerm:
    """Expand an incoming pod's namespaceSelector into namespace names, so that matching existing
    pods needs no namespace label lookups (kube's mergeAffinityTermNamespacesIfNotEmpty)."""
    ns_sel = term.namespace_selector
    if ns_sel.empty:
        return ResolvedTerm(term.topology_key, term.selector, None, term.weight)
    namespaces = term.namespaces
    if not ns_sel.nothing:
        namespaces = namespaces | {ns for ns, labels in namespace_labels.items() if ns_sel.matches(labels)}
    return ResolvedTerm(term.topology_key, term.selector, namespaces, term.weight)


def pod_matches_all(terms: Collection[ResolvedTerm], pod: PodInfo) -> bool:
    """True iff there are terms and `pod` matches every one of them."""
    return bool(terms) and all(t.matches(pod) for t in terms)


# --- queueing hints' matching -------------------------------------------------------------------

# kube's queueing hints match terms against a pod without its namespace's labels (they pass none,
# kubernetes/kubernetes#141953): a namespaceSelector selects the pod's namespace there only if it
# is {} or holds for a namespace that has no labels, whatever Filter would find.
_HINT_NAMESPACE_LABELS: Mapping[str, str] = MappingProxyType({})


def _hint_matches_all(terms: Collection[AffinityTerm], pod: PodInfo) -> bool:
    """True iff there are terms and `pod` matches every one of them (as a hint matches)."""
    return bool(terms) and all(t.matches(pod, _HINT_NAMESPACE_LABELS) for t in terms)


def _hint_matches_any(terms: Iterable[AffinityTerm], pod: PodInfo) -> bool:
    return any(t.matches(pod, _HINT_NAMESPACE_LABELS) for t in terms)


def _placed_or_nominated(pod: PodInfo) -> bool:
    return bool(pod.node_name or pod.pod.status.nominated_node_name)


# --- per-domain counts ------------------------------------------------------------------------------

Counts = dict[str, np.ndarray]


def _fit(counts: Counts, key: str, vocab_size: int) -> np.ndarray:
    """The key's array sized to the vocabulary plus the zero slot that absent ids (-1) read."""
    arr = counts.get(key)
    if arr is None:
        arr = np.zeros(vocab_size + 1, dtype=np.int64)
        counts[key] = arr
    elif arr.size < vocab_size + 1:
        grown = np.zeros(vocab_size + 1, dtype=np.int64)
        grown[: arr.size - 1] = arr[:-1]
        arr = grown
        counts[key] = arr
    return arr


def _add_rows(counts: Counts, table: NodeTable, key: str, rows: np.ndarray, weights: np.ndarray | int) -> bool:
    """Add `weights` to the domain of each row for `key`; rows without the key add nothing.
    Returns whether any row had the key."""
    col = table.labels.get(key)
    if col is None or rows.size == 0:
        return False
    ids = col.ids[rows]
    keep = ids >= 0
    if not keep.all():
        ids = ids[keep]
        if not isinstance(weights, int):
            weights = weights[keep]
    if ids.size == 0:
        return False
    n = len(col.values)
    arr = _fit(counts, key, n)
    if isinstance(weights, int):
        arr[:n] += np.bincount(ids, minlength=n)[:n] * weights
    else:
        arr[:n] += np.bincount(ids, weights=weights, minlength=n)[:n].astype(np.int64)
    return True


def _add_row(counts: Counts, table: NodeTable, key: str, row: int, delta: int) -> None:
    col = table.labels.get(key)
    if col is None:
        return
    vid = int(col.ids[row])
    if vid < 0:
        return
    _fit(counts, key, len(col.values))[vid] += delta


def _lookup(counts: Counts, table: NodeTable, key: str, rows: np.ndarray | slice) -> np.ndarray | None:
    """Each row's count for its domain of `key` (0 without the key); None if the key is nowhere."""
    col = table.labels.get(key)
    if col is None or key not in counts:
        return None
    arr = _fit(counts, key, len(col.values))
    result: np.ndarray = arr[col.ids[rows]]
    return result


def _any_nonzero(counts: Counts) -> bool:
    return any(arr.any() for arr in counts.values())


# --- existing pods' terms -------------------------------------------------------------------------------

# Which of a pod's term groups an index holds; the kind also says how a hit is weighted.
REQUIRED_AFFINITY, REQUIRED_ANTI_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY = range(4)
_GROUP_FIELDS = ("required_affinity", "required_anti_affinity", "preferred_affinity", "preferred_anti_affinity")

Group = tuple[int, AffinityTerm]


class ExistingTermIndex:
    """The terms of a subset of placed pods (PodIndex.with_affinity or .with_required_anti_affinity),
    grouped by distinct term, with an inverted index from label pairs to the terms that could
    select a pod carrying them.

    Each cycle asks "which existing terms select the incoming pod, and where are their owners": the
    answer costs the incoming pod's label count plus the owners of the terms that hit, not a walk
    over every pod with affinity. The index follows its subset by diffing the subset's items
    (identity of PodInfo per uid, at C speed) whenever the node table changed.
    """

    def __init__(self, kinds: tuple[int, ...]) -> None:
        self.kinds = kinds
        self.members: dict[Group, dict[str, int]] = {}
        self._snapshot: dict[str, PodInfo] = {}
        self._synced: tuple[int, int] = (-1, -1)
        self._by_label: dict[tuple[str, str], set[Group]] = {}
        self._by_key: dict[str, set[Group]] = {}
        self._unindexed: set[Group] = set()

    def _groups(self, pi: PodInfo) -> Iterable[Group]:
        terms = pod_terms(pi)
        for kind in self.kinds:
            for term in getattr(terms, _GROUP_FIELDS[kind]):
                yield kind, term

    def _buckets(self, group: Group) -> list[set[Group]]:
        """Where a term is filed: under one requirement every selected pod must satisfy."""
        selector = group[1].selector
        if selector.nothing:
            return []  # selects no pod: never a candidate
        for req in selector.requirements:
            if req.operator == "In":
                return [self._by_label.setdefault((req.key, v), set()) for v in req.values]
        for req in selector.requirements:
            if req.operator == "Exists":
                return [self._by_key.setdefault(req.key, set())]
        return [self._unindexed]

    def _add(self, uid: str, pi: PodInfo) -> None:
        for group in self._groups(pi):
            owners = self.members.get(group)
            if owners is None:
                owners = self.members[group] = {}
                for bucket in self._buckets(group):
                    bucket.add(group)
            owners[uid] = owners.get(uid, 0) + 1

    def _remove(self, uid: str, pi: PodInfo) -> None:
        for group in self._groups(pi):
            owners = self.members.get(group)
            if owners is None or uid not in owners:
                continue
            owners[uid] -= 1
            if owners[uid] <= 0:
                del owners[uid]
            if not owners:
                del self.members[group]
                for bucket in self._buckets(group):
                    bucket.discard(group)
                self._prune(group)

    def _prune(self, group: Group) -> None:
        selector = group[1].selector
        for req in selector.requirements:
            if req.operator == "In":
                for v in req.values:
                    if not self._by_label.get((req.key, v), True):
                        del self._by_label[(req.key, v)]
                return
        for req in selector.requirements:
            if req.operator == "Exists":
                if not self._by_key.get(req.key, True):
                    del self._by_key[req.key]
                return

    def sync(self, source: dict[str, PodInfo], generation: int) -> None:
        # Every PodIndex change also changes the node table, so an unchanged generation means
        # an unchanged subset.
        stamp = (id(source), generation)
        if stamp == self._synced:
            return
        changed = source.items() ^ self._snapshot.items()
        if changed:
            snapshot = self._snapshot
            for uid, pi in changed:
                if snapshot.get(uid) is pi:
                    self._remove(uid, pi)
            for uid, pi in changed:
                if source.get(uid) is pi:
                    self._add(uid, pi)
            self._snapshot = dict(source)
        self._synced = stamp

    def candidates(self, labels: Mapping[str, str]) -> set[Group]:
        """Terms that may select a pod with these labels (a superset; match to be sure)."""
        out = set(self._unindexed)
        by_label, by_key = self._by_label, self._by_key
        for item in labels.items():
            hit = by_label.get(item)
            if hit:
                out |= hit
            hit = by_key.get(item[0])
            if hit:
                out |= hit
        return out

    def owner_rows(self, group: Group, pod_row: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the pods carrying the term, and how many times each carries it."""
        owners = self.members[group]
        n = len(owners)
        rows = np.fromiter(map(pod_row.__getitem__, owners), dtype=np.int64, count=n)
        times = np.fromiter(owners.values(), dtype=np.int64, count=n)
        return rows, times


def _gather(pieces: dict[str, tuple[list[np.ndarray], list[np.ndarray]]], key: str, rows: np.ndarray, w: np.ndarray) -> None:
    entry = pieces.setdefault(key, ([], []))
    entry[0].append(rows)
    entry[1].append(w)


# --- cycle state ------------------------------------------------------------------------------------


@dataclass(slots=True)
class PreFilterState:
    """What Filter needs, computed at PreFilter and kept right by AddPod/RemovePod."""

    table: NodeTable
    namespace_labels: Mapping[str, str]
    affinity_terms: tuple[ResolvedTerm, ...]
    anti_affinity_terms: tuple[ResolvedTerm, ...]
    # Whether the incoming pod matches all its own required affinity terms (first-pod rule).
    matches_own_affinity: bool
    # Per topology key, per value id: existing pods whose required anti-affinity matches the pod.
    existing_anti_affinity: Counts = field(default_factory=dict)
    # Existing pods matching all the pod's required affinity terms (counted once per term).
    affinity: Counts = field(default_factory=dict)
    # Existing pods matching each of the pod's required anti-affinity terms.
    anti_affinity: Counts = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.table,
            self.namespace_labels,
            self.affinity_terms,
            self.anti_affinity_terms,
            self.matches_own_affinity,
            {k: v.copy() for k, v in self.existing_anti_affinity.items()},
            {k: v.copy() for k, v in self.affinity.items()},
            {k: v.copy() for k, v in self.anti_affinity.items()},
        )

    def anti_affinity_keys(self, pi: PodInfo, other: PodInfo) -> Iterator[str]:
        """The topology keys of the required anti-affinity terms under which `other` refuses the
        incoming pod `pi`: other's own terms matching pi, then pi's terms matching other."""
        for term in pod_terms(other).required_anti_affinity:
            if term.matches(pi, self.namespace_labels):
                yield term.topology_key
        for rterm in self.anti_affinity_terms:
            if rterm.matches(other):
                yield rterm.topology_key

    def update_with_pod(self, pi: PodInfo, other: PodInfo, row: int, delta: int) -> None:
        """Count (+1) or uncount (-1) `other` on `row` for the incoming pod `pi`."""
        table = self.table
        for term in pod_terms(other).required_anti_affinity:
            if term.matches(pi, self.namespace_labels):
                _add_row(self.existing_anti_affinity, table, term.topology_key, row, delta)
        if pod_matches_all(self.affinity_terms, other):
            for rterm in self.affinity_terms:
                _add_row(self.affinity, table, rterm.topology_key, row, delta)
        for rterm in self.anti_affinity_terms:
            if rterm.matches(other):
                _add_row(self.anti_affinity, table, rterm.topology_key, row, delta)


@dataclass(slots=True)
class PreScoreState:
    """Per topology key, per value id: the summed weights of the domain."""

    scores: Counts

    def clone(self) -> PreScoreState:
        # Read-only after PreScore.
        return self


# --- the plugin ----------------------------------------------------------------------------------------


class InterPodAffinity(Plugin, PreFilterPlugin, FilterPlugin, RowFilter, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = InterPodAffinityArgs

    has_prefilter_extensions: ClassVar[bool] = True
    has_normalize: ClassVar[bool] = True

    may_refuse_signing = True  # framework.batching asks it first

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        affinity = pi.pod.spec.affinity
        if affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None):
            return None
        # Other pods' terms may select this pod by its labels, unless their preferred terms are ignored.
        return [] if self.args.ignore_preferred_terms_of_existing_pods else [signers.labels(pi)]

    def __init__(self, args: Any, handle: Handle) -> None:
        super().__init__(args or InterPodAffinityArgs(), handle)
        self.args: InterPodAffinityArgs
        self.handle: Handle = handle
        self._anti_index = ExistingTermIndex((REQUIRED_ANTI_AFFINITY,))
        self._affinity_index = ExistingTermIndex((REQUIRED_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY))

    @property
    def _cache(self) -> Cache:
        return self.handle.cache

    # --- events and queueing hints ------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # An assigned pod that appears may satisfy the pod's required affinity; one that leaves
            # may lift an anti-affinity conflict, either way round; a relabelled one may do both.
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
                self.is_schedulable_after_assigned_pod_change,
            ),
            # The pod's own labels decide which existing pods' anti-affinity terms select it.
            ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UpdatePodLabel), self.is_schedulable_after_target_pod_update_label),
            # A node that brings a topology domain, or moves to another one.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeLabel), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_assigned_pod_change(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """Queue when the event may give `pi` a pod matching all its required affinity terms, or
        take away a pod that its anti-affinity, or whose anti-affinity, rejects."""
        if (new is not None and not _placed_or_nominated(new)) or (old is not None and not _placed_or_nominated(old)):
            # A pod neither bound nor nominated counts nowhere (a move is an Add and a Delete).
            return QueueingHint.QueueSkip
        terms = pod_terms(pi)
        if terms.unparsed & {"required_affinity", "required_anti_affinity"}:
            return QueueingHint.Queue
        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if old is not None and new is not None:
            # One pod must match every affinity term, so only "now matches all" can help; any
            # anti-affinity term the pod stops matching may.
            if not _hint_matches_all(affinity, old) and _hint_matches_all(affinity, new):
                return QueueingHint.Queue
            if _hint_matches_any(anti, old) and not _hint_matches_any(anti, new):
                return QueueingHint.Queue
            return QueueingHint.QueueSkip
        if new is not None:
            return QueueingHint.Queue if _hint_matches_all(affinity, new) else QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue  # nothing to judge by
        if _hint_matches_any(anti, old):
            return QueueingHint.Queue
        old_terms = pod_terms(old)
        if "required_anti_affinity" in old_terms.unparsed or _hint_matches_any(old_terms.required_anti_affinity, pi):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_target_pod_update_label(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """New labels may escape an existing pod's anti-affinity, or let the pod match its own
        affinity terms: always worth a retry."""
        return QueueingHint.Queue

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue when a node brings one of the required affinity terms' topology keys or moves to
        another domain of it; for anti-affinity, when any node is added, or a node drops a term's
        key or changes its value (gaining the key cannot help: a node without it has no conflict)."""
        if new is None:
            return QueueingHint.Queue  # only Add and Update are registered
        terms = pod_terms(pi)
        if terms.unparsed & {"required_affinity", "required_anti_affinity"}:
            return QueueingHint.Queue
        new_labels = new.metadata.labels
        old_labels = old.metadata.labels if old is not None else None
        for term in terms.required_affinity:
            key = term.topology_key
            if key in new_labels and (old_labels is None or old_labels.get(key) != new_labels[key]):
                return QueueingHint.Queue
        for term in terms.required_anti_affinity:
            key = term.topology_key
            if old_labels is None or (key in old_labels and new_labels.get(key) != old_labels[key]):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    # --- PreFilter -------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_terms(pi)
        if terms.errors:
            return None, Status.unresolvable(f"parsing pod: {'; '.join(terms.errors)}")
        cache = self._cache
        with_anti = cache.pods.with_required_anti_affinity
        if not terms.required_affinity and not terms.required_anti_affinity and not with_anti:
            return None, SKIP
        table = cache.table
        ns_labels = cache.namespace_labels.get(pi.namespace, {})
        s = PreFilterState(
            table,
            ns_labels,
            tuple(resolve_term(t, cache.namespace_labels) for t in terms.required_affinity),
            tuple(resolve_term(t, cache.namespace_labels) for t in terms.required_anti_affinity),
            False,
        )
        if with_anti:
            self._count_existing_anti_affinity(s, pi, cache)
        if not s.existing_anti_affinity and not s.affinity_terms and not s.anti_affinity_terms:
            return None, SKIP
        if s.affinity_terms:
            s.matches_own_affinity = pod_matches_all(s.affinity_terms, pi)
            first, rest = s.affinity_terms[0], s.affinity_terms[1:]
            if not rest:  # one term (the common case): its matches counted per node, kept current
                rows, times = cache.pods.rows_matching(first.selector, first.namespaces) \
                    if first.namespaces is None or first.namespaces else (np.zeros(0, dtype=np.int64), 1)
                if rows.size:
                    _add_rows(s.affinity, table, first.topology_key, rows, times)
            elif all(t.namespaces is None or t.namespaces for t in s.affinity_terms):
                # Existing pods that match every term at once (kube's podMatchesAllAffinityTerms).
                rows = cache.pods.rows_matching_all([(t.selector, t.namespaces) for t in s.affinity_terms])
                if rows.size:
                    for t in s.affinity_terms:
                        _add_rows(s.affinity, table, t.topology_key, rows, 1)
        for t in s.anti_affinity_terms:
            if t.namespaces is not None and not t.namespaces:
                continue
            rows, times = cache.pods.rows_matching(t.selector, t.namespaces)
            if rows.size:
                _add_rows(s.anti_affinity, table, t.topology_key, rows, times)
        state.write(PRE_FILTER_KEY, s)
        return None, None

    def _count_existing_anti_affinity(self, s: PreFilterState, pi: PodInfo, cache: Cache) -> None:
        index = self._anti_index
        index.sync(cache.pods.with_required_anti_affinity, s.table.generation)
        pieces: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
        for group in index.candidates(pi.labels):
            term = group[1]
            if term.matches(pi, s.namespace_labels):
                rows, times = index.owner_rows(group, cache.pods.row)
                _gather(pieces, term.topology_key, rows, times)
        for key, (rows_list, times_list) in pieces.items():
            _add_rows(s.existing_anti_affinity, s.table, key, np.concatenate(rows_list), np.concatenate(times_list))

    # --- PreFilter extensions (preemption dry runs) ------------------------------------------------------

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        s = state.read(PRE_FILTER_KEY)
        if isinstance(s, PreFilterState):
            s.update_with_pod(pi, added, row, 1)
        return None

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        s = state.read(PRE_FILTER_KEY)
        if isinstance(s, PreFilterState):
            s.update_with_pod(pi, removed, row, -1)
        return None

    def harmless_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        # A pod elsewhere can refuse the pod through an anti-affinity term (its own or the pod's)
        # whose domain holds both rows; more matches only help required affinity, except that a
        # pod matching its own terms loses the first-pod exemption once another pod matches.
        s = state.read(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return False
        if any(s.table.same_label(key, row, own_row) for key in s.anti_affinity_keys(pi, added)):
            return False
        return not (s.affinity_terms and s.matches_own_affinity and pod_matches_all(s.affinity_terms, added))

    def local_to_row(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> bool:
        # What AddPod counts for the pod, counted in a domain of that row alone; the first-pod
        # exemption is the whole cluster's.
        s = state.read(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return False
        table = s.table
        if not all(table.alone_in_domain(key, row) for key in s.anti_affinity_keys(pi, added)):
            return False
        if s.affinity_terms and pod_matches_all(s.affinity_terms, added):
            return not s.matches_own_affinity and all(table.alone_in_domain(t.topology_key, row) for t in s.affinity_terms)
        return True

    def cannot_help_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        # More pods only add anti-affinity matches and take the first-pod exemption away; they
        # help only by satisfying the pod's required affinity in a domain holding its row.
        s = state.read(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return False
        if s.affinity_terms and pod_matches_all(s.affinity_terms, added):
            return not any(s.table.same_label(t.topology_key, row, own_row) for t in s.affinity_terms)
        return True

    # --- Filter ---------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        return self._verdicts(state, table, slice(0, table.size), table.size)

    def filter_rows(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        # Preemption's dry run asks about one node at a time: read only those rows.
        return self._verdicts(state, table, rows, int(rows.size))

    def _verdicts(self, state: CycleState, table: NodeTable, rows: np.ndarray | slice, n: int) -> FilterResult | None:
        """Filter's codes for `rows` (the whole table as a slice, or some rows), `n` of them."""
        s = state.read(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            return None
        codes = np.zeros(n, dtype=np.uint8)
        # Written in reverse precedence so that the first failing check names the row.
        if _any_nonzero(s.existing_anti_affinity):
            failed = np.zeros(n, dtype=bool)
            for key in s.existing_anti_affinity:
                counts = _lookup(s.existing_anti_affinity, table, key, rows)
                if counts is not None:
                    failed |= counts > 0
            codes[failed] = _EXISTING
        if s.anti_affinity_terms and _any_nonzero(s.anti_affinity):
            failed = np.zeros(n, dtype=bool)
            for key in dict.fromkeys(t.topology_key for t in s.anti_affinity_terms):
                counts = _lookup(s.anti_affinity, table, key, rows)
                if counts is not None:
                    failed |= counts > 0
            codes[failed] = _ANTI
        if s.affinity_terms:
            codes[self._affinity_fails(s, table, rows, n)] = _AFFINITY
        if not codes.any():
            return None
        return FilterResult.from_reasons(codes, _REASONS)

    @staticmethod
    def _affinity_fails(s: PreFilterState, table: NodeTable, rows: np.ndarray | slice, n: int) -> np.ndarray:
        has_keys = np.ones(n, dtype=bool)
        pods_exist = np.ones(n, dtype=bool)
        for key in dict.fromkeys(t.topology_key for t in s.affinity_terms):
            col = table.labels.get(key)
            if col is None:
                # No node carries the key: every node lacks a topology label.
                return np.ones(n, dtype=bool)
            has_keys &= col.ids[rows] >= 0
            counts = _lookup(s.affinity, table, key, rows)
            if counts is None:
                pods_exist[:] = False
            else:
                pods_exist &= counts > 0
        if s.matches_own_affinity and not _any_nonzero(s.affinity):
            # No pod anywhere matches: the first pod of a self-affine group may start a domain.
            return ~has_keys
        ok: np.ndarray = has_keys & pods_exist
        return ~ok

    # --- PreScore / Score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        if rows.size == 0:
            return SKIP
        terms = pod_terms(pi)
        if terms.errors:
            return Status.error(f"failed to parse pod: {'; '.join(terms.errors)}")
        has_constraints = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        cache = self._cache
        with_affinity = cache.pods.with_affinity
        if not has_constraints and not with_affinity:
            return SKIP
        scores: Counts = {}
        touched = False
        for group, sign in ((terms.preferred_affinity, 1), (terms.preferred_anti_affinity, -1)):
            for term in group:
                rterm = resolve_term(term, cache.namespace_labels)
                if rterm.namespaces is not None and not rterm.namespaces:
                    continue
                rows_m, times = cache.pods.rows_matching(rterm.selector, rterm.namespaces)
                if rows_m.size:
                    touched |= _add_rows(scores, table, rterm.topology_key, rows_m, times * (sign * rterm.weight))
        if with_affinity:
            touched |= self._score_existing(scores, pi, cache, table)
        if not touched:
            return SKIP
        state.write(PRE_SCORE_KEY, PreScoreState(scores))
        return None

    def _score_existing(self, scores: Counts, pi: PodInfo, cache: Cache, table: NodeTable) -> bool:
        """Existing pods' terms that select the incoming pod, credited to the owner's domain."""
        index = self._affinity_index
        index.sync(cache.pods.with_affinity, table.generation)
        ns_labels = cache.namespace_labels.get(pi.namespace, {})
        hard = self.args.hard_pod_affinity_weight
        pieces: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
        for group in index.candidates(pi.labels):
            kind, term = group
            if kind == REQUIRED_AFFINITY:
                weight = hard
            elif kind == PREFERRED_AFFINITY:
                weight = term.weight
            else:
                weight = -term.weight
            if weight == 0 or not term.matches(pi, ns_labels):
                continue
            rows, times = index.owner_rows(group, cache.pods.row)
            _gather(pieces, term.topology_key, rows, times * weight)
        touched = False
        for key, (rows_list, weights_list) in pieces.items():
            touched |= _add_rows(scores, table, key, np.concatenate(rows_list), np.concatenate(weights_list))
        return touched

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        total = np.zeros(rows.size, dtype=np.int64)
        s = state.read(PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState):
            return total
        for key in s.scores:
            values = _lookup(s.scores, table, key, rows)
            if values is not None:
                total += values
        return total

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        s = state.read(PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState) or not s.scores or scores.size == 0:
            return scores
        lo = int(scores.min())
        spread = int(scores.max()) - lo
        if spread <= 0:
            return np.zeros_like(scores)
        # Same float arithmetic as kube, truncated toward zero.
        scaled = float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(spread))
        out: np.ndarray = scaled.astype(np.int64)
        return out
