"""Asking the running kubesched leader for an explanation, through its debug endpoint.

The leader publishes on its Lease where it serves (`kubesched.io/debug-endpoint`) and the SHA-256
fingerprint of its certificate (`kubesched.io/debug-cert-sha256`); the Lease is written through
the API server under RBAC, so the fingerprint is trusted. The connection is checked against it
before any credential is sent. The request carries the kubeconfig's credential (bearer token, or
client certificate), which the leader checks with a TokenReview and a SubjectAccessReview.

With an explicit endpoint (`--endpoint`, e.g. after `kubectl port-forward`) there is nothing to
pin: the endpoint's certificate must then verify against the kubeconfig's CA.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import ssl
import urllib.parse
from typing import Any

from kubesched.client.api import ApiClient, ApiError
from kubesched.client.config import ConnectionConfig, load_cert_chain_data

DEBUG_ENDPOINT_ANNOTATION = "kubesched.io/debug-endpoint"
DEBUG_CERT_ANNOTATION = "kubesched.io/debug-cert-sha256"
MAX_ANSWER_BYTES = 64 << 20


class LeaderUnreachable(RuntimeError):
    """No leader to ask: none holds the Lease, it publishes no endpoint, or it does not answer."""


class DebugDenied(RuntimeError):
    """The leader answered 401 or 403: the credentials may not read /debug."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


async def ask_leader(
    connection: ConnectionConfig,
    lease_namespace: str,
    lease_name: str,
    namespace: str,
    name: str,
    *,
    endpoint: str | None = None,
    timeout: float = 5.0,
) -> dict[str, Any] | None:
    """The leader's explanation of pod `namespace/name` (None: it knows no such pod)."""
    pin = None
    if endpoint is None:
        endpoint, pin = await _published(connection, lease_namespace, lease_name, timeout)
    path = f"/debug/explain/{urllib.parse.quote(namespace, safe='')}/{urllib.parse.quote(name, safe='')}"
    status, body = await get(connection, endpoint, path, pin=pin, timeout=timeout)
    if status == 404:
        return None
    if status in (401, 403):
        raise DebugDenied(status, _message(body))
    if status != 200:
        raise LeaderUnreachable(f"{endpoint} answered {status}: {_message(body)}")
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise LeaderUnreachable(f"{endpoint} answered something that is not JSON ({exc})") from None
    return data if isinstance(data, dict) else None


async def _published(connection: ConnectionConfig, namespace: str, name: str, timeout: float) -> tuple[str, str]:
    client = ApiClient(connection, timeout=timeout, max_retries=1)
    try:
        lease = await client.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
    except ApiError as exc:
        raise LeaderUnreachable(f"cannot read the Lease {namespace}/{name}: {exc}") from None
    finally:
        await client.close()
    spec = lease.get("spec") or {} if isinstance(lease, dict) else {}
    if not spec.get("holderIdentity"):
        raise LeaderUnreachable(f"no leader holds the Lease {namespace}/{name}")
    annotations = (lease.get("metadata") or {}).get("annotations") or {}
    endpoint, pin = annotations.get(DEBUG_ENDPOINT_ANNOTATION), annotations.get(DEBUG_CERT_ANNOTATION)
    if not endpoint or not pin:
        raise LeaderUnreachable(f"the leader {spec['holderIdentity']} publishes no debug endpoint on the Lease {namespace}/{name}")
    return str(endpoint), str(pin).lower()


def _client_context(connection: ConnectionConfig, pin: str | None) -> ssl.SSLContext:
    if pin is None and isinstance(connection.ssl, ssl.SSLContext):
        return connection.ssl  # verified as the API server is (and holding the same client certificate)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the fingerprint is checked instead, before anything is sent
    if connection.client_cert is not None:
        load_cert_chain_data(ctx, *connection.client_cert)
    return ctx


async def get(
    connection: ConnectionConfig, endpoint: str, path: str, *, pin: str | None = None, timeout: float = 5.0
) -> tuple[int, bytes]:
    """GET `path` on the https endpoint with the connection's credentials: (status, body)."""
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme != "https" or not url.hostname:
        raise LeaderUnreachable(f"{endpoint}: not an https://host:port address")
    port = url.port or 443
    try:
        return await asyncio.wait_for(_get(connection, url.hostname, port, path, pin), timeout)
    except TimeoutError:
        raise LeaderUnreachable(f"{endpoint}: no answer within {timeout:g}s") from None
    except (OSError, ssl.SSLError) as exc:
        raise LeaderUnreachable(f"{endpoint}: {exc}") from None


async def _get(connection: ConnectionConfig, host: str, port: int, path: str, pin: str | None) -> tuple[int, bytes]:
    ctx = _client_context(connection, pin)
    reader, writer = await asyncio.open_connection(host, port, ssl=ctx, server_hostname=host if pin is None else None)
    try:
        if pin is not None:
            ssl_object = writer.get_extra_info("ssl_object")
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            if not der or hashlib.sha256(der).hexdigest() != pin:
                raise LeaderUnreachable(f"{host}:{port}: its certificate is not the one the leader published on its Lease")
        headers = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Accept: application/json", "Connection: close",
                   "User-Agent: kubesched-explain"]
        auth = await connection.auth_header()
        if auth:
            headers.append(f"Authorization: {auth}")
        writer.write(("\r\n".join(headers) + "\r\n\r\n").encode())
        await writer.drain()
        raw = await reader.read(MAX_ANSWER_BYTES + 1)
        while len(raw) <= MAX_ANSWER_BYTES:
            more = await reader.read(MAX_ANSWER_BYTES + 1 - len(raw))
            if not more:
                break
            raw += more
        if len(raw) > MAX_ANSWER_BYTES:
            raise LeaderUnreachable(f"{host}:{port}: the answer is over {MAX_ANSWER_BYTES >> 20} MiB")
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise LeaderUnreachable(f"{host}:{port}: not an HTTP answer ({status_line[:80]!r})")
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunk(body)
    return int(parts[1]), body


def _unchunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return bytes(out)


def _message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200].decode("utf-8", errors="replace")
    return str(data.get("message", "")) if isinstance(data, dict) else str(data)[:200]
