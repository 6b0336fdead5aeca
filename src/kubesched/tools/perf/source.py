"""Where scheduler_perf's workloads are read from: the `k8s.io/kubernetes` module of the pinned
release in Go's module cache (tools/k8s downloads it when it builds the control plane). Nothing of
upstream's is copied into this repository; a file outside that directory may be named too."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# The release kubesched matches (tools/k8s/kube/go.mod requires the same; a unit test keeps them equal).
KUBE_VERSION = "v1.37.2"
PERF_DIR = "test/integration/scheduler_perf"


class SourceError(ValueError):
    """The workloads cannot be found; the message says what to do."""


def module_cache() -> Path:
    """Go's module cache: $GOMODCACHE, else `go env GOMODCACHE`, else $GOPATH/pkg/mod or ~/go/pkg/mod."""
    if env := os.environ.get("GOMODCACHE"):
        return Path(env)
    go = shutil.which("go")
    if go is not None:
        try:
            out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30, check=False)
            if out.returncode == 0 and out.stdout.strip():
                return Path(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0] or str(Path.home() / "go")
    return Path(gopath) / "pkg" / "mod"


def perf_root(version: str = KUBE_VERSION) -> Path:
    """The scheduler_perf directory of `version` in the module cache; SourceError if it is not there."""
    root = module_cache() / f"k8s.io/kubernetes@{version}" / PERF_DIR
    if not root.is_dir():
        raise SourceError(
            f"scheduler_perf of kubernetes {version} is not in Go's module cache ({root} is missing): "
            f"run `make k8s-bin` (it downloads the module), or `go mod download k8s.io/kubernetes@{version}` "
            "in a module that requires it, or pass the path of a performance-config.yaml"
        )
    return root


def config_files(root: Path) -> list[Path]:
    """Every performance-config.yaml under `root`, in path order."""
    return sorted(root.rglob("performance-config.yaml"))


def resolve_config(spec: str, version: str = KUBE_VERSION) -> Path:
    """A --scheduler-perf argument as a file: an existing path as given, else a path relative to the
    pinned scheduler_perf directory ('misc' and 'misc/performance-config.yaml' name the same file)."""
    given = Path(spec).expanduser()
    if given.is_file():
        return given.resolve()
    if given.is_dir() and (given / "performance-config.yaml").is_file():
        return (given / "performance-config.yaml").resolve()
    root = perf_root(version)
    for candidate in (root / spec, root / spec / "performance-config.yaml"):
        if candidate.is_file():
            return candidate
    names = ", ".join(str(p.parent.relative_to(root)) for p in config_files(root))
    raise SourceError(f"--scheduler-perf {spec!r}: no such file, nor a config of scheduler_perf {version} (it has: {names})")
