"""The real kube-scheduler, run against a ControlPlane as a peer or a reference."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.tools.devcluster.https import https_get
from kubesched.tools.devcluster.procs import ManagedProcess, free_port, wait_until
from kubesched.tools.devcluster.schedulers import kube_scheduler_argv

from .binaries import require_binaries
from .controlplane import SCHEDULER_FEATURE_GATES, ControlPlane

_counter = itertools.count(1)


@dataclass
class KubeScheduler:
    process: ManagedProcess
    config_file: Path
    port: int
    stopped: bool = False

    @property
    def log_file(self) -> Path:
        return self.process.log_path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def running(self) -> bool:
        return self.process.running()

    def get(self, path: str) -> tuple[int, str]:
        """(status, body) of a GET on the scheduler's own secure port (its certificate is self-signed)."""
        status, body = https_get(self.url + path)
        return status, body.decode(errors="replace")

    def stop(self) -> None:
        """Stop it before the end of the `with` block (e.g. to hand over a lease)."""
        self.stopped = True
        self.process.stop()


def scheduler_config(
    kubeconfig: Path,
    *,
    qps: float,
    burst: int,
    leader_elect: bool,
    lease_name: str = "kube-scheduler",
    lease_namespace: str = "kube-system",
    profiles: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration."""
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": leader_elect, "resourceName": lease_name, "resourceNamespace": lease_namespace},
    }
    if profiles is not None:
        config["profiles"] = profiles
    return config


@contextlib.contextmanager
def run_kube_scheduler(
    cp: ControlPlane,
    *,
    qps: float = 5000,
    burst: int = 5000,
    leader_elect: bool = False,
    lease_name: str = "kube-scheduler",
    lease_namespace: str = "kube-system",
    profiles: list[dict[str, Any]] | None = None,
    kubeconfig: Path | None = None,
    extra_args: list[str] | tuple[str, ...] = (),
    wait_ready: bool = True,
    start_timeout: float = 60.0,
    feature_gates: str = SCHEDULER_FEATURE_GATES,
) -> Iterator[KubeScheduler]:
    """Start kube-scheduler (as admin unless `kubeconfig` is given), yield it, stop it.

    With `wait_ready`, returns once its /readyz answers 200: informers synced and, with leader
    election, the lease acquired. Logs go to `<workdir>/kube-scheduler-<n>.log`.
    """
    binaries = cp.binaries
    if binaries.kube_scheduler is None:
        binaries = require_binaries(kube_scheduler=True)
    assert binaries.kube_scheduler is not None
    n = next(_counter)
    kubeconfig = kubeconfig or cp.admin_kubeconfig
    config_file = cp.workdir / f"kube-scheduler-{n}.yaml"
    config = scheduler_config(
        kubeconfig,
        qps=qps,
        burst=burst,
        leader_elect=leader_elect,
        lease_name=lease_name,
        lease_namespace=lease_namespace,
        profiles=profiles,
    )
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    proc = ManagedProcess(
        "kube-scheduler",
        kube_scheduler_argv(binaries.kube_scheduler, config_file, port, cert_dir=cp.workdir / f"kube-scheduler-{n}-certs",
                            kubeconfig=kubeconfig, feature_gates=feature_gates, verbosity=2, args=extra_args),
        cp.workdir / f"kube-scheduler-{n}.log",
    )
    sched = KubeScheduler(proc, config_file, port)
    proc.start()
    try:
        if wait_ready:
            wait_until(
                lambda: sched.get("/readyz")[0] == 200,
                timeout=start_timeout,
                what=f"kube-scheduler /readyz on {sched.url}",
                watch=[proc],
            )
        yield sched
        if not sched.stopped and not proc.running():
            raise proc.died_error("the test ran")
    finally:
        proc.stop()
