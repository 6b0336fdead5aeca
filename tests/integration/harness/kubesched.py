"""kubesched itself, run as the real command (`kubesched run`) against a ControlPlane.

A separate process, as in production: tests can SIGKILL it (a crash) or SIGTERM it (a
rolling update), and what they check is read from the API server, never from its memory.
"""

from __future__ import annotations

import itertools
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .procs import ManagedProcess, free_port, wait_until

_counter = itertools.count(1)


@dataclass
class Kubesched:
    process: ManagedProcess
    config_file: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as resp:
                return resp.status, resp.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def metric(self, metric_name: str, /, **labels: str) -> float:
        """The value of one sample of /metrics (0 when absent)."""
        from prometheus_client.parser import text_string_to_metric_families

        _, text = self.get("/metrics")
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == metric_name and all(s.labels.get(k) == v for k, v in labels.items()):
                    return float(s.value)
        return 0.0

    def wait_ready(self, timeout: float = 60.0) -> None:
        wait_until(lambda: self.get("/readyz")[0] == 200, timeout=timeout, what="kubesched /readyz", watch=[self.process])

    def running(self) -> bool:
        return self.process.running()

    def log(self) -> str:
        return self.process.log_tail(200)


def kubesched_config(
    kubeconfig: Path,
    *,
    scheduler_name: str = "kubesched",
    leader_elect: bool = False,
    lease_namespace: str = "kube-system",
    lease_duration: str = "15s",
    renew_deadline: str = "10s",
    retry_period: str = "2s",
    qps: float = 5000,
    burst: int = 5000,
    extra_profile: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {
            "leaderElect": leader_elect,
            "resourceName": "kubesched",
            "resourceNamespace": lease_namespace,
            "leaseDuration": lease_duration,
            "renewDeadline": renew_deadline,
            "retryPeriod": retry_period,
        },
        "profiles": [{"schedulerName": scheduler_name, **(extra_profile or {})}],
    }


@contextmanager
def run_kubesched(workdir: Path, config: dict[str, Any], *, wait_ready: bool = True, log_level: str = "info") -> Iterator[Kubesched]:
    """Starts `kubesched run` with this configuration (and --log-level); stops it (SIGTERM, then SIGKILL) afterwards."""
    n = next(_counter)
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = workdir / f"kubesched-{n}.yaml"
    config_file.write_text(yaml.safe_dump(config))
    port = free_port()
    argv = [sys.executable, "-m", "kubesched.cli", "run", "--config", str(config_file),
            "--bind-address", "127.0.0.1", "--port", str(port), "--log-level", log_level]
    process = ManagedProcess(f"kubesched-{n}", argv, workdir / f"kubesched-{n}.log")
    process.start()
    ks = Kubesched(process, config_file, port)
    try:
        if wait_ready:
            ks.wait_ready()
        yield ks
    finally:
        process.stop()
