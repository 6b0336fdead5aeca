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

from kubesched.scheduler.jointplan import PlanHost, joint_plan

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework
    from kubesched.queue.scheduling_queue import QueuedPodInfo


class BurstHost(PlanHost, Protocol):
    """What a burst's cycle uses of the scheduler: the planning inputs and the pod's own cycle."""

    def schedule_queued(self, qpi: QueuedPodInfo, planned: int = -1, burst: int = 0) -> None: ...


class BurstCycle:
    def __init__(self, sched: BurstHost) -> None:
        self.sched = sched

    def run(self, fwk: Framework, burst: Sequence[QueuedPodInfo]) -> None:
        pods = [qpi.pi for qpi in burst]
        plan = joint_plan(self.sched, fwk, None, pods, None, 0, identical=True)
        for qpi in burst:
            row = plan.get(qpi.pi.uid, -1) if plan is not None else -1
            self.sched.schedule_queued(qpi, row, len(burst))
