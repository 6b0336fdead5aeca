"""A plugin's answer (kube's framework.Status and Code) and the failure message a pod that fits
nowhere gets (kube's FitError).

Convention: `None` is a Success status (as nil is in Go), so the common path allocates nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, (message,), plugin)

    @property
    def success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)


SKIP = Status(Code.SKIP)


NO_NODE_AVAILABLE = "0/{} nodes are available"


def fit_error_message(
    num_nodes: int, reasons: Iterable[tuple[str, int]], pre_filter_msg: str = "", post_filter_msg: str = ""
) -> str:
    """kube-scheduler's FitError text: `0/N nodes are available: <PreFilter msg>. <count> <reason>,
    .... <PostFilter msg>` (FitError.Error in pkg/scheduler/framework/types.go).

    Counts of the same reason are summed; the `<count> <reason>` strings are sorted as
    strings, as kube does, then joined with ", ".
    """
    histogram: dict[str, int] = {}
    for reason, count in reasons:
        histogram[reason] = histogram.get(reason, 0) + count
    msg = NO_NODE_AVAILABLE.format(num_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    if parts:
        msg += " " + ", ".join(parts) + "."
    if post_filter_msg:
        # No period of its own: preemption's message is itself a FitError text ending in one.
        msg += f" {post_filter_msg}"
    return msg
