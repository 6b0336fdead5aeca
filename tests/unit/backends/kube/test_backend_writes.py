"""KubeBackend's writes to one pod: in the order asked, a waiting write replaced by a newer one of
its kind, a failure's nomination and condition in one patch, waiting PodScheduled=False patches
dropped by a bind unless they nominate a node. A fake API client stands in for the
API server here (it records requests and can hold them); the integration tests use the real one."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import make_pod
from kubesched.api.objects import PodCondition
from kubesched.api.podinfo import PodInfo
from kubesched.backends.kube.backend import KubeBackend


class FakeClient:
    """Records each request; while `hold` is clear, requests wait for it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, Any]] = []
        self.hold = asyncio.Event()
        self.hold.set()

    async def send(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> None:
        self.sent.append((method, path, body))
        await self.hold.wait()


def backend() -> tuple[KubeBackend, FakeClient]:
    client = FakeClient()
    return KubeBackend(client, events=None), client  # type: ignore[arg-type]


def messages(client: FakeClient) -> list[str]:
    out = []
    for verb, path, body in client.sent:
        if path.endswith("/binding"):
            out.append(f"bind {body['target']['name']}")
        elif "conditions" in body.get("status", {}) or "nominatedNodeName" in body.get("status", {}):
            status = body["status"]
            said = [f"nominate {status['nominatedNodeName']}"] if "nominatedNodeName" in status else []
            said += [status["conditions"][0]["message"]] if "conditions" in status else []
            out.append(" + ".join(said))
        else:
            out.append(f"{verb} {path}")
    return out


def pending(name: str = "p") -> PodInfo:
    return make_pod(name).info()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_waiting_patch_is_replaced_by_the_newer_one() -> None:
    kb, client = backend()
    pi = pending()
    client.hold.clear()
    kb.set_unschedulable(pi, "0/3 nodes are available: 3 first.")
    await settle()  # the first patch is on the wire
    kb.set_unschedulable(pi, "0/3 nodes are available: 3 second.")
    kb.set_unschedulable(pi, "0/3 nodes are available: 3 third.")
    client.hold.set()
    await settle()
    assert messages(client) == ["0/3 nodes are available: 3 first.", "0/3 nodes are available: 3 third."]
    assert kb.writes_superseded == 1


async def test_a_bind_drops_the_unschedulable_patches_still_waiting() -> None:
    kb, client = backend()
    pi = pending()
    client.hold.clear()
    kb.set_unschedulable(pi, "first")
    await settle()
    kb.set_unschedulable(pi, "second")
    binding = asyncio.ensure_future(kb.bind(pi, "n1"))
    client.hold.set()
    assert await binding is None
    assert messages(client) == ["first", "bind n1"]  # "second" never goes out


async def test_a_preemptors_nomination_and_condition_go_out_together_before_its_bind() -> None:
    """kube writes a failure's nomination and condition in one patch, before the pod can be bound:
    a preemptor bound as soon as its victims are gone still shows why it waited."""
    kb, client = backend()
    pi = pending()
    client.hold.clear()
    kb.set_unschedulable(pi, "first")
    await settle()  # an earlier attempt's patch still on the wire
    kb.set_nominated_node(pi, "n1")
    kb.set_unschedulable(pi, "second")
    binding = asyncio.ensure_future(kb.bind(pi, "n1"))
    client.hold.set()
    assert await binding is None
    assert messages(client) == ["first", "nominate n1 + second", "bind n1"]


async def test_each_pod_gets_its_own_patch_with_its_nomination_and_condition() -> None:
    kb, client = backend()
    a, b = pending("a"), pending("b")
    kb.set_nominated_node(a, "n1")
    kb.set_unschedulable(a, "a failed")
    kb.set_unschedulable(b, "b failed")
    await settle()
    assert sorted(messages(client)) == ["b failed", "nominate n1 + a failed"]
    assert not kb._writes  # nothing left under way


async def test_the_same_words_are_not_patched_twice_and_the_transition_time_stays() -> None:
    kb, client = backend()
    pi = pending()
    pi.pod.status.conditions = [PodCondition(type="PodScheduled", status="False", reason="Unschedulable",
                                             message="old", last_transition_time="2026-01-01T00:00:00Z")]
    kb.set_unschedulable(pi, "new")
    kb.set_unschedulable(pi, "new")  # the watch has not brought the patched pod back yet
    await settle()
    assert messages(client) == ["new"]
    assert client.sent[0][2]["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


class OneAtATimeClient:
    """Answers a request each time `answer` is called, in the order they came."""

    def __init__(self) -> None:
        self.tokens = asyncio.Semaphore(0)

    async def send(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> None:
        await self.tokens.acquire()

    def answer(self, n: int = 1) -> None:
        for _ in range(n):
            self.tokens.release()


async def test_the_loop_waits_while_too_many_pods_have_writes_under_way() -> None:
    """room_for_writes: at once below the high mark; with that many pods' writes held by the API
    server, it waits until they drain to the low mark (not one write earlier), or until stop."""
    from kubesched.backends.kube.backend import WRITE_BACKLOG_HIGH, WRITE_BACKLOG_LOW

    client = OneAtATimeClient()
    kb = KubeBackend(client, events=None)  # type: ignore[arg-type]
    stop = asyncio.Event()
    pods = [pending(f"p{i}") for i in range(WRITE_BACKLOG_HIGH)]
    for pi in pods[:-1]:
        kb.set_unschedulable(pi, "failed")
    await asyncio.wait_for(kb.room_for_writes(stop), 1)  # one short of the mark: no wait
    kb.set_unschedulable(pods[-1], "failed")
    waiting = asyncio.ensure_future(kb.room_for_writes(stop))
    await settle()
    assert not waiting.done() and kb.paced == 1
    answered = 0
    while not waiting.done():
        assert len(kb._writes) > WRITE_BACKLOG_LOW, "still waiting below the low mark"
        client.answer()
        answered += 1
        await settle()
    assert answered == WRITE_BACKLOG_HIGH - WRITE_BACKLOG_LOW and len(kb._writes) == WRITE_BACKLOG_LOW
    # Stop ends a wait even when nothing drains.
    for pi in [pending(f"q{i}") for i in range(WRITE_BACKLOG_HIGH)]:
        kb.set_unschedulable(pi, "failed")
    waiting = asyncio.ensure_future(kb.room_for_writes(stop))
    await settle()
    assert not waiting.done()
    stop.set()
    await asyncio.wait_for(waiting, 1)
    client.answer(len(kb._writes))
    await settle()
    assert not kb._writes
