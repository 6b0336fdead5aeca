from builders import make_node, make_pod
from kubesched.api.podinfo import make_pod_info
from kubesched.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE,
    NODE_ADD,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from kubesched.framework.status import Status
from kubesched.infra.clock import VirtualClock
from kubesched.queue.scheduling_queue import QueueCounts, SchedulingQueue

NODE_LABEL = ClusterEvent(NODE, ActionType.UpdateNodeLabel)


def only_big_nodes(pi, old, new):
    """A hint that says Queue only for nodes labelled size=big."""
    return QueueingHint.Queue if new is not None and new.metadata.labels.get("size") == "big" else QueueingHint.QueueSkip


def gates_gone(pi, old, new):
    return QueueingHint.Queue if new.uid == pi.uid and not new.gated else QueueingHint.QueueSkip


REGISTRATIONS = {
    "NodeResourcesFit": [ClusterEvent(NODE, ActionType.Add), ClusterEvent(POD, ActionType.Delete)],
    "TaintToleration": [ClusterEvent(NODE, ActionType.Add)],
    "Picky": [ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeLabel), only_big_nodes)],
    "SchedulingGates": [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.UpdatePodSchedulingGatesEliminated), gates_gone)
    ],
}


def make(clock=None, gate=None, registrations=None, **kw):
    clock = clock or VirtualClock()
    q = SchedulingQueue(
        clock,
        sort_key=lambda qpi: (-qpi.pi.priority, qpi.timestamp),
        pre_enqueue=gate or (lambda pi: None),
        registrations={"default-scheduler": registrations or REGISTRATIONS},
        **kw,
    )
    return clock, q


def fail(q, plugins, clock=None):
    qpi = q.pop()
    q.add_unschedulable(qpi, plugins, q.scheduling_cycle)
    return qpi


def tick(clock, to):
    clock.advance_to(to)
    clock.run_due()


def test_pops_by_priority_then_arrival():
    clock, q = make()
    q.add(make_pod("low").priority(1).info())
    clock.advance_to(1)
    q.add(make_pod("high").priority(10).info())
    q.add(make_pod("low2").priority(1).info())
    assert [q.pop().pi.key for _ in range(3)] == ["default/high", "default/low", "default/low2"]
    assert q.pop() is None


def test_backoff_doubles_and_caps_counting_failures():
    _clock, q = make(initial_backoff=1, max_backoff=10)
    q.add(make_pod("p").info())
    durations = []
    for _ in range(6):
        qpi = fail(q, ["NodeResourcesFit"])
        durations.append(q.backoff_duration(qpi))
        q.move_on_event(NODE_ADD)  # to backoffQ, then popped at once: nothing else is active
    assert durations == [1, 2, 4, 8, 10, 10]
    assert qpi.unschedulable_count == 6 and qpi.consecutive_errors == 0


def test_backoff_expiry_is_rounded_down_to_the_window_and_flushed_on_the_next_tick():
    clock, q = make(initial_backoff=1)
    tick(clock, 10.3)
    q.add(make_pod("p").info())
    qpi = fail(q, [])  # an error: error backoff, which no idle pop takes early
    assert qpi.backoff_expiry is None or qpi.backoff_expiry == 11.0
    assert q.counts().backoff == 1 and q.pop() is None
    tick(clock, 11.5)  # expiry 11 is not before the window starting at 11: still backing off
    assert q.pop() is None
    tick(clock, 12.0)
    assert q.pop() is qpi


def test_an_idle_queue_pops_from_backoff_but_never_an_error_retry():
    _clock, q = make(initial_backoff=5)
    q.add(make_pod("err").info())
    q.add(make_pod("rejected").info())
    err = fail(q, [])
    rejected = fail(q, ["NodeResourcesFit"])
    q.move_on_event(NODE_ADD)  # the rejected pod's backoff starts
    assert q.counts().backoff == 2 and len(q) == 1
    assert q.pop() is rejected
    assert q.incoming[("active", "PopFromBackoffQ")] == 1
    assert q.pop() is None and err.where == "backoff"


def test_pool_moves_only_on_registered_events():
    clock, q = make(initial_backoff=1)
    q.add(make_pod("p").info())
    qpi = fail(q, ["TaintToleration"])
    assert q.counts().unschedulable == 1
    assert q.move_on_event(ASSIGNED_POD_DELETE) == 0
    clock.advance_to(5)
    assert q.move_on_event(NODE_ADD) == 1
    assert q.pop() is qpi


def test_hints_decide_which_events_move_a_pod():
    _clock, q = make()
    q.add(make_pod("p").info())
    qpi = fail(q, ["Picky"])
    assert q.move_on_event(NODE_ADD, None, make_node("n1").label(size="small").obj()) == 0
    assert q.move_on_event(NODE_LABEL, make_node("n1").obj(), make_node("n1").label(size="big").obj()) == 1
    assert qpi.where in ("active", "backoff")


def test_a_failing_hint_counts_as_queue(caplog):
    def broken(pi, old, new):
        raise RuntimeError("boom")

    _clock, q = make(registrations={"Broken": [ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add), broken)]})
    q.add(make_pod("p").info())
    fail(q, ["Broken"])
    assert q.move_on_event(NODE_ADD, None, make_node("n").obj()) == 1
    assert "queueing hint of plugin Broken failed" in caplog.text


def test_moved_during_backoff_waits_in_backoff():
    _clock, q = make(initial_backoff=4)
    q.add(make_pod("p").info())
    q.add(make_pod("busy").info())
    fail(q, ["NodeResourcesFit"])
    q.move_on_event(NODE_ADD)
    assert q.counts().backoff == 1
    assert q.pop().pi.key == "default/busy"  # activeQ first


def test_event_during_cycle_sends_pod_to_backoff_only_if_its_hint_says_so():
    _clock, q = make()
    q.add(make_pod("a").info())
    q.add(make_pod("b").info())
    a = q.pop()
    q.move_on_event(NODE_ADD, None, make_node("n").label(size="small").obj())  # arrives while a is being scheduled
    q.add_unschedulable(a, ["Picky"], q.scheduling_cycle)
    assert a.where == "unschedulable"  # Picky's hint: a small node does not help
    b = q.pop()
    q.move_on_event(NODE_ADD, None, make_node("n2").label(size="big").obj())
    q.add_unschedulable(b, ["Picky"], q.scheduling_cycle)
    assert b.where == "backoff"
    assert q._events == [] and q._in_flight == {}  # nothing in flight: the events are dropped


def test_events_before_a_pod_was_popped_do_not_count_for_it():
    _clock, q = make()
    q.add(make_pod("a").info())
    q.add(make_pod("b").info())
    a = q.pop()
    q.move_on_event(NODE_ADD, None, make_node("n").label(size="big").obj())
    b = q.pop()
    q.add_unschedulable(b, ["Picky"], q.scheduling_cycle)
    assert b.where == "unschedulable"
    q.add_unschedulable(a, ["Picky"], q.scheduling_cycle - 1)
    assert a.where == "backoff"


def test_pre_check_limits_the_pods_an_event_reaches():
    _clock, q = make()
    q.add(make_pod("low").priority(1).info())
    q.add(make_pod("high").priority(100).info())
    high = fail(q, ["NodeResourcesFit"])
    low = fail(q, ["NodeResourcesFit"])
    moved = q.move_on_event(ASSIGNED_POD_DELETE, None, None, lambda pi: pi.priority <= 10)
    assert moved == 1 and low.where != "unschedulable" and high.where == "unschedulable"


def test_pool_flushes_after_max_time():
    clock, q = make(max_in_unschedulable=300)
    q.add(make_pod("p").info())
    qpi = fail(q, ["TaintToleration"])
    tick(clock, 299)
    assert q.pop() is None
    tick(clock, 300)
    assert q.pop() is qpi


def test_pooled_pod_update_moves_it_only_if_a_hint_says_so():
    _clock, q = make()
    p = make_pod("p").label(a="1").obj()
    q.add(make_pod_info(p))
    qpi = fail(q, ["NodeResourcesFit"])
    relabelled = make_pod("p").label(a="2").info()
    relabelled.uid = qpi.pi.uid
    q.update(relabelled)  # NodeResourcesFit registered no pod update: it stays
    assert qpi.where == "unschedulable" and qpi.pi is relabelled


def test_gated_pods_wait_until_their_gates_are_gone():
    def gate(pi):
        return Status.unresolvable("waiting for scheduling gates: [g]", plugin="SchedulingGates") if pi.gated else None

    _clock, q = make(gate=gate)
    gated = make_pod("p").label(v="1").gate("g").info()
    q.add(gated)
    assert q.counts().gated == 1 and q.pop() is None
    relabelled = make_pod("p").label(v="2").gate("g").info()
    relabelled.uid = gated.uid
    q.update(relabelled)
    assert q.counts().gated == 1
    released = make_pod("p").info()
    released.uid = gated.uid
    q.update(released)
    assert q.counts().gated == 0
    assert q.pop().pi is released


def test_a_gated_pod_is_moved_only_by_its_gating_plugins_events_or_an_activation():
    # kube's GatingPluginEvents: other plugins' events do not even run PreEnqueue again.
    held = {"on": True}
    asked: list[str] = []

    def gate(pi):
        asked.append(pi.pod.metadata.name)
        return Status.unresolvable("waiting", plugin="SchedulingGates") if held["on"] else None

    _clock, q = make(gate=gate)
    q.add(make_pod("p").info())
    assert q.counts().gated == 1 and asked == ["p"]
    q.move_on_event(NODE_ADD, None, make_node("n").obj())  # NodeResourcesFit's and others', not the gate's
    assert asked == ["p"] and q.counts().gated == 1
    q.activate(list(q.pods))
    assert asked == ["p", "p"] and q.counts().gated == 1
    held["on"] = False
    q.activate(list(q.pods))
    assert q.counts().gated == 0 and q.pop().pi.pod.metadata.name == "p"


def test_delete_removes_everywhere():
    _clock, q = make()
    q.add(make_pod("p").info())
    uid = q.pending()[0].pi.uid
    q.delete(uid)
    assert q.pop() is None and not q.contains(uid)
    assert q.counts().active == 0


def test_deleted_while_in_flight_is_not_requeued():
    _clock, q = make()
    q.add(make_pod("p").info())
    qpi = q.pop()
    q.delete(qpi.pi.uid)
    q.add_unschedulable(qpi, [], q.scheduling_cycle)
    assert q.counts().backoff == 0 and q._in_flight == {}


def test_churn_leaves_no_stale_entries_behind():
    """Pods deleted in every state of the queue, over and over: once their backoff times have
    passed, the queue holds nothing of them (heaps included), so a long run does not grow."""
    clock, q = make(initial_backoff=1, max_backoff=10)
    for round_ in range(50):
        pis = [make_pod(f"r{round_}-{i}").info() for i in range(40)]
        for pi in pis:
            q.add(pi)
        for i in range(30):  # ten stay active
            qpi = q.pop()
            if i == 3:
                q.move_on_event(ASSIGNED_POD_ADD)  # an in-flight event
            # to the pool (a plugin rejected it) or to backoff (an error)
            q.add_unschedulable(qpi, ["TaintToleration"] if i % 2 else [], q.scheduling_cycle)
        q.activate(pi.uid for pi in pis[:5])  # some leave backoff early: their backoff entry goes stale
        q.update(pis[-1])  # re-sorted while active: a stale active entry
        for pi in pis:
            q.delete(pi.uid)
        tick(clock, clock.now() + 12)
    assert q.pop() is None
    assert not q.pods and not q._unschedulable and not q._gated and not q._buckets
    assert q._backoff == [] and q._error_backoff == [] and q._active == []
    assert q._events == [] and q._in_flight == {}
    assert q.counts() == QueueCounts(0, 0, 0, 0)


def test_requeue_brings_back_a_pod_whose_binding_failed_after_it_left_the_queue():
    clock, q = make(initial_backoff=1)
    q.add(make_pod("p").info())
    qpi = q.pop()
    q.assumed(qpi.pi.uid)  # out of the pending pods, binding in the background
    assert not q.contains(qpi.pi.uid)
    q.requeue(qpi, [], q.scheduling_cycle)  # the binding failed
    assert q.contains(qpi.pi.uid) and q.counts().backoff == 1
    tick(clock, qpi.backoff_expiry + 1)
    assert q.pop() is qpi


def test_requeue_keeps_an_entry_that_came_back_meanwhile():
    _clock, q = make()
    q.add(make_pod("p").info())
    stale = q.pop()
    q.assumed(stale.pi.uid)
    q.add(stale.pi)  # the pod came back (an update) while its binding ran
    fresh = q.pending()[0]
    assert fresh is not stale
    q.requeue(stale, ["NodeResourcesFit"], q.scheduling_cycle)
    assert q.pending() == [fresh] and q.counts().active == 1 and q.counts().unschedulable == 0
    assert q._in_flight == {}
