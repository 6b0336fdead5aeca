"""Fixtures for tests against the real control plane (etcd + kube-apiserver [+ kube-scheduler]).

- `control_plane` (session): one ControlPlane for the whole run.
- `kube` (session): the admin REST helper (harness.rest.Kube) for it.
- `namespace` (function): a fresh namespace, emptied and removed afterwards.
- `make_node` (function): creates Ready nodes, deletes them afterwards.
- `fresh_control_plane` (function): a private ControlPlane, for tests that break things.

Everything collected under tests/integration is marked `integration`. Without the binaries the
tests are skipped with a reason saying to run `make k8s-bin`, except under CI=true, where they
fail: a CI run must never pass by skipping the real control plane. The same holds for the
Prometheus server of tests/integration/usage (its fixtures are in that directory's conftest).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import make_device_class, make_namespace
from integration.harness.binaries import BinariesMissing, find_binaries, in_ci, require_binaries
from integration.harness.controlplane import ControlPlane
from integration.harness.objects import create_ready_node, delete_namespace
from integration.harness.prometheus import PrometheusMissing, find_prometheus
from integration.harness.rest import JSON, Kube

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if _HERE in item.path.parents]
    if not ours:
        return
    skip: pytest.MarkDecorator | None = None
    try:
        find_binaries()
    except BinariesMissing as e:
        if not in_ci():  # under CI the fixtures fail the tests instead
            skip = pytest.mark.skip(reason=str(e))
    for item in ours:
        item.add_marker(pytest.mark.integration)
        if skip is not None:
            item.add_marker(skip)


def pytest_report_header(config: pytest.Config) -> list[str]:
    fail = " -> integration tests FAIL (CI=true)" if in_ci() else ""
    try:
        lines = [f"control plane binaries: {find_binaries().origin}"]
    except BinariesMissing as e:
        lines = [f"control plane binaries: missing ({e}){fail}"]
    try:
        lines.append(f"prometheus: {find_prometheus()}")
    except PrometheusMissing as e:
        lines.append(f"prometheus: missing ({e}){fail}")
    return lines


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver on 127.0.0.1, started once per session; logs under pytest's basetemp."""
    cp = ControlPlane(require_binaries(), workdir=tmp_path_factory.mktemp("controlplane"))
    cp.start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def fresh_control_plane(tmp_path: Path) -> Iterator[ControlPlane]:
    """A private control plane for one test (a few seconds to start): restart, compact, kill at will."""
    cp = ControlPlane(require_binaries(), workdir=tmp_path / "controlplane")
    cp.start()
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    """The admin REST helper (client certificate CN=kubesched-admin, O=system:masters)."""
    client = control_plane.kube()
    try:
        yield client
    finally:
        client.close()


def _dns_label(text: str, limit: int) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-") or "t"


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test; its pods (grace 0), other objects and itself are removed afterwards."""
    name = f"{_dns_label(request.node.name, 50)}-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", make_namespace(name))
    try:
        yield name
    finally:
        delete_namespace(kube, name)


@pytest.fixture
def make_node(kube: Kube, request: pytest.FixtureRequest) -> Iterator[Callable[..., JSON]]:
    """`make_node(name=None, *, cpu="4", memory="32Gi", pods=110, labels=None, taints=None, ...)` creates a
    Ready, schedulable node (harness.objects.create_ready_node) and returns it; deleted after the test."""
    created: list[str] = []
    prefix = _dns_label(request.node.name, 40)

    def make(name: str | None = None, **kwargs: Any) -> JSON:
        name = name or f"{prefix}-{secrets.token_hex(3)}"
        created.append(name)
        return create_ready_node(kube, name, **kwargs)

    try:
        yield make
    finally:
        for name in created:
            kube.delete(f"/api/v1/nodes/{name}", missing_ok=True)


@pytest.fixture
def device_class(kube: Kube) -> Iterator[str]:
    """A DeviceClass (cluster-scoped, so removed here) that maps the extended resource
    example.com/gpu to DRA (spec.extendedResourceName)."""
    name = f"kubesched-test-gpu-{secrets.token_hex(3)}"
    kube.create("/apis/resource.k8s.io/v1/deviceclasses", make_device_class(name, "example.com/gpu"))
    try:
        yield name
    finally:
        kube.delete(f"/apis/resource.k8s.io/v1/deviceclasses/{name}", missing_ok=True)
