"""events.k8s.io/v1 events about pods, posted in the background the way client-go's
events library does it.

- Posting never blocks a scheduling or binding cycle: events go through a bounded
  queue served by a few workers; when the queue is full an event is dropped and
  counted (client-go drops too), because a scheduler must not stall on events.
- The same event repeated within six minutes (a pod failing again with the same
  message) becomes a series on the first event: its count and last observed time are
  patched, at most every 30 seconds, instead of a new object each time.
- What is remembered for series stays bounded in a run of months: a series is forgotten six
  minutes after its last event (as client-go's broadcaster does) or when its pod is deleted,
  and never more than MAX_SERIES are kept (the least recently repeated go first).
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

SERIES_WINDOW = 6 * 60.0  # client-go's isomorphic-event window
SERIES_PATCH_EVERY = 30.0
NOTE_LIMIT = 1024  # the API refuses notes longer than 1 kB
QUEUE_SIZE = 1000
WORKERS = 4
MAX_SERIES = 20 * QUEUE_SIZE

SeriesKey = tuple[str, str, str, str]  # pod uid, type, reason, note


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
    first: float
    last: float
    count: int
    patched_at: float
    patched_count: int


@dataclass(slots=True)
class _Pending:
    key: SeriesKey
    namespace: str
    body: dict[str, Any] | None  # a new event to create, or None for a series update


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
        key = (pi.uid, type_, reason, note)
        self._expire(now)
        series = self.series.pop(key, None)
        if series is not None:
            series.count += 1
            series.last = now
            self.series[key] = series  # to the back: the most recently repeated
            if series.name and now - series.patched_at >= SERIES_PATCH_EVERY:
                series.patched_at = now
                self._enqueue(_Pending(key, series.namespace, None))
            return
        while len(self.series) >= MAX_SERIES:
            self._drop(next(iter(self.series)))
        self.series[key] = _Series(pi.namespace, "", now, now, 1, now, 1)
        self._keys_of.setdefault(pi.uid, set()).add(key)
        pod = pi.pod
        regarding = {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pi.namespace,
            "name": pod.metadata.name,
            "uid": pod.metadata.uid,
            "resourceVersion": pod.metadata.resource_version,
        }
        action = "Binding" if reason == "Scheduled" else "Scheduling"
        body = self._body(regarding, type_, reason, note, action, controller or self.controller, now)
        self._enqueue(_Pending(key, pi.namespace, body))

    def record_about(self, regarding: dict[str, str], type_: str, reason: str, message: str, action: str) -> None:
        """A one-off event about another object (the scheduler's own pod, say): no series."""
        now = time.time()
        namespace = regarding.get("namespace") or "default"
        body = self._body(regarding, type_, reason, truncate_note(message), action, self.controller, now)
        self._enqueue(_Pending(("", type_, reason, body["note"]), namespace, body))

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

    def _expire(self, now: float) -> None:
        """Forgets the series whose last event is older than the window: the oldest are first."""
        while self.series:
            key, series = next(iter(self.series.items()))
            if now - series.last < SERIES_WINDOW:
                return
            self._drop(key)

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
        series = self.series.get(item.key)
        if item.body is not None:
            created = await self.client.post(f"/apis/events.k8s.io/v1/namespaces/{item.namespace}/events", body=item.body)
            self.posted += 1
            if series is not None:
                series.name = created.get("metadata", {}).get("name", "") if isinstance(created, dict) else ""
            return
        if series is None or not series.name or series.count == series.patched_count:
            return
        series.patched_count = series.count
        patch = {"series": {"count": series.count, "lastObservedTime": micro_time(series.last)}}
        await self.client.patch(
            f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events/{series.name}",
            body=patch,
            content_type="application/merge-patch+json",
        )
        self.posted += 1
