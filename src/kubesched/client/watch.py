"""List-then-watch with typed decoding: the informer's reflector, in asyncio.

`Reflector.run()` LISTs a collection (paginated), hands every object to the handler, then WATCHes
from the list's resourceVersion with bookmarks. It keeps `store` (the handler's view) equal to the
API's: after a 410 Gone (compaction, apiserver restart) it re-lists and reconciles, delivering
deletes for objects that vanished meanwhile, updates for changed ones and adds for new ones, so the
handler sees nothing lost and nothing twice. A watch silent for `inactivity_timeout` (no event, no
bookmark) is considered stalled and restarted; connection errors and 5xx back off (up to 30 s)
without losing the resourceVersion, and repeated failures fall back to a re-list. Undecodable
objects and handler exceptions are logged and counted, never fatal.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from kubesched.client.api import ApiClient, ApiError, Status, StreamStalled
from kubesched.client.ratelimit import backoff

__all__ = ["Reflector", "WatchHandler", "object_key"]

log = logging.getLogger(__name__)

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

WATCH_BACKOFF_BASE = 0.2
WATCH_BACKOFF_CAP = 30.0
# A watch that ends within this many seconds without sending anything counts as a failure.
MIN_WATCH_SECONDS = 1.0
YIELD_EVERY = 500


class WatchHandler(Protocol[T_contra]):
    """Receives a Reflector's events; called on the event loop, must not block."""

    def on_add(self, obj: T_contra) -> None: ...

    def on_update(self, old: T_contra, new: T_contra) -> None: ...

    def on_delete(self, obj: T_contra) -> None: ...


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class _ListPage(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""


class _MetaOnly(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_page_decoder = msgspec.json.Decoder(_ListPage)
_event_decoder = msgspec.json.Decoder(_Event)
_meta_decoder = msgspec.json.Decoder(_MetaOnly)
_status_decoder = msgspec.json.Decoder(Status)


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): re-list."""


def _meta(obj: Any) -> Any:
    return getattr(obj, "metadata", None)


def object_key(obj: Any) -> str:
    """client-go's MetaNamespaceKeyFunc: "namespace/name", or "name" for cluster-scoped objects."""
    meta = _meta(obj)
    namespace = getattr(meta, "namespace", "") or ""
    name = getattr(meta, "name", "") or ""
    return f"{namespace}/{name}" if namespace else name


def _rv(obj: Any) -> str:
    return getattr(_meta(obj), "resource_version", "") or ""


def _uid(obj: Any) -> str:
    return getattr(_meta(obj), "uid", "") or ""


class Reflector(Generic[T]):
    """Keeps `store` and a WatchHandler in step with one API collection (e.g. "/api/v1/pods").

    Counters: `lists` (all LISTs), `relists` (LISTs after the first), `watch_restarts` (watches
    started after the first one of a list), `stalls`, `watch_errors`, `decode_errors`,
    `handler_errors`, `events`, `bookmarks`; `last_event_time` is the time.monotonic() of the last
    byte of the watch (event or bookmark) or of the last list.
    """

    def __init__(
        self,
        client: ApiClient,
        path: str,
        kind: type[T],
        handler: WatchHandler[T],
        *,
        name: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: float = 300.0,
        inactivity_timeout: float = 90.0,
        key: Callable[[T], str] | None = None,
        max_watch_failures: int = 5,
    ) -> None:
        self.client = client
        self.path = path
        self.kind = kind
        self.handler = handler
        self.name = name or path
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.inactivity_timeout = inactivity_timeout
        self.max_watch_failures = max(1, max_watch_failures)
        self._key: Callable[[T], str] = key or object_key
        self._custom_key = key is not None
        self._decoder = msgspec.json.Decoder(kind)

        self.synced = asyncio.Event()
        self.resource_version = ""
        self.store: dict[str, T] = {}
        self.lists = 0
        self.relists = 0
        self.watch_restarts = 0
        self.stalls = 0
        self.watch_errors = 0
        self.decode_errors = 0
        self.handler_errors = 0
        self.events = 0
        self.bookmarks = 0
        self.last_event_time: float | None = None
        self._watches = 0

    # --- the loop ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """LIST, then WATCH, forever (until cancelled).

        Called again after a cancellation, a synced Reflector resumes watching from its
        resourceVersion (a 410 then re-lists and reconciles the store with what changed meanwhile).
        """
        need_list = not (self.synced.is_set() and self.resource_version)
        list_failures = 0
        watch_failures = 0
        while True:
            if need_list:
                try:
                    await self._list()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    delay = backoff(list_failures, base=WATCH_BACKOFF_BASE, cap=WATCH_BACKOFF_CAP)
                    list_failures += 1
                    log.warning("%s: list failed (%s); retrying in %.1fs", self.name, exc, delay)
                    await asyncio.sleep(delay)
                    continue
                need_list = False
                list_failures = 0
                watch_failures = 0
            if self._watches:
                self.watch_restarts += 1
            self._watches += 1
            started = time.monotonic()
            try:
                got_data = await self._watch()
            except asyncio.CancelledError:
                raise
            except _Gone as exc:
                log.info("%s: resourceVersion %s is gone (%s); re-listing", self.name, self.resource_version, exc)
                need_list = True
                continue
            except StreamStalled:
                self.stalls += 1
                log.warning(
                    "%s: watch stalled (nothing for %gs); restarting from resourceVersion %s",
                    self.name,
                    self.inactivity_timeout,
                    self.resource_version,
                )
                continue
            except Exception as exc:
                if isinstance(exc, ApiError) and exc.status == 410:
                    log.info("%s: resourceVersion %s is gone (%s); re-listing", self.name, self.resource_version, exc)
                    need_list = True
                    continue
                self.watch_errors += 1
                watch_failures += 1
                delay = backoff(watch_failures - 1, base=WATCH_BACKOFF_BASE, cap=WATCH_BACKOFF_CAP)
                if watch_failures >= self.max_watch_failures:
                    log.warning("%s: watch failed %d times in a row (%s); re-listing in %.1fs", self.name, watch_failures, exc, delay)
                    need_list = True
                else:
                    log.warning("%s: watch failed (%s); retrying from rv %s in %.1fs", self.name, exc, self.resource_version, delay)
                await asyncio.sleep(delay)
                continue
            # The server ended the watch (its timeoutSeconds): resume from the last resourceVersion.
            if got_data or time.monotonic() - started >= MIN_WATCH_SECONDS:
                watch_failures = 0
            else:
                watch_failures += 1
                await asyncio.sleep(backoff(watch_failures - 1, base=WATCH_BACKOFF_BASE, cap=WATCH_BACKOFF_CAP))

    # --- list ----------------------------------------------------------------------------------------

    def _selector_params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        if self.label_selector:
            params["labelSelector"] = self.label_selector
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        return params

    async def _list(self) -> None:
        items: dict[str, T] = {}
        base = self._selector_params()
        if self.page_size > 0:
            base["limit"] = str(self.page_size)
        cont = ""
        expired = 0
        rv = ""
        while True:
            params = dict(base)
            if cont:
                params["continue"] = cont
            try:
                payload = await self.client.request("GET", self.path, params=params)
            except ApiError as exc:
                if exc.status == 410 and cont and expired < 5:
                    # The continue token expired (its snapshot was compacted): start the list again.
                    expired += 1
                    log.info("%s: list continue token expired (%s); listing again from the start", self.name, exc)
                    items.clear()
                    cont = ""
                    continue
                raise
            page = _page_decoder.decode(payload)
            for i, raw in enumerate(page.items or ()):
                try:
                    obj = self._decoder.decode(raw)
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    self._undecodable("LIST", raw, exc)
                    continue
                items[self._key(obj)] = obj
                if i % YIELD_EVERY == YIELD_EVERY - 1:
                    await asyncio.sleep(0)
            rv = page.metadata.resource_version
            cont = page.metadata.continue_
            if not cont:
                break
        if self.lists:
            self.relists += 1
        self.lists += 1
        await self._reconcile(items)
        self.resource_version = rv
        self.last_event_time = time.monotonic()
        if not self.synced.is_set():
            log.info("%s: synced %d objects at resourceVersion %s", self.name, len(self.store), rv)
        self.synced.set()

    async def _reconcile(self, items: dict[str, T]) -> None:
        """Make `store` equal to `items`, telling the handler only what changed."""
        store = self.store
        n = 0
        for key in [k for k in store if k not in items]:
            old = store.pop(key)
            self._call(self.handler.on_delete, old)
            n += 1
            if n % YIELD_EVERY == 0:
                await asyncio.sleep(0)
        for key, obj in items.items():
            # An object whose resourceVersion is unchanged since we last saw it did not change.
            self._store(key, obj, skip_unchanged=True)
            n += 1
            if n % YIELD_EVERY == 0:
                await asyncio.sleep(0)

    # --- watch ---------------------------------------------------------------------------------------

    def _watch_params(self) -> dict[str, str]:
        params = self._selector_params()
        timeout = max(1, round(self.watch_timeout * random.uniform(0.9, 1.1)))
        params.update(
            {
                "watch": "1",
                "allowWatchBookmarks": "true",
                "resourceVersion": self.resource_version,
                "timeoutSeconds": str(timeout),
            }
        )
        return params

    async def _watch(self) -> bool:
        """One watch request, until the server ends it; True if anything arrived."""
        got = False
        async with self.client.stream(self.path, self._watch_params(), read_timeout=self.inactivity_timeout) as lines:
            async for line in lines:
                got = True
                self.last_event_time = time.monotonic()
                self._handle(line)
        return got

    def _handle(self, line: bytes) -> None:
        try:
            event = _event_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self.decode_errors += 1
            log.warning("%s: skipping an undecodable watch event (%s): %.200r", self.name, exc, line)
            return
        kind = event.type
        if kind == "BOOKMARK":
            self.bookmarks += 1
            try:
                rv = _meta_decoder.decode(event.object).metadata.resource_version
            except (msgspec.DecodeError, msgspec.ValidationError):
                rv = ""
            if rv:
                self.resource_version = rv
            return
        if kind == "ERROR":
            try:
                status = _status_decoder.decode(event.object)
            except (msgspec.DecodeError, msgspec.ValidationError):
                status = Status(message=bytes(event.object).decode(errors="replace")[:500], code=500)
            if status.code == 410 or status.reason in ("Expired", "Gone"):
                raise _Gone(status.message or "410 Gone")
            raise ApiError.from_status(status, method="WATCH", path=self.path)
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%s: ignoring watch event of unknown type %r", self.name, kind)
            return
        self.events += 1
        try:
            obj = self._decoder.decode(event.object)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            self._undecodable(kind, event.object, exc)
            return
        rv = _rv(obj)
        if rv:
            self.resource_version = rv
        key = self._key(obj)
        if kind == "DELETED":
            self.store.pop(key, None)
            self._call(self.handler.on_delete, obj)
            return
        self._store(key, obj, skip_unchanged=False)

    def _store(self, key: str, obj: T, *, skip_unchanged: bool) -> None:
        """Puts an added or modified object in the store and tells the handler what happened."""
        prev = self.store.get(key)
        self.store[key] = obj
        if prev is None:
            self._call(self.handler.on_add, obj)
        elif _uid(prev) and _uid(obj) and _uid(prev) != _uid(obj):
            # Deleted and re-created under the same name while we were not watching.
            self._call(self.handler.on_delete, prev)
            self._call(self.handler.on_add, obj)
        elif not skip_unchanged or not _rv(obj) or _rv(prev) != _rv(obj):
            self._call(self.handler.on_update, prev, obj)

    # --- helpers -------------------------------------------------------------------------------------

    def _undecodable(self, kind: str, raw: msgspec.Raw, exc: Exception) -> None:
        self.decode_errors += 1
        try:
            meta = _meta_decoder.decode(raw).metadata
        except (msgspec.DecodeError, msgspec.ValidationError):
            meta = None
        if meta is None:
            log.warning("%s: skipping an undecodable object in a %s event: %s", self.name, kind, exc)
            return
        ident = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        rv = meta.resource_version
        log.warning("%s: skipping undecodable %s (%s event, resourceVersion %s): %s", self.name, ident or "?", kind, rv, exc)
        if kind != "LIST" and meta.resource_version:
            self.resource_version = meta.resource_version
        if kind == "DELETED" and not self._custom_key and ident in self.store:
            # The object is gone whatever its last state: drop what we knew of it.
            old = self.store.pop(ident)
            self._call(self.handler.on_delete, old)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            self.handler_errors += 1
            log.exception("%s: event handler %s failed", self.name, getattr(fn, "__name__", fn))
