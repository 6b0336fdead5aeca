"""Pods held at Permit: each waiting plugin must allow, or the pod is rejected (also on timeout)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubesched.api.durations import format_go_duration
from kubesched.framework.status import Code, Status
from kubesched.infra.clock import Clock, Timer


class PodAtPermit:
    """A pod held at Permit (implements interface.WaitingPod)."""

    def __init__(self, uid: str, node: str, waits: dict[str, float], clock: Clock) -> None:
        self.uid = uid
        self.node = node
        self.pending = set(waits)
        self.future: asyncio.Future[Status | None] = asyncio.get_running_loop().create_future()
        self._timers: list[Timer] = []
        now = clock.now()
        for plugin, timeout in waits.items():
            self._timers.append(clock.call_at(now + timeout, self._timeout(plugin, timeout)))

    def _timeout(self, plugin: str, timeout: float) -> Callable[[], None]:
        # kube prints the timeout as a Go duration: "10s", "5m0s".
        return lambda: self.reject(plugin, f"rejected due to timeout after waiting {format_go_duration(timeout)} at plugin {plugin}")

    def allow(self, plugin: str) -> None:
        self.pending.discard(plugin)
        if not self.pending:
            self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _finish(self, status: Status | None) -> None:
        for t in self._timers:
            t.cancel()
        if not self.future.done():
            self.future.set_result(status)
