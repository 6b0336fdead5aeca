"""The Handle each profile's plugins receive: cache access and the runtime services
preemption and binding need, without a plugin ever touching the scheduler itself."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import CycleState, Status

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache
    from kubesched.cache.nodetable import NodeTable
    from kubesched.framework.runtime import Framework
    from kubesched.framework.waiting import WaitingPod
    from kubesched.scheduler import Scheduler
    from kubesched.usage.provider import UsageService


class FrameworkHandle:
    def __init__(self, scheduler: Scheduler, framework: Framework) -> None:
        self._scheduler = scheduler
        self.framework = framework

    @property
    def cache(self) -> Cache:
        return self._scheduler.cache

    @property
    def table(self) -> NodeTable:
        return self._scheduler.cache.table

    def now(self) -> float:
        return self._scheduler.clock.now()

    @property
    def usage(self) -> UsageService:
        """Node usage from Prometheus and recently placed pods, for load-aware plugins."""
        return self._scheduler.usage

    # --- filtering on behalf of PostFilter (preemption) -------------------------------------------

    def run_filters(self, state: CycleState, pi: PodInfo) -> np.ndarray:
        alive = self.table.present[: self.table.size].copy()
        return self.framework.run_filters(state, pi, alive, explain=False).alive

    def filter_row(self, state: CycleState, pi: PodInfo, row: int) -> bool:
        return self.framework.filter_row(state, pi, row)

    def run_prefilter_add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        return self.framework.run_prefilter_add_pod(state, pi, added, row)

    def run_prefilter_remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        return self.framework.run_prefilter_remove_pod(state, pi, removed, row)

    # --- side effects --------------------------------------------------------------------------------

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        return await self._scheduler.backend.bind(pi, node)

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        await self._scheduler.backend.delete_pod(pi, reason)

    def spawn(self, coro: Coroutine[Any, Any, None], what: str = "background task") -> None:
        """Runs a side effect from a synchronous extension point (PostFilter, Reserve) in the
        background; the scheduler tracks it, so a simulation waits for it to finish."""
        self._scheduler.spawn(coro, what)

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self._scheduler.backend.record_event(pi, type_, reason, message)

    def record_preemption(self, victims: list[PodInfo]) -> None:
        """Counts a preemption and its victims (metrics, decision record)."""
        self._scheduler.record_preemption(victims)

    def nominate(self, pi: PodInfo, node: str | None) -> None:
        self._scheduler.nominator.nominate(pi, node)
        self._scheduler.backend.set_nominated_node(pi, node)

    def nominated_pods(self, node: str) -> list[PodInfo]:
        return self._scheduler.nominator.pods_on(node)

    def pod_on_node(self, uid: str) -> str | None:
        return self.cache.node_of(uid)

    # --- waiting pods (Permit) ------------------------------------------------------------------------

    def waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._scheduler.waiting.get(uid)

    def waiting_pods(self) -> list[WaitingPod]:
        return list(self._scheduler.waiting.values())
