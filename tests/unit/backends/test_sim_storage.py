"""The simulator with storage: StatefulSets' claims, the stand-in PV controller (binding,
provisioning in the selected node's zone, ephemeral claims), the volume plugins' verdicts with
kube's messages, and storage manifests refused as the API server refuses them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import make_node, make_pod, make_pv, make_pvc, make_storage_class
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import default_config

ZONE = "topology.kubernetes.io/zone"
PREEMPTION_NOT_HELPFUL = "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."


def zoned_nodes(*zones: str) -> list[dict[str, Any]]:
    return [make_node(f"{z}{i}").without("ephemeral-storage").label({ZONE: z}).manifest() for z in zones for i in (1, 2)]


def stateful_set(name: str, replicas: int, cls: str, **template_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}},
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}], **template_spec}},
            "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"kind": "data"}}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": cls, "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    }


def simulate(objects: list[dict[str, Any]]) -> tuple[Any, Simulation]:
    sim = Simulation(load_objects(objects), default_config())
    return asyncio.run(sim.run()), sim


def volume_zone(sim: Simulation, claim_key: str) -> str | None:
    pvc = sim.cluster.storage["PersistentVolumeClaim"][claim_key]
    pv = sim.cluster.storage["PersistentVolume"][pvc.spec.volume_name]
    assert pvc.status.phase == "Bound" and pv.status.phase == "Bound"
    if pv.spec.node_affinity is None:
        return None
    return pv.spec.node_affinity.required.node_selector_terms[0].match_expressions[0].values[0]  # type: ignore[no-any-return]


def test_stateful_set_volumes_follow_their_pods_zones() -> None:
    result, sim = simulate(
        [*zoned_nodes("a", "b", "c"), make_storage_class("fast").mode("WaitForFirstConsumer").manifest(), stateful_set("db", 6, "fast")]
    )
    assert result.pods_scheduled == 6, result.unschedulable
    for i in range(6):
        node_name = result.placements[f"default/db-{i}"]
        zone = node_name[0]
        assert volume_zone(sim, f"default/data-db-{i}") == zone
        pvc = sim.cluster.storage["PersistentVolumeClaim"][f"default/data-db-{i}"]
        assert pvc.metadata.annotations["volume.kubernetes.io/selected-node"] == node_name
        assert pvc.metadata.labels == {"kind": "data", "app": "db"}
    assert sim.cluster.provisioned == 6


def test_stateful_set_uses_claims_the_input_has() -> None:
    objects = [
        *zoned_nodes("a"),
        make_storage_class("fast").mode("Immediate").manifest(),
        make_pv("pv-x").size("5Gi").cls("fast").csi("csi.example.com", "pv-x").zones("a").manifest(),
        make_pvc("data-db-0").cls("fast").manifest(),
        stateful_set("db", 1, "fast"),
    ]
    result, sim = simulate(objects)
    assert result.pods_scheduled == 1
    assert sim.cluster.storage["PersistentVolumeClaim"]["default/data-db-0"].spec.volume_name == "pv-x"
    assert sim.cluster.provisioned == 0


def test_class_topology_decides_the_provisioned_volume() -> None:
    sc = (
        make_storage_class("zonal")
        .mode("WaitForFirstConsumer")
        .spec(allowedTopologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}])
        .manifest()
    )
    result, sim = simulate([*zoned_nodes("a", "b"), sc, stateful_set("db", 3, "zonal")])
    assert result.pods_scheduled == 3
    assert {result.placements[f"default/db-{i}"][0] for i in range(3)} == {"b"}
    assert {volume_zone(sim, f"default/data-db-{i}") for i in range(3)} == {"b"}


def test_claim_bound_in_another_zone_is_refused_with_kubes_message() -> None:
    objects = [
        *zoned_nodes("b"),
        make_pv("pv-a").size("5Gi").csi("csi.example.com", "pv-a").zones("a").manifest(),
        make_pvc("data").cls("").spec(volumeName="pv-a").manifest(),
        make_pod("web").req(cpu="100m", memory="100Mi").claims("data").manifest(),
    ]
    result, _ = simulate(objects)
    assert result.placements["default/web"] is None
    assert result.unschedulable["default/web"] == (
        "0/2 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity. "
        + PREEMPTION_NOT_HELPFUL.format(n=2))


def test_volume_zone_labels() -> None:
    objects = [
        *zoned_nodes("a", "b"),
        make_pv("pv-z").size("5Gi").label({ZONE: "a"}).csi("csi.example.com", "pv-z").manifest(),
        make_pvc("data").cls("").spec(volumeName="pv-z").manifest(),
        make_pod("web").req(cpu="100m", memory="100Mi").claims("data").manifest(),
        make_pv("pv-y").size("5Gi").label({ZONE: "c"}).csi("csi.example.com", "pv-y").manifest(),
        make_pvc("lost").cls("").spec(volumeName="pv-y").manifest(),
        make_pod("nowhere").req(cpu="100m", memory="100Mi").claims("lost").manifest(),
    ]
    result, _ = simulate(objects)
    assert result.placements["default/web"] in ("a1", "a2")
    assert result.unschedulable["default/nowhere"] == (
        "0/4 nodes are available: 4 node(s) had no available volume zone. " + PREEMPTION_NOT_HELPFUL.format(n=4))


def test_missing_claim_and_unbound_immediate_claim() -> None:
    objects = [
        *zoned_nodes("a"),
        make_storage_class("slow").mode("Immediate").provisioner("kubernetes.io/no-provisioner").manifest(),
        make_pvc("pending").cls("slow").manifest(),
        make_pod("waits").req(cpu="100m", memory="100Mi").claims("pending").manifest(),
        make_pod("lost").req(cpu="100m", memory="100Mi").claims("nope").manifest(),
    ]
    result, _ = simulate(objects)
    # As kube-scheduler v1.37.2 writes it: VolumeBinding's PreFilter refuses the pod before
    # DynamicResources' PreFilter runs, so its PostFilter fails reading its state ("not found"),
    # and that error is the PostFilter message (preemption never runs).
    assert result.unschedulable["default/waits"] == (
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found")
    assert result.unschedulable["default/lost"] == (
        '0/2 nodes are available: persistentvolumeclaim "nope" not found. not found')


def test_immediate_claims_bind_at_load_and_pods_follow_their_volumes() -> None:
    objects = [
        *zoned_nodes("a", "b"),
        make_storage_class("std").mode("Immediate").provisioner("kubernetes.io/no-provisioner").manifest(),
        make_pv("small").size("2Gi").cls("std").csi("csi.example.com", "small").zones("b").manifest(),
        make_pv("big").size("10Gi").cls("std").csi("csi.example.com", "big").zones("a").manifest(),
        make_pvc("c1").cls("std").size("1Gi").manifest(),
        make_pod("p1").req(cpu="100m", memory="100Mi").claims("c1").manifest(),
    ]
    result, sim = simulate(objects)
    assert sim.cluster.storage["PersistentVolumeClaim"]["default/c1"].spec.volume_name == "small"
    assert result.placements["default/p1"] in ("b1", "b2")


def test_static_local_volumes_are_bound_by_the_scheduler() -> None:
    local = make_storage_class("local").mode("WaitForFirstConsumer").provisioner("kubernetes.io/no-provisioner").manifest()
    vols = [make_pv(f"pv-{z}").size("5Gi").cls("local").csi("csi.example.com", f"pv-{z}").zones(z).manifest() for z in ("a", "b")]
    result, sim = simulate([*zoned_nodes("a", "b"), local, *vols, stateful_set("db", 3, "local")])
    assert result.pods_scheduled == 2
    stuck = [k for k, node_name in result.placements.items() if node_name is None]
    assert len(stuck) == 1
    assert result.unschedulable[stuck[0]].startswith(
        "0/4 nodes are available: 4 node(s) didn't find available persistent volumes to bind.")
    for key, node_name in result.placements.items():
        if node_name is not None:
            assert volume_zone(sim, f"default/data-{key.split('/')[1]}") == node_name[0]


def test_ephemeral_volumes_get_their_claims() -> None:
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                         "resources": {"requests": {"storage": "1Gi"}}}}
    p = make_pod("scratch").req(cpu="100m", memory="100Mi").spec(
        volumes=[{"name": "tmp", "ephemeral": {"volumeClaimTemplate": template}}]).manifest()
    result, sim = simulate([*zoned_nodes("a"), make_storage_class("fast").mode("WaitForFirstConsumer").manifest(), p])
    assert result.placements["default/scratch"] in ("a1", "a2")
    pvc = sim.cluster.storage["PersistentVolumeClaim"]["default/scratch-tmp"]
    assert pvc.metadata.owner_references[0].kind == "Pod"
    assert volume_zone(sim, "default/scratch-tmp") == "a"


def test_default_storage_class() -> None:
    default = make_storage_class("std").mode("WaitForFirstConsumer").default().manifest()
    result, sim = simulate(
        [*zoned_nodes("a"), default, make_pvc("c").manifest(), make_pod("p").req(cpu="100m", memory="100Mi").claims("c").manifest()]
    )
    assert sim.cluster.storage["PersistentVolumeClaim"]["default/c"].spec.storage_class_name == "std"
    assert result.pods_scheduled == 1


def test_read_write_once_pod_claim_is_used_once() -> None:
    objects = [
        *zoned_nodes("a"),
        make_storage_class("fast").mode("Immediate").manifest(),
        make_pvc("solo").cls("fast").spec(accessModes=["ReadWriteOncePod"]).manifest(),
        make_pod("first").req(cpu="100m", memory="100Mi").claims("solo").manifest(),
        make_pod("second").req(cpu="100m", memory="100Mi").arrival("5").claims("solo").manifest(),
    ]
    result, _ = simulate(objects)
    assert result.placements["default/first"] is not None
    assert result.unschedulable["default/second"].startswith(
        "0/2 nodes are available: 2 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod.")


def test_volume_limits_from_csinodes() -> None:
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "a1"},
               "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "a1", "allocatable": {"count": 1}}]}}
    objects = [
        make_node("a1").without("ephemeral-storage").manifest(),
        csinode,
        make_storage_class("fast").mode("Immediate").manifest(),
        make_pvc("c1").cls("fast").manifest(),
        make_pvc("c2").cls("fast").manifest(),
        make_pod("one").req(cpu="100m", memory="100Mi").claims("c1").manifest(),
        make_pod("two").req(cpu="100m", memory="100Mi").arrival("5").claims("c2").manifest(),
    ]
    result, _ = simulate(objects)
    assert result.placements["default/one"] == "a1"
    assert result.unschedulable["default/two"].startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            make_pvc("c").size("0").manifest(),
            'PersistentVolumeClaim default/c: The PersistentVolumeClaim "c" is invalid: '
            'spec.resources[storage]: Invalid value: "0": must be greater than zero',
        ),
        (
            {**make_pvc("c").manifest(), "spec": {"resources": {"requests": {"storage": "1Gi"}}}},
            'PersistentVolumeClaim default/c: The PersistentVolumeClaim "c" is invalid: '
            "spec.accessModes: Required value: at least 1 access mode is required",
        ),
        (
            {**make_pvc("c").manifest(), "spec": {"accessModes": ["ReadWriteOnce"]}},
            'PersistentVolumeClaim default/c: The PersistentVolumeClaim "c" is invalid: spec.resources[storage]: Required value',
        ),
        (
            make_pvc("c").spec(accessModes=["ReadWriteOncePod", "ReadWriteOnce"]).manifest(),
            'PersistentVolumeClaim default/c: The PersistentVolumeClaim "c" is invalid: '
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
        ),
        (
            {
                **make_pv("v").size("5Gi").csi("csi.example.com", "v").manifest(),
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
            },
            'PersistentVolume v: The PersistentVolume "v" is invalid: spec: Required value: must specify a volume type',
        ),
        (
            make_pv("v").size("5Gi").csi("csi.example.com", "v").spec(local={"path": "/mnt"}).manifest(),
            'PersistentVolume v: The PersistentVolume "v" is invalid: [spec.nodeAffinity: Required value: Local volume requires '
            "node affinity, spec.csi: Forbidden: may not specify more than 1 volume type]",
        ),
        (
            make_pv("v").size("5Gi").csi("csi.example.com", "v").zones("a").spec(hostPath={"path": "/mnt"}).manifest(),
            'PersistentVolume v: The PersistentVolume "v" is invalid: spec.csi: Forbidden: may not specify more than 1 volume type',
        ),
        (
            {
                **make_pv("v").size("5Gi").csi("csi.example.com", "v").manifest(),
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"}},
            },
            'PersistentVolume v: The PersistentVolume "v" is invalid: spec.nodeAffinity: Required value: Local volume requires '
            "node affinity",
        ),
        (
            make_storage_class("s").mode("Sometimes").manifest(),
            'StorageClass s: The StorageClass "s" is invalid: volumeBindingMode: Unsupported value: "Sometimes": supported values: '
            '"Immediate", "WaitForFirstConsumer"',
        ),
        (
            {**make_storage_class("s").mode("WaitForFirstConsumer").manifest(), "provisioner": ""},
            'StorageClass s: The StorageClass "s" is invalid: provisioner: Required value',
        ),
        (
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": "n"},
                "spec": {"drivers": [{"name": "d.example.com"}]},
            },
            'CSINode n: The CSINode "n" is invalid: spec.drivers[0].nodeID: Required value',
        ),
        (
            {**make_pvc("c").manifest(), "spec": {**make_pvc("c").manifest()["spec"], "accessMode": ["ReadWriteOnce"]}},
            'PersistentVolumeClaim default/c: PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: '
            'strict decoding error: unknown field "spec.accessMode"',
        ),
    ],
)
def test_bad_storage_manifests(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_objects([obj], "storage.yaml")
    assert str(info.value) == f"storage.yaml: document 1: {message}"


def test_bad_claim_template_in_a_stateful_set() -> None:
    sts = stateful_set("db", 1, "fast")
    del sts["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"]
    with pytest.raises(ManifestError) as info:
        load_objects([sts], "sts.yaml")
    assert str(info.value) == ('sts.yaml: document 1: StatefulSet default/db: The StatefulSet "db" is invalid: '
                               "spec.volumeClaimTemplates[0].spec.accessModes: Required value: at least 1 access mode is required")


def test_pod_volume_without_claim_name() -> None:
    p = make_pod("p").req(cpu="100m", memory="100Mi").manifest()
    p["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {}}]
    with pytest.raises(ManifestError) as info:
        load_objects([p], "p.yaml")
    assert str(info.value).endswith('The Pod "p" is invalid: spec.volumes[0].persistentVolumeClaim.claimName: Required value')


def test_a_claim_created_later_lets_the_pod_in_at_once() -> None:
    """The pod waits in the unschedulable pool; the claim's creation (a PersistentVolumeClaim Add
    event that VolumeRestrictions' hint and VolumeBinding's accept) brings it back at once, not at
    the pool's five-minute flush."""
    later = {"metadata": {"annotations": {"sim.kubesched.io/arrival": "30"}}}
    sc = make_storage_class("fast").mode("WaitForFirstConsumer").manifest()
    pvc = make_pvc("late").cls("fast").manifest()
    pvc["metadata"].update(later["metadata"])
    result, sim = simulate(
        [*zoned_nodes("a"), sc, make_pod("waiting").req(cpu="100m", memory="100Mi").claims("late").manifest(), pvc]
    )
    assert result.placements["default/waiting"] in ("a1", "a2")
    record = sim.scheduler.recorder.latest["default/waiting"]
    assert record.attempt == 2 and 30 <= record.time < 31


def test_storage_arrival_beyond_the_limit_is_refused() -> None:
    pvc = make_pvc("late").cls("fast").manifest()
    pvc["metadata"]["annotations"] = {"sim.kubesched.io/arrival": "1e12"}
    with pytest.raises(ManifestError) as info:
        load_objects([pvc], "s.yaml")
    assert "metadata.annotations[sim.kubesched.io/arrival]" in str(info.value)
    assert "over the simulator's limit" in str(info.value)
