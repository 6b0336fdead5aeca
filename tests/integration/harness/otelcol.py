"""The OpenTelemetry Collector that tools/otelcol builds (OTLP receiver, debug exporter), run on
loopback for one test; the spans it received are read from its debug exporter's output."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubesched.tools.devcluster.procs import ManagedProcess, free_port, wait_until

TOOLS = Path(__file__).resolve().parents[3] / "tools" / "otelcol"


class CollectorMissing(RuntimeError):
    pass


def find_otelcol() -> Path:
    """Where tools/otelcol/build.sh puts the binary ($KUBESCHED_OTELCOL_BIN wins)."""
    given = os.environ.get("KUBESCHED_OTELCOL_BIN")
    path = Path(given) if given else Path(subprocess.run([str(TOOLS / "build.sh"), "--print"], capture_output=True, text=True,
                                                          check=True).stdout.strip())
    if not os.access(path, os.X_OK):
        raise CollectorMissing(f"no OpenTelemetry Collector at {path} (make otelcol-bin builds it)")
    return path


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, str]


_SPAN = re.compile(r"^Span #\d+\n((?:.*\n)*?)(?=^Span #|^ScopeSpans|^ResourceSpans|\Z)", re.MULTILINE)
_FIELD = re.compile(r"^\s+(Trace ID|Parent ID|ID|Name)\s+: ?(.*)$", re.MULTILINE)
_ATTR = re.compile(r"^\s+-> ([^:]+): \w+\((.*)\)$", re.MULTILINE)


@dataclass
class Collector:
    process: ManagedProcess
    port: int

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def spans(self) -> list[Span]:
        text = self.process.log_path.read_text(errors="replace")
        out = []
        for m in _SPAN.finditer(text):
            fields = dict(_FIELD.findall(m.group(1)))
            attrs = {k.strip(): v for k, v in _ATTR.findall(m.group(1))}
            out.append(Span(fields.get("Name", ""), fields.get("Trace ID", ""), fields.get("ID", ""), fields.get("Parent ID", ""), attrs))
        return out


@contextmanager
def run_collector(workdir: Path, *, tls: tuple[Path, Path, Path] | None = None) -> Iterator[Collector]:
    """`tls`: (certificate, key, client CA) to serve OTLP/HTTPS and require client certificates."""
    binary = find_otelcol()
    port = free_port()
    config = workdir / "otelcol.yaml"
    served = (f"        tls:\n          cert_file: {tls[0]}\n          key_file: {tls[1]}\n          client_ca_file: {tls[2]}\n"
              if tls else "")
    config.write_text(
        f"receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n{served}"
        "exporters:\n  debug:\n    verbosity: detailed\n"
        "service:\n  telemetry:\n    metrics:\n      level: none\n"
        "  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n"
    )
    process = ManagedProcess("otelcol", [str(binary), "--config", str(config)], workdir / "otelcol.log")
    process.start()
    try:
        wait_until(lambda: "Everything is ready" in process.log_path.read_text(errors="replace"), timeout=30,
                   what="the OpenTelemetry Collector to start", watch=[process])
        yield Collector(process, port)
    finally:
        process.stop()
