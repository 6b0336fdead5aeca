"""Extended resources backed by DRA, differentially: the same pods through the real kube-scheduler
v1.37.2 and through `kubesched run` on one real kube-apiserver, each side on nodes and devices of
its own. A DeviceClass maps example.com/gpu; on the node without allocatable for it (but with a
ResourceSlice of GPUs) both create a claim for the pod and allocate the same devices, write the
same requests and reservation and the same status.extendedResourceClaimStatus; on the node whose
device plugin reports it neither creates one; a pod asking for more than is left reads the same
message."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from builders import make_pod, make_resource_slice
from integration.harness.controlplane import ControlPlane
from integration.harness.objects import PAUSE_IMAGE
from integration.harness.rest import JSON, Kube
from integration.harness.sidebyside import SIDES, both_schedulers, settled, side_namespaces

GPU = "example.com/gpu"
DRA = "/apis/resource.k8s.io/v1"
EXTENDED_CLAIM = "resource.kubernetes.io/extended-resource-claim"


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with both_schedulers(control_plane, tmp_path_factory.mktemp("draextended")):
        yield


@pytest.fixture
def namespaces(kube: Kube) -> Iterator[dict[str, str]]:
    with side_namespaces(kube, "draext") as made:
        yield made


def _pod(name: str, ns: str, scheduler: str, selector: dict[str, str], count: int) -> JSON:
    return (make_pod(name).ns(ns).container("main", PAUSE_IMAGE).req({"cpu": "100m", GPU: str(count)})
            .limits({GPU: str(count)}).node_selector(selector).scheduler(scheduler)
            .spec(terminationGracePeriodSeconds=0).manifest())


def _claim_view(kube: Kube, ns: str, pod: str, roles: dict[str, str]) -> dict[str, Any] | None:
    """The claim made for the pod's extended resources, as compared: its requests, the devices
    chosen (pools by the node's role), the pods it is reserved for, and the pod's status naming it."""
    status = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")["status"].get("extendedResourceClaimStatus")
    made = [c for c in kube.list(f"{DRA}/namespaces/{ns}/resourceclaims")
            if (c["metadata"].get("annotations") or {}).get(EXTENDED_CLAIM) == "true"
            and c["metadata"]["ownerReferences"][0]["name"] == pod]
    if not made and status is None:
        return None
    (claim,) = made
    allocation = claim["status"].get("allocation") or {}
    return {
        "generateName": claim["metadata"]["generateName"],
        "requests": claim["spec"]["devices"]["requests"],
        "devices": [(r["request"], roles.get(r["pool"], r["pool"]), r["device"])
                    for r in (allocation.get("devices") or {}).get("results", ())],
        "reservedFor": [r["name"] for r in claim["status"].get("reservedFor", ())],
        "finalizers": claim["metadata"].get("finalizers"),
        "status": {**status, "resourceClaimName": "(the claim)"} if status else None,
        "named": status is not None and status["resourceClaimName"] == claim["metadata"]["name"],
    }


@pytest.mark.usefixtures("schedulers")
def test_pods_with_an_extended_resource_dra_serves_are_placed_and_their_claims_allocated_alike(
    kube: Kube, make_node: Callable[..., JSON], namespaces: dict[str, str], device_class: str,
) -> None:
    token = secrets.token_hex(4)
    roles: dict[str, str] = {}  # node name -> its role, the same on both sides
    slices: list[str] = []
    selectors: dict[str, dict[str, dict[str, str]]] = {}
    for side in SIDES:
        selectors[side] = {}
        for role in ("dra", "plugin"):
            labels = {"draext-test": token, "draext-node": f"{side}-{role}"}
            extra = {GPU: "1"} if role == "plugin" else None
            node = make_node(cpu="4", labels=labels, extra_resources=extra)["metadata"]["name"]
            roles[node] = role
            selectors[side][role] = labels
            if role == "dra":
                kube.create(f"{DRA}/resourceslices", make_resource_slice(f"{node}-gpus", node, devices=3))
                slices.append(f"{node}-gpus")
    time.sleep(0.5)  # both schedulers see the nodes and slices
    try:
        results: dict[str, dict[str, Any]] = {}
        for side, scheduler in SIDES.items():
            ns = namespaces[side]
            results[side] = {}
            for name, role, count in (("two", "dra", 2), ("plugin", "plugin", 1), ("one", "dra", 1), ("more", "dra", 1)):
                kube.create(f"/api/v1/namespaces/{ns}/pods", _pod(name, ns, scheduler, selectors[side][role], count))
                node, message = settled(kube, ns, name)
                results[side][name] = {"node": roles.get(node or "", node), "message": message,
                                       "claim": _claim_view(kube, ns, name, roles)}
        assert results["ours"] == results["kube"]
        # What both did: the DRA node's three devices went to "two" and "one", the device plugin's
        # node needed no claim, and "more" found none left.
        kube_side = results["kube"]
        assert [kube_side[p]["node"] for p in ("two", "plugin", "one", "more")] == ["dra", "plugin", "dra", None]
        assert kube_side["plugin"]["claim"] is None and kube_side["two"]["claim"]["named"]
        assert len(kube_side["two"]["claim"]["devices"]) == 2
    finally:
        for name in slices:
            kube.delete(f"{DRA}/resourceslices/{name}", missing_ok=True)
