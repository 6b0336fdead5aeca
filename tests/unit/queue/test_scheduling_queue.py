from builders import info, pod
from kubesched.clock import VirtualClock
from kubesched.framework.interface import ClusterEvent, Status
from kubesched.queue.scheduling_queue import QueueCounts, SchedulingQueue

NODE_ADD = ClusterEvent("Node", "Add")
POD_DELETE = ClusterEvent("Pod", "Delete")


def make(clock=None, events=None, gate=None, **kw):
    clock = clock or VirtualClock()
    q = SchedulingQueue(
        clock,
        sort_key=lambda qpi: (-qpi.pi.priority, qpi.timestamp),
        pre_enqueue=gate or (lambda pi: None),
        events_by_plugin=events or {"NodeResourcesFit": [NODE_ADD, POD_DELETE], "TaintToleration": [NODE_ADD]},
        **kw,
    )
    return clock, q


def test_pops_by_priority_then_arrival():
    clock, q = make()
    q.add(info(pod("low", priority=1)))
    clock.advance_to(1)
    q.add(info(pod("high", priority=10)))
    q.add(info(pod("low2", priority=1)))
    assert [q.pop().pi.key for _ in range(3)] == ["default/high", "default/low", "default/low2"]
    assert q.pop() is None


def test_backoff_doubles_and_caps():
    clock, q = make(initial_backoff=1, max_backoff=10)
    q.add(info(pod("p")))
    durations = []
    for _ in range(6):
        qpi = q.pop()
        durations.append(q.backoff_duration(qpi))
        q.add_unschedulable(qpi, [], q.scheduling_cycle)  # no plugins: straight to backoff
        assert q.pop() is None
        clock.advance_to(qpi.backoff_expiry)
        clock.run_due()
    assert durations == [1, 2, 4, 8, 10, 10]


def test_pool_moves_only_on_registered_events():
    clock, q = make(initial_backoff=1)
    q.add(info(pod("p")))
    qpi = q.pop()
    q.add_unschedulable(qpi, ["TaintToleration"], q.scheduling_cycle)
    assert q.counts().unschedulable == 1
    assert q.move_on_event(POD_DELETE) == 0
    clock.advance_to(5)
    assert q.move_on_event(NODE_ADD) == 1
    assert q.pop() is qpi


def test_moved_during_backoff_waits_in_backoff():
    clock, q = make(initial_backoff=4)
    q.add(info(pod("p")))
    qpi = q.pop()
    q.add_unschedulable(qpi, ["NodeResourcesFit"], q.scheduling_cycle)
    q.move_on_event(NODE_ADD)
    assert q.counts().backoff == 1 and q.pop() is None
    clock.advance_to(4)
    clock.run_due()
    assert q.pop() is qpi


def test_event_during_cycle_sends_pod_to_backoff_not_pool():
    _clock, q = make()
    q.add(info(pod("p")))
    qpi = q.pop()
    cycle = q.scheduling_cycle
    q.move_on_event(NODE_ADD)  # arrives while the pod is being scheduled
    q.add_unschedulable(qpi, ["NodeResourcesFit"], cycle)
    assert q.counts().backoff == 1 and q.counts().unschedulable == 0


def test_pool_flushes_after_max_time():
    clock, q = make(max_in_unschedulable=300)
    q.add(info(pod("p")))
    qpi = q.pop()
    q.add_unschedulable(qpi, ["TaintToleration"], q.scheduling_cycle)
    clock.advance_to(299)
    clock.run_due()
    assert q.pop() is None
    clock.advance_to(300)
    clock.run_due()
    assert q.pop() is qpi


def test_gated_pods_wait_until_ungated():
    def gate(pi):
        return Status.unresolvable("waiting for scheduling gates: [g]") if pi.gated else None

    _clock, q = make(gate=gate)
    gated = pod("p", spec={"schedulingGates": [{"name": "g"}]})
    q.add(info(gated))
    assert q.counts().gated == 1 and q.pop() is None
    released = info(pod("p"))
    released.uid = q.pending()[0].pi.uid
    q.update(released)
    assert q.pop().pi is released


def test_delete_removes_everywhere():
    _clock, q = make()
    q.add(info(pod("p")))
    uid = q.pending()[0].pi.uid
    q.delete(uid)
    assert q.pop() is None and not q.contains(uid)
    assert q.counts().active == 0


def test_deleted_while_in_flight_is_not_requeued():
    _clock, q = make()
    q.add(info(pod("p")))
    qpi = q.pop()
    q.delete(qpi.pi.uid)
    q.add_unschedulable(qpi, [], q.scheduling_cycle)
    assert q.counts().backoff == 0


def test_churn_leaves_no_stale_entries_behind():
    """Pods deleted in every state of the queue, over and over: once their backoff times have
    passed, the queue holds nothing of them (heaps included), so a long run does not grow."""
    clock, q = make(initial_backoff=1, max_backoff=10)
    for round_ in range(50):
        pis = [info(pod(f"r{round_}-{i}")) for i in range(40)]
        for pi in pis:
            q.add(pi)
        for i in range(30):  # ten stay active
            qpi = q.pop()
            # to the pool (a plugin rejected it) or to backoff (no plugin to wait for)
            q.add_unschedulable(qpi, ["TaintToleration"] if i % 2 else [], q.scheduling_cycle - 1)
        q.activate(pi.uid for pi in pis[:5])  # some leave backoff early: their backoff entry goes stale
        q.update(pis[-1])  # re-sorted while active: a stale active entry
        for pi in pis:
            q.delete(pi.uid)
        clock.advance_to(clock.now() + 11)
        clock.run_due()
    assert q.pop() is None
    assert not q.pods and not q._unschedulable and not q._gated and not q._pool_buckets
    assert q._backoff == [] and q._active == []
    assert q.counts() == QueueCounts(0, 0, 0, 0)


def test_requeue_brings_back_a_pod_whose_binding_failed_after_it_left_the_queue():
    clock, q = make(initial_backoff=1)
    q.add(info(pod("p")))
    qpi = q.pop()
    q.done(qpi.pi.uid)  # assumed: out of the queue, binding in the background
    assert not q.contains(qpi.pi.uid)
    q.requeue(qpi, [], q.scheduling_cycle)  # the binding failed
    assert q.contains(qpi.pi.uid) and q.counts().backoff == 1
    clock.advance_to(qpi.backoff_expiry)
    clock.run_due()
    assert q.pop() is qpi


def test_requeue_keeps_an_entry_that_came_back_meanwhile():
    _clock, q = make()
    q.add(info(pod("p")))
    stale = q.pop()
    q.done(stale.pi.uid)
    q.add(stale.pi)  # the pod came back (an update) while its binding ran
    fresh = q.pending()[0]
    assert fresh is not stale
    q.requeue(stale, ["NodeResourcesFit"], q.scheduling_cycle)
    assert q.pending() == [fresh] and q.counts().active == 1 and q.counts().unschedulable == 0
