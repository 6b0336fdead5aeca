"""What the scheduler asks of a cluster backend: the side effects of its decisions.

Backends also feed the scheduler's event handlers (on_pod_add, on_node_update, ...),
but the core never imports a backend: it only holds this interface.
"""

from __future__ import annotations

from typing import Protocol

from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import Status


class ClusterBackend(Protocol):
    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        """Bind the pod (Binding subresource). None on success."""
        ...

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        """Delete a preemption victim."""
        ...

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        """Post an event about the pod (fire and forget)."""
        ...

    def set_unschedulable(self, pi: PodInfo, message: str) -> None:
        """Set condition PodScheduled=False, reason Unschedulable, with the message."""
        ...

    def set_nominated_node(self, pi: PodInfo, node: str | None) -> None:
        """Set or clear status.nominatedNodeName."""
        ...
