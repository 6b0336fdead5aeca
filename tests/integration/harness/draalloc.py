"""The oracle of the device allocator's differential test: tools/k8s/draalloc (the real
k8s.io/dynamic-resource-allocation/structured allocator with kube-scheduler v1.37.2's default
features), built like the CEL oracle (dracel.py) and run as a subprocess answering one JSON line
per allocation.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from integration.harness.dracel import REPO_ROOT, build_go_oracle

ORACLE_SOURCE = REPO_ROOT / "tools" / "k8s" / "draalloc"


def oracle_binary() -> Path:
    return build_go_oracle(ORACLE_SOURCE)


class AllocatorOracle:
    """A running oracle: `allocate` sends one inventory and the claims, and reads kube's answer
    ({"results": [...] | None, "error": "...", "failedOnNode": bool})."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def allocate(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the device allocator oracle exited (code {self.proc.poll()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
