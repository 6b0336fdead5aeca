"""What VolumeBinding adds to its reasons for explanations: the claim that keeps a pod pending
(namespace/name), and what it lacks, such as a default StorageClass; the reasons stay kube's."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from builders import make_node, make_pv, make_pvc, make_storage_class
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import default_config
from kubesched.framework.status import Code
from kubesched.plugins.volumebinding import ERR_REASON_BIND_CONFLICT, ERR_REASON_NODE_CONFLICT, ERR_UNBOUND_IMMEDIATE
from unit.plugins.storagekit import claim_pod
from unit.plugins.volumebinding.env import Env

DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}


def prefilter_detail(env: Env, claims: tuple[str, ...] = ("data",)) -> str:
    pi = claim_pod("web", *claims)
    status = env.pre_filter(pi)
    assert status is not None and (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                                    (ERR_UNBOUND_IMMEDIATE,))
    return env.plugin.pre_filter_detail(env.state, pi, status)


def test_claim_without_a_class_and_no_default_class() -> None:
    env = Env([make_node("n1").obj()], make_pvc("data").obj())
    assert prefilter_detail(env) == (
        "PersistentVolumeClaim default/data is unbound: it names no storageClassName and there is no default "
        'StorageClass (none is annotated storageclass.kubernetes.io/is-default-class: "true"); without a class only '
        "the PV controller can bind it, to an available PersistentVolume without a class"
    )


def test_claim_without_a_class_while_a_default_exists() -> None:
    env = Env([make_node("n1").obj()], make_storage_class("standard").mode("Immediate").annotation(DEFAULT).obj(), make_pvc("data").obj())
    assert prefilter_detail(env) == (
        "PersistentVolumeClaim default/data is unbound and has no class: waiting for the PV controller to bind it to "
        "an available PersistentVolume without a class"
    )


def test_claim_asking_for_no_class() -> None:
    env = Env([make_node("n1").obj()], make_pvc("data").cls("").obj())
    assert prefilter_detail(env).startswith("PersistentVolumeClaim default/data is unbound and has no class:")


@pytest.mark.parametrize(("claim", "detail"), [
    (make_pvc("data").cls("fast").obj(), 'PersistentVolumeClaim default/data is unbound: its StorageClass "fast" does not exist'),
    (make_pvc("data").cls("immediate-sc").obj(),
     'PersistentVolumeClaim default/data is unbound: its StorageClass "immediate-sc" binds Immediate, so the PV '
     "controller binds or provisions it before the pod is scheduled"),
    (make_pvc("data").cls("wait-sc").volume("pv-a").bound(False).obj(),
     'PersistentVolumeClaim default/data is pre-bound to PersistentVolume "pv-a": waiting for the PV controller to '
     "bind them"),
])
def test_other_unbound_claims(claim: Any, detail: str) -> None:
    assert prefilter_detail(Env([make_node("n1").obj()], claim)) == detail


def test_only_the_unbound_immediate_claims_are_named() -> None:
    env = Env([make_node("n1").obj()], make_pvc("ready").cls("wait-sc").obj(), make_pvc("data").cls("fast").obj(),
              make_pv("pv-r").cls("wait-sc").obj())
    assert prefilter_detail(env, ("ready", "data")) == (
        'PersistentVolumeClaim default/data is unbound: its StorageClass "fast" does not exist')


def test_other_prefilter_rejections_get_nothing_more() -> None:
    env = Env([make_node("n1").obj()])
    pi = claim_pod("web", "missing")
    status = env.pre_filter(pi)
    assert status is not None and env.plugin.pre_filter_detail(env.state, pi, status) == ""


def filter_details(env: Env, pi: Any) -> dict[str, str]:
    assert env.pre_filter(pi) is None
    table = env.cache.table
    result = env.plugin.filter(env.state, pi, table)
    assert result is not None
    rows = np.flatnonzero(result.codes[: table.size])
    return {table.name_of(int(r)): env.plugin.miss_detail(env.state, pi, table, int(r)) for r in rows}


def test_node_detail_names_the_claim_and_the_class() -> None:
    env = Env([make_node("n1").obj()], make_pvc("data").cls("wait-sc").obj())
    pi = claim_pod("web", "data")
    assert filter_details(env, pi) == {"n1": (
        'PersistentVolumeClaim default/data cannot be bound on this node: no available PersistentVolume of class '
        '"wait-sc" fits, and StorageClass "wait-sc" provisions no volumes (provisioner "")'
    )}
    assert env.filter(pi) == {"n1": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))}


def test_node_detail_for_topology_and_bound_volumes() -> None:
    zoned = (make_storage_class("zoned").mode("WaitForFirstConsumer").provisioner("csi.example.com")
             .topologies({"topology.kubernetes.io/zone": ["z1"]}).obj())
    env = Env([make_node("n1").zone("z1").obj(), make_node("n2").zone("z2").obj()],
              zoned, make_pvc("data").cls("zoned").obj(), make_pvc("logs").cls("wait-sc").volume("pv-logs").obj(),
              make_pv("pv-logs").cls("wait-sc").zones("z1").claim(make_pvc("logs").cls("wait-sc").volume("pv-logs").obj()).obj())
    pi = claim_pod("web", "data", "logs")
    assert filter_details(env, pi) == {"n2": (
        'PersistentVolumeClaim default/logs is bound to PersistentVolume "pv-logs", whose node affinity excludes this '
        'node; PersistentVolumeClaim default/data cannot be bound on this node: no available PersistentVolume of class '
        '"zoned" fits, and StorageClass "zoned" does not provision in this node\'s topology (allowedTopologies)'
    )}
    assert env.filter(pi)["n2"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT))


MANIFESTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
     "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
     "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
     "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"containers": [{"name": "c", "image": "nginx"}],
              "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}},
]


def test_explain_names_the_claim_among_the_nearest_misses() -> None:
    sim = Simulation(load_objects(MANIFESTS), default_config(), seed=0)
    asyncio.run(sim.run())
    explained = sim.scheduler.explain("default", "web")
    assert explained is not None and explained["status"] == "pending"
    nearest = explained["filter"]["nearest"]
    assert nearest == [{"node": "n1", "failed": [{
        "plugin": "VolumeBinding",
        "reason": ERR_REASON_BIND_CONFLICT,
        "detail": 'PersistentVolumeClaim default/data cannot be bound on this node: no available PersistentVolume of '
                  'class "local" fits, and StorageClass "local" provisions no volumes (provisioner '
                  '"kubernetes.io/no-provisioner")',
    }]}]



def test_explain_names_the_unbound_claim_and_the_missing_default_class() -> None:
    """Refused at PreFilter (an unbound immediate claim): the explanation's PreFilter group carries
    VolumeBinding's detail, naming the claim and that no default StorageClass exists, and the
    terminal view prints it under the table."""
    from io import StringIO

    from rich.console import Console

    from kubesched.observe.explainview import render

    claim = {**MANIFESTS[2], "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    sim = Simulation(load_objects([MANIFESTS[0], claim, MANIFESTS[3]]), default_config(), seed=0)
    asyncio.run(sim.run())
    explained = sim.scheduler.explain("default", "web")
    assert explained is not None
    (group,) = explained["filter"]["rejected"]
    assert (group["plugin"], group["reason"]) == ("PreFilter:VolumeBinding", ERR_UNBOUND_IMMEDIATE)
    assert group["detail"].startswith(
        "PersistentVolumeClaim default/data is unbound: it names no storageClassName and there is no default StorageClass")
    out = StringIO()
    render(Console(file=out, width=400), explained)
    assert "PreFilter:VolumeBinding: PersistentVolumeClaim default/data is unbound" in out.getvalue()
