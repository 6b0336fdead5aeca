"""The client-side token bucket and retry backoff (kubesched.client.ratelimit), on a fake clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from kubesched.client.ratelimit import TokenBucket, backoff


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_one_token_per_interval() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10, 3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    # The bucket is empty: callers queue up 0.1 s apart.
    assert [round(bucket.reserve(), 6) for _ in range(3)] == [0.1, 0.2, 0.3]


def test_refill_is_capped_at_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(5, 2, clock=clock)
    bucket.reserve()
    bucket.reserve()
    clock.now += 100  # far more than burst/qps
    assert bucket.tokens() == 2
    assert [bucket.reserve() for _ in range(2)] == [0, 0]
    assert bucket.reserve() == pytest.approx(0.2)


def test_partial_refill() -> None:
    clock = FakeClock()
    bucket = TokenBucket(4, 1, clock=clock)
    assert bucket.reserve() == 0
    clock.now += 0.125  # half a token
    assert bucket.reserve() == pytest.approx(0.125)


def test_long_run_rate_is_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(50, 100, clock=clock)
    delays = [bucket.reserve() for _ in range(600)]
    # 100 free, then 500 more at 50/s: the last caller waits 10 s.
    assert delays[99] == 0
    assert delays[-1] == pytest.approx(10.0)


def test_unlimited() -> None:
    bucket = TokenBucket(0, 1, clock=FakeClock())
    assert all(bucket.reserve() == 0 for _ in range(10_000))
    assert bucket.unlimited and bucket.tokens() == float("inf")


def test_cancel_gives_the_token_back() -> None:
    clock = FakeClock()
    bucket = TokenBucket(10, 1, clock=clock)
    bucket.reserve()
    assert bucket.reserve() == pytest.approx(0.1)
    bucket.cancel()
    assert bucket.reserve() == pytest.approx(0.1)


async def test_acquire_really_waits() -> None:
    bucket = TokenBucket(100, 2)
    start = time.monotonic()
    for _ in range(12):
        await bucket.acquire()
    elapsed = time.monotonic() - start
    assert 0.09 <= elapsed < 0.5  # 10 tokens past the burst at 100/s
    assert bucket.waited_seconds > 0


async def test_cancelled_acquire_returns_its_token() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1, 1, clock=clock)
    await bucket.acquire()
    task = asyncio.create_task(bucket.acquire())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert bucket.tokens() == pytest.approx(0.0)


def test_backoff_bounds() -> None:
    assert backoff(0, rng=lambda: 0.0) == pytest.approx(0.1)
    assert backoff(0, rng=lambda: 0.999) == pytest.approx(0.1999)
    assert backoff(3, rng=lambda: 0.0) == pytest.approx(0.8)
    assert backoff(10, rng=lambda: 0.5) == 5.0
    assert backoff(1000) == 5.0
    assert backoff(10, base=0.2, cap=30.0, rng=lambda: 0.0) == 30.0
