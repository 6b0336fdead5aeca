"""The preemption executor's PreEnqueue gate for a pod group (plugins.preemptionexecutor): its
members wait while the group's victims are deleted, and are let go once the last one is going.
A fake handle stands in for the framework here (it records deletions and holds them until told);
the pod's own gate is tested through DefaultPreemption in test_defaultpreemption."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from types import SimpleNamespace
from typing import Any

from builders import info, pod
from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import Code, Status
from kubesched.plugins.preemptionexecutor import WAITING_FOR_GROUP_PREEMPTION, Executor


class FakeHandle:
    def __init__(self) -> None:
        self.cache = SimpleNamespace(placed={})
        self.tasks: list[asyncio.Task[None]] = []
        self.deleted: list[str] = []
        self.release = asyncio.Event()
        self.activated: list[str] = []

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        self.tasks.append(asyncio.get_running_loop().create_task(coro))

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        self.deleted.append(pi.pod.metadata.name)
        await self.release.wait()
        self.cache.placed.pop(pi.uid, None)

    def activate(self, uids: Iterable[str]) -> None:
        self.activated.extend(uids)


def named(name: str) -> PodInfo:
    p = pod(name)
    p.metadata.uid = f"uid-{name}"
    return info(p)


async def test_a_pod_groups_members_wait_until_its_last_victim_is_going() -> None:
    handle = FakeHandle()
    executor = Executor(handle, "DefaultPreemption")  # type: ignore[arg-type]
    members = [named("g-0"), named("g-1")]
    victims = [named("low-0"), named("low-1"), named("low-2")]
    for v in victims:
        handle.cache.placed[v.uid] = SimpleNamespace(info=v)
    executor.evict("default/g", members, victims, "cluster", "Preempted by podgroup")
    waiting = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (WAITING_FOR_GROUP_PREEMPTION,), "DefaultPreemption")
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(handle.deleted) == ["low-0", "low-1"]  # all but the last at once
    assert [executor.gate(m, "default/g") for m in members] == [waiting, waiting]
    assert executor.gate(named("other"), "default/other") is None and executor.gate(members[0]) is None
    handle.release.set()
    await asyncio.gather(*handle.tasks)
    assert handle.deleted[-1] == "low-2"
    assert [executor.gate(m, "default/g") for m in members] == [None, None] and not executor.preempting
    assert not handle.activated
