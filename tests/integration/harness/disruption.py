"""The real disruption controller (kube-controller-manager with only that controller), run against
a ControlPlane so that PodDisruptionBudgets carry the status a real cluster gives them."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence

from kubesched.tools.devcluster.procs import ManagedProcess, free_port

from .binaries import require_binaries
from .controlplane import ControlPlane
from .rest import JSON, Kube

_counter = itertools.count(1)
# Creates ResourceClaims from pods' templates, takes deleted pods off their claims' reservedFor and
# deallocates claims no pod uses any more (what a cluster with DRA runs).
RESOURCECLAIM_CONTROLLER = "resourceclaim-controller"


@contextlib.contextmanager
def run_disruption_controller(cp: ControlPlane, also: Sequence[str] = ()) -> Iterator[ManagedProcess]:
    """kube-controller-manager of the pinned release, as admin, running the disruption controller
    alone, or with the controllers `also` names (no leader election); stopped at the end of the block."""
    binaries = cp.binaries if cp.binaries.kube_controller_manager is not None else require_binaries(
        kube_controller_manager=True)
    assert binaries.kube_controller_manager is not None
    n = next(_counter)
    argv = [
        str(binaries.kube_controller_manager),
        f"--kubeconfig={cp.admin_kubeconfig}",
        f"--authentication-kubeconfig={cp.admin_kubeconfig}",
        f"--authorization-kubeconfig={cp.admin_kubeconfig}",
        f"--controllers={','.join(['disruption-controller', *also])}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={free_port()}",
        f"--cert-dir={cp.workdir / f'kube-controller-manager-{n}-certs'}",
        "--v=2",
    ]
    proc = ManagedProcess("kube-controller-manager", argv, cp.workdir / f"kube-controller-manager-{n}.log")
    proc.start()
    try:
        yield proc
        if not proc.running():
            raise proc.died_error("the test ran")
    finally:
        proc.stop()


def mark_ready(kube: Kube, namespace: str, name: str) -> JSON:
    """What a kubelet does once a bound pod's containers run: phase Running, Ready and
    ContainersReady true (there is no kubelet here; the disruption controller counts only ready
    pods as healthy). No status.startTime: preemption orders victims by it, and the simulator's
    pods, compared with these in the conformance suite, have none."""
    now = "2026-01-01T00:00:00Z"
    conditions = [{"type": t, "status": "True", "lastTransitionTime": now}
                  for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return kube.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                      {"status": {"phase": "Running", "conditions": conditions}},
                      content_type="application/strategic-merge-patch+json")
