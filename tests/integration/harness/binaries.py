"""Where the control-plane binaries are: KUBEBUILDER_ASSETS first (the envtest convention), then the
cache that `tools/k8s/build.sh` (`make k8s-bin`) fills.

The cache directory is computed exactly as build.sh computes it:
``${KUBESCHED_K8S_CACHE:-$HOME/.cache/kubesched}/k8s-<version>``, the version being the one
``tools/k8s/kube/go.mod`` requires for ``k8s.io/kubernetes``.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
K8S_TOOLS = REPO_ROOT / "tools" / "k8s"


class BinariesMissing(RuntimeError):
    """The binaries cannot be found; the message says what to do."""


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path | None  # envtest's asset directories do not ship it
    origin: str  # where they were found, for messages

    def kube_version(self) -> str:
        """What `kube-apiserver --version` reports, e.g. ``v1.37.2``."""
        out = subprocess.run([str(self.kube_apiserver), "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
        return out.strip().removeprefix("Kubernetes ").strip()


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


def cache_dir() -> Path:
    """The directory build.sh fills."""
    base = os.environ.get("KUBESCHED_K8S_CACHE") or str(Path.home() / ".cache" / "kubesched")
    return Path(base) / f"k8s-{pinned_kube_version()}"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binaries() -> Binaries:
    """The binaries to use, or BinariesMissing with a message saying how to get them."""
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        d = Path(assets)
        missing = [name for name in ("etcd", "kube-apiserver") if not _executable(d / name)]
        if missing:
            raise BinariesMissing(
                f"KUBEBUILDER_ASSETS={assets} does not hold {' and '.join(missing)}; unset it to use `make k8s-bin`'s build"
            )
        sched = d / "kube-scheduler"
        return Binaries(d / "etcd", d / "kube-apiserver", sched if _executable(sched) else None, f"KUBEBUILDER_ASSETS={assets}")
    d = cache_dir()
    names = ("etcd", "kube-apiserver", "kube-scheduler")
    missing = [name for name in names if not _executable(d / name)]
    if missing:
        raise BinariesMissing(
            f"the real control plane ({', '.join(missing)}) is not built in {d}: run `make k8s-bin` "
            "(needs Go; builds etcd, kube-apiserver and kube-scheduler once, a few minutes), "
            "or set KUBEBUILDER_ASSETS to a directory holding them"
        )
    return Binaries(d / "etcd", d / "kube-apiserver", d / "kube-scheduler", str(d))


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def missing_binaries_outcome(message: str) -> None:
    """Skip (on a workstation) or fail loudly (when CI=true, where a skip would hide the whole suite)."""
    if in_ci():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def require_binaries(*, kube_scheduler: bool = False) -> Binaries:
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
    return found
