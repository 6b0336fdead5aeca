"""Client-side rate limiting and retry backoff, as client-go does them.

`TokenBucket` is client-go's default rate limiter (golang.org/x/time/rate underneath): `qps` tokens
a second, at most `burst` saved up. Callers reserve a token and wait until it is theirs, so waiting
callers are served in order and the long-run rate never exceeds qps. `backoff` is exponential with
jitter.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

__all__ = ["TokenBucket", "backoff"]


class TokenBucket:
    """A token bucket: `qps` tokens per second, bucket size `burst`; qps <= 0 means unlimited.

    `clock` (monotonic seconds) can be a fake for tests; `reserve()` is the synchronous core and
    returns how long the caller has to wait for its token.
    """

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self.waited_seconds = 0.0  # total time callers were held, for metrics

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def _advance(self) -> float:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        return now

    def tokens(self) -> float:
        """Tokens available now (negative when callers are queued)."""
        if self.unlimited:
            return float("inf")
        self._advance()
        return self._tokens

    def reserve(self) -> float:
        """Take one token; return the delay in seconds before the caller may proceed (0 if none)."""
        if self.unlimited:
            return 0.0
        self._advance()
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def cancel(self) -> None:
        """Give back a token reserved by a caller that no longer needs it."""
        if not self.unlimited:
            self._advance()
            self._tokens = min(float(self.burst), self._tokens + 1.0)

    async def acquire(self) -> None:
        """Wait for a token."""
        delay = self.reserve()
        if delay <= 0:
            return
        self.waited_seconds += delay
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self.cancel()
            raise


def backoff(attempt: int, *, base: float = 0.1, cap: float = 5.0, rng: Callable[[], float] = random.random) -> float:
    """Delay before retry number `attempt` (0-based): base * 2**attempt, jittered up to 2x, capped."""
    return min(cap, base * (2.0 ** min(attempt, 30)) * (1.0 + rng()))
