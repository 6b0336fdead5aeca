"""What the test builders produce: the typed objects, the manifests the simulator reads, and that
both describe one object."""

from __future__ import annotations

from builders import (
    cache_with,
    make_namespace,
    make_node,
    make_pod,
    make_pod_group,
    make_priority_class,
    make_pv,
    make_pvc,
    make_storage_class,
    make_xk8s_pod_group,
)
from kubesched.api.objects import Node, Pod
from kubesched.api.podinfo import PodInfo
from kubesched.backends.sim.manifests import load_objects
from unit.simkit import priority_classes


def test_a_fresh_pod_is_one_pause_container_without_requests_in_default() -> None:
    p = make_pod("p").obj()
    assert isinstance(p, Pod)
    assert p.key == "default/p"
    assert p.metadata.uid.startswith("uid-p-")
    assert [(c.name, c.image, c.resources.requests) for c in p.spec.containers] == [("c", "registry.k8s.io/pause:3.9", {})]
    assert p.spec.node_name == "" and p.spec.priority is None and p.metadata.labels == {}


def test_pod_uids_are_unique_unless_given() -> None:
    assert make_pod("p").obj().metadata.uid != make_pod("p").obj().metadata.uid
    assert make_pod("p").uid("u1").obj().metadata.uid == "u1"
    assert "uid" not in make_pod("p").manifest()["metadata"]


def test_pod_fields() -> None:
    p = (make_pod("web").ns("shop").req(cpu="100m", memory="500Mi").req({"example.com/gpu": 1}, ephemeral_storage="1Gi")
         .limits(cpu="1").priority(10).label(app="web").label({"tier": "1"}).annotation(a="b").node("n1").scheduler("s")
         .toleration("k", "v", "NoSchedule").toleration("any", operator="Exists", seconds=5)
         .node_selector(disk="ssd").node_affinity({"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]},
                                                  preferred=[{"weight": 2, "preference": {"matchExpressions": []}}])
         .spread("zone", match={"app": "web"}).gate("g").claims("data").host_port(80).obj())
    assert p.key == "shop/web"
    c = p.spec.containers[0]
    assert c.resources.requests == {"cpu": "100m", "memory": "500Mi", "example.com/gpu": 1, "ephemeral-storage": "1Gi"}
    assert c.resources.limits == {"cpu": "1"}
    assert [(port.container_port, port.host_port) for port in c.ports] == [(80, 80)]
    assert p.spec.priority == 10 and p.spec.node_name == "n1" and p.spec.scheduler_name == "s"
    assert p.metadata.labels == {"app": "web", "tier": "1"} and p.metadata.annotations == {"a": "b"}
    assert [(t.key, t.operator, t.value, t.effect, t.toleration_seconds) for t in p.spec.tolerations] == [
        ("k", "", "v", "NoSchedule", None), ("any", "Exists", "", "", 5)]
    assert p.spec.node_selector == {"disk": "ssd"}
    affinity = p.spec.affinity.node_affinity  # type: ignore[union-attr]
    assert affinity.required_during_scheduling_ignored_during_execution.node_selector_terms[0].match_expressions[0].values == ["a"]  # type: ignore[union-attr]
    assert affinity.preferred_during_scheduling_ignored_during_execution[0].weight == 2  # type: ignore[union-attr]
    spread = p.spec.topology_spread_constraints[0]
    assert (spread.max_skew, spread.topology_key, spread.when_unsatisfiable) == (1, "zone", "DoNotSchedule")
    assert [g.name for g in p.spec.scheduling_gates] == ["g"]
    assert p.spec.volumes[0].persistent_volume_claim.claim_name == "data"  # type: ignore[union-attr]


def test_containers_and_raw_spec_fields_win() -> None:
    p = make_pod("p").req(cpu="1").containers({"name": "a", "image": "x"}, {"name": "b", "image": "y"}).spec(
        priorityClassName="high", overhead={"cpu": "250m"}).obj()
    assert [(c.name, c.resources.requests) for c in p.spec.containers] == [("a", {}), ("b", {})]
    assert p.spec.priority_class_name == "high" and p.spec.overhead == {"cpu": "250m"}


def test_pod_manifest_names_its_priority_as_a_class() -> None:
    m = make_pod("p").req(cpu="1").priority(7).arrival("5s").duration("60s").group("g").manifest()
    assert m["apiVersion"] == "v1" and m["kind"] == "Pod"
    assert m["spec"]["priorityClassName"] == "priority-7" and "priority" not in m["spec"]
    assert m["metadata"]["annotations"] == {"sim.kubesched.io/arrival": "5s", "sim.kubesched.io/duration": "60s"}
    assert m["spec"]["schedulingGroup"] == {"podGroupName": "g"}
    assert priority_classes([m]) == [make_priority_class("priority-7", 7)]


def test_info_is_the_pods_pod_info() -> None:
    pi = make_pod("p").req(cpu="500m", memory="1Gi").info()
    assert isinstance(pi, PodInfo) and pi.key == "default/p"


def test_a_fresh_node_has_the_default_capacity_and_its_hostname() -> None:
    n = make_node("n").obj()
    assert isinstance(n, Node)
    assert n.metadata.labels == {"kubernetes.io/hostname": "n"}
    expected = {"cpu": "4", "memory": "32Gi", "pods": 110, "ephemeral-storage": "100Gi"}
    assert n.status.allocatable == n.status.capacity == expected
    assert not n.spec.unschedulable and n.spec.taints == []


def test_node_fields() -> None:
    n = (make_node("n").capacity(cpu="8", pods=10).capacity({"example.com/gpu": "2"}).without("ephemeral-storage")
         .label(disk="ssd").zone("a").region("r").annotation(note="x").taint("gpu", "yes").taint("spot", effect="NoExecute")
         .unschedulable().image(["img:1"], 1000).obj())
    assert n.status.allocatable == {"cpu": "8", "memory": "32Gi", "pods": 10, "example.com/gpu": "2"}
    assert n.metadata.labels == {"kubernetes.io/hostname": "n", "disk": "ssd", "topology.kubernetes.io/zone": "a",
                                 "topology.kubernetes.io/region": "r"}
    assert n.metadata.annotations == {"note": "x"}
    assert [(t.key, t.value, t.effect) for t in n.spec.taints] == [("gpu", "yes", "NoSchedule"), ("spot", "", "NoExecute")]
    assert n.spec.unschedulable
    assert [(i.names, i.size_bytes) for i in n.status.images] == [(["img:1"], 1000)]


def test_manifests_load_into_the_same_objects_the_builders_make() -> None:
    """The simulator reads a builder's manifest as the builder's typed object (less what admission adds)."""
    node = make_node("n").capacity(cpu="2").zone("a").taint("k", "v")
    pod = make_pod("p").ns("default").req(cpu="1").label(app="x").toleration("k", "v", "NoSchedule")
    cluster = load_objects([node.manifest(), pod.manifest()])
    assert cluster.nodes[0].status.allocatable == node.obj().status.allocatable
    assert cluster.nodes[0].spec == node.obj().spec
    assert node.obj().metadata.labels.items() <= cluster.nodes[0].metadata.labels.items()
    loaded = cluster.pods[0].pod
    assert loaded.spec.containers == pod.obj().spec.containers
    assert loaded.spec.tolerations[0] == pod.obj().spec.tolerations[0]  # then DefaultTolerationSeconds' own


def test_cluster_objects() -> None:
    assert make_priority_class("high", 100, preemptionPolicy="Never") == {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100,
        "preemptionPolicy": "Never"}
    assert make_namespace("shop", {"team": "a"}) == {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "shop", "labels": {"team": "a"}}}
    assert make_pod_group("g", 2)["spec"] == {"schedulingPolicy": {"gang": {"minCount": 2}}}
    assert make_pod_group("g", None)["spec"] == {"schedulingPolicy": {"basic": {}}}
    assert make_xk8s_pod_group("g", 3, minResources={"cpu": "1"})["spec"] == {"minMember": 3, "minResources": {"cpu": "1"}}


def test_cache_with_holds_the_nodes_and_bound_pods() -> None:
    c = cache_with([make_node("a").obj()], [make_pod("p").node("a").obj()])
    assert c.table.name_of(0) == "a"


def test_a_claim_bound_to_a_volume_is_marked_bound() -> None:
    claim = make_pvc("data").ns("shop").cls("fast").size("5Gi").modes("ReadWriteOncePod").volume("pv-1").obj()
    assert claim.metadata.uid == "uid-shop-data" and int(claim.metadata.resource_version) >= 100
    assert claim.metadata.annotations == {"pv.kubernetes.io/bind-completed": "yes"}
    assert (claim.spec.storage_class_name, claim.spec.volume_name, claim.spec.access_modes) == ("fast", "pv-1", ["ReadWriteOncePod"])
    assert claim.spec.resources.requests == {"storage": "5Gi"}
    assert make_pvc("data").volume("pv-1").bound(False).obj().metadata.annotations == {}
    assert make_pvc("data").deleting().obj().metadata.deletion_timestamp is not None
    manifest = make_pvc("data").manifest()
    assert manifest["kind"] == "PersistentVolumeClaim" and "uid" not in manifest["metadata"]
    assert "storageClassName" not in manifest["spec"]


def test_a_volume_bound_to_a_claim() -> None:
    claim = make_pvc("data").obj()
    pv = make_pv("pv-1").cls("fast").size("2Gi").zones("a", "b").claim(claim).csi("csi.example.com", "h").obj()
    assert pv.status.phase == "Bound" and pv.spec.claim_ref.uid == claim.metadata.uid  # type: ignore[union-attr]
    terms = pv.spec.node_affinity.required.node_selector_terms  # type: ignore[union-attr]
    assert terms[0].match_expressions[0].values == ["a", "b"]
    assert make_pv("pv-2").obj().status.phase == "Available"
    assert make_pv("pv-2").claim(claim, with_uid=False).obj().spec.claim_ref.uid == ""  # type: ignore[union-attr]
    assert "status" not in make_pv("pv-2").manifest()


def test_storage_classes() -> None:
    wait = make_storage_class("wait").mode("WaitForFirstConsumer").topologies({"zone": ["a"]}).default().manifest()
    assert wait == {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                    "metadata": {"name": "wait", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                    "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer",
                    "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]}
    assert "volumeBindingMode" not in make_storage_class("unset").mode(None).manifest()
    assert make_storage_class("now").obj().volume_binding_mode == "Immediate"


def test_pod_container_owners_and_groups() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u", "controller": True}
    m = make_pod("p").container("main", "img:1").owned_by(owner).xk8s_group("g").manifest()
    assert m["spec"]["containers"] == [{"name": "main", "image": "img:1"}]
    assert m["metadata"]["ownerReferences"] == [owner]
    assert m["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "g"}
    assert make_node("n").uid("u-n").obj().metadata.uid == "u-n"
