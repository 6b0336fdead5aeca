"""Shared helpers for the kubesched.client tests against the real kube-apiserver."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest

from integration.harness.controlplane import ControlPlane
from kubesched.api.objects import Pod
from kubesched.client import ApiClient, load_kubeconfig


@pytest.fixture
async def client(control_plane: ControlPlane) -> AsyncIterator[ApiClient]:
    """An ApiClient authenticated as the admin (client certificate from the kubeconfig's *-data fields)."""
    async with ApiClient(load_kubeconfig(str(control_plane.admin_kubeconfig))) as c:
        yield c


async def wait_until(cond: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> float:
    """Poll `cond` every 20 ms; return the seconds it took, fail after `timeout`."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


class View:
    """A WatchHandler that mirrors what it is told and records anything inconsistent
    (an add of a known key, an update or delete of an unknown one, an update whose `old` is not what it had)."""

    def __init__(self) -> None:
        self.objs: dict[str, Pod] = {}
        self.log: list[tuple[str, str]] = []
        self.violations: list[str] = []

    def on_add(self, obj: Pod) -> None:
        self.log.append(("add", obj.key))
        if obj.key in self.objs:
            self.violations.append(f"add of known {obj.key}")
        self.objs[obj.key] = obj

    def on_update(self, old: Pod, new: Pod) -> None:
        self.log.append(("update", new.key))
        had = self.objs.get(new.key)
        if had is None:
            self.violations.append(f"update of unknown {new.key}")
        elif had.metadata.resource_version != old.metadata.resource_version:
            self.violations.append(f"update of {new.key}: old rv {old.metadata.resource_version} but had {had.metadata.resource_version}")
        self.objs[new.key] = new

    def on_delete(self, obj: Pod) -> None:
        self.log.append(("delete", obj.key))
        if self.objs.pop(obj.key, None) is None:
            self.violations.append(f"delete of unknown {obj.key}")

    def rvs(self) -> dict[str, str]:
        return {k: o.metadata.resource_version for k, o in self.objs.items()}
