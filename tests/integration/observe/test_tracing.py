"""Traces exported to a real OpenTelemetry Collector (built from Go modules by tools/otelcol),
over OTLP/HTTP: a span per scheduling cycle with its extension points and binding as children,
and nothing at all when the sampling rate is 0."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from integration.harness.otelcol import run_collector


def simulate(tmp_path: Path, endpoint: str, rate: int, *extra: str) -> None:
    config = tmp_path / f"tracing-{rate}.yaml"
    config.write_text(f"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: {endpoint}\n"
                      f"samplingRatePerMillion: {rate}\n")
    done = subprocess.run([sys.executable, "-m", "kubesched.cli", "simulate", *extra, "-q", "--tracing-config-file", str(config)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr


def test_cycles_arrive_as_spans_at_a_real_collector(tmp_path: Path) -> None:
    with run_collector(tmp_path) as collector:
        simulate(tmp_path, collector.endpoint, 1_000_000, "preemption")
        deadline = time.monotonic() + 20
        while not collector.spans() and time.monotonic() < deadline:
            time.sleep(0.2)
        spans = collector.spans()
    cycles = [s for s in spans if s.name == "SchedulingCycle"]
    assert cycles, "no cycle span arrived"
    by_id = {s.span_id: s for s in cycles}
    children = Counter(s.name for s in spans if s.parent_id in by_id)
    assert {"PreFilter", "Filter", "BindingCycle"} <= set(children)
    bindings = {s.span_id: s for s in spans if s.name == "BindingCycle"}
    for s in spans:
        if s.name in ("PreBindPreFlight", "PreBind", "Bind"):  # the binding cycle's extension points
            assert s.parent_id in bindings and bindings[s.parent_id].trace_id == s.trace_id
        elif s.name != "SchedulingCycle":
            assert s.parent_id in by_id and by_id[s.parent_id].trace_id == s.trace_id
    assert {"PreBind", "Bind"} <= {s.name for s in spans if s.parent_id in bindings}
    results = Counter(s.attributes["kubesched.result"] for s in cycles)
    assert results["scheduled"] > 0 and results["unschedulable"] > 0  # the scenario preempts
    failed = next(s for s in cycles if s.attributes["kubesched.result"] == "unschedulable")
    assert failed.attributes["kubesched.message"].startswith("0/")
    assert any(k.startswith("kubesched.rejected.") for k in failed.attributes)
    assert any(s.name == "PostFilter" and s.parent_id == failed.span_id for s in spans)
    placed = next(s for s in cycles if s.attributes["kubesched.result"] == "scheduled")
    for key in ("kubesched.pod", "k8s.pod.uid", "kubesched.profile", "kubesched.node", "kubesched.nodes.total",
                "kubesched.nodes.feasible", "kubesched.attempt"):
        assert placed.attributes.get(key), key


def test_a_zero_sampling_rate_sends_nothing(tmp_path: Path) -> None:
    with run_collector(tmp_path) as collector:
        simulate(tmp_path, collector.endpoint, 0, "basic")
        time.sleep(1.0)
        assert collector.spans() == []
