"""Reflector event handling and re-list reconciliation.

The first tests drive the Reflector's event decoding and reconciliation directly with watch lines
(no server). The last one runs the whole list/watch loop against a FAKE: a scripted local aiohttp
server that pages a list, sends undecodable objects, bookmarks and a 410 ERROR event, and breaks a
watch. The real apiserver behaviour is tested in tests/integration/client/test_watch.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kubesched.api.objects import Node, Pod
from kubesched.client import ApiClient, ConnectionConfig, Reflector
from kubesched.client.watch import _Gone

from .conftest import FakeServer, Pki, config_for


class Recorder:
    def __init__(self, fail_on: str | None = None) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.fail_on = fail_on

    def _rec(self, kind: str, obj: Any) -> None:
        self.events.append((kind, obj.metadata.name, obj.metadata.resource_version))
        if self.fail_on == obj.metadata.name:
            raise RuntimeError("handler bug")

    def on_add(self, obj: Pod) -> None:
        self._rec("add", obj)

    def on_update(self, old: Pod, new: Pod) -> None:
        self._rec("update", new)

    def on_delete(self, obj: Pod) -> None:
        self._rec("delete", obj)


def pod(name: str, rv: str, *, uid: str = "", ns: str = "ns", node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv, "uid": uid or f"uid-{name}"}, "spec": {"nodeName": node}}


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


def reflector(handler: Recorder, **kwargs: Any) -> Reflector[Pod]:
    client = ApiClient(ConnectionConfig(server="http://127.0.0.1:1", ssl=False))
    return Reflector(client, "/api/v1/pods", Pod, handler, **kwargs)


def test_events_update_the_store_and_the_handler() -> None:
    h = Recorder()
    r = reflector(h)
    r._handle(event("ADDED", pod("a", "1")))
    r._handle(event("ADDED", pod("a", "2")))  # already known: an update
    r._handle(event("MODIFIED", pod("b", "3")))  # unknown: an add
    r._handle(event("DELETED", pod("a", "4")))
    r._handle(event("DELETED", pod("ghost", "5")))  # unknown: still a delete
    assert h.events == [("add", "a", "1"), ("update", "a", "2"), ("add", "b", "3"), ("delete", "a", "4"), ("delete", "ghost", "5")]
    assert list(r.store) == ["ns/b"]
    assert r.resource_version == "5"


def test_recreated_object_is_delete_then_add() -> None:
    h = Recorder()
    r = reflector(h)
    r._handle(event("ADDED", pod("a", "1", uid="u1")))
    r._handle(event("ADDED", pod("a", "2", uid="u2")))
    assert h.events == [("add", "a", "1"), ("delete", "a", "1"), ("add", "a", "2")]


def test_bookmark_only_advances_the_resource_version() -> None:
    h = Recorder()
    r = reflector(h)
    r._handle(event("BOOKMARK", {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "99"}}))
    assert r.resource_version == "99" and h.events == [] and r.bookmarks == 1


def test_error_410_means_relist() -> None:
    r = reflector(Recorder())
    gone = {"kind": "Status", "status": "Failure", "message": "too old resource version: 1 (5)", "reason": "Expired", "code": 410}
    with pytest.raises(_Gone, match="too old resource version"):
        r._handle(event("ERROR", gone))


def test_undecodable_objects_are_counted_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    h = Recorder()
    r = reflector(h)
    r._handle(event("ADDED", pod("a", "1")))
    bad = pod("a", "7")
    bad["spec"]["nodeName"] = 42  # a number where a string belongs
    r._handle(event("MODIFIED", bad))
    r._handle(b"{not json")
    assert r.decode_errors == 2
    assert "ns/a" in caplog.text
    assert r.resource_version == "7"  # skipped, but not replayed forever
    r._handle(event("DELETED", bad))  # an undecodable delete still drops what we knew
    assert h.events == [("add", "a", "1"), ("delete", "a", "1")]
    assert r.store == {}


def test_handler_exceptions_do_not_escape() -> None:
    h = Recorder(fail_on="a")
    r = reflector(h)
    r._handle(event("ADDED", pod("a", "1")))
    r._handle(event("ADDED", pod("b", "2")))
    assert r.handler_errors == 1 and set(r.store) == {"ns/a", "ns/b"}


async def test_reconcile_delivers_only_differences() -> None:
    h = Recorder()
    r = reflector(h)
    dec = r._decoder
    first = {f"ns/{n}": dec.decode(json.dumps(pod(n, rv))) for n, rv in [("a", "1"), ("b", "2"), ("c", "3")]}
    await r._reconcile(first)
    h.events.clear()
    second = {f"ns/{n}": dec.decode(json.dumps(pod(n, rv))) for n, rv in [("a", "1"), ("b", "5"), ("d", "6")]}
    await r._reconcile(second)
    assert h.events == [("delete", "c", "3"), ("update", "b", "5"), ("add", "d", "6")]
    assert set(r.store) == {"ns/a", "ns/b", "ns/d"}


def test_cluster_scoped_keys() -> None:
    class NodeRecorder:
        def __init__(self) -> None:
            self.names: list[str] = []

        def on_add(self, obj: Node) -> None:
            self.names.append(obj.metadata.name)

        def on_update(self, old: Node, new: Node) -> None:
            pass

        def on_delete(self, obj: Node) -> None:
            pass

    client = ApiClient(ConnectionConfig(server="http://127.0.0.1:1", ssl=False))
    rec = NodeRecorder()
    r: Reflector[Node] = Reflector(client, "/api/v1/nodes", Node, rec)
    r._handle(event("ADDED", {"metadata": {"name": "n1", "resourceVersion": "1"}}))
    assert list(r.store) == ["n1"] and rec.names == ["n1"]


async def test_full_loop_against_a_scripted_server(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    lists: list[dict[str, str]] = []
    watches: list[dict[str, str]] = []

    async def pods(request: web.Request) -> web.StreamResponse:
        q = dict(request.query)
        if q.get("watch") != "1":
            lists.append(q)
            n = len(lists)
            if n == 1:  # first list, page 1
                page = {"metadata": {"resourceVersion": "10", "continue": "tok"}, "items": [pod("a", "5"), pod("b", "6")]}
                return web.json_response(page)
            if n == 2:  # page 2
                bad = pod("bad", "7")
                bad["spec"] = "nonsense"
                return web.json_response({"metadata": {"resourceVersion": "10"}, "items": [pod("c", "8"), bad]})
            # the re-list after 410: a changed, b gone, c same, d new
            return web.json_response({"metadata": {"resourceVersion": "30"}, "items": [pod("a", "25"), pod("c", "8"), pod("d", "29")]})
        watches.append(q)
        n = len(watches)
        if n == 1:
            return web.json_response({"kind": "Status", "code": 503, "reason": "ServiceUnavailable", "message": "x"}, status=503)
        resp = web.StreamResponse()
        await resp.prepare(request)
        if n == 2:
            await resp.write(event("MODIFIED", pod("b", "11")) + b"\n")
            await resp.write(json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}}).encode() + b"\n")
        elif n == 3:
            gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 12 (20)"}
            await resp.write(event("ERROR", gone) + b"\n")
        else:
            await asyncio.sleep(1)
        await resp.write_eof()
        return resp

    server.routes["/api/v1/pods"] = pods
    h = Recorder()
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        r = Reflector(client, "/api/v1/pods", Pod, h, page_size=2, inactivity_timeout=0.5)
        task = asyncio.create_task(r.run())
        await asyncio.wait_for(r.synced.wait(), 5)
        assert set(r.store) == {"ns/a", "ns/b", "ns/c"} and r.decode_errors == 1
        for _ in range(100):
            if r.relists == 1 and len(watches) >= 5:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert lists[0] == {"limit": "2"} and lists[1] == {"limit": "2", "continue": "tok"}
    assert watches[0]["resourceVersion"] == "10" and watches[0]["allowWatchBookmarks"] == "true"
    assert watches[1]["resourceVersion"] == "10"  # the 503 did not lose the resourceVersion
    assert watches[2]["resourceVersion"] == "12"  # resumed after the bookmark
    assert watches[3]["resourceVersion"] == "30"  # after the re-list
    assert h.events == [
        ("add", "a", "5"),
        ("add", "b", "6"),
        ("add", "c", "8"),
        ("update", "b", "11"),
        ("delete", "b", "11"),
        ("update", "a", "25"),
        ("add", "d", "29"),
    ]
    assert set(r.store) == {"ns/a", "ns/c", "ns/d"}
    assert r.stalls >= 1 and r.watch_errors == 1 and r.relists == 1
