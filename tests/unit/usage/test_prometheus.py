"""Decoding Prometheus's instant-query answers: every bad answer is a PrometheusError naming it."""

from __future__ import annotations

import json

import pytest

from kubesched.usage.prometheus import PrometheusError, decode_answer


def answer(result: object, result_type: str = "vector", status: str = "success") -> bytes:
    return json.dumps({"status": status, "data": {"resultType": result_type, "result": result}}).encode()


def test_vector_samples() -> None:
    body = answer([
        {"metric": {"instance": "n1:9100"}, "value": [1700000000.5, "0.25"]},
        {"metric": {"instance": "n2:9100"}, "value": [1700000000.5, "NaN"]},
        {"metric": {"instance": "n3:9100"}, "value": [1700000000.5, "+Inf"]},
    ])
    samples = decode_answer(body, "q")
    assert [(s.labels["instance"], s.value, s.timestamp) for s in samples] == [("n1:9100", 0.25, 1700000000.5)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>proxy error</html>", "is not a Prometheus API response"),
        (json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode(), "bad_data: parse error"),
        (answer([], "matrix"), "returned a matrix, not an instant vector"),
        (answer([{"metric": {}, "value": [1, "abc"]}]), "non-numeric value 'abc'"),
        (answer([{"metric": "x"}]), "malformed vector"),
        (json.dumps({"status": "success"}).encode(), "has no data"),
    ],
)
def test_garbage_is_refused_with_a_reason(body: bytes, message: str) -> None:
    with pytest.raises(PrometheusError, match=message):
        decode_answer(body, "up")


async def test_the_bearer_token_file_is_read_at_every_query(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real HTTP server on loopback records the Authorization header: rotated tokens are sent,
    and a missing file fails the query with one line instead of failing the scheduler."""
    from aiohttp import web

    from kubesched.usage.prometheus import HttpPrometheus, PrometheusError

    seen: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": []}})

    app = web.Application()
    app.router.add_post("/api/v1/query", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    token = tmp_path / "token"
    client = HttpPrometheus(f"http://127.0.0.1:{port}", timeout=5, bearer_token_file=str(token))
    try:
        with pytest.raises(PrometheusError, match=f"bearerTokenFile {token}: cannot read: No such file or directory"):
            await client.query("up")
        token.write_text("first\n")
        await client.query("up")
        token.write_text("second")
        await client.query("up")
        assert seen == ["Bearer first", "Bearer second"]
    finally:
        await client.close()
        await runner.cleanup()
