"""The queue's side of bursts (queue.bursts): activeQ's index of each burst's pods, taking a
burst whole, and new pods gathering for their siblings within a window."""

from builders import make_pod
from kubesched.api.objects import OwnerReference
from kubesched.api.podinfo import make_pod_info
from kubesched.queue.bursts import BurstPolicy, burst_key
from unit.queue.test_scheduling_queue import make, tick


def owned(name, owner="web", cpu="1", priority=None):
    builder = make_pod(name).req(cpu=cpu)
    if priority is not None:
        builder.priority(priority)
    p = builder.obj()
    p.metadata.owner_references = [OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=owner,
                                                  uid=f"uid-{owner}", controller=True)]
    return make_pod_info(p)


def name(qpi):
    return qpi.pi.pod.metadata.name


def policy(window=0.0, limit=64):
    def burst_of(pi):
        key = burst_key(pi)
        return BurstPolicy(key, window, limit) if key is not None else None
    return burst_of


def test_one_owner_and_shape_is_one_burst():
    assert burst_key(owned("a")) == burst_key(owned("b"))
    assert burst_key(owned("a")) != burst_key(owned("b", owner="other"))
    assert burst_key(owned("a")) != burst_key(owned("b", cpu="2"))
    assert burst_key(owned("a")) != burst_key(owned("b", priority=5))
    assert burst_key(make_pod("bare").info()) is None


def test_the_rest_of_a_burst_is_taken_with_the_pod_popped():
    _clock, q = make(burst_of=policy(limit=3))
    for pod_name in ("a-0", "a-1", "a-2", "a-3"):
        q.add(owned(pod_name))
    q.add(owned("b-0", owner="b"))
    lead = q.pop()
    taken = q.take_burst(lead)
    assert [name(lead), *(name(t) for t in taken)] == ["a-0", "a-1", "a-2"]  # the limit
    assert q.scheduling_cycle == 3 and all(t.attempts == 1 for t in taken)
    assert [name(q.pop()), name(q.pop())] == ["a-3", "b-0"]
    assert q.pop() is None


def test_pods_that_left_activeq_are_not_in_the_burst():
    _clock, q = make(burst_of=policy())
    for pod_name in ("a-0", "a-1", "a-2"):
        q.add(owned(pod_name))
    q.delete(next(uid for uid, qpi in q.pods.items() if name(qpi) == "a-1"))
    lead = q.pop()
    assert [name(t) for t in q.take_burst(lead)] == ["a-2"]
    assert q.take_burst(lead) == []


def test_without_a_policy_nothing_is_a_burst():
    _clock, q = make()
    q.add(owned("a-0"))
    q.add(owned("a-1"))
    assert q.take_burst(q.pop()) == []


def test_new_pods_gather_until_the_window_ends():
    clock, q = make(burst_of=policy(window=2.0))
    q.add(owned("a-0"))
    tick(clock, 1.0)
    q.add(owned("a-1"))
    assert q.pop() is None and len(q) == 0
    assert q.counts().active == 2 and q.has_timed_work()  # pending, counted as active
    tick(clock, 2.0)
    lead = q.pop()
    assert [name(lead), *(name(t) for t in q.take_burst(lead))] == ["a-0", "a-1"]
    assert not q.has_timed_work()


def test_a_full_burst_is_released_at_once_and_a_deleted_pod_leaves_it():
    _clock, q = make(burst_of=policy(window=30.0, limit=3))
    q.add(owned("a-0"))
    q.add(owned("a-1"))
    gone = q.pods[next(iter(q.pods))].pi.uid
    q.delete(gone)
    assert q.counts().active == 1
    q.add(owned("a-2"))
    q.add(owned("a-3"))
    lead = q.pop()
    assert [name(lead), *(name(t) for t in q.take_burst(lead))] == ["a-1", "a-2", "a-3"]


def test_gated_pods_do_not_gather():
    from kubesched.framework.status import Code, Status

    def gate(pi):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("gated",), "SchedulingGates") if pi.pod.metadata.name == "a-0" else None

    _clock, q = make(burst_of=policy(window=5.0), gate=gate)
    q.add(owned("a-0"))
    assert q.counts().gated == 1 and q.counts().active == 0


def test_a_new_configuration_releases_gatherings_and_reindexes():
    _clock, q = make(burst_of=policy(window=5.0))
    q.add(owned("a-0"))
    q.add(owned("a-1"))
    q._burst_of = lambda pi: None  # the new configuration places no bursts
    q.reconfigure(q._sort_key, {"default-scheduler": {}}, 1.0, 10.0)
    lead = q.pop()
    assert lead is not None and q.take_burst(lead) == []
