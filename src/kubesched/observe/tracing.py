"""OpenTelemetry traces of scheduling cycles, exported with OTLP.

A sampled cycle is one span ("SchedulingCycle") with a child span per extension point the cycle
ran (PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit) and, when the pod was
assumed, a "BindingCycle" span for its binding, whose own extension points (PreBind, Bind) are
its children. Attributes name the pod, its uid, the profile, the attempt, the result, the chosen
and nominated node, the nodes (total, feasible), the nodes each Filter plugin rejected
(`kubesched.rejected.<Plugin>`) and the failure message.

Configured as kube components configure tracing, with a TracingConfiguration file
(`--tracing-config-file`; apiVersion apiserver.config.k8s.io/v1, v1beta1 or v1alpha1): `endpoint`
and `samplingRatePerMillion` (default 0: off). kube exports OTLP over gRPC; kubesched exports
OTLP over HTTP with the JSON encoding (the OTLP specification's other transport, accepted by the
OpenTelemetry Collector and every OTLP backend), so it needs no gRPC stack: the endpoint is
`host:port` of an OTLP/HTTP receiver (default localhost:4318), or a full http(s):// URL.

Cost: off, a cycle checks one attribute; sampled out, it draws one random number. A sampled
cycle's spans are built after the cycle from timings the runtime keeps anyway, into a bounded
buffer that a background task sends in batches; a full buffer drops spans (counted), and an
unreachable receiver never slows scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from collections import deque
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import yaml

if TYPE_CHECKING:
    from kubesched.observe.record import DecisionRecord

log = logging.getLogger(__name__)

API_VERSIONS = ("apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", "apiserver.config.k8s.io/v1alpha1")
DEFAULT_ENDPOINT = "localhost:4318"
MAX_RATE = 1_000_000
BUFFER_SPANS = 8192
BATCH_SPANS = 512
EXPORT_INTERVAL = 2.0
EXPORT_TIMEOUT = 5.0
SPAN_KIND_INTERNAL = 1
STATUS_OK, STATUS_ERROR = 1, 2


class TracingConfigError(ValueError):
    """A TracingConfiguration that cannot be used; the message names the file and field."""


@dataclass(frozen=True, slots=True)
class TracingConfig:
    endpoint: str = DEFAULT_ENDPOINT
    sampling_rate_per_million: int = 0

    @property
    def url(self) -> str:
        base = self.endpoint if "://" in self.endpoint else f"http://{self.endpoint}"
        return base.rstrip("/") + ("" if base.rstrip("/").endswith("/v1/traces") else "/v1/traces")


def load_tracing_config(path: str | Path) -> TracingConfig:
    where = str(path)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise TracingConfigError(f"{where}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TracingConfigError(f"{where}: not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise TracingConfigError(f"{where}: expected a TracingConfiguration object")
    if doc.get("kind") != "TracingConfiguration":
        raise TracingConfigError(f"{where}: kind: Invalid value: {doc.get('kind')!r}: must be TracingConfiguration")
    if doc.get("apiVersion") not in API_VERSIONS:
        raise TracingConfigError(f"{where}: apiVersion: Unsupported value: {doc.get('apiVersion')!r}: supported values: "
                                 + ", ".join(f'"{v}"' for v in API_VERSIONS))
    unknown = sorted(set(doc) - {"apiVersion", "kind", "endpoint", "samplingRatePerMillion"})
    if unknown:
        raise TracingConfigError(f"{where}: {unknown[0]}: unknown field")
    rate = doc.get("samplingRatePerMillion", 0)
    if rate is None:
        rate = 0
    if isinstance(rate, bool) or not isinstance(rate, int):
        raise TracingConfigError(f"{where}: samplingRatePerMillion: Invalid value: {rate!r}: must be an integer")
    if rate < 0:
        raise TracingConfigError(f"{where}: samplingRatePerMillion: Invalid value: {rate}: sampling rate must be positive")
    if rate > MAX_RATE:
        raise TracingConfigError(
            f"{where}: samplingRatePerMillion: Invalid value: {rate}: sampling rate per million must be less than or equal to one million"
        )
    endpoint = doc.get("endpoint", DEFAULT_ENDPOINT)
    if endpoint is None:
        endpoint = DEFAULT_ENDPOINT
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise TracingConfigError(f"{where}: endpoint: Invalid value: {endpoint!r}: must be host:port or an http(s) URL")
    if "://" in endpoint and not endpoint.startswith(("http://", "https://")):
        raise TracingConfigError(f"{where}: endpoint: Invalid value: {endpoint!r}: unsupported scheme: OTLP/HTTP needs http or https")
    return TracingConfig(endpoint.strip(), rate)


@dataclass(slots=True)
class CycleTrace:
    """One sampled cycle: its ids, when it began, and the extension points as they ran."""

    trace_id: str
    span_id: str
    start_ns: int
    perf_start: float
    points: list[tuple[str, float, float, str]] = field(default_factory=list)  # name, perf start, perf end, status
    parent_id: str = ""  # a binding cycle's: the span of the scheduling cycle that assumed the pod
    dropped: bool = False  # no room in the buffer for the scheduling cycle: its binding is dropped too

    def point(self, name: str, started: float, ended: float, status: str) -> None:
        self.points.append((name, started, ended, status))

    def unix_ns(self, perf: float) -> int:
        return self.start_ns + int((perf - self.perf_start) * 1e9)


# The binding cycle being traced in the current asyncio task: binding cycles run concurrently, so the
# runtime finds theirs here, where the one scheduling cycle at a time is the framework's `trace`.
BINDING: ContextVar[CycleTrace | None] = ContextVar("kubesched_binding_trace", default=None)


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


class Tracer:
    def __init__(self, config: TracingConfig | None, *, service: str = "kubesched", rng: random.Random | None = None) -> None:
        self.config = config
        self.enabled = config is not None and config.sampling_rate_per_million > 0
        self._ratio = (config.sampling_rate_per_million / MAX_RATE) if config is not None else 0.0
        self._rng = rng or random.Random()
        instance = f"{os.uname().nodename}-{os.getpid()}"
        self._resource = {"attributes": [_attr("service.name", service), _attr("service.instance.id", instance)]}
        self.buffer: deque[dict[str, Any]] = deque()
        self.dropped = 0
        self._dropped_told = 0
        self.exported = 0
        self.failed = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    # --- the scheduling loop's side ------------------------------------------------------------------

    def start(self) -> CycleTrace | None:
        """A trace for the cycle about to run, or None (not sampled). Callers check `enabled` first."""
        if self._ratio < 1.0 and self._rng.random() >= self._ratio:
            return None
        return CycleTrace(os.urandom(16).hex(), os.urandom(8).hex(), time.time_ns(), time.perf_counter())

    def finish(self, trace: CycleTrace, record: DecisionRecord, ended: float) -> None:
        if not self._room(1 + len(trace.points)):  # a cycle is sent whole or not at all
            trace.dropped = True
            return
        attributes = [
            _attr("k8s.pod.name", record.pod.partition("/")[2]), _attr("k8s.namespace.name", record.pod.partition("/")[0]),
            _attr("kubesched.pod", record.pod), _attr("k8s.pod.uid", record.uid), _attr("kubesched.profile", record.profile),
            _attr("kubesched.attempt", record.attempt), _attr("kubesched.result", record.result or "unknown"),
            _attr("kubesched.nodes.total", record.nodes_total), _attr("kubesched.nodes.feasible", record.feasible),
        ]
        if record.chosen:
            attributes.append(_attr("kubesched.node", record.chosen))
        if record.nominated:
            attributes.append(_attr("kubesched.nominated_node", record.nominated))
        if record.message:
            attributes.append(_attr("kubesched.message", record.message[:1024]))
        rejected: dict[str, int] = {}
        for plugin, _, nodes in record.rejections:
            rejected[plugin] = rejected.get(plugin, 0) + nodes
        attributes.extend(_attr(f"kubesched.rejected.{plugin}", n) for plugin, n in rejected.items())
        status = {"code": STATUS_ERROR, "message": record.message[:256]} if record.result == "error" else {"code": STATUS_OK}
        end = trace.unix_ns(ended)
        self._add(self._span(trace.trace_id, trace.span_id, "", "SchedulingCycle", trace.start_ns, end, attributes, status))
        self._points(trace)

    def _points(self, trace: CycleTrace) -> None:
        for name, started, stopped, point_status in trace.points:
            code = STATUS_ERROR if point_status == "Error" else STATUS_OK
            self._add(self._span(trace.trace_id, os.urandom(8).hex(), trace.span_id, name, trace.unix_ns(started),
                                 trace.unix_ns(stopped), [_attr("kubesched.status", point_status)], {"code": code}))

    def binding_started(self, cycle: CycleTrace) -> CycleTrace:
        """The binding cycle of a sampled pod, beginning now in the current asyncio task: a child
        of its scheduling cycle's span, and the parent of the extension points it runs (PreBind, Bind)."""
        binding = CycleTrace(cycle.trace_id, os.urandom(8).hex(), time.time_ns(), time.perf_counter(), parent_id=cycle.span_id,
                             dropped=cycle.dropped)
        BINDING.set(binding)
        return binding

    def binding(self, binding: CycleTrace, ended: float, node: str, result: str) -> None:
        """Sends the binding cycle's span and its extension points' spans."""
        BINDING.set(None)
        if binding.dropped:
            self.dropped += 1 + len(binding.points)
            return
        if not self._room(1 + len(binding.points)):
            return
        attributes = [_attr("kubesched.node", node), _attr("kubesched.result", result)]
        status = {"code": STATUS_OK if result == "bound" else STATUS_ERROR}
        self._add(self._span(binding.trace_id, binding.span_id, binding.parent_id, "BindingCycle", binding.start_ns,
                             binding.unix_ns(ended), attributes, status))
        self._points(binding)

    @staticmethod
    def _span(trace_id: str, span_id: str, parent: str, name: str, start: int, end: int,
              attributes: list[dict[str, Any]], status: dict[str, Any]) -> dict[str, Any]:
        span: dict[str, Any] = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": SPAN_KIND_INTERNAL,
                                "startTimeUnixNano": str(start), "endTimeUnixNano": str(max(end, start)), "attributes": attributes,
                                "status": status}
        if parent:
            span["parentSpanId"] = parent
        return span

    def _room(self, spans: int) -> bool:
        if len(self.buffer) + spans <= BUFFER_SPANS:
            return True
        self.dropped += spans
        return False

    def _add(self, span: dict[str, Any]) -> None:
        if len(self.buffer) >= BUFFER_SPANS:
            self.dropped += 1
            return
        self.buffer.append(span)
        if len(self.buffer) >= BATCH_SPANS:
            self._wake.set()

    # --- export -------------------------------------------------------------------------------------------

    def start_export(self) -> None:
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._export_loop(), name="trace export")

    async def _export_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), EXPORT_INTERVAL)
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        while self.buffer:
            batch = [self.buffer.popleft() for _ in range(min(BATCH_SPANS, len(self.buffer)))]
            await self._send(batch)
        if self.dropped > self._dropped_told:
            log.warning("%d spans dropped: the trace buffer (%d spans) was full, the cycles sampled make spans faster than "
                        "they are sent (lower samplingRatePerMillion)", self.dropped - self._dropped_told, BUFFER_SPANS)
            self._dropped_told = self.dropped

    async def _send(self, spans: list[dict[str, Any]]) -> None:
        assert self.config is not None
        body = {"resourceSpans": [{"resource": self._resource,
                                   "scopeSpans": [{"scope": {"name": "kubesched"}, "spans": spans}]}]}
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=EXPORT_TIMEOUT))
        try:
            async with self._session.post(self.config.url, json=body) as resp:
                if resp.status >= 300:
                    raise aiohttp.ClientResponseError(resp.request_info, (), status=resp.status, message=await resp.text())
            self.exported += len(spans)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            self.failed += len(spans)
            log.warning("trace export to %s failed (%d spans dropped): %s", self.config.url, len(spans), exc)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.enabled:
            await self.flush()
        if self._session is not None:
            await self._session.close()
            self._session = None
