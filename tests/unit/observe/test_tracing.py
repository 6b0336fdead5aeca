"""observe.tracing without a network: the TracingConfiguration file, sampling, and the spans a
cycle makes (tests/integration/observe/test_tracing.py sends them to a real collector)."""

from __future__ import annotations

import random

import pytest

from builders import make_node, make_pod
from kubesched.observe.tracing import BUFFER_SPANS, Tracer, TracingConfig, TracingConfigError, load_tracing_config


def write(tmp_path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "tracing.yaml"
    path.write_text(text)
    return path


HEAD = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"


def test_the_configuration_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = load_tracing_config(write(tmp_path, HEAD + "endpoint: otel.example:4318\nsamplingRatePerMillion: 500\n"))
    assert cfg == TracingConfig("otel.example:4318", 500) and cfg.url == "http://otel.example:4318/v1/traces"
    assert load_tracing_config(write(tmp_path, HEAD)) == TracingConfig("localhost:4318", 0)
    for text, message in [
        (HEAD + "samplingRatePerMillion: 2000000\n", "samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be"),
        (HEAD + "samplingRatePerMillion: -1\n", "sampling rate must be positive"),
        (HEAD + "samplingRatePerMillion: lots\n", "must be an integer"),
        (HEAD + "endpoint: grpc://x:1\n", "unsupported scheme"),
        (HEAD + "sampling: 1\n", "sampling: unknown field"),
        ("apiVersion: v1\nkind: TracingConfiguration\n", "apiVersion: Unsupported value"),
        ("kind: Other\n", "kind: Invalid value"),
        (": : :\n", "not YAML"),
    ]:
        with pytest.raises(TracingConfigError, match=message):
            load_tracing_config(write(tmp_path, text))


def test_off_makes_nothing_and_the_ratio_is_honoured() -> None:
    assert not Tracer(None).enabled and not Tracer(TracingConfig("x:1", 0)).enabled
    tracer = Tracer(TracingConfig("x:1", 250_000), rng=random.Random(1))
    sampled = sum(tracer.start() is not None for _ in range(10_000))
    assert 2200 < sampled < 2800


def test_a_simulation_makes_cycle_spans_with_children() -> None:
    tracer = Tracer(TracingConfig("127.0.0.1:9", 1_000_000))
    tracer.start_export = lambda: None  # type: ignore[method-assign]  # no network in a unit test
    tracer.flush = _noop  # type: ignore[method-assign]
    objects = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_pod("a").req(cpu="600m", memory="100Mi").manifest(),
        make_pod("b").req(cpu="600m", memory="100Mi").manifest(),
    ]
    import asyncio

    from kubesched.backends.sim.engine import Simulation
    from kubesched.backends.sim.manifests import load_objects
    from kubesched.config.parse import default_config

    sim = Simulation(load_objects(objects), default_config(), tracer=tracer)
    result = asyncio.run(sim.run())
    assert result.pods_scheduled == 1
    spans = list(tracer.buffer)
    cycles = {s["spanId"]: s for s in spans if s["name"] == "SchedulingCycle"}
    results = sorted(next(a["value"]["stringValue"] for a in s["attributes"] if a["key"] == "kubesched.result") for s in cycles.values())
    assert results[0] == "scheduled" and "unschedulable" in results
    bindings = {s["spanId"] for s in spans if s["name"] == "BindingCycle"}
    in_binding = ("PreBindPreFlight", "PreBind", "Bind")
    assert all(s.get("parentSpanId") in cycles for s in spans if s["name"] not in ("SchedulingCycle", *in_binding))
    assert all(s.get("parentSpanId") in bindings for s in spans if s["name"] in in_binding)
    assert {"PreFilter", "Filter", "PostFilter", "BindingCycle"} <= {s["name"] for s in spans}
    for s in spans:
        assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) > 0 and len(s["traceId"]) == 32


async def _noop() -> None:
    return None


def test_the_buffer_is_bounded() -> None:
    tracer = Tracer(TracingConfig("x:1", 1_000_000))
    for _ in range(BUFFER_SPANS + 10):
        tracer._add({"name": "x"})
    assert len(tracer.buffer) == BUFFER_SPANS and tracer.dropped == 10
