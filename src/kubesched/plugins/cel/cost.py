"""The cost bound of a scheduling rule (the estimator is infra/celcost.py's): at load time with
nominal sizes (a rule that could not stay under `costLimit` on a node with NOMINAL_ENTRIES labels
is refused there), and before each evaluation whose cost depends on sizes (one with a
comprehension such as `node.labels.all(...)` or a string function) from the actual sizes of the
node's and pod's data. An evaluation whose bound passes the limit is not started: it fails as
kube's does when its runtime cost limit is hit.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesched.infra import celcost
from kubesched.infra.celcost import Sizes, size_dependent
from kubesched.infra.celtree import Checked

NOMINAL_ENTRIES = 100  # entries of every map and list when estimating at load time
NOMINAL_STRING = 256  # characters of every string read from the cluster, likewise
TAINT_FIELDS = 3  # a taint is a map of key, value and effect


def rule_sizes(entries: Callable[[str], int], longest: int) -> Sizes:
    """Sizes of a rule's data: a taint, an element of node.taints, has three fields."""
    return Sizes(entries, longest, lambda name: TAINT_FIELDS if name == "node.taints" else max(entries("*"), 0))


NOMINAL = rule_sizes(lambda _name: NOMINAL_ENTRIES, NOMINAL_STRING)


def estimate(checked: Checked, sizes: Sizes = NOMINAL) -> int:
    """The cost bound of one evaluation of a rule with collections and strings of the given sizes."""
    return celcost.estimate(checked, sizes)


__all__ = ["NOMINAL", "NOMINAL_ENTRIES", "NOMINAL_STRING", "Sizes", "estimate", "rule_sizes", "size_dependent"]
