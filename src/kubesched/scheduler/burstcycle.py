"""A burst's cycle (kubesched's, not kube's): identical pending pods of one owner placed jointly.

The queue hands the scheduler a burst whole (queue.bursts) when the pod's profile places bursts:
JointPlacement with `bursts` on. Read top to bottom, as `run` does it:

1. The plan: one pod's Filter and Score results on the snapshot stand for every pod of the burst
   (they are identical in everything those read); the GroupAssign plugin chooses a node for each
   pod together (jointplan), as many as fit, none required: unlike a gang, a burst is not all or
   nothing.
2. Each pod in queue order, its own scheduling cycle: on its planned node with every Filter run
   there, or, if the plan left it out or it does not pass there (what the plan cannot see: pod
   affinity among the pods, topology spread, ports), the whole cycle as any pod, PostFilter and
   preemption included. Binding, failures, events and requeueing are every pod's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kubesched.scheduler.jointplan import PlanHost, joint_plan

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.runtime import Framework
    from kubesched.observe.record import DecisionRecord
    from kubesched.queue.scheduling_queue import QueuedPodInfo
    from kubesched.scheduler.nodechoice import NodeChoice
    from kubesched.scheduler.observer import Cycle, CycleObserver


class BurstHost(PlanHost, Protocol):
    """What a burst's cycle uses of the scheduler: the planning inputs and the steps of a pod's own cycle."""

    observer: CycleObserver

    def profile_for(self, qpi: QueuedPodInfo) -> Framework | None: ...

    def begin_cycle(self, fwk: Framework, qpi: QueuedPodInfo) -> Cycle: ...

    def schedule_pod(self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord,
                     within: np.ndarray | None = None) -> NodeChoice: ...

    def finish_cycle(self, cycle: Cycle, qpi: QueuedPodInfo, choice: NodeChoice) -> None: ...


class BurstCycle:
    def __init__(self, sched: BurstHost) -> None:
        self.sched = sched

    def run(self, fwk: Framework, burst: Sequence[QueuedPodInfo]) -> None:
        sched = self.sched
        pods = [qpi.pi for qpi in burst]
        plan = joint_plan(sched, fwk, None, pods, None, 0, identical=True)
        for qpi in burst:
            row = plan.get(qpi.pi.uid, -1) if plan is not None else -1
            own = sched.profile_for(qpi)
            if own is None:
                continue
            cycle = sched.begin_cycle(own, qpi)
            choice = self._on_planned_row(cycle, row, len(burst)) if row >= 0 else None
            if choice is None:
                if row >= 0:
                    sched.observer.restart(cycle, qpi)
                choice = sched.schedule_pod(own, cycle.state, qpi.pi, cycle.record)
            sched.finish_cycle(cycle, qpi, choice)

    def _on_planned_row(self, cycle: Cycle, row: int, size: int) -> NodeChoice | None:
        """The pod tried on the one node its burst's plan chose (every Filter run there); the choice
        when it passes there, else None (the whole cycle runs afresh)."""
        table = self.sched.cache.table
        if row >= table.size:
            return None
        only = np.zeros(table.size, dtype=bool)
        only[row] = True
        choice = self.sched.schedule_pod(cycle.fwk, cycle.state, cycle.pi, cycle.record, only)
        if choice.node is None or choice.node != table.name_of(row):
            return None
        cycle.record.jointly = size
        return choice
