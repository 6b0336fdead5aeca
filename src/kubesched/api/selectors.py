"""Label selectors as kube evaluates them, on plain label dicts.

These per-object forms serve pods (affinity terms, spread selectors) and
validation; node-wide evaluation over the NodeTable lives in cache.labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.api.objects import LabelSelector

LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


class SelectorError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            have = int(value)
            want = int(next(iter(self.values)))
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled label selector: all requirements must hold. `nothing` matches no object."""

    requirements: tuple[Requirement, ...]
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(req.matches(labels) for req in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.nothing and not self.requirements


EVERYTHING = Selector(())
NOTHING = Selector((), nothing=True)


def compile_label_selector(selector: LabelSelector | None, *, none_matches_nothing: bool = True) -> Selector:
    """Compile a metav1.LabelSelector. A nil selector matches nothing (kube's convention for
    affinity and spread terms); an empty one matches everything."""
    if selector is None:
        return NOTHING if none_matches_nothing else EVERYTHING
    reqs = [Requirement(k, "In", frozenset({v})) for k, v in sorted(selector.match_labels.items())]
    for expr in selector.match_expressions:
        if expr.operator not in LABEL_OPERATORS:
            raise SelectorError(f"{expr.operator!r} is not a valid label selector operator")
        if expr.operator in ("In", "NotIn") and not expr.values:
            raise SelectorError(f"values must be non-empty for operator {expr.operator} on key {expr.key!r}")
        reqs.append(Requirement(expr.key, expr.operator, frozenset(expr.values)))
    return Selector(tuple(reqs))

