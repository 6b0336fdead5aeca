"""The oracle of the DRA device CEL differential test: tools/k8s/dracel (the real
k8s.io/dynamic-resource-allocation/cel), built once with the Go toolchain into the cache next to
the control-plane binaries and run as a subprocess that answers one JSON line per request.

Without `go`, or when the build fails, the test is skipped on a workstation and fails under CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ci import missing_outcome
from kubesched.tools.devcluster.binaries import cache_dir

REPO_ROOT = Path(__file__).resolve().parents[3]
ORACLE_SOURCE = REPO_ROOT / "tools" / "k8s" / "dracel"


def _pinned_version(source: Path) -> str:
    for line in (source / "go.mod").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] in ("k8s.io/dynamic-resource-allocation", "require") and fields[-1].startswith("v0."):
            return fields[-1]
    raise RuntimeError(f"{source / 'go.mod'} does not require k8s.io/dynamic-resource-allocation")


def oracle_binary() -> Path:
    """The built oracle (building it when missing or older than its source)."""
    return build_go_oracle(ORACLE_SOURCE)


def build_go_oracle(source: Path) -> Path:
    """A Go oracle of tools/k8s built into the cache (when missing or older than its source); its
    name is its directory's. Skips, or fails under CI=true, when it cannot be built."""
    name = source.name
    target = cache_dir().parent / f"{name}-{_pinned_version(source)}" / name
    sources = [source / file for file in ("main.go", "go.mod", "go.sum")]
    if target.is_file() and all(target.stat().st_mtime >= s.stat().st_mtime for s in sources):
        return target
    go = shutil.which("go")
    if go is None:
        missing_outcome(f"the oracle tools/k8s/{name} needs the Go toolchain (`go` is not on PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        built = Path(tmp) / name
        env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        proc = subprocess.run([go, "build", "-o", str(built), "."], cwd=source, env=env,
                              capture_output=True, text=True, timeout=1800, check=False)
        if proc.returncode != 0:
            missing_outcome(f"building the oracle tools/k8s/{name} failed: {proc.stderr.strip()[-2000:]}")
        built.replace(target)
    return target


class LineOracle:
    """A running Go oracle that answers one JSON line per JSON line it reads."""

    def __init__(self, binary: Path) -> None:
        self.name = binary.name
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle {self.name} exited (code {self.proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


class Oracle(LineOracle):
    """The running CEL oracle: `ask` sends one expression and devices and reads its answer."""

    def ask(self, expression: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
        return self.exchange({"expression": expression, "devices": devices})
