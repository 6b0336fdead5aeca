"""Repeated FailedScheduling events, differentially: the same pod failing again and again through
the real kube-scheduler v1.37.2 and through `kubesched run` on one real apiserver. client-go's
events library makes a series of events about the same object at the same resourceVersion: the
pod's first failure is an event, its status patch gives it a new resourceVersion, so the second
failure is a new event, the third patches that one with series count 2, later ones are only
counted until the series ends. What the API server holds afterwards must be the same."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from builders import make_namespace
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, delete_namespace
from integration.harness.rest import JSON, Kube

KUBESCHED = "kubesched"


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    workdir: Path = tmp_path_factory.mktemp("events-series")
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name=KUBESCHED)
    with run_kube_scheduler(control_plane), run_kubesched(workdir, config):
        yield


def _failures(kube: Kube, ns: str) -> int:
    events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    return sum((e.get("series") or {}).get("count", 1) for e in events if e.get("reason") == "FailedScheduling")


def _series(kube: Kube, node: str, label: dict[str, str], scheduler: str) -> list[tuple[str, int | None]]:
    """A pod that fits nowhere fails four times (each deletion of a small pod beside it sends it
    back); the FailedScheduling event objects about it, oldest first: (note, series count)."""
    ns = f"ev-{secrets.token_hex(4)}"
    kube.create("/api/v1/namespaces", make_namespace(ns))
    try:
        create_pod(kube, "big-neighbour", ns, cpu="2", node_name=node)
        for i in range(3):
            create_pod(kube, f"small-{i}", ns, cpu="100m", node_name=node)
        create_pod(kube, "p", ns, cpu="3", scheduler_name=scheduler, extra_spec={"nodeSelector": label})
        for attempt in range(1, 4):
            deadline = time.monotonic() + 30
            while _failures(kube, ns) < attempt and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(0.5)  # the status patch of the attempt lands
            kube.delete(f"/api/v1/namespaces/{ns}/pods/small-{attempt - 1}")
        deadline = time.monotonic() + 30
        while _failures(kube, ns) < 3 and time.monotonic() < deadline:  # the fourth is counted, not written
            time.sleep(0.2)
        time.sleep(10)  # the fourth attempt (backoff 4 s) runs, and nothing more is written
        events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
        ours = sorted((e for e in events if e.get("reason") == "FailedScheduling" and e["regarding"]["name"] == "p"),
                      key=lambda e: e["eventTime"])
        return [(e["note"], (e.get("series") or {}).get("count")) for e in ours]
    finally:
        delete_namespace(kube, ns)


@pytest.mark.usefixtures("schedulers")
def test_a_pod_failing_again_gets_the_same_event_objects_and_series(kube: Kube, make_node: Callable[..., JSON]) -> None:
    label = {"events-series": secrets.token_hex(4)}
    node = make_node(cpu="4", labels=label)["metadata"]["name"]
    theirs = _series(kube, node, label, "default-scheduler")
    ours = _series(kube, node, label, KUBESCHED)
    assert ours == theirs
    # Two objects: the first failure's, and the second's with the third counted on it.
    assert [count for _, count in ours] == [None, 2] and len({note for note, _ in ours}) == 1, ours
