"""Pod-level resources (spec.resources), differentially: the same pods, sized by their pod level
rather than their containers, through the real kube-scheduler v1.37.2 and through `kubesched run`
on one real kube-apiserver, each side on nodes of its own: they fit, score, fail with the same
PodScheduled message, and preempt the same victim on the same node."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from builders import make_priority_class
from integration.harness.controlplane import ControlPlane
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, Kube
from integration.harness.sidebyside import SIDES, Outcome, both_schedulers, settled, side_namespaces


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with both_schedulers(control_plane, tmp_path_factory.mktemp("podlevelresources")):
        yield


@pytest.fixture
def priority(kube: Kube) -> Iterator[str]:
    name = f"plr-high-{secrets.token_hex(3)}"
    kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", make_priority_class(name, 1000))
    try:
        yield name
    finally:
        kube.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", missing_ok=True)


@pytest.fixture
def namespaces(kube: Kube) -> Iterator[dict[str, str]]:
    with side_namespaces(kube, "plr") as made:
        yield made


def pod_level(requests: dict[str, str], selector: dict[str, str], **more: Any) -> dict[str, Any]:
    return {"resources": {"requests": requests}, "nodeSelector": selector, **more}


@pytest.mark.usefixtures("schedulers")
def test_pods_sized_by_their_pod_level_are_placed_refused_and_preempted_alike(
    kube: Kube, make_node: Callable[..., JSON], namespaces: dict[str, str], priority: str
) -> None:
    token = secrets.token_hex(4)
    roles: dict[str, str] = {}  # node name -> its role, the same on both sides
    selectors: dict[str, dict[str, str]] = {}
    for side in SIDES:
        selectors[side] = {"plr-test": token, "plr-side": side}
        roles[make_node(cpu="2", memory="4Gi", labels=selectors[side])["metadata"]["name"]] = "small"
        roles[make_node(cpu="4", memory="8Gi", labels=selectors[side])["metadata"]["name"]] = "big"
    time.sleep(0.5)  # both schedulers see the nodes

    results: dict[str, dict[str, Outcome]] = {}
    for side, scheduler in SIDES.items():
        ns, selector = namespaces[side], selectors[side]
        # Containers of 100m: the pod level's 3 cpu fit the big node only.
        steps: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
            ("fits-big", {"cpu": "100m", "memory": "64Mi"}, pod_level({"cpu": "3"}, selector)),
            ("too-big", {"cpu": "100m", "memory": "64Mi"}, pod_level({"cpu": "5"}, selector)),
            # No container requests: the scorers count the pod level's cpu and the containers' default memory.
            ("scored", {"cpu": None, "memory": None}, pod_level({"cpu": "500m"}, selector)),
            ("second", {"cpu": None, "memory": None}, pod_level({"cpu": "1", "memory": "1Gi"}, selector)),
        ]
        results[side] = {}
        for name, container, spec in steps:
            create_pod(kube, name, ns, scheduler_name=scheduler, extra_spec=spec, **container)
            results[side][name] = settled(kube, ns, name)
        # 2500m fit the big node only, and only once fits-big (3 cpu at the pod level, 100m in its
        # container) is gone. (One candidate node: with two, kube may pick either, its victims
        # having no start time.)
        create_pod(kube, "preemptor", ns, scheduler_name=scheduler, priority_class=priority,
                   extra_spec=pod_level({"cpu": "2500m"}, selector))
        results[side]["preemptor"] = (wait_bound(kube, ns, "preemptor", timeout=60), None)
        time.sleep(1.0)  # the victims are gone
        survivors = {p["metadata"]["name"] for p in kube.get(f"/api/v1/namespaces/{ns}/pods")["items"]
                     if not p["metadata"].get("deletionTimestamp")}
        results[side]["evicted"] = (",".join(sorted({n for n, _, _ in steps} - survivors)), None)

    def by_role(side: str) -> dict[str, Outcome]:
        return {name: (roles.get(node or "", node), message) for name, (node, message) in results[side].items()}

    assert by_role("ours") == by_role("kube")
    theirs = by_role("kube")
    assert theirs["fits-big"] == ("big", None)
    assert theirs["too-big"][0] is None and "Insufficient cpu" in (theirs["too-big"][1] or ""), theirs["too-big"]
    assert (theirs["scored"], theirs["second"]) == (("small", None), ("small", None))
    assert (theirs["preemptor"], theirs["evicted"]) == (("big", None), ("fits-big", None))
