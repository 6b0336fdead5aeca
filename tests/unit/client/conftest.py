"""Fixtures for the client unit tests: a throw-away CA with server and client certificates."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubesched.client import ConnectionConfig, load_kubeconfig


@dataclass
class Pki:
    ca_pem: bytes
    server_cert_pem: bytes
    server_key_pem: bytes
    client_cert_pem: bytes
    client_key_pem: bytes
    other_key_pem: bytes


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _issue(ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, cn: str, *, server: bool) -> tuple[bytes, bytes]:
    key = _key()
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.DNSName("api.example.test"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


@pytest.fixture(scope="session")
def pki() -> Pki:
    ca_key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched-unit-ca")])
    now = dt.datetime.now(dt.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_cert, server_key = _issue(ca_key, name, "localhost", server=True)
    client_cert, client_key = _issue(ca_key, name, "unit-user", server=False)
    return Pki(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        server_cert_pem=server_cert,
        server_key_pem=server_key,
        client_cert_pem=client_cert,
        client_key_pem=client_key,
        other_key_pem=_pem_key(_key()),
    )


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path


# --- a FAKE local HTTPS server, for the tests that say they use one ---------------------------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class FakeServer:
    def __init__(self, pki: Pki, tmp: Path) -> None:
        self.routes: dict[str, Handler] = {}
        self.calls: dict[str, int] = {}
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(write(tmp / "srv.crt", pki.server_cert_pem), write(tmp / "srv.key", pki.server_key_pem))
        ctx.load_verify_locations(cadata=pki.ca_pem.decode())
        ctx.verify_mode = ssl.CERT_OPTIONAL
        self.ssl = ctx
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.calls[request.path] = self.calls.get(request.path, 0) + 1
        handler = self.routes.get(request.path)
        if handler is None:
            return status(404, "NotFound", "no route")
        return await handler(request)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=self.ssl)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def server(pki: Pki, tmp_path: Path) -> AsyncIterator[FakeServer]:
    srv = FakeServer(pki, tmp_path)
    await srv.start()
    yield srv
    await srv.stop()


def config_for(
    server: FakeServer, pki: Pki, tmp_path: Path, *, host: str = "127.0.0.1", user: dict[str, str] | None = None
) -> ConnectionConfig:
    cluster = {"server": f"https://{host}:{server.port}", "certificate-authority-data": base64.b64encode(pki.ca_pem).decode()}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user or {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    return load_kubeconfig(str(write(tmp_path / "kubeconfig", yaml.safe_dump(doc))))


def status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message, "code": code}
    return web.json_response(body, status=code)
