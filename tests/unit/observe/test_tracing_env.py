"""The OTEL_* variables an OTLP exporter reads, as load_tracing_config resolves them; and the
request the exporter makes with them (an aiohttp server in the test stands in for the receiver
here: tests/integration/observe/test_tracing_env.py uses a real OpenTelemetry Collector)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kubesched.observe.tracing import Tracer, TracingConfig, TracingConfigError, load_tracing_config

HEAD = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nsamplingRatePerMillion: 100\n"


def load(tmp_path: Path, body: str, **env: str) -> TracingConfig:
    path = tmp_path / "tracing.yaml"
    path.write_text(HEAD + body)
    return load_tracing_config(path, env)


def test_the_variables(tmp_path: Path) -> None:
    assert load(tmp_path, "") == TracingConfig("localhost:4318", 100)
    assert load(tmp_path, "", OTEL_SDK_DISABLED="true").sampling_rate_per_million == 0
    # The endpoint: the file's wins, as kube hands its endpoint to the exporter; else the variables.
    assert load(tmp_path, "endpoint: c:4318\n", OTEL_EXPORTER_OTLP_ENDPOINT="http://x:1").url == "http://c:4318/v1/traces"
    assert load(tmp_path, "", OTEL_EXPORTER_OTLP_ENDPOINT="https://gw/otlp/").url == "https://gw/otlp/v1/traces"
    traces = load(tmp_path, "", OTEL_EXPORTER_OTLP_ENDPOINT="http://x:1", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="https://v/in/spans")
    assert traces.url == "https://v/in/spans"  # the signal's own URL is used as given
    cfg = load(tmp_path, "", OTEL_EXPORTER_OTLP_HEADERS="a=1", OTEL_EXPORTER_OTLP_TRACES_HEADERS="api-key=s%3Dcret, x = y ",
               OTEL_EXPORTER_OTLP_TIMEOUT="2500", OTEL_SERVICE_NAME="sched", OTEL_RESOURCE_ATTRIBUTES="k8s.cluster.name=prod")
    assert cfg.headers == (("api-key", "s=cret"), ("x", "y")) and cfg.timeout == 2.5  # the signal's own variable wins
    assert cfg.service_name == "sched" and cfg.resource == (("k8s.cluster.name", "prod"),)
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    assert load(tmp_path, "", OTEL_EXPORTER_OTLP_CERTIFICATE=str(ca)).ca_file == str(ca)


@pytest.mark.parametrize(("env", "message"), [
    ({"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT: Invalid value: 'soon'"),
    ({"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: Invalid value: 'novalue'"),
    ({"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.crt"}, "OTEL_EXPORTER_OTLP_CERTIFICATE: Invalid value"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT: Invalid value: 'collector:4318': must be an http"),
    ({"OTEL_RESOURCE_ATTRIBUTES": "=x"}, "OTEL_RESOURCE_ATTRIBUTES: Invalid value"),
])
def test_a_bad_variable_is_named(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(TracingConfigError, match=message):
        load(tmp_path, "", **env)


def test_the_export_request() -> None:
    received: list[tuple[Any, dict[str, Any]]] = []

    async def traces(request: web.Request) -> web.Response:
        received.append((request.headers.copy(), await request.json()))  # case-insensitive
        return web.json_response({})

    async def main() -> Tracer:
        app = web.Application()
        app.router.add_post("/v1/traces", traces)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        config = TracingConfig(f"127.0.0.1:{port}", 1_000_000, headers=(("authorization", "Bearer t"),),
                               service_name="sched", resource=(("k8s.cluster.name", "prod"), ("service.name", "other")))
        tracer = Tracer(config, service="kubesched")
        tracer._add({"name": "x"})
        await tracer.close()
        await runner.cleanup()
        return tracer

    tracer = asyncio.run(main())
    assert tracer.exported == 1 and tracer.failed == 0
    ((headers, body),) = received
    assert headers["authorization"] == "Bearer t" and headers["Content-Type"] == "application/json"
    resource = {a["key"]: a["value"]["stringValue"] for a in body["resourceSpans"][0]["resource"]["attributes"]}
    assert resource["service.name"] == "sched" and resource["k8s.cluster.name"] == "prod" and "service.instance.id" in resource
