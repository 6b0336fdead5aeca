"""Vectorized evaluation: an expression of a restricted subset evaluated for every row of the node
table at once with numpy, with the same results as the library evaluating it node by node.

The subset (anything else is evaluated node by node by the library):

- literals: bool, int, double, string;
- variables: every pod.* and namespaceObject.* variable (the same on every row of a cycle),
  `node.name`, `node.unschedulable`, and entries of `node.labels`, `node.allocatable`,
  `node.requested`, `node.free` and `usage` (by index, `m["k"]`, or field, `m.k`) whose key is a
  literal or a pod/namespace string;
- `has(m.k)` and `"k" in m` on those maps and on the pod's and namespace's maps;
- `&&`, `||`, `!`, `c ? a : b` (numbers or bools), `==` and `!=` (numbers, bools, strings),
  `<`, `<=`, `>`, `>=` (numbers), `+`, `-`, `*`, `/`, `%`, unary `-` (ints and doubles), `int()`
  and `double()` (of numbers, and of the strings above: `int(node.labels["gpu-memory"])`), and
  `quantity()`/`millicores()` of a literal.

Errors follow CEL: each value carries a mask of the rows where it is an error (a missing label,
an integer overflow, a division by zero), `&&`/`||` absorb an error when the other side decides,
and the conditional evaluates only the branch it takes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from cel_expr_python import cel

from kubesched.cache.nodetable import ABSENT, NodeTable
from kubesched.infra.celtree import Checked, Node
from kubesched.plugins.cel.env import FUNCTIONS, RESOURCE_MAPS

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
TWO_63 = float(2**63)

STRING_SCALARS = frozenset({"pod.name", "pod.namespace", "pod.priorityClassName", "pod.schedulerName", "namespaceObject.name"})
SCALAR_MAPS = frozenset({"pod.labels", "pod.annotations", "pod.nodeSelector", "namespaceObject.labels", "pod.requests"})
NODE_MAPS = frozenset({"node.labels", "node.allocatable", "node.requested", "node.free", "usage"})
NUMERIC_MAPS = RESOURCE_MAPS | {"usage"}
_ARITH = frozenset({"_+_", "_-_", "_*_", "_/_", "_%_"})
_ORDER = frozenset({"_<_", "_<=_", "_>_", "_>=_"})
_EQ = frozenset({"_==_", "_!=_"})


_CONVERT = cel.NewEnv(variables={"s": cel.Type.STRING})


class Unsupported(Exception):
    """The expression is outside the vectorized subset."""


# --- what the subset accepts, decided once when the rule compiles -------------------------------


def vectorizable(checked: Checked) -> bool:
    try:
        _Plan(checked).value(checked.root)
    except Unsupported:
        return False
    return True


class _Plan:
    """Checks a tree against the subset, by the checked types (no data needed)."""

    def __init__(self, checked: Checked) -> None:
        self.checked = checked

    def type(self, node: Node) -> str:
        return self.checked.types.get(node.id, "dyn")

    def var(self, node: Node) -> str:
        return self.checked.references.get(node.id, node.name) if node.kind == "ident" else ""

    def scalar_string(self, node: Node) -> None:
        """A string that is the same on every row: a literal or a pod/namespace string."""
        if node.kind == "const" and isinstance(node.value, str):
            return
        if node.kind == "ident" and self.var(node) in STRING_SCALARS:
            return
        if self._map_entry(node) in SCALAR_MAPS and self.type(node) == "string":
            return
        raise Unsupported

    def _map_entry(self, node: Node) -> str:
        """The map a node reads an entry of (m["k"] or m.k with a scalar key), or ""."""
        if node.kind == "select" and not node.test_only and node.target is not None:
            holder = self.var(node.target)
            return holder if holder in SCALAR_MAPS | NODE_MAPS else ""
        if node.kind == "call" and node.name == "_[_]" and len(node.args) == 2:
            holder = self.var(node.args[0])
            if holder in SCALAR_MAPS | NODE_MAPS:
                self.scalar_string(node.args[1])
                return holder
        return ""

    def string(self, node: Node) -> None:
        if node.kind == "ident" and self.var(node) == "node.name":
            return
        if self._map_entry(node) == "node.labels":
            return
        self.scalar_string(node)

    def value(self, node: Node) -> None:
        """A bool, int or double."""
        typ = self.type(node)
        if typ not in ("bool", "int", "double"):
            raise Unsupported
        kind = node.kind
        if kind == "const":
            return
        if kind == "ident":
            if self.var(node) in ("pod.priority", "node.unschedulable"):
                return
            raise Unsupported
        if kind == "select":
            if node.test_only:
                if node.target is not None and self.var(node.target) in SCALAR_MAPS | NODE_MAPS:
                    return
                raise Unsupported
            if self._map_entry(node) in NUMERIC_MAPS:
                return
            raise Unsupported
        if kind != "call" or node.target is not None:
            raise Unsupported
        name, args = node.name, node.args
        if name == "_[_]":
            if self._map_entry(node) in NUMERIC_MAPS:
                return
            raise Unsupported
        if name == "@in" and len(args) == 2:
            if self.var(args[1]) in SCALAR_MAPS | NODE_MAPS:
                self.scalar_string(args[0])
                return
            raise Unsupported
        if name in ("_&&_", "_||_", "!_", "-_", "_?_:_") or name in _ARITH or name in _ORDER:
            for a in args:
                self.value(a)
            return
        if name in _EQ and len(args) == 2:
            types = {self.type(a) for a in args}
            if types == {"string"}:
                for a in args:
                    self.string(a)
                return
            if len(types) == 1 and types <= {"bool", "int", "double"}:
                for a in args:
                    self.value(a)
                return
            raise Unsupported
        if name in ("int", "double") and len(args) == 1 and self.type(args[0]) in ("int", "double"):
            self.value(args[0])
            return
        if name in ("int", "double") and len(args) == 1 and self.type(args[0]) == "string":
            self.string(args[0])
            return
        if name in FUNCTIONS and len(args) == 1 and args[0].kind == "const" and isinstance(args[0].value, str):
            return
        raise Unsupported


# --- evaluation -------------------------------------------------------------------------------


@dataclass(slots=True)
class Vec:
    """A bool, int or double per row; `err` marks the rows where it is an error."""

    val: np.ndarray
    err: np.ndarray


@dataclass(slots=True)
class Str:
    """A string per row: one string for all rows (`scalar`), or value ids into `values`."""

    scalar: str | None
    ids: np.ndarray | None
    vocab: Mapping[str, int]
    err: np.ndarray


@dataclass(slots=True)
class Inputs:
    """What the vectorized path reads in one cycle."""

    table: NodeTable
    rows: np.ndarray  # row indices evaluated
    scalars: Mapping[str, object]  # the pod's and namespace's variables, as the library gets them
    resource_keys: frozenset[str]
    usage: Mapping[str, np.ndarray] | None  # per resource, per table row; NaN where missing
    names: Callable[[], tuple[np.ndarray, Mapping[str, int]]]  # node names encoded: ids per row, vocab


class Evaluator:
    def __init__(self, checked: Checked, inputs: Inputs) -> None:
        self.checked = checked
        self.inp = inputs
        self.n = int(inputs.rows.size)
        self.uniform = uniform_nodes(checked)

    def scalar(self, node: Node) -> tuple[bool, bool]:
        """A bool subtree that reads nothing of the node, evaluated once: (value, is an error)."""
        one = Evaluator(self.checked, Inputs(self.inp.table, self.inp.rows[:1], self.inp.scalars, self.inp.resource_keys,
                                             self.inp.usage, self.inp.names))
        v = one.value(node)
        return bool(v.val[0]), bool(v.err[0])

    def junction(self, args: list[Node], *, conj: bool) -> Vec:
        """&& / ||: a side that reads nothing of the node is evaluated once first, and when it
        decides (false for &&, true for ||) the other side is not evaluated: exact, since CEL's
        deciding side wins over an error on the other."""
        first, second = args
        if second.id in self.uniform and first.id not in self.uniform:
            first, second = second, first
        if first.id in self.uniform and self.n > 1:
            value, err = self.scalar(first)
            if not err:
                if value != conj:
                    return self.const(value)
                return self.value(second)
        return self.logic(self.value(first), self.value(second), conj=conj)

    # helpers
    def none(self) -> np.ndarray:
        return np.zeros(self.n, dtype=bool)

    def every(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)

    def const(self, value: object) -> Vec:
        if isinstance(value, bool):
            return Vec(np.full(self.n, value, dtype=bool), self.none())
        if isinstance(value, int):
            return Vec(np.full(self.n, value, dtype=np.int64), self.none())
        assert isinstance(value, float)
        return Vec(np.full(self.n, value, dtype=np.float64), self.none())

    def var(self, node: Node) -> str:
        return self.checked.references.get(node.id, node.name) if node.kind == "ident" else ""

    def run(self) -> Vec:
        return self.value(self.checked.root)

    # strings
    def string(self, node: Node) -> Str:
        if node.kind == "const":
            assert isinstance(node.value, str)
            return Str(node.value, None, {}, self.none())
        if node.kind == "ident":
            name = self.var(node)
            if name == "node.name":
                ids, vocab = self.inp.names()
                return Str(None, ids[self.inp.rows], vocab, self.none())
            value = self.inp.scalars.get(name)
            assert isinstance(value, str)
            return Str(value, None, {}, self.none())
        holder, key = self.entry(node)
        if key.err.any():
            return Str("", None, {}, self.every())
        assert key.scalar is not None
        if holder == "node.labels":
            col = self.inp.table.labels.get(key.scalar)
            if col is None:
                return Str("", None, {}, self.every())
            ids = col.ids[self.inp.rows]
            return Str(None, ids, col.vocab, ids == ABSENT)
        mapping = self.inp.scalars.get(holder)
        assert isinstance(mapping, Mapping)
        if key.scalar not in mapping:
            return Str("", None, {}, self.every())
        return Str(str(mapping[key.scalar]), None, {}, self.none())

    def entry(self, node: Node) -> tuple[str, Str]:
        """The map and key of m["k"] / m.k."""
        if node.kind == "select":
            assert node.target is not None
            return self.var(node.target), Str(node.name, None, {}, self.none())
        return self.var(node.args[0]), self.string(node.args[1])

    def str_equal(self, a: Str, b: Str) -> Vec:
        err = a.err | b.err
        if a.scalar is not None and b.scalar is not None:
            return Vec(np.full(self.n, a.scalar == b.scalar, dtype=bool), err)
        if a.scalar is not None:
            a, b = b, a
        assert a.ids is not None
        if b.scalar is not None:
            vid = a.vocab.get(b.scalar)
            eq = np.zeros(self.n, dtype=bool) if vid is None else a.ids == vid
            return Vec(eq, err)
        assert b.ids is not None
        # Two encoded columns: translate b's ids into a's vocabulary (-2: a value a never has).
        size = max(b.vocab.values(), default=-1) + 1
        tr = np.full(size + 1, -2, dtype=np.int64)
        for value, vid in b.vocab.items():
            tr[vid] = a.vocab.get(value, -2)
        b_in_a = tr[np.where(b.ids >= 0, b.ids, size)]
        return Vec(a.ids == b_in_a, err)

    # numbers and bools
    def value(self, node: Node) -> Vec:
        kind = node.kind
        if kind == "const":
            return self.const(node.value)
        if kind == "ident":
            name = self.var(node)
            if name == "node.unschedulable":
                return Vec(self.inp.table.unschedulable[self.inp.rows].copy(), self.none())
            value = self.inp.scalars.get(name)
            assert isinstance(value, int)
            return self.const(value)
        if kind == "select":
            assert node.target is not None
            if node.test_only:
                return self.has(self.var(node.target), Str(node.name, None, {}, self.none()))
            return self.number(*self.entry(node))
        name, args = node.name, node.args
        if name == "_[_]":
            return self.number(*self.entry(node))
        if name == "@in":
            return self.has(self.var(args[1]), self.string(args[0]))
        if name == "_&&_":
            return self.junction(args, conj=True)
        if name == "_||_":
            return self.junction(args, conj=False)
        if name == "!_":
            v = self.value(args[0])
            return Vec(~v.val & ~v.err, v.err)
        if name == "_?_:_":
            if args[0].id in self.uniform and self.n > 1:
                taken, failed = self.scalar(args[0])
                if not failed:  # only the branch taken is evaluated, as CEL does
                    return self.value(args[1] if taken else args[2])
            cond = self.value(args[0])
            yes, no = self.value(args[1]), self.value(args[2])
            pick = cond.val & ~cond.err
            val = np.where(pick, yes.val, no.val)
            err = cond.err | np.where(pick, yes.err, no.err)
            return Vec(np.where(err, np.zeros((), dtype=val.dtype), val), err)
        if name in _EQ:
            if self.checked.types.get(args[0].id) == "string":
                eq = self.str_equal(self.string(args[0]), self.string(args[1]))
            else:
                a, b = self.value(args[0]), self.value(args[1])
                eq = Vec(a.val == b.val, a.err | b.err)
            val = eq.val if name == "_==_" else ~eq.val
            return Vec(val & ~eq.err, eq.err)
        if name in _ORDER:
            a, b = self.value(args[0]), self.value(args[1])
            err = a.err | b.err
            op = {"_<_": np.less, "_<=_": np.less_equal, "_>_": np.greater, "_>=_": np.greater_equal}[name]
            return Vec(op(a.val, b.val) & ~err, err)
        if name in _ARITH:
            return self.arith(name, self.value(args[0]), self.value(args[1]))
        if name == "-_":
            a = self.value(args[0])
            if a.val.dtype == np.float64:
                return Vec(-a.val, a.err)
            over = a.val == INT_MIN
            return Vec(np.where(over, 0, -np.where(over, 0, a.val)), a.err | over)
        if name in ("int", "double") and self.checked.types.get(args[0].id) == "string":
            return self.parse(name, self.string(args[0]))
        if name == "int":
            a = self.value(args[0])
            if a.val.dtype == np.int64:
                return a
            with np.errstate(invalid="ignore"):
                bad = ~((a.val > -TWO_63) & (a.val < TWO_63))  # NaN compares False
            safe = np.where(bad, 0.0, a.val)
            return Vec(np.trunc(safe).astype(np.int64), a.err | bad)
        if name == "double":
            a = self.value(args[0])
            return Vec(a.val.astype(np.float64), a.err)
        if name in FUNCTIONS:
            arg = args[0].value
            assert isinstance(arg, str)
            return self.const(FUNCTIONS[name][0](arg))
        raise Unsupported(name)

    def parse(self, name: str, s: Str) -> Vec:
        """int(s) / double(s) of a string: each distinct value converted once, by the library
        itself (so what it accepts is exactly CEL's), then spread over the rows by value id."""
        dtype = np.int64 if name == "int" else np.float64
        if s.scalar is not None:
            value = parsed(name, s.scalar)
            if value is None or s.err.any():
                return Vec(np.zeros(self.n, dtype=dtype), self.every())
            return Vec(np.full(self.n, value, dtype=dtype), self.none())
        assert s.ids is not None
        present = np.unique(s.ids[~s.err])
        width = int(present.max()) + 1 if present.size else 0
        table = np.zeros(width + 1, dtype=dtype)
        bad = np.ones(width + 1, dtype=bool)  # the last slot: rows that are already errors
        values = {vid: value for value, vid in s.vocab.items()} if present.size else {}
        for vid in present.tolist():
            converted = parsed(name, values[vid])
            if converted is not None:
                table[vid], bad[vid] = converted, False
        slot = np.where(s.err, width, s.ids)
        return Vec(table[slot], bad[slot])

    def has(self, holder: str, key: Str) -> Vec:
        if key.err.any():
            return Vec(self.none(), self.every())
        k = key.scalar
        assert k is not None
        if holder == "node.labels":
            col = self.inp.table.labels.get(k)
            present = np.zeros(self.n, dtype=bool) if col is None else col.ids[self.inp.rows] != ABSENT
            return Vec(present, self.none())
        if holder == "usage":
            column = self.inp.usage.get(k) if self.inp.usage is not None else None
            present = np.zeros(self.n, dtype=bool) if column is None else ~np.isnan(column[self.inp.rows])
            return Vec(present, self.none())
        if holder in RESOURCE_MAPS:
            return Vec(np.full(self.n, k in self.inp.resource_keys), self.none())
        mapping = self.inp.scalars.get(holder)
        assert isinstance(mapping, Mapping)
        return Vec(np.full(self.n, k in mapping), self.none())

    def number(self, holder: str, key: Str) -> Vec:
        table, rows = self.inp.table, self.inp.rows
        if key.err.any():
            return Vec(np.zeros(self.n, dtype=np.float64 if holder == "usage" else np.int64), self.every())
        k = key.scalar
        assert k is not None
        if holder == "usage":
            col = self.inp.usage.get(k) if self.inp.usage is not None else None
            if col is None:
                return Vec(np.zeros(self.n), self.every())
            vals = col[rows]
            missing = np.isnan(vals)
            return Vec(np.where(missing, 0.0, vals), missing)
        if k not in self.inp.resource_keys:
            return Vec(np.zeros(self.n, dtype=np.int64), self.every())
        if holder == "pod.requests":
            mapping = self.inp.scalars.get(holder)
            assert isinstance(mapping, Mapping)
            return self.const(int(mapping.get(k, 0)))
        c = table.resource_index.get(k)
        if c is None:
            return self.const(0)
        if holder == "node.allocatable":
            return Vec(table.allocatable[rows, c].copy(), self.none())
        if holder == "node.requested":
            return Vec(table.requested[rows, c].copy(), self.none())
        return Vec(table.allocatable[rows, c] - table.requested[rows, c], self.none())

    def logic(self, a: Vec, b: Vec, *, conj: bool) -> Vec:
        # CEL: the side that decides (false for &&, true for ||) wins over an error on the other.
        if conj:
            decided = (~a.val & ~a.err) | (~b.val & ~b.err)
        else:
            decided = (a.val & ~a.err) | (b.val & ~b.err)
        err = (a.err | b.err) & ~decided
        val = decided if not conj else ~decided & ~err
        return Vec(val, err)

    def arith(self, name: str, a: Vec, b: Vec) -> Vec:
        err = a.err | b.err
        x, y = a.val, b.val
        if x.dtype == np.float64:
            with np.errstate(all="ignore"):
                if name == "_+_":
                    r = x + y
                elif name == "_-_":
                    r = x - y
                elif name == "_*_":
                    r = x * y
                else:
                    r = x / y
            return Vec(r, err)
        if name == "_+_":
            r = x + y
            over = ((x ^ r) & (y ^ r)) < 0
        elif name == "_-_":
            r = x - y
            over = ((x ^ y) & (x ^ r)) < 0
        elif name == "_*_":
            with np.errstate(all="ignore"):
                r = x * y
                near = np.abs(x.astype(np.float64) * y.astype(np.float64)) >= 2.0**62
            over = np.zeros(self.n, dtype=bool)
            for i in np.flatnonzero(near).tolist():
                exact = int(x[i]) * int(y[i])
                if INT_MIN <= exact <= INT_MAX:
                    r[i] = exact
                else:
                    over[i] = True
        else:
            zero = y == 0
            over = (x == INT_MIN) & (y == -1)
            safe = np.where(zero | over, 1, y)
            if name == "_/_":
                q = x // safe
                q += ((x % safe) != 0) & ((x < 0) != (safe < 0))  # truncate toward zero, as CEL
                r = q
            else:
                r = np.fmod(x, safe)
            over = over | zero
        err = err | over
        return Vec(np.where(err, 0, r), err)


_UNIFORM: dict[int, tuple[Checked, frozenset[int]]] = {}


def uniform_nodes(checked: Checked) -> frozenset[int]:
    """Ids of the subtrees that read nothing of the node (pod, namespace and literals only):
    the same on every row of a cycle."""
    hit = _UNIFORM.get(id(checked))
    if hit is not None and hit[0] is checked:
        return hit[1]
    out: set[int] = set()

    def walk(node: Node) -> bool:
        kids = [walk(c) for c in node.children()]
        if node.kind == "ident":
            name = checked.references.get(node.id, node.name)
            mine = not (name.startswith("node.") or name == "usage")
        else:
            mine = all(kids)
        if mine:
            out.add(node.id)
        return mine

    walk(checked.root)
    frozen = frozenset(out)
    _UNIFORM[id(checked)] = (checked, frozen)
    return frozen


_PARSERS: dict[str, Any] = {}
_PARSED: dict[tuple[str, str], int | float | None] = {}


def parsed(name: str, text: str) -> int | float | None:
    """CEL's int(text) or double(text), as the library computes it; None where it is an error."""
    key = (name, text)
    if key in _PARSED:
        return _PARSED[key]
    program = _PARSERS.get(name)
    if program is None:
        program = _PARSERS[name] = _CONVERT.compile(f"{name}(s)")
    result = program.eval(data={"s": text})
    out: int | float | None = result.value() if result.type() in (cel.Type.INT, cel.Type.DOUBLE) else None
    if len(_PARSED) > 100_000:
        _PARSED.clear()
    _PARSED[key] = out
    return out


def first_error(err: np.ndarray, rows: np.ndarray) -> int | None:
    """The table row of the first error, in row order."""
    hit = np.flatnonzero(err)
    return int(rows[hit[0]]) if hit.size else None


def evaluate(checked: Checked, inputs: Inputs) -> Vec:
    """The expression on every row of `inputs.rows` (raises Unsupported outside the subset)."""
    return Evaluator(checked, inputs).run()


def encoded_names(table: NodeTable) -> tuple[np.ndarray, dict[str, int]]:
    """Node names as value ids (the row) and their vocabulary (the table's index)."""
    return np.arange(table.capacity, dtype=np.int64), dict(table.index)


__all__: Sequence[str] = ("Inputs", "Unsupported", "Vec", "evaluate", "first_error", "vectorizable")
