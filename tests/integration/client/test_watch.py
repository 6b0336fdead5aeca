"""Reflector against the real kube-apiserver: list, watch, resume, 410 re-list, stalls."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from builders import make_namespace
from integration.harness.controlplane import ControlPlane
from integration.harness.objects import create_pod
from integration.harness.rest import Kube
from kubesched.api.objects import Node, Pod
from kubesched.client import ApiClient, Reflector, load_kubeconfig

from .conftest import View, wait_until


def api_rvs(kube: Kube, namespace: str) -> dict[str, str]:
    pods = kube.list(f"/api/v1/namespaces/{namespace}/pods")
    return {f"{namespace}/{p['metadata']['name']}": p["metadata"]["resourceVersion"] for p in pods}


@contextlib.asynccontextmanager
async def running(reflector: Reflector[Pod]) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(reflector.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def delete_pod(kube: Kube, namespace: str, name: str) -> None:
    kube.delete(f"/api/v1/namespaces/{namespace}/pods/{name}", grace_period_seconds=0)


def label_pod(kube: Kube, namespace: str, name: str, value: str) -> None:
    kube.patch(f"/api/v1/namespaces/{namespace}/pods/{name}", {"metadata": {"labels": {"step": value}}})


async def test_lists_and_watches_adds_updates_deletes(client: ApiClient, kube: Kube, namespace: str) -> None:
    for i in range(5):
        create_pod(kube, f"pre-{i}", namespace)
    view = View()
    r = Reflector(client, f"/api/v1/namespaces/{namespace}/pods", Pod, view, page_size=2)
    async with running(r):
        await asyncio.wait_for(r.synced.wait(), 15)
        assert view.rvs() == api_rvs(kube, namespace)
        assert client.requests_total[("GET", "200")] >= 3  # three pages of two

        create_pod(kube, "new-a", namespace)
        create_pod(kube, "new-b", namespace)
        label_pod(kube, namespace, "pre-0", "one")
        label_pod(kube, namespace, "pre-0", "two")
        delete_pod(kube, namespace, "pre-1")
        delete_pod(kube, namespace, "new-b")
        expected = api_rvs(kube, namespace)
        await wait_until(lambda: view.rvs() == expected, what="the handler to catch up")
    assert view.objs[f"{namespace}/pre-0"].metadata.labels == {"step": "two"}
    assert view.violations == []
    after_sync = view.log[5:]
    assert ("delete", f"{namespace}/pre-1") in after_sync and after_sync.count(("update", f"{namespace}/pre-0")) == 2
    assert r.store.keys() == view.objs.keys()
    assert r.relists == 0 and r.decode_errors == 0 and r.handler_errors == 0


async def test_cluster_scoped_nodes(client: ApiClient, make_node: object, kube: Kube) -> None:
    seen: list[str] = []

    class Nodes:
        def on_add(self, obj: Node) -> None:
            seen.append(obj.metadata.name)

        def on_update(self, old: Node, new: Node) -> None:
            pass

        def on_delete(self, obj: Node) -> None:
            pass

    r: Reflector[Node] = Reflector(client, "/api/v1/nodes", Node, Nodes(), label_selector="kubesched.test/reflector=yes")
    async with running(r):  # type: ignore[arg-type]
        await asyncio.wait_for(r.synced.wait(), 15)
        node = make_node(labels={"kubesched.test/reflector": "yes"})  # type: ignore[operator]
        make_node()  # type: ignore[operator]  # filtered out by the label selector
        await wait_until(lambda: node["metadata"]["name"] in r.store, what="the node")
        assert node["metadata"]["name"] in seen and len(r.store) == 1


async def test_watch_ends_resume_without_relist(client: ApiClient, kube: Kube, namespace: str) -> None:
    """timeoutSeconds=1 makes the apiserver end every watch; the reflector resumes from its resourceVersion."""
    view = View()
    r = Reflector(client, f"/api/v1/namespaces/{namespace}/pods", Pod, view, watch_timeout=1.0)
    async with running(r):
        await asyncio.wait_for(r.synced.wait(), 15)
        for i in range(3):
            create_pod(kube, f"p{i}", namespace)
            await asyncio.sleep(1.2)
        await wait_until(lambda: r.watch_restarts >= 3, timeout=10, what="watches to end and restart")
        expected = api_rvs(kube, namespace)
        await wait_until(lambda: view.rvs() == expected)
    assert r.relists == 0 and view.violations == []
    assert view.log == [("add", f"{namespace}/p{i}") for i in range(3)]


async def test_stalled_watch_is_restarted(client: ApiClient, kube: Kube, namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "kubesched.client.watch")
    view = View()
    r = Reflector(client, f"/api/v1/namespaces/{namespace}/pods", Pod, view, inactivity_timeout=0.7, watch_timeout=300)
    async with running(r):
        await asyncio.wait_for(r.synced.wait(), 15)
        await wait_until(lambda: r.stalls >= 2, timeout=10, what="two stalls")
        assert r.watch_restarts >= 2 and r.relists == 0
        create_pod(kube, "after-stall", namespace)
        await wait_until(lambda: f"{namespace}/after-stall" in view.objs, what="the pod after the stalls")
    assert "watch stalled" in caplog.text
    assert view.violations == []


async def test_resume_after_compaction_and_restart_relists_exactly(fresh_control_plane: ControlPlane) -> None:
    """The reflector is stopped; pods are added, changed and deleted; etcd is compacted and the apiserver
    restarted; the resumed watch gets 410 and the re-list tells the handler exactly what changed. Then the
    apiserver crashes under a running reflector, and nothing is lost either."""
    cp = fresh_control_plane
    kube = cp.kube()
    ns = "relist"
    kube.create("/api/v1/namespaces", make_namespace(ns))
    for i in range(6):
        create_pod(kube, f"p{i}", ns)
    view = View()
    async with ApiClient(load_kubeconfig(str(cp.admin_kubeconfig))) as client:
        r = Reflector(client, f"/api/v1/namespaces/{ns}/pods", Pod, view, page_size=4)
        async with running(r):
            await asyncio.wait_for(r.synced.wait(), 15)
            label_pod(kube, ns, "p0", "watched")
            expected = api_rvs(kube, ns)
            await wait_until(lambda: view.rvs() == expected)
        stale_rv = r.resource_version
        view.log.clear()

        # Meanwhile, unseen: one changed, two deleted, two added.
        label_pod(kube, ns, "p1", "unseen")
        delete_pod(kube, ns, "p2")
        delete_pod(kube, ns, "p3")
        create_pod(kube, "q0", ns)
        create_pod(kube, "q1", ns)
        cp.compact_etcd()
        await asyncio.to_thread(cp.restart_apiserver)

        async with running(r):
            expected = api_rvs(kube, ns)
            await wait_until(lambda: view.rvs() == expected, timeout=30, what="the re-list")
            assert r.relists == 1
            assert int(r.resource_version) > int(stale_rv)

            # Then it keeps watching: an apiserver crash while it runs loses nothing either. (A graceful
            # restart works too but is slow here: a watch re-opened during the apiserver's shutdown is
            # never closed by it, so the harness waits 30 s before it SIGKILLs the old process.)
            cp.kill_apiserver()
            await asyncio.sleep(0.5)
            await asyncio.to_thread(cp.start_apiserver_again)
            label_pod(kube, ns, "p4", "after-restart")
            delete_pod(kube, ns, "p5")
            create_pod(kube, "q2", ns)
            expected = api_rvs(kube, ns)
            await wait_until(lambda: view.rvs() == expected, timeout=60, what="catching up after the crash")
    assert sorted(view.log[:5]) == sorted(
        [("delete", f"{ns}/p2"), ("delete", f"{ns}/p3"), ("update", f"{ns}/p1"), ("add", f"{ns}/q0"), ("add", f"{ns}/q1")]
    )
    assert view.violations == []
    assert set(r.store) == set(view.objs)
    kube.close()
