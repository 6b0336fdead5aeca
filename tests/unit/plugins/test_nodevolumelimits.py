"""NodeVolumeLimits, with kube's cases (nodevolumelimits/csi_test.go): CSI volumes against a
CSINode's allocatable count, unbound claims counted by class, the same volume counted once,
VolumeAttachments, ephemeral volumes, migrated in-tree volumes, driver presence, the hints."""

from __future__ import annotations

from typing import Any

import pytest

from builders import UnitHandle, cache_with, make_node, make_pod, make_pv, make_pvc, make_storage_class
from kubesched.api.podinfo import PodInfo
from kubesched.cache.cache import Cache
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from unit.plugins.storagekit import add, attachment, claim_pod, csidriver, csinode, fresh, verdicts

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EXCEEDED = (Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))


def volumes(cache: Cache) -> Cache:
    """kube's getFakeCSIPVLister/PVCLister shapes: csi-<driver>-<i> claims bound to PVs with those
    drivers and handles, csi-4 unbound with the class, csi-5 without class, csi-6 bound to a PV that
    does not exist, csi-kubernetes.io/aws-ebs-<i> bound to in-tree EBS volumes."""
    objs: list[Any] = [make_storage_class("csi-sc").provisioner(EBS).obj()]
    for driver in (EBS, GCE):
        for i in range(4):
            name = f"csi-{driver}-{i}"
            objs.append(make_pv(f"pv-{name}").csi(driver, name).obj())
            objs.append(make_pvc(name).volume(f"pv-{name}").obj())
    for i in range(3):
        name = f"csi-kubernetes.io/aws-ebs-{i}".replace("/", "-")
        objs.append(make_pv(f"pv-{name}").spec(awsElasticBlockStore={"volumeID": name}).obj())
        objs.append(make_pvc(name).volume(f"pv-{name}").obj())
    objs.append(make_pv("pv-hostpath").spec(hostPath={"path": "/tmp"}).obj())
    objs.append(make_pvc("csi-hostpath-0").volume("pv-hostpath").obj())
    objs.append(make_pvc("csi-4").cls("csi-sc").obj())
    objs.append(make_pvc("csi-5").obj())
    objs.append(make_pvc("csi-6").cls("csi-sc").volume("missing-pv").obj())
    return add(cache, *objs)


def run(pi: PodInfo, existing: list[PodInfo] = (), *, limits: dict[str, int | None] | None = None,  # type: ignore[assignment]
        extra: list[Any] = (), csi_node: bool = True) -> Any:  # type: ignore[assignment]
    cache = volumes(cache_with([make_node("node-1").obj()]))
    if csi_node:
        add(cache, csinode("node-1", *(limits or {EBS: 2}).items()))
    add(cache, *extra)
    for e in existing:
        cache.add_pod(e)
    plugin = NodeVolumeLimits(handle=UnitHandle(cache))  # type: ignore[arg-type]
    state = fresh()
    _, status = plugin.pre_filter(state, pi)
    if status is not None:
        return status
    return verdicts(plugin.filter(state, pi, cache.table), cache)["node-1"]


def on_node(p: PodInfo) -> PodInfo:
    p.pod.spec.node_name = "node-1"
    return p


def test_fits_when_the_limit_holds_the_new_volume() -> None:
    assert run(claim_pod("p", f"csi-{EBS}-0"), [], limits={EBS: 4}) is None


def test_does_not_fit_beyond_the_limit() -> None:
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2")), on_node(claim_pod("e2", "csi-4"))]
    assert run(claim_pod("p", f"csi-{EBS}-0"), existing, limits={EBS: 2}) == EXCEEDED


def test_a_driver_without_limits() -> None:
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(claim_pod("p", f"csi-{GCE}-0", f"csi-{GCE}-1"), existing, limits={EBS: 2}) is None


def test_the_same_volume_counts_once() -> None:
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(claim_pod("p", f"csi-{EBS}-1"), existing, limits={EBS: 2}) is None


def test_unbound_claims_count_by_class() -> None:
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(claim_pod("p", "csi-4"), existing, limits={EBS: 2}) == EXCEEDED
    assert run(claim_pod("p", "csi-4"), existing, limits={EBS: 3}) is None
    # A claim bound to a PV that does not exist counts by its class too.
    assert run(claim_pod("p", "csi-6"), existing, limits={EBS: 2}) == EXCEEDED


def test_claims_without_class_do_not_count() -> None:
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(claim_pod("p", "csi-5"), existing, limits={EBS: 2}) is None


def test_volume_attachments_count() -> None:
    vas = [attachment(f"va-{i}", EBS, "node-1", f"pv-csi-{EBS}-{i}") for i in (1, 2)]
    assert run(claim_pod("p", f"csi-{EBS}-0"), [], limits={EBS: 2}, extra=vas) == EXCEEDED
    assert run(claim_pod("p", f"csi-{EBS}-0"), [], limits={EBS: 3}, extra=vas) is None
    # An attachment of a volume a pod on the node uses counts once.
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(claim_pod("p", f"csi-{EBS}-0"), existing, limits={EBS: 3}, extra=vas) is None


def test_missing_claim_is_unresolvable() -> None:
    status = run(claim_pod("p", "nope"), [], limits={EBS: 2})
    assert status == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('looking up PVC default/nope: persistentvolumeclaim "nope" not found',))


def test_in_tree_volumes_count_under_their_csi_driver() -> None:
    name = "csi-kubernetes.io-aws-ebs"
    existing = [on_node(claim_pod("e1", f"{name}-1", f"{name}-2"))]
    assert run(claim_pod("p", f"{name}-0"), existing, limits={EBS: 2}) == EXCEEDED
    assert run(claim_pod("p", f"{name}-0"), existing, limits={EBS: 3}) is None
    # CSI and in-tree volumes of the same driver add up.
    assert run(claim_pod("p", f"csi-{EBS}-0"), existing, limits={EBS: 2}) == EXCEEDED
    # A non-migratable in-tree volume is not counted.
    assert run(claim_pod("p", "csi-hostpath-0"), existing, limits={EBS: 2}) is None


def test_inline_in_tree_volumes() -> None:
    inline = make_pod("p").spec(volumes=[{"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}]).info()
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(inline, existing, limits={EBS: 2}) == EXCEEDED
    same = make_pod("p").spec(volumes=[{"name": "a", "awsElasticBlockStore": {"volumeID": f"csi-{EBS}-1"}}]).info()
    assert run(same, existing, limits={EBS: 2}) is None


def ephemeral_pod(uid: str = "12345", *names: str) -> PodInfo:
    return claim_pod("abc", namespace="test", ephemeral=names or ("xyz",), uid=uid)


def ephemeral_claim(volume: str = "xyz", uid: str = "12345", owned: bool = True) -> Any:
    claim = make_pvc(f"abc-{volume}").ns("test").cls("csi-sc")
    if owned:
        claim.owned_by({"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": uid, "controller": True})
    return claim.obj()


def test_ephemeral_volumes() -> None:
    status = run(ephemeral_pod(), [], limits={EBS: 2})
    assert status == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                      ('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',))
    status = run(ephemeral_pod(), [], limits={EBS: 2}, extra=[ephemeral_claim(owned=False)])
    assert status == (Code.ERROR, ("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)",))
    assert run(ephemeral_pod(), [], limits={EBS: 1}, extra=[ephemeral_claim()]) is None
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1"))]
    assert run(ephemeral_pod(), existing, limits={EBS: 1}, extra=[ephemeral_claim()]) == EXCEEDED
    two = ephemeral_pod("12345II", "x", "y")
    claims = [ephemeral_claim("x", "12345II"), ephemeral_claim("y", "12345II")]
    assert run(two, [], limits={EBS: 1}, extra=claims) == EXCEEDED
    assert run(two, [], limits={EBS: 2}, extra=claims) is None


def test_nodes_without_csinode_have_no_limits() -> None:
    existing = [on_node(claim_pod("e1", f"csi-{EBS}-1", f"csi-{EBS}-2"))]
    assert run(claim_pod("p", f"csi-{EBS}-0"), existing, csi_node=False) is None


def test_prefilter_skips_pods_without_claims() -> None:
    only_config = make_pod("p").spec(volumes=[{"name": "c", "configMap": {"name": "x"}}, {"name": "s", "secret": {}}]).info()
    status = run(only_config)
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize(("prevent", "listed", "want"), [
    (True, False, (Code.UNSCHEDULABLE, (f"{EBS} CSI driver is not installed on the node",))),
    (True, True, None),
    (False, False, None),
    (None, False, None),
])
def test_driver_must_be_installed_when_it_asks(prevent: bool | None, listed: bool, want: object) -> None:
    limits = {EBS: 5} if listed else {GCE: 5}
    assert run(claim_pod("p", f"csi-{EBS}-0"), [], limits=limits, extra=[csidriver(EBS, prevent_if_missing=prevent)]) == want


def test_driver_check_on_nodes_without_csinode() -> None:
    status = run(claim_pod("p", f"csi-{EBS}-0"), [], csi_node=False, extra=[csidriver(EBS, prevent_if_missing=True)])
    assert status == (Code.UNSCHEDULABLE, (f"{EBS} CSI driver is not installed on the node",))


def test_in_tree_volumes_need_no_driver_on_nodes_without_csinode() -> None:
    """Without a CSINode nothing is migrated: an in-tree EBS volume (bound, inline, or unbound with
    the in-tree provisioner) does not ask for the CSI driver there, as a CSI volume does."""
    prevent = csidriver(EBS, prevent_if_missing=True)
    bound = claim_pod("p", "csi-kubernetes.io-aws-ebs-0")
    inline = make_pod("p").spec(volumes=[{"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}]).info()
    unbound = [
        make_storage_class("in-tree-sc").provisioner("kubernetes.io/aws-ebs").obj(),
        make_pvc("in-tree-unbound").cls("in-tree-sc").obj(),
    ]
    for p, extra in ((bound, []), (inline, []), (claim_pod("p", "in-tree-unbound"), unbound)):
        assert run(p, [], csi_node=False, extra=[prevent, *extra]) is None
        # With a CSINode that does not list the driver, the migrated volume needs it.
        assert run(p, [], limits={GCE: 5}, extra=[prevent, *extra]) == (
            Code.UNSCHEDULABLE, (f"{EBS} CSI driver is not installed on the node",))


# --- hints -----------------------------------------------------------------------------------------


def test_hint_csinode_updated() -> None:
    hint = NodeVolumeLimits.is_schedulable_after_csinode_updated
    pi = claim_pod("p", "c")
    assert hint(pi, csinode("n", (EBS, 1)), csinode("n", (EBS, 2))) == QueueingHint.Queue
    assert hint(pi, csinode("n", (EBS, 2)), csinode("n", (EBS, 1))) == QueueingHint.QueueSkip
    assert hint(pi, csinode("n", (EBS, 1)), csinode("n", (EBS, 1), (GCE, 1))) == QueueingHint.Queue
    assert hint(pi, csinode("n", (EBS, 1)), csinode("n", (EBS, 1), (GCE, None))) == QueueingHint.QueueSkip


def test_hint_assigned_pod_deleted() -> None:
    hint = NodeVolumeLimits.is_schedulable_after_assigned_pod_deleted
    pi = claim_pod("p", "c")
    assert hint(pi, claim_pod("d", "x", node_name="n"), None) == QueueingHint.Queue
    inline = make_pod("d").node("n").spec(volumes=[{"name": "a", "awsElasticBlockStore": {"volumeID": "v"}}]).info()
    assert hint(pi, inline, None) == QueueingHint.Queue
    assert hint(pi, make_pod("d").node("n").info(), None) == QueueingHint.QueueSkip
    assert hint(pi, claim_pod("d", "x"), None) == QueueingHint.QueueSkip  # neither bound nor nominated


def test_hint_claim_added() -> None:
    hint = NodeVolumeLimits.is_schedulable_after_claim_added
    assert hint(claim_pod("p", "c"), None, make_pvc("c").ns("other").obj()) == QueueingHint.QueueSkip
    assert hint(claim_pod("p", "c"), None, make_pvc("c").obj()) == QueueingHint.Queue
    assert hint(ephemeral_pod(), None, ephemeral_claim()) == QueueingHint.Queue
    assert hint(claim_pod("p", "c"), None, make_pvc("d").obj()) == QueueingHint.QueueSkip
    assert hint(make_pod("p").info(), None, make_pvc("d").obj()) == QueueingHint.QueueSkip


def test_hint_attachment_deleted() -> None:
    hint = NodeVolumeLimits.is_schedulable_after_attachment_deleted
    va = attachment("va", EBS, "n", "pv")
    assert hint(claim_pod("p", "c"), va, None) == QueueingHint.Queue
    inline = make_pod("p").spec(volumes=[{"name": "a", "awsElasticBlockStore": {"volumeID": "v"}}]).info()
    assert hint(inline, va, None) == QueueingHint.Queue
    gce_inline = make_pod("p").spec(volumes=[{"name": "a", "gcePersistentDisk": {"pdName": "v"}}]).info()
    assert hint(gce_inline, va, None) == QueueingHint.QueueSkip
    assert hint(make_pod("p").info(), va, None) == QueueingHint.QueueSkip
