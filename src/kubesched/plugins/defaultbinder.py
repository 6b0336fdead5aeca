"""DefaultBinder: binds the pod to its node through the cluster backend (the Binding subresource
in a real cluster, an immediate assignment in the simulator), as kube's DefaultBinder does.

A failed bind comes back as the backend's status; an exception from the backend becomes an
Error status carrying its message, as kube turns the API error into the bind plugin's status.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import BindPlugin, Plugin
from kubesched.framework.status import Code, Status
from kubesched.plugins.helper.args import refuse_args

NAME = "DefaultBinder"

log = logging.getLogger(__name__)


class DefaultBinder(Plugin, BindPlugin):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)
        self.handle: Handle = handle

    async def bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        try:
            return await self.handle.bind(pi, node)
        except Exception as exc:  # the backend's failure is the bind's status, not a crash
            log.error("binding %s to %s failed: %s", pi.key, node, exc, exc_info=True)
            return Status(Code.ERROR, (str(exc) or type(exc).__name__,), NAME)
