"""SchedulingGates: a pod with spec.schedulingGates waits outside the active queue until every
gate is removed (a pod update), instead of being tried and failing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import ClusterEvent, EnqueueExtensions, Handle, Plugin, PreEnqueuePlugin, Status

NAME = "SchedulingGates"


def gates_message(gates: list[str]) -> str:
    # Go's %v of a []string: the names space-separated inside brackets.
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates(Plugin, PreEnqueuePlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        if isinstance(args, Mapping) and args:
            raise ValueError(f"{NAME} takes no args, got {sorted(args)}")
        super().__init__(None, handle)

    def pre_enqueue(self, pi: PodInfo) -> Status | None:
        gates = pi.pod.spec.scheduling_gates
        if not gates:
            return None
        return Status.unresolvable(gates_message([g.name for g in gates]), plugin=NAME)

    def events_to_register(self) -> list[ClusterEvent]:
        # Only an update of the gated pod itself that removes its last gate can release it.
        return [ClusterEvent("Pod", "UpdatePodSchedulingGatesEliminated")]
