"""The standard OTEL_* variables, as an OTLP exporter reads them, against a real OpenTelemetry
Collector serving OTLP/HTTPS that requires a client certificate: the CA, the client certificate
and key, the service name and resource attributes; and without the client certificate nothing
is accepted (the scheduler says so and carries on)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from integration.harness.otelcol import run_collector
from kubesched.tools.devcluster.pki import CertificateAuthority

HEAD = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 1000000\n"


def simulate(tmp_path: Path, endpoint: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "tracing.yaml"
    config.write_text(HEAD + f"endpoint: {endpoint}\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, "-m", "kubesched.cli", "simulate", "basic", "-q", "--tracing-config-file", str(config)],
                          capture_output=True, text=True, timeout=300, check=False, env={**clean, **env})


def test_tls_and_resource_from_the_otel_variables(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path / "pki")
    server = ca.serving_cert("otelcol", ["127.0.0.1"])
    client = ca.client_cert("kubesched", "kubesched")
    with run_collector(tmp_path, tls=(server.cert_file, server.key_file, ca.dir / "ca.crt")) as collector:
        endpoint = f"https://{collector.endpoint}"
        refused = simulate(tmp_path, endpoint, {"OTEL_EXPORTER_OTLP_CERTIFICATE": str(ca.dir / "ca.crt")})
        assert refused.returncode == 0, refused.stderr  # an export failure never fails scheduling
        assert "certificate required" in refused.stderr and collector.spans() == []
        assert refused.stderr.count("trace export to") == 1  # told once, not for every batch

        done = simulate(tmp_path, endpoint, {
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": str(ca.dir / "ca.crt"),
            "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": str(client.cert_file),
            "OTEL_EXPORTER_OTLP_CLIENT_KEY": str(client.key_file),
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=team%20a",
            "OTEL_SERVICE_NAME": "kubesched-staging",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=staging,service.name=ignored",
        })
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 20
        while not collector.spans() and time.monotonic() < deadline:
            time.sleep(0.2)
        spans = collector.spans()
        log = collector.process.log_path.read_text(errors="replace")
    assert any(s.name == "SchedulingCycle" and s.attributes.get("kubesched.result") == "scheduled" for s in spans)
    assert "-> service.name: Str(kubesched-staging)" in log and "-> deployment.environment: Str(staging)" in log
    assert "Str(ignored)" not in log
