"""CycleState: one scheduling cycle's scratch space, shared by a profile's plugins (kube's
framework.CycleState)."""

from __future__ import annotations

from typing import Any


class CycleState:
    """Per-cycle scratch space shared by a profile's plugins, keyed by plugin name.

    Values that a PreFilter extension (AddPod/RemovePod) mutates must provide
    `clone()`, because preemption evaluates each candidate node on a clone.
    """

    __slots__ = ("data", "skip_filter", "skip_pre_bind", "skip_score")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.skip_pre_bind: set[str] = set()  # PreBind plugins whose pre-flight answered SKIP

    def read(self, key: str) -> Any:
        return self.data.get(key)

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value

    def clone(self) -> CycleState:
        out = CycleState()
        out.data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self.data.items()}
        out.skip_filter = set(self.skip_filter)
        out.skip_score = set(self.skip_score)
        out.skip_pre_bind = set(self.skip_pre_bind)
        return out
