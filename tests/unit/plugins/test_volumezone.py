"""VolumeZone, with kube's own cases (volume_zone_test.go): single and multi zone, the beta and GA
labels, unbound claims by class, and the queueing hints."""

from __future__ import annotations

import pytest

from builders import UnitHandle, cache_with, make_node, make_pod, make_pv, make_pvc, make_storage_class
from kubesched.cache.cache import Cache
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from unit.plugins.storagekit import BETA_REGION, BETA_ZONE, REGION, ZONE, add, claim_pod, fresh, verdicts

CONFLICT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))


def single_zone_volumes(cache: Cache) -> Cache:
    return add(
        cache,
        make_pv("Vol_1").label({BETA_ZONE: "us-west1-a"}).obj(),
        make_pv("Vol_2").label({BETA_REGION: "us-west1", "uselessLabel": "none"}).obj(),
        make_pv("Vol_3").label({BETA_REGION: "us-west1"}).obj(),
        make_pv("Vol_Stable_1").label({ZONE: "us-west1-a"}).obj(),
        make_pv("Vol_Stable_2").label({REGION: "us-west1", "uselessLabel": "none"}).obj(),
        make_pv("Vol_Stable_3").label({ZONE: "us-west1-a", REGION: "us-west1-a"}).obj(),
        make_pv("Vol_M1").label({BETA_ZONE: "us-west1-c__us-west1-a"}).obj(),
        make_pv("Vol_M2").label({ZONE: "us-west1-c__us-west1-a"}).obj(),
        make_pvc("PVC_1").volume("Vol_1").obj(),
        make_pvc("PVC_2").volume("Vol_2").obj(),
        make_pvc("PVC_3").volume("Vol_3").obj(),
        make_pvc("PVC_4").volume("Vol_not_exist").obj(),
        make_pvc("PVC_Stable_1").volume("Vol_Stable_1").obj(),
        make_pvc("PVC_Stable_2").volume("Vol_Stable_2").obj(),
        make_pvc("PVC_Stable_3").volume("Vol_Stable_3").obj(),
        make_pvc("PVC_M1").volume("Vol_M1").obj(),
        make_pvc("PVC_M2").volume("Vol_M2").obj(),
    )


def run(claim: str | None, labels: dict[str, str], cache_fn=single_zone_volumes):  # type: ignore[no-untyped-def]
    cache = cache_fn(cache_with([make_node("host1").label(labels).obj()]))
    plugin = VolumeZone(handle=UnitHandle(cache))  # type: ignore[arg-type]
    pi = claim_pod("pod_1", claim) if claim else make_pod("pod_1").info()
    state = fresh()
    _, status = plugin.pre_filter(state, pi)
    if status is not None:
        return status, None
    return None, verdicts(plugin.filter(state, pi, cache.table), cache)["host1"]


CASES = [
    # name, claim, node labels, filter verdict
    ("node without labels", "PVC_1", {}, None),
    ("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("beta region label matched", "PVC_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}, None),
    ("beta region label doesn't match", "PVC_2", {BETA_REGION: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
    ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, None),
    ("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1", "uselessLabel": "none"}, CONFLICT),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a", "uselessLabel": "none"}, CONFLICT),
    ("pv with zone and region, node with only zone", "PVC_Stable_3", {ZONE: "us-west1-a"}, CONFLICT),
    ("pv with zone, node with beta zone", "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, CONFLICT),
    ("pv with beta label, node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None),
    ("pv with beta label, node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, CONFLICT),
    # TestMultiZone
    ("multi: node without labels", "PVC_M1", {}, None),
    ("multi: beta zone label matched", "PVC_M1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("multi: zone label matched", "PVC_M2", {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
    ("multi: other zone", "PVC_M2", {ZONE: "us-west1-b"}, CONFLICT),
]


@pytest.mark.parametrize(("name", "claim", "labels", "want"), CASES, ids=[c[0] for c in CASES])
def test_zones(name: str, claim: str, labels: dict[str, str], want: object) -> None:
    status, verdict = run(claim, labels)
    assert status is None
    assert verdict == want


def test_pod_without_volume_skips() -> None:
    status, _ = run(None, {BETA_ZONE: "us-west1-a"})
    assert status is not None and status.code == Code.SKIP


def test_claim_bound_to_a_missing_volume() -> None:
    status, _ = run("PVC_4", {ZONE: "a"})
    assert status is not None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolume "Vol_not_exist" not found',))


def test_missing_claim() -> None:
    status, _ = run("nope", {ZONE: "a"})
    assert status is not None
    assert status.reasons == ('persistentvolumeclaim "nope" not found',)


def binding_volumes(cache: Cache) -> Cache:
    return add(
        cache,
        make_storage_class("Class_Immediate").mode(None).obj(),  # kube's test leaves the mode unset
        make_storage_class("Class_Wait").mode("WaitForFirstConsumer").obj(),
        make_pv("Vol_1").label({BETA_ZONE: "us-west1-a"}).obj(),
        make_pvc("PVC_1").volume("Vol_1").obj(),
        make_pvc("PVC_NoSC").cls("Class_0").obj(),
        make_pvc("PVC_EmptySC").obj(),
        make_pvc("PVC_WaitSC").cls("Class_Wait").obj(),
        make_pvc("PVC_ImmediateSC").cls("Class_Immediate").obj(),
    )


@pytest.mark.parametrize(("claim", "want"), [
    ("PVC_1", None),
    ("PVC_EmptySC", (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("PersistentVolumeClaim had no pv name and storageClass name",))),
    ("PVC_NoSC", (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('storageclass.storage.k8s.io "Class_0" not found',))),
    ("PVC_ImmediateSC", (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('VolumeBindingMode not set for StorageClass "Class_Immediate"',))),
    ("PVC_WaitSC", (Code.SKIP, ())),
])
def test_with_binding(claim: str, want: object) -> None:
    status, verdict = run(claim, {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, binding_volumes)
    if want is None:
        assert status is None and verdict is None
    else:
        assert status is not None and (status.code, status.reasons) == want


def test_filter_over_many_nodes() -> None:
    cache = single_zone_volumes(cache_with([
        make_node("a").label({ZONE: "us-west1-a"}).obj(), make_node("b").label({ZONE: "us-west1-b"}).obj(), make_node("c").obj(),
        make_node("d").label({BETA_ZONE: "us-west1-a"}).obj(),
    ]))
    plugin = VolumeZone(handle=UnitHandle(cache))  # type: ignore[arg-type]
    pi = claim_pod("p", "PVC_1")
    state = fresh()
    plugin.pre_filter(state, pi)
    assert verdicts(plugin.filter(state, pi, cache.table), cache) == {"a": None, "b": CONFLICT, "c": None, "d": None}


# --- queueing hints ------------------------------------------------------------------------------


def test_hint_claim_change() -> None:
    hint = VolumeZone.is_schedulable_after_claim_change
    pi = claim_pod("pod_1", "PVC_1")
    assert hint(pi, None, make_pvc("PVC_1").obj()) == QueueingHint.Queue
    assert hint(make_pod("pod_1").info(), None, make_pvc("PVC_1").obj()) == QueueingHint.QueueSkip
    assert hint(pi, None, make_pvc("PVC_2").obj()) == QueueingHint.QueueSkip
    assert hint(pi, None, make_pvc("PVC_1").ns("other").obj()) == QueueingHint.QueueSkip
    assert hint(pi, make_pvc("PVC_1").obj(), make_pvc("PVC_1").volume("Vol_1").obj()) == QueueingHint.Queue


def test_hint_storage_class_added() -> None:
    hint = VolumeZone.is_schedulable_after_storage_class_added
    pi = claim_pod("pod_1", "PVC_1")
    assert hint(pi, None, make_storage_class("wait").mode("WaitForFirstConsumer").obj()) == QueueingHint.Queue
    assert hint(pi, None, make_storage_class("immediate").obj()) == QueueingHint.QueueSkip
    assert hint(pi, None, make_storage_class("unset").mode(None).obj()) == QueueingHint.QueueSkip


def test_hint_volume_change() -> None:
    hint = VolumeZone.is_schedulable_after_volume_change
    pi = claim_pod("pod_1", "PVC_1")
    zoned = make_pv("Vol_1").label({ZONE: "us-west1-a"}).obj()
    assert hint(pi, None, zoned) == QueueingHint.Queue
    assert hint(pi, zoned, make_pv("Vol_1").label({ZONE: "us-west1-b"}).obj()) == QueueingHint.Queue
    assert hint(pi, zoned, make_pv("Vol_1").label({ZONE: "us-west1-a", "other": "x"}).obj()) == QueueingHint.QueueSkip
    assert hint(pi, zoned, make_pv("Vol_1").label({ZONE: "us-west1-a", REGION: "us-west1"}).obj()) == QueueingHint.Queue


def test_events() -> None:
    events = {(e.event.resource, e.event.action.value) for e in VolumeZone().events_to_register()}
    assert {r for r, _ in events} == {"storage.k8s.io/StorageClass", "Node", "PersistentVolumeClaim", "PersistentVolume"}
