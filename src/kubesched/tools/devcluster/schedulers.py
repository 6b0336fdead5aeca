"""Schedulers as processes against a control plane: `kubesched run` and the real kube-scheduler, with
what a benchmark reads of them: readiness, their own CPU time and peak RSS (/proc), and a
histogram of their /metrics.

Both serve HTTPS on 127.0.0.1 only, with a self-signed certificate; a scrape authenticates with
the client certificate given (kube-scheduler asks the apiserver, through the
extension-apiserver-authentication ConfigMap and a SubjectAccessReview, who it is), and the paths
in `always_allow_paths` are served without authorization."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubesched.tools.devcluster.https import https_get
from kubesched.tools.devcluster.procs import ManagedProcess, wait_until

KUBESCHED = "kubesched"
KUBE_SCHEDULER = "kube-scheduler"
# kube-scheduler's default, and /metrics.
METRICS_ALLOWED = "/healthz,/readyz,/livez,/metrics"
HANDLER_SYNC = "[+]sched-handler-sync ok"  # /readyz?verbose of both, once the informers have listed

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def kubesched_argv(config_file: Path, port: int, *, log_level: str = "info", feature_gates: str = "",
                   always_allow_paths: str = "", args: Sequence[str] = ()) -> list[str]:
    """`kubesched run` in this interpreter, serving on 127.0.0.1:port."""
    argv = [sys.executable, "-m", "kubesched.cli", "run", "--config", str(config_file),
            "--bind-address", "127.0.0.1", "--secure-port", str(port), "--log-level", log_level]
    if feature_gates:
        argv += ["--feature-gates", feature_gates]
    if always_allow_paths:
        argv += ["--authorization-always-allow-paths", always_allow_paths]
    return [*argv, *args]


def kube_scheduler_argv(binary: Path, config_file: Path, port: int, *, cert_dir: Path, kubeconfig: Path, feature_gates: str = "",
                        verbosity: int = 2, always_allow_paths: str = "", args: Sequence[str] = ()) -> list[str]:
    """kube-scheduler serving on 127.0.0.1:port, authenticating and authorizing its callers through
    the apiserver of `kubeconfig`."""
    argv = [
        str(binary),
        f"--config={config_file}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
    ]
    if feature_gates:
        argv.append(f"--feature-gates={feature_gates}")
    if always_allow_paths:
        argv.append(f"--authorization-always-allow-paths={always_allow_paths}")
    return [*argv, f"--v={verbosity}", *args]


@dataclass(frozen=True)
class ProcessUsage:
    cpu_seconds: float  # user + system, all threads
    rss_peak_bytes: int  # VmHWM


def read_usage(pid: int) -> ProcessUsage:
    """What a live process has used so far, from /proc; OSError when it is gone."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is fields[0]
    cpu = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime
    hwm = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
            break
    return ProcessUsage(cpu, hwm)


def parse_histogram(text: str, name: str) -> list[tuple[float, float]]:
    """The cumulative buckets (upper bound, count) of histogram `name` in a Prometheus text exposition,
    summed over its other labels, in bound order; [] when absent."""
    prefix = f"{name}_bucket{{"
    sums: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith(prefix):
            continue
        labels, _, rest = line[len(prefix):].partition("} ")
        le = next((part[4:-1] for part in _split_labels(labels) if part.startswith('le="')), None)
        if le is None:
            continue
        bound = math.inf if le == "+Inf" else float(le)
        sums[bound] = sums.get(bound, 0.0) + float(rest.split()[0])
    return sorted(sums.items())


def _split_labels(labels: str) -> list[str]:
    """`a="x",le="0.1"` -> ['a="x"', 'le="0.1"'] (values may hold commas and escaped quotes)."""
    out, start, quoted, escaped = [], 0, False, False
    for i, c in enumerate(labels):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            out.append(labels[start:i])
            start = i + 1
    if labels[start:]:
        out.append(labels[start:])
    return out


@dataclass
class SchedulerProcess:
    """A scheduler started against a control plane."""

    kind: str  # KUBESCHED or KUBE_SCHEDULER
    process: ManagedProcess
    port: int
    client_cert: tuple[Path, Path] | None = None  # presented to its secure port
    _last: ProcessUsage = field(default_factory=lambda: ProcessUsage(0.0, 0))

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.process.pid is None:
            raise RuntimeError(f"{self.kind} is not started")
        return self.process.pid

    def start(self) -> SchedulerProcess:
        self.process.start()
        return self

    def get(self, path: str, params: dict[str, str] | None = None, timeout: float = 10.0) -> tuple[int, bytes]:
        return https_get(self.url + path, client_cert=self.client_cert, params=params, timeout=timeout)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until /readyz answers 200 and says its informers have listed (sched-handler-sync)."""

        def ready() -> bool:
            status, body = self.get("/readyz", {"verbose": "1"})
            return status == 200 and HANDLER_SYNC in body.decode(errors="replace")

        wait_until(ready, timeout=timeout, what=f"{self.kind} /readyz on {self.url}", watch=[self.process])
        self.usage()

    def usage(self) -> ProcessUsage:
        """CPU seconds and peak RSS so far; once the process is gone, the last reading."""
        pid = self.process.pid
        if pid is not None and self.process.running():
            with contextlib.suppress(OSError, ValueError, IndexError):
                self._last = read_usage(pid)
        return self._last

    def histogram(self, name: str) -> list[tuple[float, float]]:
        """A histogram of its /metrics, as cumulative (upper bound, count) buckets summed over labels."""
        status, body = self.get("/metrics")
        if status != 200:
            raise RuntimeError(f"{self.kind} /metrics answered {status}: {body[:300].decode(errors='replace')}")
        return parse_histogram(body.decode(errors="replace"), name)

    def running(self) -> bool:
        return self.process.running()

    def stop(self) -> None:
        self.usage()
        self.process.stop()
