from kubesched.infra.clock import VirtualClock


def test_timers_run_in_time_order_and_cancel():
    clock = VirtualClock()
    seen = []
    clock.call_at(5, lambda: seen.append(5))
    t = clock.call_at(3, lambda: seen.append(3))
    clock.call_at(1, lambda: seen.append(1))
    t.cancel()
    assert clock.next_time() == 1
    clock.advance_to(10)
    clock.run_due()
    assert seen == [1, 5] and clock.next_time() is None


def test_past_timers_fire_now():
    clock = VirtualClock(start=10)
    seen = []
    clock.call_at(2, lambda: seen.append(clock.now()))
    clock.run_due()
    assert seen == [10]


async def test_first_set_returns_when_any_event_is_set_and_false_on_timeout():
    import asyncio

    from kubesched.infra.clock import first_set

    a, b = asyncio.Event(), asyncio.Event()
    assert await first_set(a, b, timeout=0.01) is False
    asyncio.get_running_loop().call_later(0.01, b.set)
    assert await asyncio.wait_for(first_set(a, b), 1) is True
    assert not a.is_set()
