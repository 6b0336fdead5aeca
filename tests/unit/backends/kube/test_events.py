"""Event notes are cut as kube-scheduler's truncateMessage cuts them."""

import time

from kubesched.backends.kube.events import NOTE_LIMIT, truncate_note


def test_a_note_within_the_limit_is_kept() -> None:
    assert truncate_note("x" * NOTE_LIMIT) == "x" * NOTE_LIMIT


def test_a_longer_note_ends_in_space_dots_at_exactly_the_limit() -> None:
    note = truncate_note("0/5000 nodes are available: " + "1 node(s) had untolerated taint {k: v}, " * 100)
    assert len(note.encode()) == NOTE_LIMIT and note.endswith(" ...")


def test_the_limit_counts_bytes_as_go_does() -> None:
    note = truncate_note("é" * 600)  # 1,200 bytes: over the limit though 600 characters
    assert note.endswith(" ...") and len(note.encode()) <= NOTE_LIMIT + 2


# --- series: client-go's isomorphic events. A fake API client stands in for the API server here
# (it records requests and can hold them); the kube integration tests compare with kube-scheduler.

import asyncio  # noqa: E402
from typing import Any  # noqa: E402

from builders import make_pod  # noqa: E402
from kubesched.api.podinfo import PodInfo, make_pod_info  # noqa: E402
from kubesched.backends.kube.events import SERIES_WINDOW, EventRecorder  # noqa: E402


class FakeClient:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, Any]] = []
        self.hold = asyncio.Event()
        self.hold.set()
        self.made = 0

    async def post(self, path: str, *, body: Any) -> Any:
        self.sent.append(("POST", path, body))
        await self.hold.wait()
        self.made += 1
        return {"metadata": {"name": f"ev-{self.made}"}}

    async def send(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> None:
        self.sent.append((method, path, body))
        await self.hold.wait()
        if method == "POST":
            self.made += 1


def at_version(rv: str) -> PodInfo:
    p = make_pod("p").obj()
    p.metadata.uid, p.metadata.resource_version = "uid-p", rv
    return make_pod_info(p)


def writes(client: FakeClient) -> list[str]:
    out = []
    for verb, path, body in client.sent:
        if verb == "POST":
            out.append(f"create {body['note']} @{body['regarding']['resourceVersion']}")
        else:
            out.append(f"count {path.rsplit('/', 1)[1]} {body['series']['count']}")
    return out


async def recorder() -> tuple[EventRecorder, FakeClient]:
    client = FakeClient()
    rec = EventRecorder(client, "kubesched", "host")  # type: ignore[arg-type]
    rec.start()
    return rec, client


async def drain(rec: EventRecorder) -> None:
    await asyncio.wait_for(rec.queue.join(), 5)


async def test_a_repeat_at_the_same_version_is_written_once_then_only_counted_until_the_series_ends() -> None:
    rec, client = await recorder()
    try:
        for _ in range(5):
            rec.record(at_version("7"), "Warning", "FailedScheduling", "0/3 nodes are available.")
            await drain(rec)
        assert writes(client) == ["create 0/3 nodes are available. @7", "count ev-1 2"]
        rec.finish(time.time() + SERIES_WINDOW)
        await drain(rec)
        assert writes(client)[2:] == ["count ev-1 5"] and not rec.series
    finally:
        await rec.stop()


async def test_a_new_version_is_a_new_event_and_a_new_note_at_the_same_version_is_not() -> None:
    rec, client = await recorder()
    try:
        rec.record(at_version("7"), "Warning", "FailedScheduling", "first")
        rec.record(at_version("8"), "Warning", "FailedScheduling", "first")
        rec.record(at_version("8"), "Warning", "FailedScheduling", "second")
        await drain(rec)
        assert writes(client) == ["create first @7", "create first @8", "count ev-2 2"]
    finally:
        await rec.stop()


async def test_a_repeat_while_the_event_is_being_created_is_written_after_it() -> None:
    rec, client = await recorder()
    try:
        client.hold.clear()
        rec.record(at_version("7"), "Warning", "FailedScheduling", "same")
        await asyncio.sleep(0)
        rec.record(at_version("7"), "Warning", "FailedScheduling", "same")
        for _ in range(10):
            await asyncio.sleep(0)
        assert writes(client) == ["create same @7"]  # the count waits for the event's name
        client.hold.set()
        await drain(rec)
        assert writes(client) == ["create same @7", "count ev-1 2"]
    finally:
        await rec.stop()


async def test_running_series_are_refreshed_and_single_events_are_not() -> None:
    rec, client = await recorder()
    try:
        rec.record(at_version("7"), "Warning", "FailedScheduling", "a")
        rec.record(at_version("7"), "Warning", "FailedScheduling", "a")
        rec.record(at_version("7"), "Warning", "FailedScheduling", "a")
        rec.record(at_version("9"), "Warning", "FailedScheduling", "b")
        await drain(rec)
        before = len(client.sent)
        rec.refresh()
        await drain(rec)
        assert writes(client)[before:] == ["count ev-1 3"]
    finally:
        await rec.stop()
