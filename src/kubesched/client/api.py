"""An asyncio HTTP client for the Kubernetes API: one aiohttp session, rate limiting, retries, typed decoding.

`ApiClient.request` sends one call and retries it with exponential backoff and jitter on 429
(honouring Retry-After), on 5xx except 501, and on connection errors and timeouts; a 401 with a
refreshable credential (exec plugin, token file) refreshes it once and retries. Every method retries,
so a caller whose first attempt did succeed can see 409 AlreadyExists or 404 NotFound and must treat
them accordingly. Errors are `ApiError`s carrying the Status object's reason and message.

`ApiClient.stream` opens a watch and yields one JSON document (one line) at a time; lines of any
length are fine (objects can be megabytes), and a stream that stays silent for `read_timeout`
raises `StreamStalled`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar, cast

import aiohttp
import msgspec

from kubesched.client.config import ConnectionConfig
from kubesched.client.ratelimit import TokenBucket, backoff

__all__ = ["ApiClient", "ApiConnectionError", "ApiError", "Status", "StreamStalled"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# The StatusReason client-go assumes when a response carries no Status object.
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
MAX_RETRY_AFTER_SECONDS = 60.0


class StatusDetails(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    group: str = ""
    kind: str = ""
    retry_after_seconds: int | None = None


class Status(msgspec.Struct, rename="camel", omit_defaults=True):
    """A meta/v1 Status (error bodies, watch ERROR events)."""

    kind: str = ""
    status: str = ""
    message: str = ""
    reason: str = ""
    code: int = 0
    details: StatusDetails | None = None


_status_decoder = msgspec.json.Decoder(Status)


class ApiError(Exception):
    """The API answered >= 400 (after retries). `str()` reads "409 Conflict: Operation cannot be fulfilled ..."."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        retry_after: float | None = None,
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(status, reason, message)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.method = method
        self.path = path

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.reason!r}, {self.message!r})"

    @classmethod
    def from_status(cls, status: Status, *, method: str = "", path: str = "") -> ApiError:
        code = status.code or 500
        retry = float(status.details.retry_after_seconds) if status.details and status.details.retry_after_seconds else None
        return cls(code, status.reason or _REASONS.get(code, "Unknown"), status.message, retry_after=retry, method=method, path=path)

    @classmethod
    def from_response(cls, code: int, body: bytes, retry_after_header: str | None, *, method: str = "", path: str = "") -> ApiError:
        reason = ""
        message = ""
        retry_after: float | None = None
        try:
            status = _status_decoder.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            status = None
        if status is not None and status.kind == "Status":
            reason = status.reason
            message = status.message
            if status.details is not None and status.details.retry_after_seconds:
                retry_after = float(status.details.retry_after_seconds)
        else:
            text = body.decode(errors="replace").strip()
            message = text[:1000] + ("..." if len(text) > 1000 else "")
        if retry_after_header:
            with contextlib.suppress(ValueError):
                retry_after = float(retry_after_header)
        reason = reason or _REASONS.get(code, "Unknown")
        message = message or f"the server answered {code} to {method} {path}".strip()
        return cls(code, reason, message, retry_after=retry_after, method=method, path=path)


class ApiConnectionError(ApiError):
    """No HTTP answer: the connection failed, broke, or timed out. `status` is 0."""

    def __init__(self, message: str, *, reason: str = "ConnectionError", method: str = "", path: str = "") -> None:
        super().__init__(0, reason, message, method=method, path=path)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class StreamStalled(ApiConnectionError):
    """A stream (watch) sent no bytes for its read_timeout."""

    def __init__(self, message: str, *, method: str = "GET", path: str = "") -> None:
        super().__init__(message, reason="Stalled", method=method, path=path)


def retryable_status(code: int) -> bool:
    """429 and 5xx except 501 Not Implemented."""
    return code == 429 or (code >= 500 and code != 501)


class ApiClient:
    """An aiohttp session to one API server, used as `async with ApiClient(config) as client:`."""

    def __init__(
        self,
        config: ConnectionConfig,
        *,
        qps: float = 50.0,
        burst: int = 100,
        timeout: float = 30.0,
        max_retries: int = 5,
        user_agent: str = "kubesched",
        connection_limit: int = 256,
        on_request: Callable[[str, str, float], None] | None = None,
    ) -> None:
        self.config = config
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.user_agent = user_agent
        self.connection_limit = connection_limit
        self.limiter = TokenBucket(qps, burst)
        # Requests by (method, code); code is the HTTP status, or "<error>" when there was no answer.
        self.requests_total: Counter[tuple[str, str]] = Counter()
        # Retries by cause ("429", "503", "connection", ...).
        self.retries_total: Counter[str] = Counter()
        self.on_request = on_request
        self._session: aiohttp.ClientSession | None = None
        self._closed = False
        self._decoders: dict[Any, msgspec.json.Decoder[Any]] = {}

    # --- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> ApiClient:
        self._get_session()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    @property
    def closed(self) -> bool:
        return self._closed

    async def _headers(self) -> dict[str, str]:
        """Headers of every request: the credential's Authorization, refreshed when it must be."""
        auth = await self.config.auth_header()
        return {"Authorization": auth} if auth else {}

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("ApiClient is closed")
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.config.ssl, limit=self.connection_limit, limit_per_host=self.connection_limit)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self.user_agent, "Accept": "application/json"},
            )
        return self._session

    def _request_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.config.tls_server_name:
            kwargs["server_hostname"] = self.config.tls_server_name
        if self.config.proxy_url:
            kwargs["proxy"] = self.config.proxy_url
        return kwargs

    def _url(self, path: str) -> str:
        if not path.startswith("/"):
            path = "/" + path
        return self.config.server + path

    def _count(self, method: str, code: str, started: float) -> None:
        self.requests_total[(method, code)] += 1
        if self.on_request is not None:
            try:
                self.on_request(method, code, time.monotonic() - started)
            except Exception:
                log.exception("on_request hook failed")

    @staticmethod
    def _encode(body: Any) -> bytes | None:
        if body is None:
            return None
        if isinstance(body, bytes | bytearray | memoryview):
            return bytes(body)
        return msgspec.json.encode(body)

    # --- requests --------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> bytes:
        """Send one API call (with retries) and return the response body; raise ApiError for >= 400."""
        method = method.upper()
        data = self._encode(body)
        url = self._url(path)
        client_timeout = aiohttp.ClientTimeout(total=timeout if timeout is not None else self.timeout)
        attempt = 0
        auth_refreshed = False
        while True:
            await self.limiter.acquire()
            headers = await self._headers()
            if data is not None:
                headers["Content-Type"] = content_type
            session = self._get_session()
            started = time.monotonic()
            try:
                async with session.request(
                    method, url, params=params, data=data, headers=headers, timeout=client_timeout, **self._request_kwargs()
                ) as resp:
                    payload = await resp.read()
                    code = resp.status
                    retry_after_header = resp.headers.get("Retry-After")
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._count(method, "<error>", started)
                reason = "Timeout" if isinstance(exc, TimeoutError) else "ConnectionError"
                detail = str(exc) or type(exc).__name__
                if attempt < self.max_retries:
                    delay = backoff(attempt)
                    attempt += 1
                    self.retries_total["timeout" if reason == "Timeout" else "connection"] += 1
                    log.debug("%s %s: %s; retry %d in %.2fs", method, path, detail, attempt, delay)
                    await asyncio.sleep(delay)
                    continue
                raise ApiConnectionError(f"{method} {path}: {detail}", reason=reason, method=method, path=path) from exc
            self._count(method, str(code), started)
            if code < 400:
                return payload
            err = ApiError.from_response(code, payload, retry_after_header, method=method, path=path)
            if code == 401 and not auth_refreshed and await self.config.refresh_auth():
                auth_refreshed = True
                log.info("%s %s: 401 Unauthorized; refreshing credentials and retrying once", method, path)
                continue
            if retryable_status(code) and attempt < self.max_retries:
                delay = backoff(attempt)
                if err.retry_after is not None:
                    delay = min(max(err.retry_after, 0.0), MAX_RETRY_AFTER_SECONDS)
                attempt += 1
                self.retries_total[str(code)] += 1
                log.debug("%s %s: %s; retry %d in %.2fs", method, path, err, attempt, delay)
                await asyncio.sleep(delay)
                continue
            raise err

    @staticmethod
    def _decode_any(payload: bytes) -> Any:
        if not payload.strip():
            return None
        return msgspec.json.decode(payload)

    async def get(self, path: str, *, params: Mapping[str, str] | None = None) -> Any:
        return self._decode_any(await self.request("GET", path, params=params))

    async def post(self, path: str, body: Any, *, params: Mapping[str, str] | None = None) -> Any:
        return self._decode_any(await self.request("POST", path, params=params, body=body))

    async def put(self, path: str, body: Any, *, params: Mapping[str, str] | None = None) -> Any:
        return self._decode_any(await self.request("PUT", path, params=params, body=body))

    async def patch(
        self,
        path: str,
        body: Any,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/merge-patch+json",
    ) -> Any:
        """PATCH; content_type picks the patch type (merge by default; strategic-merge, json-patch, apply)."""
        return self._decode_any(await self.request("PATCH", path, params=params, body=body, content_type=content_type))

    async def delete(self, path: str, *, params: Mapping[str, str] | None = None, body: Any = None) -> Any:
        return self._decode_any(await self.request("DELETE", path, params=params, body=body))

    async def send(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json") -> None:
        """A write whose answer is not needed (a binding, a status patch, a deletion): sent with
        retries and checked (ApiError for >= 400), the object the server returns not decoded."""
        await self.request(method, path, body=body, content_type=content_type)

    def decoder(self, kind: type[T]) -> msgspec.json.Decoder[T]:
        """A cached msgspec JSON decoder for `kind`."""
        dec = self._decoders.get(kind)
        if dec is None:
            dec = self._decoders[kind] = msgspec.json.Decoder(kind)
        return cast("msgspec.json.Decoder[T]", dec)

    async def get_typed(self, path: str, kind: type[T], *, params: Mapping[str, str] | None = None) -> T:
        """GET and decode into `kind` (a msgspec Struct, or any type msgspec understands)."""
        return self.decoder(kind).decode(await self.request("GET", path, params=params))

    # --- streams ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def stream(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        read_timeout: float | None = None,
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """Open a streaming GET (a watch) and yield an iterator of its lines, one JSON document each.

        Takes one rate-limiter token. Raises ApiError when the server answers >= 400 (a 401 with a
        refreshable credential is retried once), ApiConnectionError when it cannot connect, and, while
        iterating, StreamStalled after `read_timeout` seconds without a byte, ApiConnectionError when
        the connection breaks. The iterator ends when the server ends the response.
        """
        await self.limiter.acquire()
        url = self._url(path)
        client_timeout = aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_connect=self.timeout, sock_read=read_timeout)
        auth_refreshed = False
        while True:
            headers = await self._headers()
            session = self._get_session()
            started = time.monotonic()
            try:
                resp = await session.request("GET", url, params=params, headers=headers, timeout=client_timeout, **self._request_kwargs())
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._count("GET", "<error>", started)
                if isinstance(exc, TimeoutError) and read_timeout is not None:
                    raise StreamStalled(f"GET {path}: no response headers within {read_timeout:g}s", path=path) from exc
                reason = "Timeout" if isinstance(exc, TimeoutError) else "ConnectionError"
                raise ApiConnectionError(f"GET {path}: {exc or type(exc).__name__}", reason=reason, method="GET", path=path) from exc
            self._count("GET", str(resp.status), started)
            if resp.status < 400:
                break
            try:
                payload = await resp.read()
            except (aiohttp.ClientError, TimeoutError):
                payload = b""
            finally:
                resp.release()
            if resp.status == 401 and not auth_refreshed and await self.config.refresh_auth():
                auth_refreshed = True
                continue
            raise ApiError.from_response(resp.status, payload, resp.headers.get("Retry-After"), method="GET", path=path)
        try:
            yield self._lines(resp, path, read_timeout)
        finally:
            # A half-read stream cannot go back to the pool: drop the connection.
            resp.close()

    @staticmethod
    async def _lines(resp: aiohttp.ClientResponse, path: str, read_timeout: float | None) -> AsyncIterator[bytes]:
        buf = bytearray()
        content = resp.content
        while True:
            try:
                if read_timeout is not None:
                    async with asyncio.timeout(read_timeout):
                        chunk = await content.readany()
                else:
                    chunk = await content.readany()
            except TimeoutError as exc:
                raise StreamStalled(f"GET {path}: no data for {read_timeout:g}s", path=path) from exc
            except aiohttp.ClientError as exc:
                raise ApiConnectionError(f"GET {path}: {exc or type(exc).__name__}", method="GET", path=path) from exc
            if not chunk:
                break
            scan = len(buf)
            buf += chunk
            start = 0
            while True:
                nl = buf.find(b"\n", scan)
                if nl < 0:
                    break
                line = bytes(buf[start:nl])
                start = scan = nl + 1
                if line.strip():
                    yield line
            if start:
                del buf[:start]
        if bytes(buf).strip():
            yield bytes(buf)
