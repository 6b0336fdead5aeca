"""A VolumeBinding plugin over a cache with nodes and storage objects, and one cycle's state, for
the tests of the volumebinding package."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import cache_with, make_node, make_storage_class
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.infra.clock import VirtualClock
from kubesched.plugins.volumebinding import VolumeBinding
from unit.plugins.storagekit import StorageHandle, add, csidriver, verdicts

HOSTNAME = "kubernetes.io/hostname"
IMMEDIATE = make_storage_class("immediate-sc").mode("Immediate").obj()
WAIT = make_storage_class("wait-sc").mode("WaitForFirstConsumer").provisioner("").obj()
WAIT_PROVISION = make_storage_class("wait-provision").mode("WaitForFirstConsumer").provisioner("csi.example.com").obj()
WAIT_CAPACITY = (
    make_storage_class("wait-sc-with-storage-capacity").mode("WaitForFirstConsumer").provisioner("driver-with-storage-capacity").obj()
)
DRIVER_WITH_CAPACITY = csidriver("driver-with-storage-capacity", storage_capacity=True)
CLASSES = (IMMEDIATE, WAIT, WAIT_PROVISION, WAIT_CAPACITY, DRIVER_WITH_CAPACITY)


def unresolvable(*reasons: str) -> tuple[Code, tuple[str, ...]]:
    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons


class Env:
    """A cache with nodes and storage, the plugin over a StorageHandle, one cycle's state."""

    def __init__(self, nodes: list[Any], *objects: Any, args: dict[str, Any] | None = None) -> None:
        self.cache: Cache = cache_with(nodes)
        add(self.cache, *CLASSES, *objects)
        self.handle = StorageHandle(self.cache, VirtualClock())
        self.plugin = VolumeBinding(args, self.handle)  # type: ignore[arg-type]
        self.state = CycleState()

    def pre_filter(self, pi: PodInfo) -> Any:
        _, status = self.plugin.pre_filter(self.state, pi)
        return status

    def filter(self, pi: PodInfo) -> dict[str, Any]:
        return verdicts(self.plugin.filter(self.state, pi, self.cache.table), self.cache)

    def scores(self, pi: PodInfo) -> dict[str, int] | None:
        rows = self.cache.table.rows()
        status = self.plugin.pre_score(self.state, pi, self.cache.table, rows)
        if status is not None:
            assert status.code == Code.SKIP
            return None
        out = self.plugin.score(self.state, pi, self.cache.table, rows)
        return {self.cache.table.name_of(int(r)): int(s) for r, s in zip(rows, out, strict=True)}

    def schedule(self, pi: PodInfo, node_name: str) -> Any:
        """Reserve on the node (the pod assumed there, as the scheduler does), then PreBind."""
        self.cache.assume(pi, node_name)
        status = self.plugin.reserve(self.state, pi, node_name)
        if status is not None:
            return status
        return asyncio.run(self.plugin.pre_bind(self.state, pi, node_name))


def nodes(*names: str, **labels: dict[str, str]) -> list[Any]:
    return [make_node(n).label(labels.get(n.replace("-", "_"), {})).obj() for n in names]
