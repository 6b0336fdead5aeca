"""Delegated authentication and authorization of the secure port (observe.auth, observe.server).

The reviewer here is a stand-in for the API server's TokenReview and SubjectAccessReview (a unit
test fake, stated as such); tests/integration/backends/kube/test_explain.py runs the same code
against a real kube-apiserver with real RBAC.
"""

from __future__ import annotations

import json
import ssl

import pytest
from aiohttp import ClientSession, TCPConnector
from prometheus_client.registry import CollectorRegistry

from kubesched.observe.auth import ANONYMOUS, DelegatingAuth, ReviewError, TTLCache, UserInfo, user_from_peer_cert
from kubesched.observe.server import HealthServer
from kubesched.observe.tls import self_signed, server_context


class FakeReviewer:
    """Stand-in for the API server: `tokens` maps token -> user; `allowed` holds (user, verb, path)."""

    def __init__(self) -> None:
        self.tokens = {"good": UserInfo("alice", ("devs",))}
        self.allowed = {("alice", "get", "/metrics")}
        self.token_calls = 0
        self.access_calls = 0
        self.down = False

    async def review_token(self, token: str) -> UserInfo | None:
        self.token_calls += 1
        if self.down:
            raise ReviewError("apiserver down")
        return self.tokens.get(token)

    async def review_access(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        self.access_calls += 1
        if self.down:
            raise ReviewError("apiserver down")
        return (user.name, verb, path) in self.allowed, ""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_decisions_and_kube_messages() -> None:
    auth = DelegatingAuth(FakeReviewer())
    assert (await auth.decide("GET", "/metrics", "Bearer good", None)).code == 200
    denied = await auth.decide("GET", "/debug/decisions", "Bearer good", None)
    assert (denied.code, denied.message) == (403, 'forbidden: User "alice" cannot get path "/debug/decisions"')
    assert (await auth.decide("GET", "/metrics", "Bearer bad", None)).code == 401
    anonymous = await auth.decide("GET", "/metrics", None, None)
    assert anonymous.code == 403 and anonymous.user is not None and anonymous.user.name == ANONYMOUS
    for path in ("/healthz", "/livez", "/readyz"):
        assert (await auth.decide("GET", path, None, None)).code == 200
    # A certificate's user needs no token review.
    cert_user = UserInfo("alice", ("devs",))
    assert (await auth.decide("GET", "/metrics", "Bearer bad", cert_user)).code == 200


async def test_answers_are_cached_for_ten_seconds_and_the_cache_is_bounded() -> None:
    reviewer, clock = FakeReviewer(), Clock()
    auth = DelegatingAuth(reviewer, clock=clock, cache_size=2)
    for _ in range(3):
        await auth.decide("GET", "/metrics", "Bearer good", None)
        await auth.decide("GET", "/metrics", "Bearer bad", None)
    assert reviewer.token_calls == 2 and reviewer.access_calls == 1
    clock.now = 10.5
    await auth.decide("GET", "/metrics", "Bearer good", None)
    assert reviewer.token_calls == 3 and reviewer.access_calls == 2
    for i in range(10):
        await auth.decide("GET", "/metrics", f"Bearer t{i}", None)
    assert len(auth.tokens) == 2 and len(auth.access) <= 2


async def test_an_api_server_that_cannot_answer_allows_nothing() -> None:
    reviewer = FakeReviewer()
    reviewer.down = True
    auth = DelegatingAuth(reviewer)
    assert (await auth.decide("GET", "/metrics", "Bearer good", None)).code == 401
    assert (await auth.decide("GET", "/metrics", None, None)).code == 500
    assert (await auth.decide("GET", "/healthz", None, None)).code == 200


def test_ttl_cache_expires_and_evicts_the_oldest() -> None:
    clock = Clock()
    cache: TTLCache[str, int] = TTLCache(5, 2, clock)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.get("a") is None and cache.get("b") == 2
    clock.now = 6
    assert cache.get("b") is None


def test_client_certificate_subjects() -> None:
    subject = ((("organizationName", "system:masters"),), (("organizationName", "ops"),), (("commonName", "bob"),))
    user = user_from_peer_cert({"subject": subject})
    assert user is not None and user.name == "bob" and user.groups == ("system:masters", "ops", "system:authenticated")
    assert user_from_peer_cert({}) is None and user_from_peer_cert(None) is None


class FakeSource:
    def explain(self, namespace: str, name: str) -> dict | None:
        return {"pod": f"{namespace}/{name}"} if name == "web" else None

    def decision_history(self, limit: int = 100) -> list[dict]:
        return [{"n": i} for i in range(limit)]


@pytest.fixture
async def served() -> object:
    reviewer = FakeReviewer()
    reviewer.allowed |= {("alice", "get", "/debug/explain/ns/web"), ("alice", "get", "/debug/explain/ns/ghost"),
                         ("alice", "get", "/debug/decisions")}
    server = HealthServer(CollectorRegistry(), DelegatingAuth(reviewer), FakeSource())
    cert = self_signed(["localhost", "127.0.0.1"])
    await server.start("127.0.0.1", 0, server_context(cert, None))
    yield server, cert
    await server.stop()


async def test_the_secure_port_over_https(served: tuple[HealthServer, object]) -> None:
    server, _ = served
    client_ctx = ssl.create_default_context()
    client_ctx.check_hostname = False
    client_ctx.verify_mode = ssl.CERT_NONE
    base = f"https://127.0.0.1:{server.port}"
    good = {"Authorization": "Bearer good"}
    async with ClientSession(connector=TCPConnector(ssl=client_ctx)) as session:
        async with session.get(f"{base}/readyz") as resp:
            assert resp.status == 200 and await resp.text() == "ok"
        async with session.get(f"{base}/debug/explain/ns/web", headers=good) as resp:
            assert resp.status == 200 and await resp.json() == {"pod": "ns/web"}
        async with session.get(f"{base}/debug/explain/ns/ghost", headers=good) as resp:
            assert resp.status == 404 and (await resp.json())["reason"] == "NotFound"
        async with session.get(f"{base}/debug/decisions?limit=3", headers=good) as resp:
            assert resp.status == 200 and len(await resp.json()) == 3
        for bad in ("0", "1001", "x", "-1"):
            async with session.get(f"{base}/debug/decisions?limit={bad}", headers=good) as resp:
                assert resp.status == 400
        async with session.get(f"{base}/debug/explain/ns/web") as resp:
            body = json.loads(await resp.text())
            assert resp.status == 403 and body["kind"] == "Status" and body["code"] == 403
            assert body["message"] == 'forbidden: User "system:anonymous" cannot get path "/debug/explain/ns/web"'
        async with session.get(f"{base}/metrics", headers={"Authorization": "Bearer nope"}) as resp:
            assert resp.status == 401 and (await resp.json())["message"] == "Unauthorized"
        async with session.get(f"{base}/metrics", headers=good) as resp:
            assert resp.status == 200
    # Plain HTTP is not served.
    async with ClientSession() as session:
        with pytest.raises(Exception):  # noqa: B017 - any transport error: the server speaks TLS only
            async with session.get(f"http://127.0.0.1:{server.port}/healthz") as resp:
                assert resp.status != 200


def test_certificate_files_that_cannot_be_used_are_one_line(tmp_path) -> None:
    from kubesched.observe.tls import CertificateError, load_serving_cert

    cert = self_signed(["localhost"])
    (tmp_path / "c.pem").write_bytes(cert.cert_pem)
    (tmp_path / "k.pem").write_bytes(cert.key_pem)
    (tmp_path / "junk.pem").write_text("hello")
    assert load_serving_cert(str(tmp_path / "c.pem"), str(tmp_path / "k.pem")).sha256 == cert.sha256
    with pytest.raises(CertificateError, match=r"--tls-cert-file .*missing\.pem: No such file"):
        load_serving_cert(str(tmp_path / "missing.pem"), str(tmp_path / "k.pem"))
    with pytest.raises(CertificateError, match="not a PEM certificate"):
        load_serving_cert(str(tmp_path / "junk.pem"), str(tmp_path / "k.pem"))
    other = self_signed(["localhost"])
    with pytest.raises(CertificateError, match="do not go together"):
        server_context(type(cert)(cert.cert_pem, other.key_pem), None)
