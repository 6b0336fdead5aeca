"""The control-plane binaries for tests: found as kubesched.tools.devcluster.binaries finds them
(KUBEBUILDER_ASSETS, else the cache `make k8s-bin` fills); here, what tests add: skip locally and
fail under CI=true when they are missing, and the versions tools/k8s pins (its go.mod files; a
test keeps ``kubesched.tools.perf.source.KUBE_VERSION``, which names the cache directory, equal to it).
"""

from __future__ import annotations

import re
from pathlib import Path

from ci import in_ci, missing_outcome
from kubesched.tools.devcluster.binaries import Binaries, BinariesMissing, cache_dir, find_binaries

__all__ = [
    "Binaries", "BinariesMissing", "cache_dir", "find_binaries", "in_ci", "missing_binaries_outcome", "pinned_etcd_version",
    "pinned_kube_version", "require_binaries",
]

REPO_ROOT = Path(__file__).resolve().parents[3]
K8S_TOOLS = REPO_ROOT / "tools" / "k8s"


def _required_version(go_mod: Path, module: str) -> str:
    for line in go_mod.read_text().splitlines():
        if "=>" in line:
            continue
        fields = line.split()
        for i, field in enumerate(fields[:-1]):
            if field == module:
                return fields[i + 1]
    raise BinariesMissing(f"{go_mod} does not require {module}")


def pinned_kube_version() -> str:
    """The Kubernetes release tools/k8s builds (``v1.37.2``)."""
    version = _required_version(K8S_TOOLS / "kube" / "go.mod", "k8s.io/kubernetes")
    if not re.fullmatch(r"v1\.\d+\.\d+", version):
        raise BinariesMissing(f"unexpected k8s.io/kubernetes version {version!r} in tools/k8s/kube/go.mod")
    return version


def pinned_etcd_version() -> str:
    """The etcd release tools/k8s builds (``v3.7.0``)."""
    return _required_version(K8S_TOOLS / "etcd" / "go.mod", "go.etcd.io/etcd/server/v3")


missing_binaries_outcome = missing_outcome


def require_binaries(*, kube_scheduler: bool = False, kube_controller_manager: bool = False) -> Binaries:
    """find_binaries() for a test: skips it, or fails it under CI=true, when they are missing."""
    try:
        found: Binaries | None = find_binaries()
        problem = ""
    except BinariesMissing as e:
        found, problem = None, str(e)
    if found is None:
        missing_binaries_outcome(problem)  # raises Skipped or Failed
        raise AssertionError("unreachable")
    if kube_scheduler and found.kube_scheduler is None:
        missing_binaries_outcome(f"no kube-scheduler next to the other binaries ({found.origin}): run `make k8s-bin`")
    if kube_controller_manager and found.kube_controller_manager is None:
        missing_binaries_outcome(f"no kube-controller-manager next to the other binaries ({found.origin}): run `make k8s-bin`")
    return found
