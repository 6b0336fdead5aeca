"""The kube backend's ResourceSlice and ResourceClaim informers on a real kube-apiserver, under the
deploy ServiceAccount's RBAC: what is created, updated and deleted there reaches the scheduler's
DRA manager (slices by node and pool, claims by namespace/name), and the lists and watches are
allowed (a 403 would leave the reflectors unsynced)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from builders import make_node, make_resource_claim, make_resource_slice
from integration.backends.kube.test_dra import DRA, as_deploy_service_account
from integration.client.conftest import wait_until
from integration.harness.rest import Kube
from kubesched.backends.kube.informers import build_informers
from kubesched.client import ApiClient, load_kubeconfig
from unit.simkit import run


@pytest.fixture
def sched() -> Any:
    """A scheduler to deliver events to (built by the simulator, outside the test's event loop)."""
    _, sim = run([make_node("n1").without("ephemeral-storage").manifest()])
    return sim.scheduler


async def test_slices_and_claims_reach_the_dra_manager(kube: Kube, namespace: str, tmp_path: Path, sched: Any) -> None:
    kubeconfig = as_deploy_service_account(kube, tmp_path)
    dra = sched.dra
    node = f"kubesched-test-{secrets.token_hex(3)}"
    slice_name = f"{node}-gpus"
    async with ApiClient(load_kubeconfig(str(kubeconfig))) as client:
        reflectors = [r for r in build_informers(client, sched).reflectors if r.name in ("resourceslices", "resourceclaims")]
        tasks = [asyncio.create_task(r.run()) for r in reflectors]
        try:
            await asyncio.wait_for(asyncio.gather(*(r.synced.wait() for r in reflectors)), 15)
            kube.create(f"{DRA}/resourceslices", make_resource_slice(slice_name, node, devices=3))
            claim = kube.create(f"{DRA}/namespaces/{namespace}/resourceclaims", make_resource_claim("gpu", "gpu", namespace))
            found: Callable[[], bool] = lambda: bool(dra.slices.candidates(node)) and dra.claims.find(namespace, "gpu") is not None  # noqa: E731
            await wait_until(found, what="the slice and the claim in the DRA manager")
            (rs,) = dra.slices.candidates(node)
            assert [d.name for d in rs.spec.devices] == ["gpu-0", "gpu-1", "gpu-2"]
            assert [s.metadata.name for s in dra.slices.pool("gpu.example.com", node)] == [slice_name]
            tracked = dra.claims.get(namespace, "gpu")
            assert tracked.metadata.uid == claim["metadata"]["uid"]
            assert tracked.metadata.resource_version == claim["metadata"]["resourceVersion"]
            # The API server's defaulting is what the tracker holds.
            assert tracked.spec.devices.requests[0].exactly.allocation_mode == "ExactCount"
            kube.delete(f"{DRA}/namespaces/{namespace}/resourceclaims/gpu")
            kube.delete(f"{DRA}/resourceslices/{slice_name}")
            await wait_until(lambda: not dra.slices.candidates(node) and dra.claims.find(namespace, "gpu") is None,
                             what="the deletions in the DRA manager")
            assert all(r.decode_errors == 0 for r in reflectors)
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            kube.delete(f"{DRA}/resourceslices/{slice_name}", missing_ok=True)
