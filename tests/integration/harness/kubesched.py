"""kubesched itself, run as the real command (`kubesched run`) against a ControlPlane.

A separate process, as in production: tests can SIGKILL it (a crash) or SIGTERM it (a
rolling update), and what they check is read from the API server, never from its memory.
"""

from __future__ import annotations

import base64
import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.tools.devcluster.https import https_get
from kubesched.tools.devcluster.procs import ManagedProcess, free_port, wait_until
from kubesched.tools.devcluster.schedulers import kubesched_argv

_counter = itertools.count(1)


@dataclass
class Kubesched:
    process: ManagedProcess
    config_file: Path
    port: int
    # The client certificate and key files of the kubeconfig kubesched runs with: /metrics and
    # /debug need an authorized user, and that one (the admin) is.
    client_cert: tuple[Path, Path] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def get(self, path: str, *, token: str | None = None, anonymous: bool = False) -> tuple[int, str]:
        """(status, body) of a GET on the secure port (self-signed certificate): as the admin
        (client certificate), with a bearer `token` instead, or with no credential at all."""
        cert = self.client_cert if token is None and not anonymous else None
        status, body = https_get(self.url + path, client_cert=cert, headers={"Authorization": f"Bearer {token}"} if token else None)
        return status, body.decode(errors="replace")

    def metric(self, metric_name: str, /, **labels: str) -> float:
        """The value of one sample of /metrics (0 when absent)."""
        from prometheus_client.parser import text_string_to_metric_families

        code, text = self.get("/metrics")
        assert code == 200, f"/metrics answered {code}: {text[:300]}"
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


def _client_cert_files(config: dict[str, Any], workdir: Path, n: int) -> tuple[Path, Path] | None:
    """The client certificate of the configuration's kubeconfig, as files."""
    kubeconfig = (config.get("clientConnection") or {}).get("kubeconfig")
    if not kubeconfig:
        return None
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    user = (doc.get("users") or [{}])[0].get("user") or {}
    if user.get("client-certificate") and user.get("client-key"):
        return Path(user["client-certificate"]), Path(user["client-key"])
    if user.get("client-certificate-data") and user.get("client-key-data"):
        cert, key = workdir / f"kubesched-{n}-client.crt", workdir / f"kubesched-{n}-client.key"
        cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
        key.write_bytes(base64.b64decode(user["client-key-data"]))
        key.chmod(0o600)
        return cert, key
    return None


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
def run_kubesched(
    workdir: Path, config: dict[str, Any], *, wait_ready: bool = True, log_level: str = "info",
    reader_cert: tuple[Path, Path] | None = None, args: Sequence[str] = (),
    env: Mapping[str, str] | None = None, config_path: Path | None = None,
) -> Iterator[Kubesched]:
    """Starts `kubesched run` with this configuration (and --log-level, and `args`); stops it (SIGTERM, then SIGKILL) afterwards.
    `Kubesched.get` authenticates with `reader_cert` (default: the configuration's own client certificate).
    `env`: variables added to this process's environment for it. `config_path`: a file the caller has
    written (a ConfigMap volume's projection, say) given as --config instead of writing `config` to one;
    `config` then only tells the client certificate."""
    n = next(_counter)
    workdir.mkdir(parents=True, exist_ok=True)
    if config_path is None:
        config_file = workdir / f"kubesched-{n}.yaml"
        config_file.write_text(yaml.safe_dump(config))
    else:
        config_file = config_path
    port = free_port()
    argv = kubesched_argv(config_file, port, log_level=log_level, args=args)
    process = ManagedProcess(f"kubesched-{n}", argv, workdir / f"kubesched-{n}.log",
                             env=None if env is None else {**os.environ, **env})
    process.start()
    ks = Kubesched(process, config_file, port, reader_cert or _client_cert_files(config, workdir, n))
    try:
        if wait_ready:
            ks.wait_ready()
        yield ks
    finally:
        process.stop()
