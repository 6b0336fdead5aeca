"""events.k8s.io/v1 events about pods, posted in the background the way client-go's
events library (tools/events, which kube-scheduler uses) does it.

- Posting never blocks a scheduling or binding cycle: events go through a bounded
  queue served by a few workers; when the queue is full an event is dropped and
  counted (client-go drops too), because a scheduler must not stall on events.
- Isomorphic events form a series, as client-go's broadcaster keys them: the same type,
  reason, action and reporter about the same object *at the same resourceVersion* (its
  ObjectReference carries it), whatever the note. The first is created; the second
  patches the first with series count 2 at once; later ones are only counted, and the
  count is written when the series ends (six minutes without a repeat, checked every six
  minutes) and every 30 minutes while it goes on. A pod whose status the scheduler patches
  after a failure therefore gets a new event object at its next failure, and a failure
  whose note changed before the pod's resourceVersion did counts on the earlier event, as
  with kube-scheduler.
- What is remembered for series stays bounded in a run of months: a series is forgotten
  when it ends or its pod is deleted, and never more than MAX_SERIES are kept (the least
  recently repeated go first).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubesched.api.podinfo import PodInfo
from kubesched.client import ApiClient, ApiError

log = logging.getLogger(__name__)

SERIES_WINDOW = 6 * 60.0  # client-go's finishTime: a series idle this long has ended
SERIES_REFRESH = 30 * 60.0  # client-go's refreshTime: running series are written this often
NOTE_LIMIT = 1024  # the API refuses notes longer than 1 kB
QUEUE_SIZE = 1000
WORKERS = 4
MAX_SERIES = 20 * QUEUE_SIZE

SeriesKey = tuple[str, str, str, str, str]  # pod uid, its resourceVersion, type, reason, reporting controller


def truncate_note(message: str) -> str:
    """kube-scheduler's truncateMessage: over NoteLengthLimit bytes, cut to fit " ..." after it.
    Go counts and cuts bytes; a character cut in two becomes U+FFFD, as Go's JSON encoder writes it."""
    raw = message.encode()
    if len(raw) <= NOTE_LIMIT:
        return message
    suffix = b" ..."
    return (raw[: NOTE_LIMIT - len(suffix)] + suffix).decode(errors="replace")


def micro_time(ts: float | None = None) -> str:
    """RFC 3339 with microseconds, as metav1.MicroTime serialises."""
    moment = datetime.fromtimestamp(time.time() if ts is None else ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(slots=True)
class _Series:
    namespace: str
    name: str  # the Event object's name, once created
    last: float
    count: int
    written: int  # the count the API server has (1: the event as created)
    creating: bool = True  # the create is queued or in flight


@dataclass(slots=True)
class _Pending:
    series: _Series | None
    namespace: str
    body: dict[str, Any] | None  # a new event to create, or None for the series' count
    again: bool = False  # write the count even if the API server has it (client-go's refresh)


class EventRecorder:
    def __init__(self, client: ApiClient, controller: str, instance: str) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance
        self.queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=QUEUE_SIZE)
        # Ordered by the last event of each series, oldest first: expiry pops from the front.
        self.series: dict[SeriesKey, _Series] = {}
        self._keys_of: dict[str, set[SeriesKey]] = {}  # pod uid -> its series
        self.posted = 0
        self.dropped = 0
        self.failed = 0
        self._workers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._workers = [loop.create_task(self._work(), name=f"events-{i}") for i in range(WORKERS)]
        self._workers.append(loop.create_task(self._tend(), name="events-series"))

    async def stop(self, flush_timeout: float = 5.0) -> None:
        """Posts what is queued (for at most `flush_timeout` seconds), then stops the workers."""
        try:
            await asyncio.wait_for(self.queue.join(), flush_timeout)
        except TimeoutError:
            log.warning("dropping %d events at shutdown", self.queue.qsize())
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)

    def record(self, pi: PodInfo, type_: str, reason: str, message: str, *, controller: str | None = None) -> None:
        now = time.time()
        note = truncate_note(message)
        reporter = controller or self.controller
        pod = pi.pod
        key = (pi.uid, pod.metadata.resource_version or "", type_, reason, reporter)
        series = self.series.pop(key, None)
        if series is not None:
            series.count += 1
            series.last = now
            self.series[key] = series  # to the back: the most recently repeated
            if series.count == 2:  # client-go writes the second at once, later ones when the series ends
                self._enqueue(_Pending(series, series.namespace, None))
            return
        while len(self.series) >= MAX_SERIES:
            self._drop(next(iter(self.series)))
        series = _Series(pi.namespace, "", now, 1, 1)
        self.series[key] = series
        self._keys_of.setdefault(pi.uid, set()).add(key)
        regarding = {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pi.namespace,
            "name": pod.metadata.name,
            "uid": pod.metadata.uid,
            "resourceVersion": pod.metadata.resource_version,
        }
        action = "Binding" if reason == "Scheduled" else "Scheduling"
        body = self._body(regarding, type_, reason, note, action, reporter, now)
        self._enqueue(_Pending(series, pi.namespace, body))

    def record_about(self, regarding: dict[str, str], type_: str, reason: str, message: str, action: str) -> None:
        """A one-off event about another object (the scheduler's own pod, say): no series."""
        now = time.time()
        namespace = regarding.get("namespace") or "default"
        body = self._body(regarding, type_, reason, truncate_note(message), action, self.controller, now)
        self._enqueue(_Pending(None, namespace, body))

    def _body(self, regarding: dict[str, str], type_: str, reason: str, note: str, action: str, reporter: str,
              now: float) -> dict[str, Any]:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{regarding['name']}.{time.time_ns():x}", "namespace": regarding.get("namespace") or "default"},
            "eventTime": micro_time(now),
            "reportingController": reporter,
            "reportingInstance": f"{reporter}-{self.instance}",
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": regarding,
        }

    def _enqueue(self, item: _Pending) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped += 1

    async def _tend(self) -> None:
        """client-go's finishSeries (every six minutes) and refreshExistingEventSeries (every 30)."""
        refreshed = time.time()
        while True:
            await asyncio.sleep(SERIES_WINDOW)
            now = time.time()
            self.finish(now)
            if now - refreshed >= SERIES_REFRESH:
                refreshed = now
                self.refresh()

    def finish(self, now: float) -> None:
        """Series idle for the window have ended: their final count is written, and they are
        forgotten (the least recently repeated are first)."""
        while self.series:
            key, series = next(iter(self.series.items()))
            if now - series.last < SERIES_WINDOW:
                return
            if series.count > series.written:
                self._enqueue(_Pending(series, series.namespace, None))
            self._drop(key)

    def refresh(self) -> None:
        """Running series have their count written."""
        for series in self.series.values():
            if series.count >= 2:
                self._enqueue(_Pending(series, series.namespace, None, again=True))

    def _drop(self, key: SeriesKey) -> None:
        del self.series[key]
        keys = self._keys_of.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._keys_of[key[0]]

    def forget_pod(self, uid: str) -> None:
        """The pod was deleted: its series will not be repeated."""
        for key in self._keys_of.pop(uid, ()):
            self.series.pop(key, None)

    async def _work(self) -> None:
        while True:
            item = await self.queue.get()
            try:
                await self._post(item)
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                self.failed += 1
                if exc.status != 404:  # a namespace going away takes its events along
                    log.warning("posting an event failed: %s", exc)
            except Exception:
                self.failed += 1
                log.exception("posting an event failed")
            finally:
                self.queue.task_done()

    async def _post(self, item: _Pending) -> None:
        series = item.series
        if item.body is not None:
            path = f"/apis/events.k8s.io/v1/namespaces/{item.namespace}/events"
            created: Any = None
            try:
                # Only a series patches its event later, by the name the server gave it.
                if series is not None:
                    created = await self.client.post(path, body=item.body)
                else:
                    await self.client.send("POST", path, item.body)
            finally:
                if series is not None:
                    series.creating = False
            self.posted += 1
            if series is not None:
                series.name = created.get("metadata", {}).get("name", "") if isinstance(created, dict) else ""
                if series.count > series.written:  # repeated while the create was in flight
                    self._enqueue(_Pending(series, series.namespace, None))
            return
        if series is None or series.creating or not series.name:
            return  # the create's completion writes the count; a failed create has no event to patch
        if series.count == series.written and not item.again:
            return  # another write took this count already
        series.written = series.count
        patch = {"series": {"count": series.count, "lastObservedTime": micro_time(series.last)}}
        await self.client.send("PATCH", f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events/{series.name}",
                               patch, content_type="application/merge-patch+json")
        self.posted += 1
