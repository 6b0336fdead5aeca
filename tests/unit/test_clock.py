from kubesched.clock import VirtualClock


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
