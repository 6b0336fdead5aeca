from __future__ import annotations

from builders import info, pod
from kubesched.framework.interface import Code
from kubesched.plugins.schedulinggates import SchedulingGates


def test_ungated_pod_passes() -> None:
    assert SchedulingGates().pre_enqueue(info(pod("p"))) is None
    assert SchedulingGates().pre_enqueue(info(pod("p", spec={"schedulingGates": []}))) is None


def test_gated_pod_waits_with_kube_message() -> None:
    pi = info(pod("p", spec={"schedulingGates": [{"name": "example.com/quota"}, {"name": "second"}]}))
    status = SchedulingGates().pre_enqueue(pi)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("waiting for scheduling gates: [example.com/quota second]",)


def test_single_gate_message() -> None:
    status = SchedulingGates().pre_enqueue(info(pod("p", spec={"schedulingGates": [{"name": "g"}]})))
    assert status is not None
    assert status.message() == "waiting for scheduling gates: [g]"


def test_plugin_metadata() -> None:
    plugin = SchedulingGates()
    assert plugin.name == "SchedulingGates"
    assert [(e.resource, e.action) for e in plugin.events_to_register()] == [
        ("Pod", "UpdatePodSchedulingGatesEliminated")
    ]
