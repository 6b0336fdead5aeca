"""Node selector terms, parsed as kube-scheduler parses them and matched against nodes: over the
whole node table at once (a boolean mask per term) and against one node (queueing hints, checks
at PreBind). NodeAffinity reads pods' terms and the profile's addedAffinity with it, VolumeBinding
PersistentVolumes' node affinity and StorageClasses' allowedTopologies.

The semantics are those of component-helpers' scheduling/corev1/nodeaffinity:

- a selector's terms are ORed, the requirements inside a term ANDed;
- a term with neither matchExpressions nor matchFields matches nothing (and is dropped when
  parsed); a term with an invalid requirement never matches, while other terms of the selector
  still can;
- matchExpressions read the node's labels (In, NotIn, Exists, DoesNotExist, Gt, Lt with an int64);
- matchFields support In and NotIn with exactly one value; a node has no field but
  metadata.name, so any other key reads as "" (kube's fields.Set).

A PersistentVolume's node affinity is checked against a node made of its labels alone (kube's
CheckNodeAffinity): there metadata.name reads as "" too, which `by_name=False` asks for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm
from kubesched.api.selectors import Requirement
from kubesched.api.storage import TopologySelectorTerm
from kubesched.cache import labels
from kubesched.cache.nodetable import NodeTable

NODE_NAME_FIELD = "metadata.name"

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_FIELD_OPERATORS = ("In", "NotIn")
_NAME_RE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
# strconv.ParseInt(s, 10, 64) accepts an optional sign and ASCII digits only; Python's int()
# would also take blanks and underscores.
_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


# --- parsing -----------------------------------------------------------------------------------------


def _label_key_error(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.fullmatch(prefix)):
        return f"invalid label key {key!r}: the prefix must be a DNS subdomain of at most 253 characters"
    if not name or len(name) > 63 or not _NAME_RE.fullmatch(name):
        return (
            f"invalid label key {key!r}: the name must be 1-63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def _label_value_error(value: str) -> str | None:
    if value and (len(value) > 63 or not _NAME_RE.fullmatch(value)):
        return (
            f"invalid label value {value!r}: at most 63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def _is_int64(value: str) -> bool:
    return bool(_INT_RE.fullmatch(value)) and _INT64_MIN <= int(value) <= _INT64_MAX


def _label_requirement(expr: NodeSelectorRequirement, path: str) -> tuple[Requirement | None, list[str]]:
    errors: list[str] = []
    key_error = _label_key_error(expr.key)
    if key_error:
        errors.append(f"{path}.key: {key_error}")
    op, values = expr.operator, expr.values
    if op in ("In", "NotIn"):
        if not values:
            errors.append(f"{path}.values: must be non-empty for operator {op}")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errors.append(f"{path}.values: must be empty for operator {op}")
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(f"{path}.values: operator {op} needs exactly one value")
        for i, v in enumerate(values):
            if not _is_int64(v):
                errors.append(f"{path}.values[{i}]: operator {op} needs an integer, got {v!r}")
    else:
        errors.append(f"{path}.operator: unsupported value {op!r} (supported: {', '.join(_LABEL_OPERATORS)})")
    for i, v in enumerate(values):
        value_error = _label_value_error(v)
        if value_error:
            errors.append(f"{path}.values[{i}]: {value_error}")
    if errors:
        return None, errors
    return Requirement(expr.key, op, frozenset(values)), errors


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One matchFields requirement: the node's field `key` equals (In) or differs from (NotIn) `value`."""

    key: str
    operator: str
    value: str


def _field_requirement(expr: NodeSelectorRequirement, path: str) -> tuple[FieldRequirement | None, list[str]]:
    if expr.operator not in _FIELD_OPERATORS:
        return None, [f"{path}.operator: unsupported value {expr.operator!r} (supported: In, NotIn)"]
    if len(expr.values) != 1:
        return None, [f"{path}.values: must have exactly one element"]
    return FieldRequirement(expr.key, expr.operator, expr.values[0]), []


@dataclass(frozen=True, slots=True)
class Term:
    """A parsed NodeSelectorTerm. A term with `errors` never matches."""

    labels: tuple[Requirement, ...]
    fields: tuple[FieldRequirement, ...]
    errors: tuple[str, ...] = ()

    @property
    def matches_nothing(self) -> bool:
        """Invalid, or empty: no node matches it."""
        return bool(self.errors) or (not self.labels and not self.fields)


def parse_term(term: NodeSelectorTerm, path: str) -> Term:
    reqs: list[Requirement] = []
    fields: list[FieldRequirement] = []
    errors: list[str] = []
    for i, expr in enumerate(term.match_expressions):
        req, errs = _label_requirement(expr, f"{path}.matchExpressions[{i}]")
        errors.extend(errs)
        if req is not None:
            reqs.append(req)
    for i, expr in enumerate(term.match_fields):
        freq, errs = _field_requirement(expr, f"{path}.matchFields[{i}]")
        errors.extend(errs)
        if freq is not None:
            fields.append(freq)
    return Term(tuple(reqs), tuple(fields), tuple(errors))


def _is_empty(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def parse_node_selector(selector: NodeSelector, path: str = "") -> tuple[Term, ...]:
    """The selector's terms; empty terms are dropped because they select nothing."""
    base = f"{path}.nodeSelectorTerms" if path else "nodeSelectorTerms"
    return tuple(
        parse_term(t, f"{base}[{i}]") for i, t in enumerate(selector.node_selector_terms) if not _is_empty(t)
    )


def parse_preferred(
    terms: Sequence[PreferredSchedulingTerm], path: str = ""
) -> tuple[tuple[tuple[int, Term], ...], tuple[str, ...]]:
    """Weighted preferred terms, skipping weight 0 and empty terms (they can never add anything);
    with every parse error found."""
    out: list[tuple[int, Term]] = []
    errors: list[str] = []
    for i, pref in enumerate(terms):
        if pref.weight == 0 or _is_empty(pref.preference):
            continue
        term = parse_term(pref.preference, f"{path}[{i}].preference" if path else f"[{i}].preference")
        if term.errors:
            errors.extend(term.errors)
        else:
            out.append((pref.weight, term))
    return tuple(out), tuple(errors)


# --- every row of the node table at once ---------------------------------------------------------------


def _field_mask(table: NodeTable, req: FieldRequirement, by_name: bool) -> np.ndarray:
    size = table.size
    if by_name and req.key == NODE_NAME_FIELD:
        equal = np.zeros(size, dtype=bool)
        row = table.index.get(req.value)
        if row is not None:
            equal[row] = True
    else:
        # Any other field, or the name of a node known by its labels alone, reads "".
        equal = np.full(size, req.value == "", dtype=bool)
    return equal if req.operator == "In" else ~equal


def term_mask(table: NodeTable, term: Term, *, by_name: bool = True) -> np.ndarray:
    """Rows matching every requirement of a term. An erroneous or empty term matches nothing.
    `by_name=False`: nodes are known by their labels alone (metadata.name reads "")."""
    if term.matches_nothing:
        return np.zeros(table.size, dtype=bool)
    mask: np.ndarray | None = None
    for req in term.labels:
        hit = labels.requirement_mask(table, req)
        mask = hit if mask is None else mask & hit
    for freq in term.fields:
        hit = _field_mask(table, freq, by_name)
        mask = hit if mask is None else mask & hit
    assert mask is not None
    return mask


def terms_mask(table: NodeTable, terms: Sequence[Term], *, by_name: bool = True) -> np.ndarray:
    """Rows matching at least one term (a NodeSelector's ORed terms); no terms: no rows."""
    mask = np.zeros(table.size, dtype=bool)
    for term in terms:
        mask |= term_mask(table, term, by_name=by_name)
    return mask


def preferred_score(table: NodeTable, weighted: Sequence[tuple[int, Term]], rows: np.ndarray) -> np.ndarray:
    """Per row in `rows`, the sum of the weights of the terms the node matches."""
    scores = np.zeros(rows.size, dtype=np.int64)
    for weight, term in weighted:
        scores += np.where(term_mask(table, term)[rows], weight, 0)
    return scores


# --- one node --------------------------------------------------------------------------------------------


def term_matches(term: Term, node_labels: Mapping[str, str], node_name: str = "") -> bool:
    """Whether one node matches every requirement of a term, as `term_mask` finds for its row
    (node_name "": a node known by its labels alone)."""
    if term.matches_nothing:
        return False
    if not all(req.matches(node_labels) for req in term.labels):
        return False
    for freq in term.fields:
        value = node_name if freq.key == NODE_NAME_FIELD else ""
        if (value == freq.value) != (freq.operator == "In"):
            return False
    return True


def terms_match(terms: Sequence[Term], node_labels: Mapping[str, str], node_name: str = "") -> bool:
    return any(term_matches(term, node_labels, node_name) for term in terms)


def term_matches_node(term: Term, node: Node) -> bool:
    return term_matches(term, node.metadata.labels, node.metadata.name)


def terms_match_node(terms: Sequence[Term], node: Node) -> bool:
    return terms_match(terms, node.metadata.labels, node.metadata.name)


# --- topology selector terms (a StorageClass's allowedTopologies) ------------------------------------------


def _usable_topology_term(term: TopologySelectorTerm) -> bool:
    """An empty term, or one with a requirement that lists no values, matches nothing."""
    reqs = term.match_label_expressions
    return bool(reqs) and all(r.values for r in reqs)


def topology_mask(table: NodeTable, terms: Sequence[TopologySelectorTerm]) -> np.ndarray:
    """kube's MatchTopologySelectorTerms over every row: no terms match everything; an empty or
    invalid term (a requirement without values) matches nothing; requirements are `key In values`."""
    size = table.size
    if not terms:
        return np.ones(size, dtype=bool)
    out = np.zeros(size, dtype=bool)
    for term in terms:
        if not _usable_topology_term(term):
            continue
        mask = np.ones(size, dtype=bool)
        for r in term.match_label_expressions:
            mask &= labels.requirement_mask(table, Requirement(r.key, "In", frozenset(r.values)))
        out |= mask
    return out


def topology_matches(terms: Sequence[TopologySelectorTerm], node_labels: Mapping[str, str]) -> bool:
    """One node's labels against the terms, as `topology_mask` finds for its row."""
    if not terms:
        return True
    return any(
        _usable_topology_term(term) and all(node_labels.get(r.key) in r.values for r in term.match_label_expressions)
        for term in terms
    )
