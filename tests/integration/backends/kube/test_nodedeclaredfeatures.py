"""NodeDeclaredFeatures, differentially: the same pods on nodes with and without declared features,
through the real kube-scheduler v1.37.2 and through `kubesched run` on one real kube-apiserver, are
placed and refused alike, with the same PodScheduled messages; and a node that starts declaring a
feature brings a pod that needed it back in both."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import make_namespace
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, delete_namespace
from integration.harness.rest import JSON, Kube

KUBESCHED = "kubesched"
RESTART_ALL = "RestartAllContainersOnContainerExits"
SIDES = {"kube": "default-scheduler", "ours": KUBESCHED}
SETTLE = 30.0


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    workdir: Path = tmp_path_factory.mktemp("nodedeclaredfeatures")
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name=KUBESCHED)
    with run_kube_scheduler(control_plane), run_kubesched(workdir, config):
        yield


def restart_all_spec(**more: Any) -> dict[str, Any]:
    """A spec one of whose containers restarts all the pod's containers on an exit: it needs RESTART_ALL."""
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Never",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}, "restartPolicyRules": [rule]}
    return {"containers": [container], **more}


def declare(kube: Kube, node: str, names: list[str]) -> None:
    kube.patch(f"/api/v1/nodes/{node}/status", {"status": {"declaredFeatures": names}})


def outcome(kube: Kube, ns: str, name: str) -> tuple[str | None, str | None]:
    """(node, None) once bound, (None, PodScheduled=False message) once refused; (None, None) before."""
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"], None
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return None, c.get("message", "")
    return None, None


def settled(kube: Kube, ns: str, name: str) -> tuple[str | None, str | None]:
    deadline = time.monotonic() + SETTLE
    while (got := outcome(kube, ns, name)) == (None, None) and time.monotonic() < deadline:
        time.sleep(0.1)
    return got


@pytest.fixture
def namespaces(kube: Kube) -> Iterator[dict[str, str]]:
    token = secrets.token_hex(3)
    made = {side: f"ndf-{side}-{token}" for side in SIDES}
    for ns in made.values():
        kube.create("/api/v1/namespaces", make_namespace(ns))
    try:
        yield made
    finally:
        for ns in made.values():
            delete_namespace(kube, ns)


@pytest.mark.usefixtures("schedulers")
def test_pods_needing_declared_features_are_placed_and_refused_alike(
    kube: Kube, make_node: Callable[..., JSON], namespaces: dict[str, str]
) -> None:
    group = {"ndf-test": secrets.token_hex(4)}
    able = make_node(labels=group)["metadata"]["name"]
    plain = make_node(labels=group)["metadata"]["name"]
    other = make_node(labels=group)["metadata"]["name"]
    declare(kube, able, ["Other", RESTART_ALL])
    declare(kube, other, ["Other"])
    time.sleep(0.5)  # both schedulers see the nodes' status
    pods: dict[str, dict[str, Any]] = {
        "needs": restart_all_spec(nodeSelector=group),
        "needs-plain": restart_all_spec(nodeSelector={**group, "kubernetes.io/hostname": plain}),
        "needs-nothing": {"nodeSelector": {**group, "kubernetes.io/hostname": other}},
    }
    results: dict[str, dict[str, tuple[str | None, str | None]]] = {}
    for side, scheduler in SIDES.items():
        for name, spec in pods.items():
            extra = {k: v for k, v in spec.items() if k != "containers"}
            pod_kwargs: dict[str, Any] = {"scheduler_name": scheduler, "extra_spec": extra}
            if "containers" in spec:
                pod_kwargs["extra_spec"] = {**extra, "containers": spec["containers"]}
            create_pod(kube, name, namespaces[side], **pod_kwargs)
        results[side] = {name: settled(kube, namespaces[side], name) for name in pods}
    assert results["ours"] == results["kube"]
    theirs = results["kube"]
    assert theirs["needs"] == (able, None)
    assert theirs["needs-nothing"] == (other, None)
    node, message = theirs["needs-plain"]
    assert node is None and message is not None and "1 node(s) didn't match Pod's required features" in message, message

    # The plain node starts declaring the feature: the node update's hint brings the pod back in both.
    declare(kube, plain, [RESTART_ALL])
    for side in SIDES:
        deadline = time.monotonic() + SETTLE
        while outcome(kube, namespaces[side], "needs-plain")[0] is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert outcome(kube, namespaces[side], "needs-plain") == (plain, None), side
