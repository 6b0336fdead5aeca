from __future__ import annotations

from builders import make_pod
from kubesched.framework.events import ASSIGNED_POD, TARGET_POD, UNSCHEDULED_POD, ClusterEvent, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.plugins.schedulinggates import SchedulingGates


def test_ungated_pod_passes() -> None:
    assert SchedulingGates().pre_enqueue(make_pod("p").info()) is None
    assert SchedulingGates().pre_enqueue(make_pod("p").spec(schedulingGates=[]).info()) is None


def test_gated_pod_waits_with_kube_message() -> None:
    pi = make_pod("p").spec(schedulingGates=[{"name": "example.com/quota"}, {"name": "second"}]).info()
    status = SchedulingGates().pre_enqueue(pi)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("waiting for scheduling gates: [example.com/quota second]",)


def test_single_gate_message() -> None:
    status = SchedulingGates().pre_enqueue(make_pod("p").gate("g").info())
    assert status is not None
    assert status.message() == "waiting for scheduling gates: [g]"


def test_plugin_metadata() -> None:
    plugin = SchedulingGates()
    assert plugin.name == "SchedulingGates"
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (TARGET_POD, A.UpdatePodSchedulingGatesEliminated, plugin.is_schedulable_after_update_target_pod_scheduling_gates_eliminated)
    ]
    for resource in (ASSIGNED_POD, UNSCHEDULED_POD):
        assert not events[0].event.covers(ClusterEvent(resource, A.UpdatePodSchedulingGatesEliminated))


def test_hint_after_the_gates_are_removed_queues() -> None:
    plugin = SchedulingGates()
    gated = make_pod("p").gate("foo").info()
    released = make_pod("p").info()
    assert plugin.is_schedulable_after_update_target_pod_scheduling_gates_eliminated(gated, gated, released) == QueueingHint.Queue
