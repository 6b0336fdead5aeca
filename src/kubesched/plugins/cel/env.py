"""The CEL environment of scheduling rules: the variables a rule may read, the functions it may
call, and compilation (parse and type check, once, when the configuration loads).

Variables have qualified names (`node.labels`, `pod.requests`), declared one by one, so the type
checker knows each field's type and refuses a misspelt one (`node.lables`) at load time, rather
than every node failing at run time. `usage` is one map, since which resources it holds is only
known per node.

Quantities are numbers in the units the scheduler compares: cpu in millicores, memory and every
other resource in its base unit (bytes for memory, storage and hugepages, a count otherwise).
`quantity("32Gi")` and `millicores("1.5")` turn Kubernetes quantity strings into those numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from kubesched.api.quantity import QuantityError, to_int, to_milli
from kubesched.infra.celtree import Checked, Node, read_checked

T = cel.Type
_STR_MAP = T.Map(T.STRING, T.STRING)
_INT_MAP = T.Map(T.STRING, T.INT)

# Every variable, its CEL type and what it holds (docs/cel-rules.md's table, Variables, is this one).
VARIABLES: dict[str, tuple[Any, str]] = {
    "pod.name": (T.STRING, "metadata.name"),
    "pod.namespace": (T.STRING, "metadata.namespace"),
    "pod.labels": (_STR_MAP, "metadata.labels"),
    "pod.annotations": (_STR_MAP, "metadata.annotations"),
    "pod.priority": (T.INT, "spec.priority (0 when unset)"),
    "pod.priorityClassName": (T.STRING, "spec.priorityClassName"),
    "pod.schedulerName": (T.STRING, "spec.schedulerName"),
    "pod.nodeSelector": (_STR_MAP, "spec.nodeSelector"),
    "pod.requests": (_INT_MAP, "the pod's effective requests per resource, as NodeResourcesFit counts them"),
    "node.name": (T.STRING, "metadata.name"),
    "node.labels": (_STR_MAP, "metadata.labels"),
    "node.annotations": (_STR_MAP, "metadata.annotations"),
    "node.taints": (T.List(_STR_MAP), "spec.taints, each a map of key, value and effect"),
    "node.unschedulable": (T.BOOL, "spec.unschedulable"),
    "node.allocatable": (_INT_MAP, "status.allocatable per resource"),
    "node.requested": (_INT_MAP, "the requests of the pods on the node (assumed ones included)"),
    "node.free": (_INT_MAP, "allocatable - requested per resource"),
    "namespaceObject.name": (T.STRING, "the pod's namespace"),
    "namespaceObject.labels": (_STR_MAP, "the namespace's labels ({} if the scheduler has not seen it)"),
    "usage": (T.Map(T.STRING, T.DOUBLE), "the node's utilization per resource, 0..1, where fresh metrics exist"),
}
# Maps keyed by resource name: they hold every resource the cluster's nodes have and every one a
# rule names, 0 where a node (or the pod) has none, so `node.allocatable["nvidia.com/gpu"]` is 0
# on a node without GPUs instead of an error.
RESOURCE_MAPS = frozenset({"pod.requests", "node.allocatable", "node.requested", "node.free"})
# Variables that change when pods come and go (the rest only with the node or pod objects).
POD_DEPENDENT = frozenset({"node.requested", "node.free", "usage"})
NODE_VARIABLES = frozenset(v for v in VARIABLES if v.startswith("node.")) | {"usage"}


def _quantity(text: str) -> int:
    try:
        return to_int(text)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


def _millicores(text: str) -> int:
    try:
        return to_milli(text)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


# Custom functions: name -> (implementation, what it does). Each takes one string and gives an int.
FUNCTIONS: dict[str, tuple[Callable[[str], int], str]] = {
    "quantity": (_quantity, 'a quantity in base units, rounded up: quantity("32Gi") == 34359738368'),
    "millicores": (_millicores, 'a quantity in thousandths (cpu millicores), rounded up: millicores("1.5") == 1500'),
}


def _environment() -> Any:
    decls = [
        cel.FunctionDecl(name, [cel.Overload(f"{name}_string", return_type=T.INT, parameters=[T.STRING], impl=impl)])
        for name, (impl, _) in FUNCTIONS.items()
    ]
    return cel.NewEnv(variables={name: typ for name, (typ, _) in VARIABLES.items()}, functions=decls)


ENV = _environment()


class CompileError(ValueError):
    """An expression that does not parse or type check, or is refused; the message says where."""


@dataclass(frozen=True, slots=True)
class Compiled:
    """One compiled expression and what the scheduler needs to know about it."""

    source: str
    program: Any  # cel.Expression
    checked: Checked
    result_type: str  # bool, int, double, string, ...
    variables: frozenset[str]  # the variables it reads
    resources: frozenset[str]  # constant resource names it indexes RESOURCE_MAPS or `usage` with
    usage_keys: frozenset[str]  # constant keys it reads from `usage`

    def evaluate(self, activation: Any) -> Any:
        return self.program.eval(activation)


def _first_line(message: str) -> str:
    """cel's error text, as one line: "ERROR: <input>:1:5: undeclared reference to 'x'"."""
    text = message.strip()
    for prefix in ("INVALID_ARGUMENT: ",):
        text = text.removeprefix(prefix)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # cel prints the offending source line and a caret line after the message: drop them (the
    # column is in the message) and the trailing status tag.
    head = lines[0] if lines else text
    head = head.replace("ERROR: <input>:", "at ").replace(" (in container '')", "")
    for status in ("INVALID_ARGUMENT", "CANCELLED"):
        head = head.removeprefix(f"{status}: ").removesuffix(f" [{status}]")
    # The source may hold anything: show control characters escaped, never raw.
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in head)


def compile_expression(source: str) -> Compiled:
    """Parses and type checks; CompileError with cel's message (position included) otherwise."""
    if not source.strip():
        raise CompileError("empty expression")
    try:
        program = ENV.compile(source)
    except RuntimeError as exc:
        raise CompileError(_first_line(str(exc))) from None
    checked = read_checked(program.serialize())
    result = checked.types.get(checked.root.id, "dyn")
    variables: set[str] = set()
    resources: set[str] = set()
    usage_keys: set[str] = set()
    _scan(checked, checked.root, variables, resources, usage_keys)
    return Compiled(source, program, checked, result, frozenset(variables), frozenset(resources), frozenset(usage_keys))


def _scan(checked: Checked, node: Node, variables: set[str], resources: set[str], usage_keys: set[str]) -> None:
    """Collects the variables read, the constant resource keys of resource maps, and constant
    quantity strings (checked here, so a bad one is a load-time error)."""
    stack = [node]
    while stack:
        n = stack.pop()
        stack.extend(n.children())
        if n.kind == "ident":
            name = checked.references.get(n.id, n.name)
            if name in VARIABLES:
                variables.add(name)
            continue
        if n.kind == "select" and n.target is not None and _variable(checked, n.target) == "usage":
            usage_keys.add(n.name)
            continue
        if n.kind != "call":
            continue
        if n.name in ("_[_]", "@in") and len(n.args) == 2:
            holder, key = (n.args[0], n.args[1]) if n.name == "_[_]" else (n.args[1], n.args[0])
            var = _variable(checked, holder)
            if key.kind == "const" and isinstance(key.value, str):
                if var in RESOURCE_MAPS:
                    resources.add(key.value)
                elif var == "usage":
                    usage_keys.add(key.value)
        elif n.name in FUNCTIONS and len(n.args) == 1 and n.args[0].kind == "const" and isinstance(n.args[0].value, str):
            try:
                FUNCTIONS[n.name][0](n.args[0].value)
            except ValueError as exc:
                raise CompileError(f'{n.name}("{n.args[0].value}"): {exc}') from None


def _variable(checked: Checked, node: Node) -> str:
    """The variable a node names, or ""."""
    if node.kind != "ident":
        return ""
    name = checked.references.get(node.id, node.name)
    return name if name in VARIABLES else ""
