"""SchedulingGates: a pod with spec.schedulingGates waits outside the active queue until every
gate is removed (a pod update), instead of being tried and failing."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.podinfo import PodInfo
from kubesched.framework.events import TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, Plugin, PreEnqueuePlugin
from kubesched.framework.status import Status
from kubesched.plugins.helper.args import refuse_args

NAME = "SchedulingGates"


def gates_message(gates: list[str]) -> str:
    # Go's %v of a []string: the names space-separated inside brackets.
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates(Plugin, PreEnqueuePlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    def pre_enqueue(self, pi: PodInfo) -> Status | None:
        gates = pi.pod.spec.scheduling_gates
        if not gates:
            return None
        return Status.unresolvable(gates_message([g.name for g in gates]), plugin=NAME)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Only an update of the gated pod itself that removes its last gate can release it.
        return [
            ClusterEventWithHint(
                ClusterEvent(TARGET_POD, ActionType.UpdatePodSchedulingGatesEliminated),
                self.is_schedulable_after_update_target_pod_scheduling_gates_eliminated,
            )
        ]

    def is_schedulable_after_update_target_pod_scheduling_gates_eliminated(
        self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None
    ) -> QueueingHint:
        """The pod's last gate is gone: always worth a try."""
        return QueueingHint.Queue
