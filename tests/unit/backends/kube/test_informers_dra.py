"""The kube backend's DeviceClass watch: always on (DynamicResourceAllocation is GA and locked on in
kube v1.37.2), and each change reaching the cache DynamicResources reads."""

from __future__ import annotations

from typing import Any

from builders import make_node
from kubesched.api.dra import DeviceClass, DeviceClassSpec, ResourceClaim, ResourcePool, ResourceSlice, ResourceSliceSpec
from kubesched.api.objects import ObjectMeta
from kubesched.backends.kube.informers import (
    DEVICE_CLASSES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    DeviceClassHandler,
    ResourceClaimHandler,
    ResourceSliceHandler,
    build_informers,
)
from unit.simkit import run


def scheduler() -> Any:
    _, sim = run([make_node("n1").without("ephemeral-storage").manifest()])
    return sim.scheduler


def test_device_classes_are_watched() -> None:
    client: Any = object()  # reflectors are built, not started
    (r,) = [r for r in build_informers(client, scheduler()).reflectors if r.name == "deviceclasses"]
    assert r.path == DEVICE_CLASSES == "/apis/resource.k8s.io/v1/deviceclasses"
    assert r.kind is DeviceClass and isinstance(r.handler, DeviceClassHandler)


def test_each_change_reaches_the_cache() -> None:
    sched = scheduler()
    handler = DeviceClassHandler(sched)
    plain = DeviceClass(metadata=ObjectMeta(name="gpu", resource_version="1"))
    mapped = DeviceClass(metadata=ObjectMeta(name="gpu", resource_version="2"),
                         spec=DeviceClassSpec(extended_resource_name="example.com/gpu"))
    handler.on_add(plain)
    assert sched.cache.device_classes.class_for("example.com/gpu") is None
    handler.on_update(plain, mapped)
    assert sched.cache.device_classes.class_for("example.com/gpu") == "gpu"
    handler.on_delete(mapped)
    assert len(sched.cache.device_classes) == 0


def test_slices_and_claims_are_watched_and_reach_the_dra_manager() -> None:
    client: Any = object()
    sched = scheduler()
    by_name = {r.name: r for r in build_informers(client, sched).reflectors}
    assert by_name["resourceslices"].path == RESOURCE_SLICES == "/apis/resource.k8s.io/v1/resourceslices"
    assert by_name["resourceclaims"].path == RESOURCE_CLAIMS == "/apis/resource.k8s.io/v1/resourceclaims"
    assert "resourceclaimtemplates" not in by_name  # the resourceclaim controller's, not kube-scheduler's
    slices = ResourceSliceHandler(sched)
    rs = ResourceSlice(metadata=ObjectMeta(name="s", resource_version="1"),
                       spec=ResourceSliceSpec(driver="d", node_name="n1", pool=ResourcePool(name="n1")))
    slices.on_add(rs)
    assert sched.dra.slices.candidates("n1") == [rs]
    slices.on_delete(rs)
    assert len(sched.dra.slices) == 0
    claims = ResourceClaimHandler(sched)
    claim = ResourceClaim(metadata=ObjectMeta(name="c", namespace="ns", uid="u", resource_version="4"))
    claims.on_add(claim)
    assert sched.dra.claims.get("ns", "c") is claim
    claims.on_delete(claim)
    assert sched.dra.claims.find("ns", "c") is None
