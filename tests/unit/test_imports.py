"""No import cycle in src/kubesched.

The graph counts imports inside functions too: a cycle hidden behind a lazy import is still two
modules that cannot be understood (or tested) one without the other. Also: backends use the
scheduler only through the contract declared in scheduler/backend.py.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "kubesched"

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _imported(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, list[str]]]:
    """(base, names) for each import anywhere in the module, relative imports made absolute."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base_parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base, [alias.name for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    """Module -> the kubesched modules it imports (`from pkg import sub` counts as importing pkg.sub)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for base, names in _imported(tree, module, path.name == "__init__.py"):
            if base != PACKAGE and not base.startswith(PACKAGE + "."):
                continue
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
            # Names that are not submodules are attributes of the base module itself.
            if len(subs) < len(names) or not names:
                target = base
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                edges.add(target)
            edges.update(subs)
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _path(graph: dict[str, set[str]], component: frozenset[str]) -> str:
    """One concrete loop through the component, for the failure message."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    loop = [start]
                    while node != start:
                        loop.append(node)
                        node = previous[node]
                    return " -> ".join([start, *reversed(loop[1:]), start])
                if child not in previous:
                    previous[child] = node
                    nxt.append(child)
        frontier = nxt
    return ", ".join(sorted(component))


def test_src_has_no_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycle(s) in src/kubesched:\n" + "\n".join(_path(graph, c) for c in found)


# The modules that build a Scheduler for a backend (its composition roots). They may name the class
# to construct it, and hold the result only as the declared scheduler.backend.SchedulerPort.
COMPOSITION_ROOTS = {"kubesched.backends.sim.engine", "kubesched.backends.kube.runner", "kubesched.backends.kube.snapshot"}


def test_backends_reach_the_scheduler_only_through_the_declared_port() -> None:
    graph = import_graph()
    backends = {m for m in graph if m.startswith("kubesched.backends.")}
    importing = {m for m in backends if "kubesched.scheduler.core" in graph[m]}
    assert importing <= COMPOSITION_ROOTS, f"backends importing the scheduler module: {sorted(importing - COMPOSITION_ROOTS)}"
    for module in sorted(importing):
        tree = ast.parse(_modules()[module].read_text())
        constructed = [
            node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Scheduler"
        ]
        assert constructed, f"{module} imports the scheduler module without building a Scheduler"
        held_as_port = [
            node for node in ast.walk(tree)
            if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == "Scheduler"
            and "SchedulerPort" in ast.unparse(node.annotation)
        ]
        # Every Scheduler(...) is assigned to a name annotated SchedulerPort, so mypy holds the
        # module to the port's members.
        assert len(held_as_port) == len(constructed), f"{module}: a Scheduler not held as SchedulerPort"


def test_the_graph_sees_relative_lazy_and_from_package_imports() -> None:
    tree = ast.parse(
        "from . import sibling\n"
        "from ..framework import interface\n"
        "def f():\n"
        "    import kubesched.cache.cache\n"
        "    from kubesched.plugins import resourcescoring as rs\n"
    )
    got = list(_imported(tree, "kubesched.plugins.x", is_package=False))
    assert got == [
        ("kubesched.plugins", ["sibling"]),
        ("kubesched.framework", ["interface"]),
        ("kubesched.cache.cache", []),
        ("kubesched.plugins", ["resourcescoring"]),
    ]


def test_cycles_finds_a_loop_and_ignores_a_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert _path(graph, frozenset({"a", "b", "c"})) == "a -> b -> c -> a"
    assert cycles({"a": {"b"}, "b": set()}) == []

