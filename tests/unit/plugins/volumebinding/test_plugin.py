"""VolumeBinding, with kube's cases (volume_binding_test.go TestVolumeBinding, binder_test.go's
FindPodVolumes, AssumePodVolumes, BindPodVolumes and CheckBindings, the hints): claims bound and
unbound, static binding by size, modes and node affinity, dynamic provisioning by topology and
capacity, scores by utilization, and the Reserve / PreBind / Unreserve round with its API writes."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import numpy as np
import pytest

from builders import make_node, make_pod, make_pv, make_pvc, make_storage_class
from kubesched.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    PersistentVolumeClaim,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.infra.clock import VirtualClock
from kubesched.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    ERR_UNBOUND_IMMEDIATE,
    VolumeBinding,
    VolumeBindingArgs,
)
from unit.plugins.storagekit import REGION, ZONE, add, capacity, claim_pod, csidriver, csinode
from unit.plugins.volumebinding.env import HOSTNAME, WAIT, WAIT_CAPACITY, WAIT_PROVISION, Env, nodes, unresolvable

# --- PreFilter ---------------------------------------------------------------------------------------


def test_pod_without_claims_skips_and_reserves_nothing() -> None:
    env = Env(nodes("node-a"))
    pi = make_pod("pod-a").info()
    status = env.pre_filter(pi)
    assert status is not None and status.code == Code.SKIP
    assert env.schedule(pi, "node-a") is None
    assert env.handle.writes == []


def test_pod_with_other_volumes_skips() -> None:
    env = Env(nodes("node-a"))
    pi = make_pod("p").spec(volumes=[{"name": "c", "configMap": {"name": "x"}}, {"name": "e", "emptyDir": {}}]).info()
    status = env.pre_filter(pi)
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize(("claims", "objects", "reason"), [
    (("pvc-a",), [], 'persistentvolumeclaim "pvc-a" not found'),
    (("pvc-a", "pvc-b"), [make_pvc("pvc-a").cls("wait-sc").volume("pv-a").obj()], 'persistentvolumeclaim "pvc-b" not found'),
    (("pvc-a",), [make_pvc("pvc-a").cls("immediate-sc").obj()], ERR_UNBOUND_IMMEDIATE),
    (("pvc-a",), [make_pvc("pvc-a").cls("wait-sc").volume("pv-a").phase("Lost").obj()],
     'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
    (("pvc-a",), [make_pvc("pvc-a").cls("wait-sc").deleting().obj()], 'persistentvolumeclaim "pvc-a" is being deleted'),
    # A claim naming a volume the PV controller has not bound yet is immediate (pre-bound).
    (("pvc-a",), [make_pvc("pvc-a").cls("wait-sc").volume("pv-a").bound(False).obj()], ERR_UNBOUND_IMMEDIATE),
    # No class, or one that does not exist: immediate.
    (("pvc-a",), [make_pvc("pvc-a").obj()], ERR_UNBOUND_IMMEDIATE),
    (("pvc-a",), [make_pvc("pvc-a").cls("no-such-class").obj()], ERR_UNBOUND_IMMEDIATE),
])
def test_prefilter_rejections(claims: tuple[str, ...], objects: list[Any], reason: str) -> None:
    env = Env(nodes("node-a"), *objects)
    status = env.pre_filter(claim_pod("pod-a", *claims))
    assert status is not None and (status.code, status.reasons) == unresolvable(reason)


def test_class_without_binding_mode_is_an_error() -> None:
    env = Env(nodes("node-a"), make_storage_class("unset").mode(None).obj(), make_pvc("pvc-a").cls("unset").obj())
    status = env.pre_filter(claim_pod("pod-a", "pvc-a"))
    assert status is not None and (status.code, status.reasons) == (Code.ERROR, ('VolumeBindingMode not set for StorageClass "unset"',))


def test_ephemeral_volumes() -> None:
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "pod-a", "uid": "uid-a", "controller": True}
    pi = claim_pod("pod-a", ephemeral=("data",), uid="uid-a")
    env = Env(nodes("node-a"))
    status = env.pre_filter(pi)
    assert status is not None and status.reasons == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-data"',)
    env = Env(nodes("node-a"), make_pvc("pod-a-data").cls("wait-sc").volume("pv").bound(True).obj())
    status = env.pre_filter(pi)
    assert status is not None and status.reasons == ("PVC default/pod-a-data was not created for pod default/pod-a (pod is not owner)",)
    env = Env(nodes("node-a"), make_pvc("pod-a-data").cls("wait-sc").volume("pv").owned_by(owner).obj(), make_pv("pv").cls("wait-sc").obj())
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": None}


# --- Filter --------------------------------------------------------------------------------------------


def test_all_bound() -> None:
    env = Env(nodes("node-a", "node-b", node_a={"foo": "bar"}), make_pvc("pvc-a").cls("wait-sc").volume("pv-a").obj(),
              make_pv("pv-a").cls("wait-sc").affinity({"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}).obj())
    pi = claim_pod("pod-a", "pvc-a")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": None, "node-b": unresolvable(ERR_REASON_NODE_CONFLICT)}
    assert env.scores(pi) is None  # nothing to score: PreScore skips
    assert env.schedule(pi, "node-a") is None
    assert env.handle.writes == []


def test_unbound_claims_no_matches() -> None:
    env = Env(nodes("node-a"), make_pvc("pvc-a").cls("wait-sc").obj())
    pi = claim_pod("pod-a", "pvc-a")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT)}


def test_bound_and_unbound_unsatisfied() -> None:
    affinity = [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]
    env = Env(nodes("node-a", node_a={"foo": "barbar"}), make_pvc("pvc-a").cls("wait-sc").volume("pv-a").obj(),
              make_pvc("pvc-b").cls("wait-sc").obj(), make_pv("pv-a").cls("wait-sc").affinity(*affinity).obj())
    pi = claim_pod("pod-a", "pvc-a", "pvc-b")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)}


def test_pv_not_found() -> None:
    env = Env(nodes("node-a"), make_pvc("pvc-a").cls("wait-sc").volume("pv-a").obj())
    pi = claim_pod("pod-a", "pvc-a")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_PV_NOT_EXIST)}


def test_missing_pv_after_a_mismatch_reports_the_mismatch_only() -> None:
    env = Env(
        nodes("node-a", "node-b"),
        make_pvc("pvc-a").cls("wait-sc").volume("pv-a").obj(),
        make_pvc("pvc-b").cls("wait-sc").volume("gone").obj(),
        make_pv("pv-a").cls("wait-sc").affinity({"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-a"]}]}).obj(),
    )
    pi = claim_pod("pod-a", "pvc-a", "pvc-b")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_PV_NOT_EXIST), "node-b": unresolvable(ERR_REASON_NODE_CONFLICT)}


def test_pv_affinity_ignores_node_name_fields() -> None:
    """kube checks a PV's affinity against the node's labels alone: matchFields never match a name."""
    env = Env(nodes("node-a"), make_pvc("pvc-a").cls("wait-sc").volume("pv-a").obj(),
              make_pv("pv-a").affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}).obj())
    pi = claim_pod("pod-a", "pvc-a")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_NODE_CONFLICT)}


def local_pvs() -> list[Any]:
    def local(name: str, size: str, host: str) -> Any:
        return make_pv(name).cls("wait-sc").size(size).affinity({"matchExpressions": [{"key": HOSTNAME, "operator": "In",
                                                                                    "values": [host]}]}).obj()
    return [local("pv-a-0", "200Gi", "node-a"), local("pv-a-1", "200Gi", "node-a"), local("pv-b-0", "100Gi", "node-b"),
            local("pv-b-1", "100Gi", "node-b")]


def test_local_volumes_with_close_capacity_are_preferred() -> None:
    env = Env(nodes("node-a", "node-b", "node-c"), make_pvc("pvc-a").cls("wait-sc").size("50Gi").obj(), *local_pvs())
    pi = claim_pod("pod-a", "pvc-a")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": None, "node-b": None, "node-c": unresolvable(ERR_REASON_BIND_CONFLICT)}
    assert env.scores(pi) == {"node-a": 75, "node-b": 50, "node-c": 0}


def test_local_volumes_with_multiple_claims() -> None:
    env = Env(nodes("node-a", "node-b", "node-c"), make_pvc("pvc-0").cls("wait-sc").size("50Gi").obj(),
              make_pvc("pvc-1").cls("wait-sc").size("100Gi").obj(), *local_pvs())
    pi = claim_pod("pod-a", "pvc-0", "pvc-1")
    assert env.pre_filter(pi) is None
    assert env.filter(pi) == {"node-a": None, "node-b": None, "node-c": unresolvable(ERR_REASON_BIND_CONFLICT)}
    # node-a: 150Gi of 400Gi (37 % used: 63); node-b: 150 of 200 (75 %: 25), as kube's multiple-claims case.
    assert env.scores(pi) == {"node-a": 63, "node-b": 25, "node-c": 0}


def zonal() -> tuple[list[Any], list[Any]]:
    node_list = [make_node(f"zone-{z}-node-{n}").label({REGION: f"region-{z}", ZONE: f"zone-{z}"}).obj()
                 for z in "abc" for n in "ab"]
    affinity = [{"matchExpressions": [{"key": REGION, "operator": "In", "values": ["region-{}"]},
                                      {"key": ZONE, "operator": "In", "values": ["zone-{}"]}]}]

    def zoned(name: str, size: str, z: str) -> Any:
        terms = msgspec.json.decode(msgspec.json.encode(affinity).replace(b"{}", z.encode()))
        return make_pv(name).cls("wait-sc").size(size).affinity(*terms).obj()

    volumes = [zoned("pv-a-0", "200Gi", "a"), zoned("pv-a-1", "200Gi", "a"), zoned("pv-b-0", "100Gi", "b"),
               zoned("pv-b-1", "100Gi", "b")]
    return node_list, volumes


def test_zonal_volumes_with_close_capacity_are_preferred() -> None:
    node_list, volumes = zonal()
    env = Env(node_list, make_pvc("pvc-a").cls("wait-sc").size("50Gi").obj(), *volumes)
    pi = claim_pod("pod-a", "pvc-a")
    env.pre_filter(pi)
    conflict = unresolvable(ERR_REASON_BIND_CONFLICT)
    assert list(env.filter(pi).values()) == [None, None, None, None, conflict, conflict]
    assert list(env.scores(pi).values()) == [75, 75, 50, 50, 0, 0]  # type: ignore[union-attr]


def test_zonal_volumes_custom_shape() -> None:
    node_list, volumes = zonal()
    shape = [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}]
    env = Env(node_list, make_pvc("pvc-a").cls("wait-sc").size("50Gi").obj(), *volumes, args={"shape": shape})
    pi = claim_pod("pod-a", "pvc-a")
    env.pre_filter(pi)
    env.filter(pi)
    assert list(env.scores(pi).values()) == [15, 15, 30, 30, 0, 0]  # type: ignore[union-attr]


def test_smallest_fitting_volume_is_chosen_and_claims_by_size() -> None:
    host = [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-a"]}]}]
    env = Env(
        nodes("node-a"),
        make_pvc("big").cls("wait-sc").size("20Gi").obj(),
        make_pvc("small").cls("wait-sc").size("5Gi").obj(),
        make_pv("pv-10").cls("wait-sc").size("10Gi").affinity(*host).obj(),
        make_pv("pv-30").cls("wait-sc").size("30Gi").affinity(*host).obj(),
        make_pv("pv-6").cls("wait-sc").size("6Gi").affinity(*host).obj(),
    )
    env.handle.controller = pv_controller(env)
    pi = claim_pod("p", "big", "small")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None}
    assert env.schedule(pi, "node-a") is None
    bound = {w.spec.claim_ref.name: w.metadata.name for w in env.handle.writes if w.kind == "PersistentVolume"}
    assert bound == {"small": "pv-6", "big": "pv-30"}


def test_two_claims_do_not_take_the_same_volume() -> None:
    env = Env(
        nodes("node-a"), make_pvc("c1").cls("wait-sc").obj(), make_pvc("c2").cls("wait-sc").obj(), make_pv("only").cls("wait-sc").obj()
    )
    pi = claim_pod("p", "c1", "c2")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT)}
    env = Env(
        nodes("node-a"),
        make_pvc("c1").cls("wait-sc").obj(),
        make_pvc("c2").cls("wait-sc").obj(),
        make_pv("one").cls("wait-sc").obj(),
        make_pv("two").cls("wait-sc").obj(),
    )
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None}


@pytest.mark.parametrize(("volume", "fits"), [
    (make_pv("v").cls("wait-sc").modes("ReadWriteOnce", "ReadOnlyMany").obj(), True),
    (make_pv("v").cls("wait-sc").modes("ReadOnlyMany").obj(), False),
    (make_pv("v").cls("wait-sc").size("500Mi").obj(), False),
    (make_pv("v").cls("wait-sc").volume_mode("Block").obj(), False),
    (make_pv("v").cls("other").obj(), False),
    (make_pv("v").cls("wait-sc").phase("Pending").obj(), False),
    (make_pv("v").cls("wait-sc").claim(make_pvc("someone-else").obj()).obj(), False),
    (make_pv("v").cls("wait-sc").label(tier="gold").obj(), True),
])
def test_matching_rules(volume: Any, fits: bool) -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").selector({"matchLabels": {"tier": "gold"}} if "tier" in
                                   volume.metadata.labels else None).obj(), volume)
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None if fits else unresolvable(ERR_REASON_BIND_CONFLICT)}


def test_selector_must_match() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").selector({"matchLabels": {"tier": "gold"}}).obj(),
              make_pv("v").cls("wait-sc").label(tier="silver").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT)}


def test_prebound_volume_decides() -> None:
    claim = make_pvc("c").cls("wait-sc").obj()
    host_b = [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["node-b"]}]}]
    env = Env(nodes("node-a", "node-b"), claim, make_pv("mine").cls("wait-sc").affinity(*host_b).claim(claim).phase("Available").obj(),
              make_pv("free").cls("wait-sc").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    # The volume pre-bound to the claim wins where it fits; elsewhere nothing else is taken.
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT), "node-b": None}


# --- dynamic provisioning ----------------------------------------------------------------------------


def test_provisioning_needs_a_provisioner() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT)}
    env = Env(nodes("node-a"), make_storage_class("np").mode("WaitForFirstConsumer").provisioner("kubernetes.io/no-provisioner").obj(),
              make_pvc("c").cls("np").obj())
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT)}


def test_provisioning_in_allowed_topologies() -> None:
    sc = make_storage_class("topo").mode("WaitForFirstConsumer").topologies(*[{ZONE: ["zone-a"]}]).obj()
    env = Env(
        [make_node("a").label({ZONE: "zone-a"}).obj(), make_node("b").label({ZONE: "zone-b"}).obj(), make_node("c").obj()],
        sc,
        make_pvc("c").cls("topo").obj(),
    )
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"a": None, "b": unresolvable(ERR_REASON_BIND_CONFLICT), "c": unresolvable(ERR_REASON_BIND_CONFLICT)}


def test_one_matched_one_provisioned_one_bound() -> None:
    claim = make_pvc("bound").cls("wait-sc").volume("pv-bound").obj()
    env = Env(nodes("node-a"), claim, make_pv("pv-bound").cls("wait-sc").claim(claim).obj(), make_pvc("static").cls("wait-sc").obj(),
              make_pv("pv-free").cls("wait-sc").obj(), make_pvc("dynamic").cls("wait-provision").obj())
    pi = claim_pod("p", "bound", "static", "dynamic")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None}


def test_selected_node_claim_fits_that_node_only() -> None:
    env = Env(nodes("node-a", "node-b"), make_pvc("c").cls("wait-provision").annotation({ANN_SELECTED_NODE: "node-b"}).obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT), "node-b": None}


def test_provisioning_problems_in_the_class_are_errors() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-provision").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.cache.storage.delete("storage.k8s.io/StorageClass", WAIT_PROVISION)  # gone between PreFilter and Filter
    assert env.filter(pi) == {"node-a": (Code.ERROR, ('failed to find storage class "wait-provision"',))}


def test_capacity_tracking() -> None:
    def host_cap(name: str, size: str) -> Any:
        return capacity(name, WAIT_CAPACITY.metadata.name, size=size, topology={HOSTNAME: name})
    objs = [make_pvc("pvc-dynamic").cls(WAIT_CAPACITY.metadata.name).size("10Gi").obj(),
            host_cap("node-a", "100Gi"), host_cap("node-b", "50Gi"), host_cap("node-c", "10Gi")]
    env = Env(nodes("node-a", "node-b", "node-c", "node-d"), *objs)
    pi = claim_pod("pod-a", "pvc-dynamic")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None, "node-b": None, "node-c": None,
                              "node-d": unresolvable(ERR_REASON_NOT_ENOUGH_SPACE)}
    scores = env.scores(pi)
    assert scores is not None and (scores["node-a"], scores["node-b"], scores["node-c"]) == (90, 80, 0)


def test_capacity_with_static_binds_scores_the_static_ones() -> None:
    def host_cap(name: str, size: str) -> Any:
        return capacity(name, WAIT_CAPACITY.metadata.name, size=size, topology={HOSTNAME: name})

    def static(name: str, host: str) -> Any:
        return make_pv(name).cls("wait-sc").size("100Gi").affinity({"matchExpressions": [{"key": HOSTNAME, "operator": "In",
                                                                                      "values": [host]}]}).obj()

    objs = [
        make_pvc("pvc-dynamic").cls(WAIT_CAPACITY.metadata.name).size("10Gi").obj(),
        make_pvc("pvc-static").cls("wait-sc").size("50Gi").obj(),
        host_cap("node-a", "100Gi"),
        host_cap("node-b", "50Gi"),
        host_cap("node-c", "10Gi"),
        static("pv-static-a", "node-a"),
        static("pv-static-b", "node-b"),
        static("pv-static-c", "node-c"),
    ]
    env = Env(nodes("node-a", "node-b", "node-c"), *objs)
    pi = claim_pod("pod-a", "pvc-dynamic", "pvc-static")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None, "node-b": None, "node-c": None}
    assert env.scores(pi) == {"node-a": 50, "node-b": 50, "node-c": 50}


def test_capacity_not_tracked_without_the_driver_asking() -> None:
    env = Env(nodes("node-a"), make_storage_class("plain").mode("WaitForFirstConsumer").provisioner("other.driver").obj(),
              csidriver("other.driver", storage_capacity=False), make_pvc("c").cls("plain").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None}


# --- Reserve, PreBind, Unreserve ---------------------------------------------------------------------


def pv_controller(env: Env) -> Any:
    """Binds as kube's PV controller would: a PV with a claimRef binds its claim; a claim with a
    selected node gets a new PV in that node's zone."""
    storage = env.cache.storage

    def run(resource: str, obj: Any) -> None:
        if resource == PERSISTENT_VOLUME and obj.spec.claim_ref is not None:
            claim = storage.pvc(f"{obj.spec.claim_ref.namespace}/{obj.spec.claim_ref.name}")
            bind(claim, obj.metadata.name)
        elif resource == PERSISTENT_VOLUME_CLAIM and ANN_SELECTED_NODE in obj.metadata.annotations:
            node_name = obj.metadata.annotations[ANN_SELECTED_NODE]
            zone = env.cache.table.node_labels[env.cache.table.index[node_name]].get(ZONE, "")
            storage.apply(PERSISTENT_VOLUME, make_pv(f"pvc-{obj.metadata.name}").cls("wait-provision").zones(zone).claim(obj).obj())
            bind(obj, f"pvc-{obj.metadata.name}")

    def bind(claim: PersistentVolumeClaim, volume: str) -> None:
        done = msgspec.structs.replace(
            claim,
            metadata=msgspec.structs.replace(claim.metadata, annotations={**claim.metadata.annotations, ANN_BIND_COMPLETED: "yes"},
                                             resource_version=str(int(claim.metadata.resource_version) + 1000)),
            spec=msgspec.structs.replace(claim.spec, volume_name=volume),
        )
        storage.apply(PERSISTENT_VOLUME_CLAIM, done)

    return run


def test_static_binding_round() -> None:
    claim = make_pvc("c").cls("wait-sc").obj()
    env = Env(nodes("node-a"), claim, make_pv("v").cls("wait-sc").obj())
    env.handle.controller = pv_controller(env)
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"node-a": None}
    env.cache.assume(pi, "node-a")
    assert env.plugin.reserve(env.state, pi, "node-a") is None
    # Assumed: another pod's cycle now sees the PV taken.
    assumed = env.cache.storage.get_pv("v")
    assert assumed is not None and assumed.spec.claim_ref is not None and assumed.spec.claim_ref.name == "c"
    assert assumed.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    other = Env.__new__(Env)
    other.__dict__.update(env.__dict__, state=CycleState())
    rival = claim_pod("rival", "c2")
    add(env.cache, make_pvc("c2").cls("wait-sc").obj())
    assert other.pre_filter(rival) is None
    assert other.filter(rival) == {"node-a": unresolvable(ERR_REASON_BIND_CONFLICT)}
    assert asyncio.run(env.plugin.pre_bind(env.state, pi, "node-a")) is None
    written = env.handle.writes[0]
    assert (written.kind, written.metadata.name, written.spec.claim_ref.uid) == ("PersistentVolume", "v", claim.metadata.uid)
    assert env.cache.storage.pvc("default/c").spec.volume_name == "v"  # type: ignore[union-attr]


def test_dynamic_provisioning_round() -> None:
    env = Env(
        [make_node("a1").label({ZONE: "a"}).obj(), make_node("b1").label({ZONE: "b"}).obj()], make_pvc("c").cls("wait-provision").obj()
    )
    env.handle.controller = pv_controller(env)
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    assert env.filter(pi) == {"a1": None, "b1": None}
    assert env.schedule(pi, "b1") is None
    assert [(w.kind, w.metadata.annotations[ANN_SELECTED_NODE]) for w in env.handle.writes] == [("PersistentVolumeClaim", "b1")]
    bound = env.cache.storage.pvc("default/c")
    assert bound is not None and bound.spec.volume_name == "pvc-c"


def test_provisioning_failure_is_an_error() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-provision").obj())
    storage = env.cache.storage

    def give_up(resource: str, obj: Any) -> None:  # a provisioner that failed removes the annotation
        if resource == PERSISTENT_VOLUME_CLAIM:
            annotations = {k: v for k, v in obj.metadata.annotations.items() if k != ANN_SELECTED_NODE}
            storage.apply(resource, msgspec.structs.replace(obj, metadata=msgspec.structs.replace(
                obj.metadata, annotations=annotations, resource_version=str(int(obj.metadata.resource_version) + 1))))

    env.handle.controller = give_up
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.filter(pi)
    status = env.schedule(pi, "node-a")
    assert (status.code, status.reasons) == (Code.ERROR, ('binding volumes: selectedNode annotation reset for PVC "c"',))


def test_write_conflict_is_an_error_and_restores() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-provision").obj())
    env.handle.fail_with = ('Operation cannot be fulfilled on persistentvolumeclaims "c": the object has been modified; '
                            "please apply your changes to the latest version and try again")
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.filter(pi)
    status = env.schedule(pi, "node-a")
    assert (status.code, status.reasons) == (Code.ERROR, (env.handle.fail_with,))
    claim = env.cache.storage.get_pvc("default/c")
    assert claim is not None and ANN_SELECTED_NODE not in claim.metadata.annotations  # the assumption is gone


def test_bind_timeout() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").obj(), make_pv("v").cls("wait-sc").obj(), args={"bindTimeoutSeconds": 0})
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.filter(pi)
    status = env.schedule(pi, "node-a")
    assert (status.code, status.reasons) == (Code.ERROR, ("binding volumes: context deadline exceeded",))


def test_waits_for_the_pv_controller_until_the_timeout() -> None:
    clock = VirtualClock()
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").obj(), make_pv("v").cls("wait-sc").obj(), args={"bindTimeoutSeconds": 5})
    env.handle._clock = clock
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.filter(pi)
    env.cache.assume(pi, "node-a")
    assert env.plugin.reserve(env.state, pi, "node-a") is None

    async def go() -> Any:
        task = asyncio.create_task(env.plugin.pre_bind(env.state, pi, "node-a"))
        for second in range(1, 7):
            await asyncio.sleep(0)
            clock.advance_to(second)
            clock.run_due()
            await asyncio.sleep(0)
        return await task

    status = asyncio.run(go())
    assert (status.code, status.reasons) == (Code.ERROR, ("binding volumes: context deadline exceeded",))


def test_deleted_pod_stops_the_wait() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").obj(), make_pv("v").cls("wait-sc").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.filter(pi)
    env.cache.assume(pi, "node-a")
    env.plugin.reserve(env.state, pi, "node-a")

    async def go() -> Any:
        task = asyncio.create_task(env.plugin.pre_bind(env.state, pi, "node-a"))
        await asyncio.sleep(0)
        env.cache.forget(pi)  # what a deletion does to the assumed pod
        return await task

    status = asyncio.run(go())
    assert status.reasons == ('binding volumes: pod does not exist any more: pod "p" not found',)


def test_unreserve_restores_the_assumed_objects() -> None:
    env = Env(
        nodes("node-a"), make_pvc("c").cls("wait-sc").obj(), make_pvc("d").cls("wait-provision").obj(), make_pv("v").cls("wait-sc").obj()
    )
    pi = claim_pod("p", "c", "d")
    env.pre_filter(pi)
    env.filter(pi)
    env.cache.assume(pi, "node-a")
    assert env.plugin.reserve(env.state, pi, "node-a") is None
    assert env.cache.storage.get_pv("v").spec.claim_ref is not None  # type: ignore[union-attr]
    assert ANN_SELECTED_NODE in env.cache.storage.get_pvc("default/d").metadata.annotations  # type: ignore[union-attr]
    env.plugin.unreserve(env.state, pi, "node-a")
    assert env.cache.storage.get_pv("v").spec.claim_ref is None  # type: ignore[union-attr]
    assert ANN_SELECTED_NODE not in env.cache.storage.get_pvc("default/d").metadata.annotations  # type: ignore[union-attr]


def test_an_informer_update_replaces_an_assumed_object() -> None:
    env = Env(nodes("node-a"), make_pvc("c").cls("wait-sc").obj(), make_pv("v").cls("wait-sc").obj())
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    env.filter(pi)
    env.cache.assume(pi, "node-a")
    env.plugin.reserve(env.state, pi, "node-a")
    newer = make_pv("v").cls("wait-sc").label(new="version").obj()
    env.cache.storage.apply(PERSISTENT_VOLUME, newer)
    assert env.cache.storage.get_pv("v") is newer


# --- args, events and hints ----------------------------------------------------------------------------


def test_args() -> None:
    assert VolumeBindingArgs().bind_timeout_seconds == 600
    with pytest.raises(ValueError, match="invalid BindTimeoutSeconds, should not be a negative value"):
        VolumeBindingArgs.model_validate({"bindTimeoutSeconds": -1})
    with pytest.raises(ValueError, match=r"shape\[0\].score: Invalid value: 11: not in valid range \[0, 10\]"):
        VolumeBindingArgs.model_validate({"shape": [{"utilization": 0, "score": 11}]})
    assert [(p.utilization, p.score) for p in VolumeBindingArgs.model_validate({"shape": []}).shape] == [(0, 10), (100, 0)]


def test_events() -> None:
    events = {(e.event.resource, e.event.action.value, e.hint is not None) for e in VolumeBinding().events_to_register()}
    resources = {r for r, _, _ in events}
    assert resources == {"storage.k8s.io/StorageClass", "PersistentVolumeClaim", "PersistentVolume", "Node",
                         "storage.k8s.io/CSINode", "storage.k8s.io/CSIDriver", "storage.k8s.io/CSIStorageCapacity"}


def test_hint_claim_change() -> None:
    hint = VolumeBinding.is_schedulable_after_claim_change
    assert hint(make_pod("p").info(), None, make_pvc("c").obj()) == QueueingHint.QueueSkip
    assert hint(claim_pod("p", "c"), None, make_pvc("c").ns("other").obj()) == QueueingHint.QueueSkip
    assert hint(claim_pod("p", "c"), None, make_pvc("d").obj()) == QueueingHint.QueueSkip
    assert hint(claim_pod("p", ephemeral=("e",)), None, make_pvc("x").obj()) == QueueingHint.QueueSkip
    assert hint(claim_pod("p", "c"), make_pvc("c").obj(), make_pvc("c").volume("v").obj()) == QueueingHint.Queue
    assert hint(claim_pod("p", ephemeral=("e",)), None, make_pvc("p-e").obj()) == QueueingHint.Queue


def test_hint_storage_class_change() -> None:
    hint = VolumeBinding.is_schedulable_after_storage_class_change
    pi = claim_pod("p", "c")
    assert hint(pi, None, WAIT) == QueueingHint.Queue
    topo = make_storage_class("wait-sc").mode("WaitForFirstConsumer").provisioner("").topologies(*[{ZONE: ["a"]}]).obj()
    assert hint(pi, WAIT, topo) == QueueingHint.Queue
    assert hint(pi, WAIT, WAIT) == QueueingHint.QueueSkip


def test_hint_csinode_change() -> None:
    hint = VolumeBinding.is_schedulable_after_csinode_change
    pi = claim_pod("p", "c")
    migrated = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}
    assert hint(pi, None, csinode("n")) == QueueingHint.Queue
    assert hint(pi, csinode("n"), csinode("n", annotations=migrated)) == QueueingHint.Queue
    assert hint(pi, csinode("n", annotations=migrated), csinode("n", annotations=migrated)) == QueueingHint.QueueSkip


def test_hint_capacity_change() -> None:
    hint = VolumeBinding.is_schedulable_after_capacity_change
    pi = claim_pod("p", "c")
    assert hint(pi, None, capacity("c1", "x")) == QueueingHint.Queue
    assert hint(pi, capacity("c1", "x"), capacity("c1", "x", size="1Gi")) == QueueingHint.Queue
    assert hint(pi, capacity("c1", "x", size="1Gi"), capacity("c1", "x", size="2Gi")) == QueueingHint.Queue
    assert hint(pi, capacity("c1", "x", size="1Gi"), capacity("c1", "x", max_size="2Gi", size="1Gi")) == QueueingHint.Queue
    assert hint(pi, capacity("c1", "x", size="2Gi", max_size="2Gi"), capacity("c1", "x", size="2Gi")) == QueueingHint.QueueSkip
    assert hint(pi, capacity("c1", "x", size="2Gi"), capacity("c1", "x", size="1Gi")) == QueueingHint.QueueSkip
    assert hint(pi, capacity("c1", "x", size="2Gi"), capacity("c1", "x", size="2Gi")) == QueueingHint.QueueSkip


def test_hint_csidriver_change() -> None:
    hint = VolumeBinding.is_schedulable_after_csidriver_change
    inline = make_pod("p").spec(volumes=[{"name": "v", "csi": {"driver": "d"}}]).info()
    assert hint(inline, csidriver("d", storage_capacity=True), csidriver("d", storage_capacity=False)) == QueueingHint.Queue
    assert hint(inline, csidriver("d", storage_capacity=True), csidriver("d", storage_capacity=True)) == QueueingHint.QueueSkip
    assert hint(inline, csidriver("e", storage_capacity=True), csidriver("e")) == QueueingHint.QueueSkip


def test_filter_costs_nothing_per_node_for_many_nodes() -> None:
    """Zonal PVs over 2000 nodes: a handful of numpy passes, not one Python call per node."""
    node_list = [make_node(f"n{i}").label({ZONE: f"z{i % 4}"}).obj() for i in range(2000)]
    volumes = [make_pv(f"v{i}").cls("wait-sc").size(f"{10 + i}Gi").zones(f"z{i % 4}").obj() for i in range(40)]
    env = Env(node_list, make_pvc("c").cls("wait-sc").size("10Gi").obj(), *volumes)
    pi = claim_pod("p", "c")
    env.pre_filter(pi)
    result = env.plugin.filter(env.state, pi, env.cache.table)
    assert result is None
    scores = env.plugin.score(env.state, pi, env.cache.table, env.cache.table.rows())
    assert np.unique(scores).size == 4  # one smallest volume per zone
