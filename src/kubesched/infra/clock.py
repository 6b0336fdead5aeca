"""Time for the scheduler: the event loop's clock in a real cluster, a virtual one in the simulator.

Everything that waits (backoff expiry, the unschedulable pool's timeout, Permit
timeouts) asks the clock for a timer, so the simulator can jump from one timer
to the next instead of sleeping. A task that must pause itself (a PreBind polling
for a driver's answer, or retrying a write) awaits the clock's `sleep`, which the
simulator sees as waiting on time, not as work under way (`settle`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Collection
from typing import Any, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


async def first_set(*events: asyncio.Event, timeout: float | None = None) -> bool:
    """Waits until one of the events is set; False on timeout."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        return bool(done)
    finally:
        for w in waiters:
            w.cancel()


class Clock(Protocol):
    @property
    def sleepers(self) -> Collection[asyncio.Task[Any]]:
        """Tasks paused in `sleep` until this clock's time has come (virtual clocks track them)."""
        ...

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...

    async def sleep(self, seconds: float) -> None:
        """Pauses the current task for `seconds` of this clock's time."""
        ...

    async def settle(self, tasks: Collection[asyncio.Future[Any]]) -> None:
        """Returns once each of `tasks` is done, or, with a virtual clock, paused in `sleep`
        (it can do nothing more before time moves, which only the caller can make happen)."""
        ...


class RealClock:
    """The running event loop's monotonic clock."""

    @property
    def sleepers(self) -> Collection[asyncio.Task[Any]]:
        return ()  # the event loop wakes sleepers by itself

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_at(when, callback)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def settle(self, tasks: Collection[asyncio.Future[Any]]) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)


class _VirtualTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """Discrete-event time: `advance` runs due timers in order and moves `now` forward."""

    def __init__(self, start: float = 0.0) -> None:
        self.sleepers: set[asyncio.Task[Any]] = set()
        self._fell_asleep: asyncio.Future[None] | None = None  # set when a task starts sleeping
        self._now = start
        self._timers: list[tuple[float, int, _VirtualTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _VirtualTimer(max(when, self._now), callback)
        heapq.heappush(self._timers, (timer.when, next(self._seq), timer))
        return timer

    def next_time(self, skip: Timer | Collection[Timer] | None = None) -> float | None:
        """When the next live timer is due; with `skip`, the next one other than those timers (so
        the simulator can see how far it may jump while only their periodic work is due)."""
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if not self._timers:
            return None
        skipped = () if skip is None else (skip,) if not isinstance(skip, Collection) else skip
        if not any(self._timers[0][2] is t for t in skipped):
            return self._timers[0][0]
        # Put the entry back as it was: (when, seq) orders the heap, so nothing runs in another order.
        entry = heapq.heappop(self._timers)
        after = self.next_time(skipped)
        heapq.heappush(self._timers, entry)
        return after

    def peek(self) -> Timer | None:
        """The next live timer to run, if any."""
        return self._timers[0][2] if self.next_time() is not None else None

    def run_due(self) -> int:
        """Runs every timer due at the current time; returns how many ran."""
        ran = 0
        while self._timers and self._timers[0][0] <= self._now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.callback()
                ran += 1
        return ran

    async def sleep(self, seconds: float) -> None:
        """Pauses the current task until a timer `seconds` from now fires; meanwhile the task is
        one of `sleepers`, so `settle` does not wait for it."""
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        task = asyncio.current_task()

        def wake() -> None:
            if task is not None:
                self.sleepers.discard(task)  # runnable again from this instant
            if not woken.done():
                woken.set_result(None)

        timer = self.call_at(self._now + seconds, wake)
        if task is not None:
            self.sleepers.add(task)
            if self._fell_asleep is not None and not self._fell_asleep.done():
                self._fell_asleep.set_result(None)
        try:
            await woken
        finally:
            timer.cancel()
            if task is not None:
                self.sleepers.discard(task)

    async def settle(self, tasks: Collection[asyncio.Future[Any]]) -> None:
        while True:
            running = [t for t in tasks if not t.done() and t not in self.sleepers]
            if not running:
                return
            self._fell_asleep = asyncio.get_running_loop().create_future()
            await asyncio.wait([*running, self._fell_asleep], return_when=asyncio.FIRST_COMPLETED)

    def advance_to(self, when: float) -> None:
        if when > self._now:
            self._now = when
