"""What the reload controller and the SLO guard use of a scheduler: the seam through which a
configuration generation is built and put in force. scheduler.backend.SchedulerPort includes it, so a
backend's composition root hands the scheduler it built, held as the port, to a ReloadController."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kubesched.config.types import SchedulerConfig
    from kubesched.framework.registry import Registry
    from kubesched.infra.clock import Clock
    from kubesched.observe.metrics import SchedulerMetrics
    from kubesched.queue.scheduling_queue import QueueCounts, QueuedPodInfo
    from kubesched.scheduler.generation import Generation


class SchedulingStats(Protocol):
    """Counts of how scheduling attempts and binding cycles ended, since the start."""

    scheduled: int
    unschedulable: int
    errors: int
    bind_failures: int


class PendingPods(Protocol):
    @property
    def pods(self) -> dict[str, QueuedPodInfo]:
        """Every pending pod the scheduler owns, by uid."""
        ...

    def counts(self) -> QueueCounts: ...


class ReloadTarget(Protocol):
    @property
    def clock(self) -> Clock: ...

    @property
    def metrics(self) -> SchedulerMetrics: ...

    @property
    def config(self) -> SchedulerConfig:
        """The configuration in force."""
        ...

    @property
    def generation(self) -> Generation:
        """The generation in force."""
        ...

    @property
    def stats(self) -> SchedulingStats: ...

    @property
    def pending(self) -> PendingPods: ...

    def build_generation(self, config: SchedulerConfig, registry: Registry, *, digest: str, origin: str) -> Generation:
        """A generation of `config`, built beside the one in force (not yet in force)."""
        ...

    def activate(self, gen: Generation) -> Generation:
        """Puts `gen` in force between two scheduling cycles; returns the one it replaces."""
        ...
