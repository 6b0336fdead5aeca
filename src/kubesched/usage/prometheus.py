"""Talking to Prometheus: instant queries over the HTTP API, and the transport interface the
simulated Prometheus implements too, so one provider serves both."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Protocol

import aiohttp
import msgspec


class PrometheusError(RuntimeError):
    """A query that gave no usable answer; the message says what was wrong, for events and logs."""


@dataclass(frozen=True, slots=True)
class Sample:
    labels: dict[str, str]
    value: float
    timestamp: float  # seconds, the evaluation time Prometheus reports


class PrometheusTransport(Protocol):
    """Answers one PromQL instant query with a vector of samples."""

    address: str

    async def query(self, promql: str) -> list[Sample]: ...

    async def close(self) -> None: ...


# --- the HTTP API's answer ------------------------------------------------------------------------


class _VectorItem(msgspec.Struct):
    metric: dict[str, str]
    value: tuple[float, str]


class _Data(msgspec.Struct):
    resultType: str
    result: msgspec.Raw


class _Answer(msgspec.Struct):
    status: str
    data: _Data | None = None
    errorType: str = ""
    error: str = ""


_answer = msgspec.json.Decoder(_Answer)
_vector = msgspec.json.Decoder(list[_VectorItem])


def decode_answer(body: bytes, query: str) -> list[Sample]:
    """The samples of an instant-query answer; PrometheusError naming the problem otherwise.
    NaN and infinite values are dropped: they mean "no data" for a node, not a usage."""
    try:
        answer = _answer.decode(body)
    except msgspec.DecodeError as exc:
        raise PrometheusError(f"answer to {query!r} is not a Prometheus API response: {exc}") from None
    if answer.status != "success":
        raise PrometheusError(f"query {query!r} failed: {answer.errorType or 'error'}: {answer.error or 'no message'}")
    if answer.data is None:
        raise PrometheusError(f"answer to {query!r} has no data")
    if answer.data.resultType != "vector":
        raise PrometheusError(f"query {query!r} returned a {answer.data.resultType}, not an instant vector")
    try:
        items = _vector.decode(answer.data.result)
    except msgspec.DecodeError as exc:
        raise PrometheusError(f"answer to {query!r} has a malformed vector: {exc}") from None
    out = []
    for item in items:
        try:
            value = float(item.value[1])
        except ValueError:
            raise PrometheusError(f"answer to {query!r} has a non-numeric value {item.value[1]!r}") from None
        if math.isfinite(value):
            out.append(Sample(item.metric, value, float(item.value[0])))
    return out


class HttpPrometheus:
    """Prometheus's /api/v1/query over one aiohttp session; every call bounded by `timeout`."""

    def __init__(
        self, address: str, timeout: float = 5.0, bearer_token: str | None = None, bearer_token_file: str | None = None
    ) -> None:
        self.address = address.rstrip("/")
        self.timeout = timeout
        self._headers = {"Accept": "application/json"}
        if bearer_token:
            self._headers["Authorization"] = f"Bearer {bearer_token}"
        self._token_file = bearer_token_file
        self._session: aiohttp.ClientSession | None = None

    def _auth(self) -> dict[str, str]:
        """The token file is read at every query: projected service-account tokens rotate, and a
        file that is missing or unreadable fails this query (reported like an outage), not the
        scheduler."""
        if not self._token_file:
            return {}
        try:
            with open(self._token_file, encoding="utf-8") as f:
                token = f.read(64 * 1024).strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise PrometheusError(f"bearerTokenFile {self._token_file}: cannot read: {reason}") from None
        return {"Authorization": f"Bearer {token}"} if token else {}

    async def query(self, promql: str) -> list[Sample]:
        headers = self._auth()
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers)
        url = f"{self.address}/api/v1/query"
        try:
            async with self._session.post(
                url, data={"query": promql}, headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout)
            ) as resp:
                body = await resp.read()
                if resp.status >= 500 or resp.status in (401, 403, 404):
                    raise PrometheusError(f"{url} answered HTTP {resp.status}: {body[:200].decode(errors='replace')}")
        except TimeoutError:
            raise PrometheusError(f"{url} did not answer within {self.timeout:g}s") from None
        except aiohttp.ClientError as exc:
            raise PrometheusError(f"{url}: {exc}") from None
        return decode_answer(body, promql)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            await asyncio.sleep(0)
