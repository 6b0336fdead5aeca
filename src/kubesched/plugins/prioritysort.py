"""PrioritySort: the active queue pops the highest-priority pod first, and among equal
priorities the one queued earliest (kube's Less on PodPriority and the queue timestamp)."""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, QueueSortPlugin
from kubesched.plugins.helper.args import refuse_args

NAME = "PrioritySort"


class PrioritySort(Plugin, QueueSortPlugin):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    def sort_key(self, qpi: Any) -> tuple[int, float, int]:
        # kube leaves full ties unordered; the PodInfo creation sequence makes the order stable.
        pi = qpi.pi
        return (-pi.priority, qpi.timestamp, pi.seq)
