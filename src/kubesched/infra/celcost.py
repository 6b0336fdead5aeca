"""The cost of evaluating a CEL expression: an upper bound, in kube's CEL cost units, computed from
the checked tree (infra/celtree.py) and the sizes of the collections and strings it reads. Used
by the scheduling rules (plugins/cel/cost.py gives their nominal sizes) and by DRA's device
selectors (devices/celcost.py gives a device's limits).

The library has no cost tracking of its own, so the bound is computed before evaluating.

The model, after cel-go's: reading a variable, a field or a map entry costs 1, every function or
operator call 1 (literals 0), creating a list 10 and a map 30, string functions (contains,
startsWith, endsWith, matches, size, concatenation) one more per 10 characters, `in` on a list one per element, and a comprehension its
range plus, for every element, its loop condition and step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubesched.infra.celtree import Checked, Node

# Functions whose work grows with the length of their string operands. Comparisons are not among
# them: they stop at the first difference, and cost 1 like any call.
_STRING_FUNCTIONS = frozenset({"contains", "startsWith", "endsWith", "matches", "size", "_+_"})


@dataclass(frozen=True, slots=True)
class Sizes:
    """What the bound depends on: entries per collection variable, and the longest string;
    `element` gives the entries of each element of a collection variable (by default as many as
    `entries("*")`)."""

    entries: Callable[[str], int]
    longest: int
    element: Callable[[str], int] | None = None


def size_dependent(checked: Checked) -> bool:
    """Whether the bound changes with the data: a comprehension, or work on strings or lists."""
    for n in _walk(checked.root):
        if n.kind == "comprehension":
            return True
        if n.kind != "call":
            continue
        types = {checked.types.get(a.id, "") for a in (*n.args, *([n.target] if n.target else []))}
        if n.name in _STRING_FUNCTIONS and types & {"string", "list", "dyn"}:
            return True
        if n.name in ("@in", "_==_", "_!=_", "_+_") and types & {"list", "map", "dyn"}:
            return True
    return False


def _walk(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children())
    return out


class _Estimator:
    def __init__(self, checked: Checked, sizes: Sizes) -> None:
        self.checked = checked
        self.sizes = sizes
        # Comprehension variables in scope: name -> entries of the collection it is an element of
        # (0 when it is a scalar).
        self.scope: dict[str, int] = {}

    def entries(self, node: Node) -> int:
        """Upper bound of the entries of a collection-valued node."""
        if node.kind == "ident":
            name = self.checked.references.get(node.id, node.name)
            if name in self.scope:
                return self.scope[name]
            return self.sizes.entries(name)
        if node.kind == "list":
            return len(node.args)
        if node.kind == "map":
            return len(node.args) // 2
        if node.kind == "comprehension" and node.iter_range is not None:
            return self.entries(node.iter_range)  # map() and filter() keep at most their range
        return max(self.sizes.entries("*"), self.sizes.longest)

    def strlen(self, node: Node) -> int:
        if node.kind == "const" and isinstance(node.value, str):
            return len(node.value)
        if node.kind == "call" and node.name == "_+_":
            return sum(self.strlen(a) for a in node.args)
        return self.sizes.longest

    def cost(self, node: Node) -> int:
        kind = node.kind
        if kind == "const":
            return 0
        if kind == "ident":
            return 1
        if kind == "select":
            return 1 + (self.cost(node.target) if node.target is not None else 0)
        if kind == "list":
            return 10 + sum(self.cost(a) for a in node.args)
        if kind == "map":
            return 30 + sum(self.cost(a) for a in node.args)
        if kind == "comprehension":
            return self._comprehension(node)
        # a call
        total = 1 + sum(self.cost(a) for a in node.args)
        if node.target is not None:
            total += self.cost(node.target)
        operands = [*([node.target] if node.target is not None else []), *node.args]
        types = [self.checked.types.get(a.id, "") for a in operands]
        if node.name in _STRING_FUNCTIONS and "string" in types:
            total += -(-sum(self.strlen(a) for a, t in zip(operands, types, strict=True) if t == "string") // 10)
        if node.name == "@in" and len(node.args) == 2 and self.checked.types.get(node.args[1].id) == "list":
            total += self.entries(node.args[1])
        if node.name == "_+_" and "list" in types:
            total += sum(self.entries(a) for a in operands)
        if node.name in ("_==_", "_!=_") and any(t in ("list", "map") for t in types):
            total += max(self.entries(a) for a in operands)
        return total

    def _comprehension(self, node: Node) -> int:
        assert node.iter_range is not None
        n = self.entries(node.iter_range)
        total = self.cost(node.iter_range)
        range_name = self.checked.references.get(node.iter_range.id, node.iter_range.name)
        element = self.sizes.element(range_name) if self.sizes.element is not None else max(self.sizes.entries("*"), 0)
        saved = dict(self.scope)
        self.scope[node.iter_var] = element
        if node.iter_var2:
            self.scope[node.iter_var2] = element
        self.scope[node.accu_var] = n  # map()/filter() build a list of at most n
        try:
            per = sum(self.cost(p) for p in (node.loop_condition, node.loop_step) if p is not None)
            total += n * per
            total += sum(self.cost(p) for p in (node.accu_init, node.result) if p is not None)
        finally:
            self.scope = saved
        return total


def estimate(checked: Checked, sizes: Sizes) -> int:
    """The cost bound of one evaluation with collections and strings of the given sizes."""
    return _Estimator(checked, sizes).cost(checked.root)
