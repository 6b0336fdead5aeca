"""The kube backend's pod informer handler: which updates of a pending pod move it in the queue."""

from __future__ import annotations

import copy
from typing import Any

from builders import make_pod
from kubesched.api.objects import Pod, PodCondition, PodResourceClaimStatus
from kubesched.backends.kube.informers import PodHandler


class Scheduler:
    """A stand-in (unit test) recording which of the two entry points the handler called."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_pod_update(self, pod: Pod) -> None:
        self.calls.append("update")

    def refresh_pending_pod(self, pod: Pod) -> None:
        self.calls.append("refresh")


def _handler() -> tuple[PodHandler, Scheduler]:
    scheduler = Scheduler()
    handler: Any = PodHandler(scheduler)  # type: ignore[arg-type]
    return handler, scheduler


def test_a_condition_written_on_a_pending_pod_only_refreshes_it() -> None:
    handler, scheduler = _handler()
    old = make_pod("p").info().pod
    new = copy.deepcopy(old)
    new.status.conditions = [PodCondition(type="PodScheduled", status="False", reason="Unschedulable")]
    handler.on_update(old, new)
    assert scheduler.calls == ["refresh"]


def test_the_resourceclaim_controller_naming_a_claim_moves_the_pod() -> None:
    handler, scheduler = _handler()
    old = make_pod("p").resource_claim("gpu", template="one-gpu").info().pod
    new = copy.deepcopy(old)
    new.status.resource_claim_statuses = [PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-abcde")]
    handler.on_update(old, new)
    assert scheduler.calls == ["update"]
