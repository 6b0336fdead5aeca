"""The PodDisruptionBudgets the scheduler knows, by namespace, as preemption reads them (kube's
PDB lister in the preemption evaluator): each one's compiled selector, the disruptions it still
allows and the pods it has already let go.

kube-scheduler reads budgets only when it preempts, and registers no queueing events for them: a
budget's change never moves a pod in the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubesched.api.podinfo import PodInfo
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.selectors import Selector, SelectorError, compile_label_selector


@dataclass(frozen=True, slots=True)
class Budget:
    key: str  # namespace/name
    namespace: str
    # None: the budget protects no pod from preemption (kube's preemption treats a nil, empty
    # or invalid selector as matching nothing).
    selector: Selector | None
    allowed: int  # status.disruptionsAllowed
    disrupted: frozenset[str]  # status.disruptedPods: names of pods already let go

    def covers(self, pi: PodInfo) -> bool:
        """Whether evicting the pod counts against this budget (kube's filterPodsWithPDBViolation:
        a pod with labels, in the same namespace, that the selector matches, and not one the budget
        already let go)."""
        return (
            self.selector is not None
            and bool(pi.labels)
            and pi.namespace == self.namespace
            and pi.pod.metadata.name not in self.disrupted
            and self.selector.matches(pi.labels)
        )


def budget_of(pdb: PodDisruptionBudget) -> Budget:
    try:
        selector: Selector | None = compile_label_selector(pdb.spec.selector)
    except SelectorError:
        selector = None
    if selector is not None and (selector.empty or selector.nothing):
        selector = None
    return Budget(pdb.key, pdb.metadata.namespace, selector, pdb.status.disruptions_allowed,
                  frozenset(pdb.status.disrupted_pods))


class PdbIndex:
    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[str, Budget]] = {}

    def __len__(self) -> int:
        return sum(len(budgets) for budgets in self._by_namespace.values())

    def set(self, pdb: PodDisruptionBudget) -> None:
        budget = budget_of(pdb)
        self._by_namespace.setdefault(budget.namespace, {})[budget.key] = budget

    def remove(self, namespace: str, name: str) -> None:
        budgets = self._by_namespace.get(namespace)
        if budgets is not None:
            budgets.pop(f"{namespace}/{name}", None)
            if not budgets:
                del self._by_namespace[namespace]

    def all(self) -> list[Budget]:
        """Every budget, in a stable order (namespace, then name), as kube's lister lists them."""
        return [b for ns in sorted(self._by_namespace) for _, b in sorted(self._by_namespace[ns].items())]

    def for_pods(self, pods: Sequence[PodInfo]) -> list[Budget]:
        """The budgets of the namespaces of `pods`: the only ones that may cover them."""
        namespaces = {pi.namespace for pi in pods}
        return [b for ns in sorted(namespaces) for _, b in sorted(self._by_namespace.get(ns, {}).items())]
