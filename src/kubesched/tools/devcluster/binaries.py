"""Where the control-plane binaries are (etcd, kube-apiserver, kube-scheduler and
kube-controller-manager of the release kubesched matches): a directory given (`--k8s-bin DIR`),
else $KUBEBUILDER_ASSETS (the envtest convention),
else the cache that `tools/k8s/build.sh` (`make k8s-bin`) fills,
``${KUBESCHED_K8S_CACHE:-$HOME/.cache/kubesched}/k8s-<version>``."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kubesched.tools.perf.source import KUBE_VERSION

__all__ = ["Binaries", "BinariesMissing", "cache_dir", "find_binaries"]


class BinariesMissing(RuntimeError):
    """The binaries cannot be found; the message (one line) says what to do."""


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path | None  # envtest's asset directories do not ship it
    origin: str  # where they were found, for messages
    kube_controller_manager: Path | None = None  # the tests run its disruption controller

    def kube_version(self) -> str:
        """What `kube-apiserver --version` reports, e.g. ``v1.37.2``."""
        out = subprocess.run([str(self.kube_apiserver), "--version"], capture_output=True, text=True, timeout=30, check=True).stdout
        return out.strip().removeprefix("Kubernetes ").strip()

    def need_kube_scheduler(self) -> Path:
        """kube-scheduler's path; BinariesMissing if there is none beside the others."""
        if self.kube_scheduler is None:
            raise BinariesMissing(f"no kube-scheduler next to etcd and kube-apiserver ({self.origin}): run `make k8s-bin`")
        return self.kube_scheduler

    def need_kube_controller_manager(self) -> Path:
        """kube-controller-manager's path; BinariesMissing if there is none beside the others."""
        if self.kube_controller_manager is None:
            raise BinariesMissing(f"no kube-controller-manager next to etcd and kube-apiserver ({self.origin}): run `make k8s-bin`")
        return self.kube_controller_manager


def cache_dir(version: str = KUBE_VERSION) -> Path:
    """The directory `make k8s-bin` fills."""
    base = os.environ.get("KUBESCHED_K8S_CACHE") or str(Path.home() / ".cache" / "kubesched")
    return Path(base) / f"k8s-{version}"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binaries(directory: Path | None = None, *, version: str = KUBE_VERSION) -> Binaries:
    """The binaries to use, or BinariesMissing with a message saying how to get them."""
    given = directory is not None
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if directory is not None or assets:
        d = directory if directory is not None else Path(str(assets))
        where = f"--k8s-bin {d}" if given else f"KUBEBUILDER_ASSETS={assets}"
        missing = [name for name in ("etcd", "kube-apiserver") if not _executable(d / name)]
        if missing:
            hint = "give the directory `make k8s-bin` fills" if given else "unset it to use `make k8s-bin`'s build"
            raise BinariesMissing(f"{where} does not hold {' and '.join(missing)}; {hint} ({cache_dir(version)})")
        sched, kcm = d / "kube-scheduler", d / "kube-controller-manager"
        return Binaries(d / "etcd", d / "kube-apiserver", sched if _executable(sched) else None, where,
                        kcm if _executable(kcm) else None)
    d = cache_dir(version)
    missing = [name for name in ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager") if not _executable(d / name)]
    if missing:
        raise BinariesMissing(
            f"the real control plane ({', '.join(missing)}) is not built in {d}: run `make k8s-bin` "
            "(needs Go; builds etcd, kube-apiserver, kube-scheduler and kube-controller-manager once, a few "
            "minutes), or set KUBEBUILDER_ASSETS to a directory holding them"
        )
    return Binaries(d / "etcd", d / "kube-apiserver", d / "kube-scheduler", str(d), d / "kube-controller-manager")
