"""NodeDeclaredFeatures, differentially: the same pods on nodes with and without declared features,
through the real kube-scheduler v1.37.2 and through `kubesched run` on one real kube-apiserver, are
placed and refused alike, with the same PodScheduled messages; and a node that starts declaring a
feature brings a pod that needed it back in both."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from integration.harness.controlplane import ControlPlane
from integration.harness.objects import create_pod
from integration.harness.rest import JSON, Kube
from integration.harness.sidebyside import SETTLE, SIDES, both_schedulers, outcome, settled, side_namespaces

RESTART_ALL = "RestartAllContainersOnContainerExits"


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with both_schedulers(control_plane, tmp_path_factory.mktemp("nodedeclaredfeatures")):
        yield


def restart_all_spec(**more: Any) -> dict[str, Any]:
    """A spec one of whose containers restarts all the pod's containers on an exit: it needs RESTART_ALL."""
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "restartPolicy": "Never",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}, "restartPolicyRules": [rule]}
    return {"containers": [container], **more}


def declare(kube: Kube, node: str, names: list[str]) -> None:
    kube.patch(f"/api/v1/nodes/{node}/status", {"status": {"declaredFeatures": names}})


@pytest.fixture
def namespaces(kube: Kube) -> Iterator[dict[str, str]]:
    with side_namespaces(kube, "ndf") as made:
        yield made


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
