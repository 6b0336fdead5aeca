"""scheduler-plugins' gangs and quotas on the real apiserver: `kubesched run` with Coscheduling or
CapacityScheduling, the PodGroup and ElasticQuota CRDs (scheduling.x-k8s.io/v1alpha1) installed
from deploy/crds/. Everything asserted is read from the API server: bindings, pods that are gone,
events and their notes.

- Coscheduling: a gang that fits is placed whole (its first member, alone, says why it waits); a
  gang that cannot fit is placed not at all (rejected at PostFilter, then in backoff); a member
  held at Permit times out (scheduleTimeoutSeconds).
- CapacityScheduling: tenant A borrows tenant B's unused min; beyond its max it is refused; when
  B's pods arrive, B reclaims its min by preempting A's borrowing pods. That kubesched runs under
  deploy/rbac.yaml plus deploy/examples/scheduler-plugins-rbac.yaml, and is never refused.

Pods are pinned to this module's nodes (a label), so other nodes never matter except in the
`0/N nodes` count, which is read from the API server.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import make_namespace, make_xk8s_pod_group
from integration.harness.controlplane import ControlPlane
from integration.harness.crds import delete_custom_objects, install_crds
from integration.harness.kubesched import Kubesched, kubesched_config, run_kubesched
from integration.harness.objects import create_pod, delete_namespace, node_pool
from integration.harness.rest import JSON, Kube
from kubesched.tools.devcluster.procs import wait_until

GROUP = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}"
PODGROUPS = GROUP + "/podgroups"
QUOTAS = GROUP + "/elasticquotas"
LABEL = "scheduling.x-k8s.io/pod-group"
DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
GANG, GANG_TIMEOUT, QUOTA = "kubesched-gang", "kubesched-gang-timeout", "kubesched-quota"


def _coscheduling(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "schedulerName": name,
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
        "pluginConfig": [{"name": "Coscheduling", "args": args}],
    }


@pytest.fixture(scope="module")
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.fixture(scope="module")
def pool(kube: Kube) -> Iterator[tuple[str, list[str]]]:
    """Two nodes of 2 cpu for the module, labelled so that only this module's pods go there."""
    with node_pool(kube, "xk8s", 2, cpu="2", memory="8Gi") as made:
        yield made


def _run(control_plane: ControlPlane, workdir: Path, profile: dict[str, Any], kubeconfig: Path | None = None,
         reader: tuple[Path, Path] | None = None) -> Any:
    config = kubesched_config(kubeconfig or control_plane.admin_kubeconfig, scheduler_name=profile["schedulerName"])
    config["profiles"] = [profile]
    return run_kubesched(workdir, config, reader_cert=reader)


@pytest.fixture(scope="module")
def gang(control_plane: ControlPlane, crds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesched]:
    """Coscheduling with scheduler-plugins' defaults, and a group backoff (no busy retries)."""
    with _run(control_plane, tmp_path_factory.mktemp("gang"), _coscheduling(GANG, {"podGroupBackoffSeconds": 30})) as ks:
        yield ks


@pytest.fixture
def ns(kube: Kube, namespace: str) -> Iterator[str]:
    yield namespace
    delete_custom_objects(kube, namespace, (PODGROUPS, QUOTAS))


def _pod_group(kube: Kube, ns: str, name: str, min_member: int, **spec: Any) -> None:
    kube.create(PODGROUPS.format(ns=ns), make_xk8s_pod_group(name, min_member, ns, **spec))


def _pod(kube: Kube, ns: str, name: str, scheduler: str, token: str, cpu: str, group: str | None = None) -> None:
    create_pod(kube, name, ns, cpu=cpu, memory="100Mi", scheduler_name=scheduler, labels={LABEL: group} if group else None,
               extra_spec={"nodeSelector": {"xk8s-test": token}})


def _events(kube: Kube, ns: str, reason: str) -> list[JSON]:
    events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    return sorted((e for e in events if e.get("reason") == reason), key=lambda e: e.get("eventTime") or "")


def _notes(kube: Kube, ns: str, pod: str, reason: str = "FailedScheduling") -> list[str]:
    return [e["note"] for e in _events(kube, ns, reason) if e["regarding"]["name"] == pod]


def _bound(kube: Kube, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in kube.list(f"/api/v1/namespaces/{ns}/pods")}


def _nodes(kube: Kube) -> int:
    return len(kube.list("/api/v1/nodes"))


# --- Coscheduling ----------------------------------------------------------------------------------------------


def test_a_gang_that_fits_is_placed_whole(kube: Kube, gang: Kubesched, pool: tuple[str, list[str]], ns: str) -> None:
    token, nodes = pool
    _pod_group(kube, ns, "g", 3)
    _pod(kube, ns, "g-0", GANG, token, "1", "g")
    wait_until(lambda: bool(_notes(kube, ns, "g-0")), timeout=20, what="g-0's FailedScheduling")
    n = _nodes(kube)
    assert _notes(kube, ns, "g-0")[0] == (
        f"0/{n} nodes are available: pre-filter pod g-0 cannot find enough sibling pods, current pods number: 1, "
        f"minMember of group: 3. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling., "
        f"PodGroup {ns}/g gets rejected due to Pod g-0 is unschedulable even after PostFilter"
    )
    assert _bound(kube, ns) == {"g-0": ""}
    # The rest of the gang: its last member passes PreFilter, waits at Permit, activates the first.
    _pod(kube, ns, "g-1", GANG, token, "1", "g")
    _pod(kube, ns, "g-2", GANG, token, "1", "g")
    wait_until(lambda: all(_bound(kube, ns).values()), timeout=60, what="the whole gang bound")
    placed = _bound(kube, ns)
    assert set(placed.values()) <= set(nodes) and len(placed) == 3
    assert {e["regarding"]["name"] for e in _events(kube, ns, "Scheduled")} == {"g-0", "g-1", "g-2"}
    for name in placed:
        pod = kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
        assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in pod["status"]["conditions"])


def test_a_gang_that_cannot_fit_is_placed_not_at_all(kube: Kube, gang: Kubesched, pool: tuple[str, list[str]], ns: str) -> None:
    token, _ = pool
    _pod_group(kube, ns, "big", 3)
    for i in range(3):  # two fit (one per node), the third nowhere
        _pod(kube, ns, f"big-{i}", GANG, token, "1500m", "big")
    wait_until(lambda: sum(len(_notes(kube, ns, f"big-{i}")) for i in range(3)) >= 3, timeout=30,
               what="FailedScheduling for the gang")
    time.sleep(5)  # whatever was held at Permit was rejected; nothing binds afterwards either
    assert not any(_bound(kube, ns).values()), _bound(kube, ns)
    assert not _events(kube, ns, "Scheduled")
    # Event notes, and each pod's PodScheduled message: a failure at the resourceVersion of the pod's
    # previous one is counted on that event (client-go's series), its note not written.
    notes = [note for i in range(3) for note in _notes(kube, ns, f"big-{i}")]
    messages = notes + [c["message"] for p in kube.list(f"/api/v1/namespaces/{ns}/pods")
                        for c in p["status"].get("conditions", []) if c["type"] == "PodScheduled"]
    # The member that fits nowhere rejects the gang at PostFilter, the members held at Permit with it.
    assert any(note.endswith(f"PodGroup {ns}/big gets rejected due to Pod {name} is unschedulable even after PostFilter")
               for note in messages for name in ("big-0", "big-1", "big-2")), messages
    assert "0/1 nodes are available: 1 optimistic rejection in PostFilter." in messages, messages
    # Then the group is in its backoff (podGroupBackoffSeconds): its members are refused before Filter.
    assert any(f"podGroup {ns}/big failed recently" in note for note in messages), messages


def test_a_member_held_at_permit_times_out(control_plane: ControlPlane, kube: Kube, crds: None,
                                           pool: tuple[str, list[str]], ns: str, tmp_path: Path) -> None:
    token, _ = pool
    # podGroupRejectPercentage 100: a member that fits nowhere never rejects the gang at PostFilter, so
    # the one that fits waits at Permit until scheduleTimeoutSeconds.
    with _run(control_plane, tmp_path, _coscheduling(GANG_TIMEOUT, {"podGroupRejectPercentage": 100})):
        _pod_group(kube, ns, "slow", 2, scheduleTimeoutSeconds=3)
        _pod(kube, ns, "slow-1", GANG_TIMEOUT, token, "3", "slow")  # larger than any node
        wait_until(lambda: bool(_notes(kube, ns, "slow-1")), timeout=30, what="slow-1 refused alone")
        started = time.monotonic()
        _pod(kube, ns, "slow-0", GANG_TIMEOUT, token, "1", "slow")
        wait_until(lambda: bool(_notes(kube, ns, "slow-0")), timeout=30, what="slow-0's timeout")
        assert time.monotonic() - started >= 2.5  # held at Permit for its group's 3 s
        timeout = "0/1 nodes are available: 1 rejected due to timeout after waiting 3s at plugin Coscheduling."
        assert _notes(kube, ns, "slow-0")[0] == timeout
        pod = kube.get(f"/api/v1/namespaces/{ns}/pods/slow-0")
        assert not pod["spec"].get("nodeName")
        cond = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        # slow-1 is larger than any node (preemption cannot help); with podGroupRejectPercentage 100
        # Coscheduling's PostFilter adds no reason of its own.
        n = _nodes(kube)
        assert f"0/{n} nodes are available: {n} Insufficient cpu. preemption: 0/{n} nodes are available: {n} Preemption " \
               "is not helpful for scheduling." in _notes(kube, ns, "slow-1"), _notes(kube, ns, "slow-1")


# --- CapacityScheduling ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quota(control_plane: ControlPlane, kube: Kube, crds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesched]:
    """CapacityScheduling as scheduler-plugins documents it, run as the deploy/ service account with
    deploy/rbac.yaml and the optional role for these plugins: nothing more."""
    workdir = tmp_path_factory.mktemp("quota")
    docs = [d for f in ("namespace.yaml", "rbac.yaml", "examples/scheduler-plugins-rbac.yaml")
            for d in yaml.safe_load_all((DEPLOY / f).read_text()) if d]
    for doc in docs:
        kube.apply_manifest(doc)
    token = kube.token_for("kubesched-system", "kubesched")
    kubeconfig = kube.kubeconfig_for_token(token, workdir / "sa.kubeconfig")
    profile = {"schedulerName": QUOTA,
               "plugins": {"multiPoint": {"enabled": [{"name": "CapacityScheduling"}]},
                           "postFilter": {"enabled": [{"name": "CapacityScheduling"}], "disabled": [{"name": "*"}]}}}
    admin = (control_plane.admin_cert.cert_file, control_plane.admin_cert.key_file)
    with _run(control_plane, workdir, profile, kubeconfig, admin) as ks:
        yield ks
        for method in ("GET", "POST", "PATCH", "DELETE", "PUT"):
            assert ks.metric("rest_client_requests_total", code="403", method=method) == 0, (method, ks.log())


def _elastic_quota(kube: Kube, ns: str, low: str, high: str) -> None:
    kube.create(QUOTAS.format(ns=ns), {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota", "metadata": {"name": "quota", "namespace": ns},
        "spec": {"min": {"cpu": low, "memory": "1Gi"}, "max": {"cpu": high, "memory": "2Gi"}}})


@pytest.fixture
def tenant_b(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"tenant-b-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", make_namespace(name))
    try:
        yield name
    finally:
        delete_custom_objects(kube, name, (QUOTAS,))
        delete_namespace(kube, name)


def test_a_tenant_borrows_unused_min_and_the_lender_reclaims_it_by_preemption(
    kube: Kube, quota: Kubesched, pool: tuple[str, list[str]], ns: str, tenant_b: str
) -> None:
    token, nodes = pool
    a, b = ns, tenant_b
    n = _nodes(kube)
    _elastic_quota(kube, a, "2", "4")
    _elastic_quota(kube, b, "2", "4")
    time.sleep(1)  # the quotas reach kubesched's cache before the pods
    # Tenant A fills the two nodes: 4 cpu, its min is 2, the other 2 are B's unused min.
    for i in range(4):
        _pod(kube, a, f"a-{i}", QUOTA, token, "1")
    wait_until(lambda: len(_bound(kube, a)) == 4 and all(_bound(kube, a).values()), timeout=30, what="A's four pods bound")
    # Beyond its max (4 cpu) A is refused, naming its quota; it may not preempt anyone for that.
    _pod(kube, a, "a-over", QUOTA, token, "1")
    wait_until(lambda: bool(_notes(kube, a, "a-over")), timeout=30, what="a-over refused")
    # Every node is a candidate after a PreFilter rejection; none has a victim (A's own pods of lower priority).
    everywhere = sorted(f"1 No victims found on node {x['metadata']['name']} for preemptor pod a-over"
                        for x in kube.list("/api/v1/nodes"))
    assert _notes(kube, a, "a-over")[0] == (
        f"0/{n} nodes are available: Pod {a}/a-over is rejected in PreFilter because ElasticQuota {a} is more than Max. "
        f"0/{n} nodes are available: {', '.join(everywhere)}."
    )
    kube.delete(f"/api/v1/namespaces/{a}/pods/a-over", grace_period_seconds=0)
    # Tenant B's pods: within B's min, but the cluster's quotas are all used (A borrowed B's min):
    # refused at PreFilter, then B takes its min back by preempting A's borrowing pods.
    for i in range(2):
        _pod(kube, b, f"b-{i}", QUOTA, token, "1")
    wait_until(lambda: len(_bound(kube, b)) == 2 and all(_bound(kube, b).values()), timeout=60, what="B's pods bound")
    first = _notes(kube, b, "b-0")[0]
    assert first.startswith(f"0/{n} nodes are available: Pod {b}/b-0 is rejected in PreFilter because total ElasticQuota "
                            "used is more than min."), first
    preempted = _events(kube, a, "Preempted")
    assert len(preempted) == 2, preempted
    b_uids = {p["metadata"]["uid"] for p in kube.list(f"/api/v1/namespaces/{b}/pods")}
    for e in preempted:
        preemptor, node = e["note"].removeprefix("Preempted by pod ").split(" on node ")
        assert preemptor in b_uids and node in nodes, e["note"]
    survivors = _bound(kube, a)
    assert len(survivors) == 2 and all(survivors.values()), survivors  # A is back to its min
    gone = {e["regarding"]["name"] for e in preempted}
    assert gone.isdisjoint(survivors)
