"""VolumeRestrictions, with kube's cases (volume_restrictions_test.go): GCE PD, AWS EBS, RBD and
iSCSI conflicts, ReadWriteOncePod claims (and preemption's AddPod/RemovePod), the hints."""

from __future__ import annotations

from typing import Any

import pytest

from builders import UnitHandle, cache_with, make_node, make_pod, make_pvc
from kubesched.api.podinfo import PodInfo
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from unit.plugins.storagekit import add, claim_pod, fresh, verdicts

DISK = (Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))
RWOP = (Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,))


def disk_pod(name: str, *volumes: dict[str, Any], node_name: str = "", namespace: str = "default") -> PodInfo:
    vols = [{"name": f"d{i}", **v} for i, v in enumerate(volumes)]
    return make_pod(name).ns(namespace).node(node_name).spec(volumes=vols).info()


def gce(pd: str, read_only: bool = False) -> dict[str, Any]:
    return {"gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def aws(volume_id: str) -> dict[str, Any]:
    return {"awsElasticBlockStore": {"volumeID": volume_id}}


def rbd(monitors: list[str], image: str, pool: str = "", read_only: bool = False) -> dict[str, Any]:
    return {"rbd": {"monitors": monitors, "image": image, "pool": pool, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"iscsi": {"iqn": iqn, "targetPortal": "127.0.0.1:3260", "readOnly": read_only}}


def run(pi: PodInfo, existing: list[PodInfo], claims: list[Any] = ()) -> tuple[Any, Any]:  # type: ignore[assignment]
    cache = cache_with([make_node("node-1").obj(), make_node("node-2").obj()])
    add(cache, *claims)
    for e in existing:
        cache.add_pod(e)
    plugin = VolumeRestrictions(handle=UnitHandle(cache))  # type: ignore[arg-type]
    state = fresh()
    _, status = plugin.pre_filter(state, pi)
    if status is not None:
        return status, None
    return None, verdicts(plugin.filter(state, pi, cache.table), cache)


@pytest.mark.parametrize(("name", "volume", "existing", "want"), [
    ("gce: one state", gce("foo"), gce("foo"), DISK),
    ("gce: different state", gce("foo"), gce("bar"), None),
    ("gce: both read-only", gce("foo", True), gce("foo", True), None),
    ("gce: one writer", gce("foo", True), gce("foo"), DISK),
    ("aws: same", aws("foo"), aws("foo"), DISK),
    ("aws: different", aws("foo"), aws("bar"), None),
    ("rbd: same", rbd(["a", "b"], "foo"), rbd(["b", "c"], "foo"), DISK),
    ("rbd: other image", rbd(["a", "b"], "foo"), rbd(["b", "c"], "bar"), None),
    ("rbd: no common monitor", rbd(["a"], "foo"), rbd(["c"], "foo"), None),
    ("rbd: default pool", rbd(["a"], "foo", pool="rbd"), rbd(["a"], "foo"), DISK),
    ("rbd: read-only", rbd(["a"], "foo", read_only=True), rbd(["a"], "foo", read_only=True), None),
    ("iscsi: same", iscsi("iqn.2016-12.server:storage.target01"), iscsi("iqn.2016-12.server:storage.target01"), DISK),
    ("iscsi: different", iscsi("iqn.2016-12.server:storage.target01"), iscsi("iqn.2017-12.server:storage.target01"), None),
    ("iscsi: read-only", iscsi("iqn.x", True), iscsi("iqn.x", True), None),
])
def test_disk_conflicts(name: str, volume: dict[str, Any], existing: dict[str, Any], want: object) -> None:
    status, result = run(disk_pod("p", volume), [disk_pod("e", existing, node_name="node-1")])
    assert status is None
    assert result == {"node-1": want, "node-2": None}


def test_pod_without_restricted_volumes_skips() -> None:
    status, _ = run(disk_pod("p", {"emptyDir": {}}), [disk_pod("e", gce("foo"), node_name="node-1")])
    assert status is not None and status.code == Code.SKIP
    status, _ = run(make_pod("p").info(), [])
    assert status is not None and status.code == Code.SKIP


RWOP_1 = make_pvc("claim-with-rwop-1").modes("ReadWriteOncePod").obj()
RWOP_2 = make_pvc("claim-with-rwop-2").modes("ReadWriteOncePod").obj()
RWX = make_pvc("claim-with-rwx").modes("ReadWriteMany").obj()


def test_failed_to_get_pvc() -> None:
    status, _ = run(claim_pod("p", "claim-with-rwop-1"), [])
    assert status is not None
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                             ('persistentvolumeclaim "claim-with-rwop-1" not found',))


def test_no_access_mode_conflict() -> None:
    status, _ = run(claim_pod("p", "claim-with-rwop-1"), [claim_pod("rwx", "claim-with-rwx", node_name="node-1")],
                    [RWOP_1, RWX])
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize("claims", [("claim-with-rwop-1",), ("claim-with-rwop-1", "claim-with-rwop-2")])
def test_access_mode_conflict_everywhere(claims: tuple[str, ...]) -> None:
    existing = [claim_pod("user", *claims, node_name="node-1"), claim_pod("rwx", "claim-with-rwx", node_name="node-1")]
    status, result = run(claim_pod("p", *claims), existing, [RWOP_1, RWOP_2, RWX])
    assert status is None
    assert result == {"node-1": RWOP, "node-2": RWOP}


def test_preemption_extensions_count_the_claims_users() -> None:
    cache = cache_with([make_node("node-1").obj()])
    add(cache, RWOP_1)
    user = claim_pod("user", "claim-with-rwop-1", node_name="node-1")
    cache.add_pod(user)
    plugin = VolumeRestrictions(handle=UnitHandle(cache))  # type: ignore[arg-type]
    pi = claim_pod("p", "claim-with-rwop-1")
    state = fresh()
    assert plugin.pre_filter(state, pi) == (None, None)
    trial = state.clone()
    plugin.remove_pod(trial, pi, user, 0)
    assert plugin.filter(trial, pi, cache.table) is None
    assert verdicts(plugin.filter(state, pi, cache.table), cache) == {"node-1": RWOP}  # the clone is its own
    plugin.add_pod(trial, pi, user, 0)
    assert verdicts(plugin.filter(trial, pi, cache.table), cache) == {"node-1": RWOP}


def test_assumed_pods_count_and_forgotten_ones_do_not() -> None:
    cache = cache_with([make_node("node-1").obj()])
    add(cache, RWOP_1)
    user = claim_pod("user", "claim-with-rwop-1")
    cache.assume(user, "node-1")
    assert cache.storage.claim_used_by_pods("default/claim-with-rwop-1")
    cache.forget(user)
    assert not cache.storage.claim_used_by_pods("default/claim-with-rwop-1")


def test_disk_conflict_of_a_victim_is_gone_in_a_preemption_trial() -> None:
    cache = cache_with([make_node("node-1").obj()])
    victim = disk_pod("victim", gce("foo"), node_name="node-1")
    cache.add_pod(victim)
    plugin = VolumeRestrictions(handle=UnitHandle(cache))  # type: ignore[arg-type]
    pi = disk_pod("p", gce("foo"))
    state = fresh()
    plugin.pre_filter(state, pi)
    assert verdicts(plugin.filter(state, pi, cache.table), cache) == {"node-1": DISK}
    cache.table.remove_pod(0, victim)  # what preemption's trial does
    assert plugin.filter(state, pi, cache.table) is None


# --- hints -----------------------------------------------------------------------------------------


def test_hint_claim_added() -> None:
    hint = VolumeRestrictions.is_schedulable_after_claim_added
    pi = claim_pod("p", "claim-with-rwop-1")
    assert hint(pi, None, RWOP_1) == QueueingHint.Queue
    assert hint(pi, None, RWOP_2) == QueueingHint.QueueSkip
    assert hint(pi, None, make_pvc("claim-with-rwop-1").ns("other").obj()) == QueueingHint.QueueSkip


def test_hint_assigned_pod_deleted() -> None:
    hint = VolumeRestrictions.is_schedulable_after_assigned_pod_deleted
    pi = disk_pod("p", gce("foo"))
    assert hint(pi, disk_pod("e", gce("foo"), node_name="node-1"), None) == QueueingHint.Queue
    assert hint(pi, disk_pod("e", gce("bar"), node_name="node-1"), None) == QueueingHint.QueueSkip
    assert hint(pi, disk_pod("e", gce("foo"), namespace="other"), None) == QueueingHint.QueueSkip
    claimer = claim_pod("p", "claim-with-rwop-1")
    assert hint(claimer, claim_pod("e", "claim-with-rwop-1", node_name="node-1"), None) == QueueingHint.Queue
    assert hint(claimer, claim_pod("e", "claim-with-rwx", node_name="node-1"), None) == QueueingHint.QueueSkip


def test_events() -> None:
    events = {(e.event.resource, e.event.action.name) for e in VolumeRestrictions().events_to_register()}
    assert events == {("AssignedPod", "Delete"), ("Node", "Add"), ("PersistentVolumeClaim", "Add")}
