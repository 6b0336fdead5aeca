"""Bursts placed jointly on the real apiserver: `kubesched run` with JointPlacement's `bursts`,
pods owned by one ReplicaSet (created directly: no controller-manager runs here, and the apiserver
takes an ownerReference to an owner it does not have). Everything asserted is read from the API
server: bindings.

Three 2-cpu pods of one owner on three 4-cpu nodes: one by one, LeastAllocated spreads them over
the three nodes; planned as one burst (gathered within burstWindow) with emptyNodeBonus they take
two nodes and leave the third whole, so a 4-cpu pod created afterwards fits.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from integration.harness.controlplane import ControlPlane
from integration.harness.kubesched import Kubesched, kubesched_config, run_kubesched
from integration.harness.objects import create_pod, node_pool, wait_bound
from integration.harness.rest import Kube

SCHEDULER = "kubesched-bursts"


@pytest.fixture(scope="module")
def pool(kube: Kube) -> Iterator[tuple[str, list[str]]]:
    with node_pool(kube, "burst", 3, cpu="4", memory="16Gi") as made:
        yield made


@pytest.fixture(scope="module")
def bursts(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesched]:
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name=SCHEDULER)
    config["profiles"] = [{
        "schedulerName": SCHEDULER,
        "plugins": {"multiPoint": {"enabled": [{"name": "JointPlacement"}]}},
        "pluginConfig": [{"name": "JointPlacement", "args": {"bursts": True, "burstWindow": "3s", "emptyNodeBonus": 100,
                                                              "timeBudget": "1s"}}],
    }]
    with run_kubesched(tmp_path_factory.mktemp("bursts"), config) as ks:
        yield ks


def test_a_burst_planned_together_leaves_a_node_whole(kube: Kube, bursts: Kubesched, pool: tuple[str, list[str]],
                                                       namespace: str) -> None:
    token, nodes = pool
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": str(uuid.uuid4()), "controller": True}
    selector = {"nodeSelector": {"burst-test": token}}
    for i in range(3):
        create_pod(kube, f"web-{i}", namespace, cpu="2", memory="1Gi", scheduler_name=SCHEDULER, extra_spec=selector,
                   owner_references=[owner])
    placed = {f"web-{i}": wait_bound(kube, namespace, f"web-{i}") for i in range(3)}
    assert len(set(placed.values())) == 2 and set(placed.values()) <= set(nodes)
    create_pod(kube, "big", namespace, cpu="4", memory="1Gi", scheduler_name=SCHEDULER, extra_spec=selector)
    assert wait_bound(kube, namespace, "big") not in placed.values()
