"""kube-controller-manager against a control plane, running only the controllers a run needs (for
scheduler_perf's DRA workloads, the resourceclaim controller, as upstream's mustSetupCluster runs
it): admin credentials, no leader election, serving on 127.0.0.1 only, and the client's rate limit
of the caller's choosing (upstream's in-process controllers share scheduler_perf's client at 5000
QPS; kube-controller-manager's default of 20 would make claim creation the pace of a workload)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from kubesched.tools.devcluster.procs import ManagedProcess, free_port

# Creates ResourceClaims from pods' templates and records them in the pods' status; releases and
# deletes them when their pods are gone.
RESOURCECLAIM_CONTROLLER = "resourceclaim-controller"


def controller_manager_argv(binary: Path, kubeconfig: Path, controllers: Sequence[str], port: int, *, cert_dir: Path,
                            qps: float, burst: int, feature_gates: Mapping[str, bool] | None = None, verbosity: int = 1) -> list[str]:
    argv = [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--controllers={','.join(controllers)}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
        f"--kube-api-qps={qps:g}",
        f"--kube-api-burst={burst}",
    ]
    if feature_gates:
        argv.append("--feature-gates=" + ",".join(f"{name}={str(on).lower()}" for name, on in sorted(feature_gates.items())))
    return [*argv, f"--v={verbosity}"]


def start_controller_manager(binary: Path, kubeconfig: Path, controllers: Sequence[str], workdir: Path, *, qps: float, burst: int,
                             feature_gates: Mapping[str, bool] | None = None) -> ManagedProcess:
    """Started (not waited for); its log is <workdir>/kube-controller-manager.log."""
    argv = controller_manager_argv(binary, kubeconfig, controllers, free_port(), cert_dir=workdir / "kube-controller-manager-certs",
                                   qps=qps, burst=burst, feature_gates=feature_gates)
    proc = ManagedProcess("kube-controller-manager", argv, workdir / "kube-controller-manager.log")
    proc.start()
    return proc
