"""The oracle of the device allocator's differential test: tools/k8s/draalloc (the real
k8s.io/dynamic-resource-allocation/structured allocator with kube-scheduler v1.37.2's default
features), built like the CEL oracle (dracel.py) and run as a subprocess answering one JSON line
per allocation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from integration.harness.dracel import REPO_ROOT, LineOracle, build_go_oracle

ORACLE_SOURCE = REPO_ROOT / "tools" / "k8s" / "draalloc"


def oracle_binary() -> Path:
    return build_go_oracle(ORACLE_SOURCE)


class AllocatorOracle(LineOracle):
    """The running allocator oracle: `allocate` sends one inventory and the claims, and reads
    kube's answer ({"results": [...] | None, "error": "...", "failedOnNode": bool})."""

    def allocate(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.exchange(request)
