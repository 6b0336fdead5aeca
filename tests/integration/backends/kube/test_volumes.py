"""The volume plugins on a real kube-apiserver, beside the real kube-scheduler v1.37.2.

No kube-controller-manager runs here, so a small stand-in PV controller (a thread of this test)
does what the real one and an external provisioner would: a new PV becomes Available, a claim
the scheduler annotated with
`volume.kubernetes.io/selected-node` gets a new PV with node affinity to that node's zone, and a
claim a PV was bound to (by the scheduler's PreBind) is bound back. The scheduler's PreBind waits
for exactly that, as kube-scheduler's does.

- kubesched places a StatefulSet-like set of pods with WaitForFirstConsumer claims, and a pod
  whose claim can only use a local PV pinned to one node;
- kubesched and kube-scheduler, each given the same pods (their own copies), place the pinned one
  on the same node and refuse the others with the same FailedScheduling message.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, ApiError, Kube

SCHEDULER = "kubesched"
ZONE = "topology.kubernetes.io/zone"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
PROVISIONER = "stand-in.example.com"


# --- a stand-in PV controller ----------------------------------------------------------------------


class StandInPVController:
    """Binds claims as kube's PV controller (with an external provisioner) would, for one namespace."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.provisioned: dict[str, str] = {}  # claim -> PV made for it
        self.thread = threading.Thread(target=self._run, name="stand-in-pv-controller", daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self._sync()
            except Exception as exc:  # reported by the test, never silently lost
                self.errors.append(repr(exc))
            self.stop.wait(0.1)

    def _sync(self) -> None:
        claims = self.kube.list(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims")
        volumes = self.kube.list("/api/v1/persistentvolumes")
        for v in volumes:  # a new volume is Pending until the controller sees it free
            if not v["spec"].get("claimRef") and v.get("status", {}).get("phase") == "Pending":
                self.kube.patch(f"/api/v1/persistentvolumes/{v['metadata']['name']}/status", {"status": {"phase": "Available"}})
        for claim in claims:
            meta, spec = claim["metadata"], claim["spec"]
            if spec.get("volumeName") and BIND_COMPLETED in meta.get("annotations", {}):
                continue
            bound = next((v for v in volumes if (v["spec"].get("claimRef") or {}).get("uid") == meta["uid"]), None)
            if bound is None and SELECTED_NODE in meta.get("annotations", {}):
                bound = self._provision(claim, meta["annotations"][SELECTED_NODE])
            if bound is not None:
                self._bind(claim, bound["metadata"]["name"])

    def _provision(self, claim: JSON, node_name: str) -> JSON:
        node = self.kube.get(f"/api/v1/nodes/{node_name}")
        zone = node["metadata"]["labels"][ZONE]
        meta = claim["metadata"]
        name = f"pvc-{meta['uid']}"
        self.provisioned[meta["name"]] = name
        return self.kube.create("/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
            "spec": {
                "capacity": {"storage": claim["spec"]["resources"]["requests"]["storage"]},
                "accessModes": claim["spec"]["accessModes"],
                "storageClassName": claim["spec"]["storageClassName"],
                "persistentVolumeReclaimPolicy": "Delete",
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"], "name": meta["name"],
                             "uid": meta["uid"], "apiVersion": "v1"},
                "csi": {"driver": PROVISIONER, "volumeHandle": name},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}},
            },
        })

    def _bind(self, claim: JSON, volume: str) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{claim['metadata']['name']}"
        self.kube.patch(path, {"metadata": {"annotations": {BIND_COMPLETED: "yes", "pv.kubernetes.io/bound-by-controller": "yes"}},
                               "spec": {"volumeName": volume}})
        self.kube.patch(path + "/status", {"status": {"phase": "Bound"}})
        self.kube.patch(f"/api/v1/persistentvolumes/{volume}/status", {"status": {"phase": "Bound"}})


@contextmanager
def pv_controller(kube: Kube, namespace: str) -> Iterator[StandInPVController]:
    controller = StandInPVController(kube, namespace)
    controller.thread.start()
    try:
        yield controller
    finally:
        controller.stop.set()
        controller.thread.join(timeout=10)
    assert not controller.errors, controller.errors


# --- storage objects, removed after each test ---------------------------------------------------------


@pytest.fixture
def storage(kube: Kube, namespace: str) -> Iterator[Callable[..., JSON]]:
    """`storage(manifest)` creates a PV, PVC or StorageClass; all are removed afterwards (their
    protection finalizers dropped: no controller runs to release them)."""
    made: list[tuple[str, str]] = []

    def create(obj: JSON) -> JSON:
        kind = obj["kind"]
        if kind == "PersistentVolumeClaim":
            path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
        elif kind == "PersistentVolume":
            path = "/api/v1/persistentvolumes"
        else:
            path = "/apis/storage.k8s.io/v1/storageclasses"
        created = kube.create(path, obj)
        made.append((path, created["metadata"]["name"]))
        return created

    yield create
    for path, name in reversed(made):
        _remove(kube, f"{path}/{name}")
    for pv in kube.list("/api/v1/persistentvolumes"):
        if (pv["spec"].get("claimRef") or {}).get("namespace") == namespace:
            _remove(kube, f"/api/v1/persistentvolumes/{pv['metadata']['name']}")


def _remove(kube: Kube, path: str) -> None:
    try:
        kube.patch(path, {"metadata": {"finalizers": None}})
    except ApiError as e:
        if e.status != 404:
            raise
    kube.delete(path, missing_ok=True)


def storage_class(name: str, mode: str, provisioner: str = PROVISIONER) -> JSON:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode}


def claim(name: str, cls: str, volume: str = "") -> JSON:
    spec: JSON = {"accessModes": ["ReadWriteOnce"], "storageClassName": cls, "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def volume(name: str, cls: str, affinity: tuple[str, str] | None = None, labels: dict[str, str] | None = None) -> JSON:
    spec: JSON = {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                  "csi": {"driver": PROVISIONER, "volumeHandle": name}}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": affinity[0], "operator": "In", "values": [affinity[1]]}]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def bind_statically(kube: Kube, namespace: str, claim_name: str, volume_name: str) -> None:
    """A claim and a PV bound to each other already (as the PV controller leaves them)."""
    pvc = kube.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim_name}")
    kube.patch(f"/api/v1/persistentvolumes/{volume_name}", {"spec": {"claimRef": {
        "kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim_name, "uid": pvc["metadata"]["uid"],
        "apiVersion": "v1"}}})
    kube.patch(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim_name}",
               {"metadata": {"annotations": {BIND_COMPLETED: "yes"}}})


def claim_volumes(*claims: str) -> dict[str, Any]:
    return {"volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]}


def failed_message(kube: Kube, namespace: str, name: str, timeout: float = 30.0) -> str:
    pod = kube.wait_for(
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        lambda p: any(c["type"] == "PodScheduled" and c["status"] == "False" for c in p["status"].get("conditions", [])),
        timeout=timeout,
    )
    return str(next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")["message"])


def zone_of_volume(kube: Kube, name: str) -> str:
    pv = kube.get(f"/api/v1/persistentvolumes/{name}")
    return str(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0])


# --- the tests ---------------------------------------------------------------------------------------


def test_stateful_pods_get_volumes_in_their_zones(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON],
    storage: Callable[..., JSON], tmp_path: Path,
) -> None:
    tag = secrets.token_hex(3)
    zone_of = {}
    for zone in ("a", "b"):
        for _ in (1, 2):
            name = make_node(labels={ZONE: f"zone-{zone}-{tag}"})["metadata"]["name"]
            zone_of[name] = f"zone-{zone}-{tag}"
    nodes = list(zone_of)
    wffc = storage(storage_class(f"wffc-{tag}", "WaitForFirstConsumer"))["metadata"]["name"]
    local = storage(storage_class(f"local-{tag}", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"))["metadata"]["name"]
    storage(volume(f"local-pv-{tag}", local, affinity=("kubernetes.io/hostname", nodes[3])))
    for i in range(4):
        storage(claim(f"data-db-{i}", wffc))
    storage(claim("pinned-data", local))
    with pv_controller(kube, namespace) as controller, run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)) as ks:
        for i in range(4):
            create_pod(kube, f"db-{i}", namespace, scheduler_name=SCHEDULER, labels={"app": "db"},
                       extra_spec=claim_volumes(f"data-db-{i}"))
        create_pod(kube, "pinned", namespace, scheduler_name=SCHEDULER, extra_spec=claim_volumes("pinned-data"))
        placed = {f"db-{i}": wait_bound(kube, namespace, f"db-{i}", timeout=60) for i in range(4)}
        assert wait_bound(kube, namespace, "pinned", timeout=60) == nodes[3]
        for i in range(4):
            pvc = kube.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/data-db-{i}")
            assert pvc["metadata"]["annotations"][SELECTED_NODE] == placed[f"db-{i}"]
            assert zone_of_volume(kube, pvc["spec"]["volumeName"]) == zone_of[placed[f"db-{i}"]]
        pinned = kube.get(f"/api/v1/persistentvolumes/local-pv-{tag}")
        assert pinned["spec"]["claimRef"]["name"] == "pinned-data"
        assert pinned["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert len(controller.provisioned) == 4
        assert ks.metric("scheduler_schedule_attempts_total", result="scheduled", profile=SCHEDULER) == 5


def test_same_placements_and_messages_as_kube_scheduler(
    control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON],
    storage: Callable[..., JSON], tmp_path: Path,
) -> None:
    tag = secrets.token_hex(3)
    nodes = [make_node(labels={ZONE: f"zone-{z}-{tag}"})["metadata"]["name"] for z in ("a", "a", "b")]
    immediate = storage(storage_class(f"imm-{tag}", "Immediate", "kubernetes.io/no-provisioner"))["metadata"]["name"]
    local = storage(storage_class(f"local-{tag}", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"))["metadata"]["name"]
    sides = {"ks": SCHEDULER, "kube": "default-scheduler"}
    for side in sides:
        # A claim bound to a volume in a zone no node is in.
        storage(volume(f"far-{side}-{tag}", immediate, affinity=(ZONE, f"zone-z-{tag}")))
        storage(claim(f"far-{side}", immediate, volume=f"far-{side}-{tag}"))
        bind_statically(kube, namespace, f"far-{side}", f"far-{side}-{tag}")
        # A volume labelled with another zone (VolumeZone).
        storage(volume(f"labelled-{side}-{tag}", immediate, labels={ZONE: f"zone-z-{tag}"}))
        storage(claim(f"labelled-{side}", immediate, volume=f"labelled-{side}-{tag}"))
        bind_statically(kube, namespace, f"labelled-{side}", f"labelled-{side}-{tag}")
        # An unbound claim of an Immediate class.
        storage(claim(f"pending-{side}", immediate))
        # A WaitForFirstConsumer claim with one local volume that fits, on the last node.
        storage(volume(f"local-{side}-{tag}", local, affinity=("kubernetes.io/hostname", nodes[2])))
        storage(claim(f"local-{side}", local))
    cases = {"far": "far", "labelled": "labelled", "pending": "pending", "missing": "no-such-claim", "local": "local"}
    with pv_controller(kube, namespace), \
            run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)), \
            run_kube_scheduler(control_plane):
        for side, scheduler in sides.items():
            for case, claim_name in cases.items():
                name = f"{case}-{side}"
                claim_ref = claim_name if case == "missing" else f"{claim_name}-{side}"
                create_pod(kube, name, namespace, scheduler_name=scheduler, extra_spec=claim_volumes(claim_ref))
        assert wait_bound(kube, namespace, "local-kube", timeout=60) == nodes[2]
        assert wait_bound(kube, namespace, "local-ks", timeout=60) == nodes[2]
        n = len(kube.list("/api/v1/nodes"))
        expected = {
            "far": f"0/{n} nodes are available: {n} node(s) didn't match PersistentVolume's node affinity.",
            "labelled": f"0/{n} nodes are available: {n} node(s) had no available volume zone.",
            "pending": f"0/{n} nodes are available: pod has unbound immediate PersistentVolumeClaims.",
            "missing": f'0/{n} nodes are available: persistentvolumeclaim "no-such-claim" not found.',
        }
        not_helpful = f" preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
        for case, start in expected.items():
            theirs = failed_message(kube, namespace, f"{case}-kube")
            ours = failed_message(kube, namespace, f"{case}-ks")
            if case in ("pending", "missing"):
                # Rejected at PreFilter before DynamicResources' PreFilter ran, its PostFilter fails
                # reading its cycle state ("not found"), and that error is the PostFilter message.
                assert ours == start + " not found", (case, ours)
            else:
                assert ours == start + not_helpful, (case, ours)
            assert ours == theirs, (case, ours, theirs)
    # Each scheduler bound its claim to one of the two local volumes (either fits either claim).
    claimed = {kube.get(f"/api/v1/persistentvolumes/local-{side}-{tag}")["spec"]["claimRef"]["name"] for side in sides}
    assert claimed == {f"local-{side}" for side in sides}

