"""ApiClient behaviour that a real apiserver cannot be made to show on demand: retries on 503/429,
Retry-After, timeouts, broken connections, 401 refresh, very long and stalled stream lines, and
client-certificate TLS with a tls-server-name.

These tests use a FAKE: a small local aiohttp HTTPS server whose handlers answer what each test needs.
The behaviour against the real kube-apiserver is tested in tests/integration/client/test_api.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path

import pytest
from aiohttp import web

from kubesched.client import ApiClient, ApiConnectionError, ApiError, ConnectionConfig, StreamStalled

from .conftest import FakeServer, Pki, config_for, status, write


async def test_client_certificate_from_kubeconfig_data(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def whoami(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        cn = dict(x[0] for x in peer["subject"])["commonName"] if peer else None
        return web.json_response({"cn": cn})

    server.routes["/whoami"] = whoami
    user = {
        "client-certificate-data": base64.b64encode(pki.client_cert_pem).decode(),
        "client-key-data": base64.b64encode(pki.client_key_pem).decode(),
    }
    async with ApiClient(config_for(server, pki, tmp_path, user=user)) as client:
        assert await client.get("/whoami") == {"cn": "unit-user"}


async def test_tls_server_name(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    server.routes["/ok"] = ok
    conn = config_for(server, pki, tmp_path)
    conn.tls_server_name = "api.example.test"  # in the certificate's SANs
    async with ApiClient(conn, max_retries=0) as client:
        assert await client.get("/ok") == {"ok": True}
    conn.tls_server_name = "wrong.example.test"
    async with ApiClient(conn, max_retries=0) as client:
        with pytest.raises(ApiConnectionError) as err:
            await client.get("/ok")
    assert err.value.status == 0


async def test_retries_5xx_until_success(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def flaky(request: web.Request) -> web.Response:
        if server.calls["/flaky"] < 3:
            return status(503, "ServiceUnavailable", "etcd is sad")
        return web.json_response({"n": server.calls["/flaky"], "body": await request.json()})

    server.routes["/flaky"] = flaky
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        assert await client.post("/flaky", {"a": 1}) == {"n": 3, "body": {"a": 1}}
        assert client.requests_total[("POST", "503")] == 2
        assert client.requests_total[("POST", "200")] == 1
        assert client.retries_total["503"] == 2


async def test_gives_up_after_max_retries(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def down(request: web.Request) -> web.Response:
        return status(500, "InternalError", "boom")

    server.routes["/down"] = down
    async with ApiClient(config_for(server, pki, tmp_path), max_retries=2) as client:
        with pytest.raises(ApiError) as err:
            await client.get("/down")
    assert (err.value.status, err.value.reason, str(err.value)) == (500, "InternalError", "500 InternalError: boom")
    assert server.calls["/down"] == 3


async def test_429_honours_retry_after(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def busy(request: web.Request) -> web.Response:
        if server.calls["/busy"] == 1:
            resp = status(429, "TooManyRequests", "slow down")
            resp.headers["Retry-After"] = "1"
            return resp
        return web.json_response({})

    server.routes["/busy"] = busy
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        start = time.monotonic()
        await client.get("/busy")
        assert time.monotonic() - start >= 0.95


async def test_not_retried(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def not_impl(request: web.Request) -> web.Response:
        return status(501, "NotImplemented", "nope")

    async def conflict(request: web.Request) -> web.Response:
        return status(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"')

    async def text(request: web.Request) -> web.Response:
        return web.Response(status=403, text="forbidden by a proxy")

    server.routes.update({"/ni": not_impl, "/conflict": conflict, "/text": text})
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        with pytest.raises(ApiError) as err:
            await client.get("/ni")
        assert err.value.status == 501
        with pytest.raises(ApiError) as err:
            await client.post("/conflict", b'{"raw": true}')
        assert str(err.value) == '409 Conflict: Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
        with pytest.raises(ApiError) as err:
            await client.delete("/text")
        assert (err.value.reason, err.value.message) == ("Forbidden", "forbidden by a proxy")
    assert server.calls == {"/ni": 1, "/conflict": 1, "/text": 1}


async def test_timeouts_are_retried(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def slow_once(request: web.Request) -> web.Response:
        if server.calls["/slow"] == 1:
            await asyncio.sleep(0.8)
        return web.json_response({"ok": True})

    server.routes["/slow"] = slow_once
    async with ApiClient(config_for(server, pki, tmp_path), timeout=0.3) as client:
        assert await client.put("/slow", {"x": 1}) == {"ok": True}
        assert client.requests_total[("PUT", "<error>")] == 1


async def test_connection_refused(pki: Pki, tmp_path: Path) -> None:
    conn = ConnectionConfig(server="http://127.0.0.1:1", ssl=False)
    async with ApiClient(conn, max_retries=2) as client:
        with pytest.raises(ApiConnectionError) as err:
            await client.get("/api")
    assert err.value.status == 0 and err.value.reason == "ConnectionError"
    assert client.requests_total[("GET", "<error>")] == 3


async def test_401_rereads_the_token_file_once(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    async def secured(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer new":
            return status(401, "Unauthorized", "Unauthorized")
        return web.json_response({"ok": True})

    server.routes["/secured"] = secured
    token = write(tmp_path / "token", "old")
    conn = config_for(server, pki, tmp_path, user={"tokenFile": str(token)})
    assert await conn.auth_header() == "Bearer old"
    token.write_text("new")  # rotated; the cached value is still "old"
    async with ApiClient(conn) as client:
        assert await client.get("/secured") == {"ok": True}
        assert server.calls["/secured"] == 2
        token.write_text("wrong")
        await conn.refresh_auth()
        with pytest.raises(ApiError) as err:
            await client.get("/secured")
        assert err.value.status == 401
        assert server.calls["/secured"] == 4  # one refresh, then the 401 is final


async def test_get_typed(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    from kubesched.api.objects import Pod

    async def pod(request: web.Request) -> web.Response:
        meta = {"name": "p", "namespace": "ns", "resourceVersion": "7", "managedFields": []}
        return web.json_response({"metadata": meta, "spec": {"nodeName": "n"}})

    server.routes["/api/v1/namespaces/ns/pods/p"] = pod
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        got = await client.get_typed("/api/v1/namespaces/ns/pods/p", Pod)
    assert (got.key, got.metadata.resource_version, got.spec.node_name) == ("ns/p", "7", "n")


async def test_stream_long_lines_and_stall(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    big = json.dumps({"type": "ADDED", "object": {"data": "x" * 3_000_000}}).encode()

    async def watch(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        await resp.write(b'{"type":"A"}\n{"type":"B"}\n{"ty')
        await resp.write(b'pe":"C"}\n')
        for i in range(0, len(big), 70_000):
            await resp.write(big[i : i + 70_000])
        await resp.write(b"\n\n")
        if request.query.get("stall"):
            await asyncio.sleep(1)
        await resp.write(b'{"type":"last"}')
        await resp.write_eof()
        return resp

    server.routes["/watch"] = watch
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        async with client.stream("/watch", {"watch": "1"}) as lines:
            got = [line async for line in lines]
        assert got[:3] == [b'{"type":"A"}', b'{"type":"B"}', b'{"type":"C"}']
        assert got[3] == big and got[4] == b'{"type":"last"}' and len(got) == 5

        seen: list[bytes] = []
        with pytest.raises(StreamStalled):
            async with client.stream("/watch", {"stall": "1"}, read_timeout=0.5) as lines:
                async for line in lines:
                    seen.append(line)
        assert len(seen) == 4

        with pytest.raises(ApiError) as err:
            async with client.stream("/nowhere") as lines:
                pass
        assert err.value.reason == "NotFound"


async def test_send_checks_the_answer_without_decoding_it(server: FakeServer, pki: Pki, tmp_path: Path) -> None:
    """send: the body goes out with its content type, retried as any call; an error answer raises;
    a 2xx answer that is not even JSON is fine, since nothing reads it."""
    seen: list[tuple[str, str, object]] = []

    async def patched(request: web.Request) -> web.Response:
        seen.append((request.method, request.content_type, await request.json()))
        if server.calls["/p"] == 1:
            return status(503, "ServiceUnavailable", "again")
        return web.Response(status=200, text="not json at all")

    async def gone(request: web.Request) -> web.Response:
        return status(404, "NotFound", 'pods "p" not found')

    server.routes.update({"/p": patched, "/gone": gone})
    async with ApiClient(config_for(server, pki, tmp_path)) as client:
        assert await client.send("PATCH", "/p", {"a": 1}, content_type="application/strategic-merge-patch+json") is None
        with pytest.raises(ApiError) as err:
            await client.send("DELETE", "/gone")
    assert seen == [("PATCH", "application/strategic-merge-patch+json", {"a": 1})] * 2
    assert err.value.status == 404
