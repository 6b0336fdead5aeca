"""Gang scheduling on the upstream API, differentially: the same PodGroups and pods through the real
kube-scheduler v1.37.2 and through `kubesched run`, both with GenericWorkload on, on one real
apiserver (which serves scheduling.k8s.io/v1beta1). Each scenario runs first under kube-scheduler
(pods with the default scheduler name), then under kubesched, in namespaces of their own, on the
same nodes (cleared in between); what the API server holds afterwards is compared: which pods
are bound, each pod's first FailedScheduling note and PodScheduled condition, and the PodGroup's
PodGroupInitiallyScheduled condition."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import make_namespace, make_priority_class
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, delete_namespace
from integration.harness.rest import JSON, Kube

PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"
KUBESCHED = "kubesched"
SETTLE = 4.0  # seconds both schedulers get after the scenario looks settled (retries, statuses)
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
DRA_MISSING_STATE = 'error in "DynamicResources" PodGroupPostFilter plugins: not found'


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The reference kube-scheduler and kubesched, both with GenericWorkload, for the module."""
    workdir = tmp_path_factory.mktemp("podgroups")
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name=KUBESCHED)
    with run_kube_scheduler(control_plane), run_kubesched(workdir, config, args=["--feature-gates", "GenericWorkload=true"]):
        yield


@pytest.fixture
def nodes(kube: Kube, make_node: Callable[..., JSON]) -> list[str]:
    return [make_node(f"pg-n{i}-{secrets.token_hex(2)}", cpu="4")["metadata"]["name"] for i in range(2)]


def _group(kube: Kube, ns: str, name: str, min_count: int | None, **spec: Any) -> None:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    body = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulingPolicy": policy, **spec}}
    kube.create(PODGROUPS.format(ns=ns), body)


def _member(kube: Kube, ns: str, name: str, group: str, scheduler: str, cpu: str, **kw: Any) -> None:
    create_pod(kube, name, ns, cpu=cpu, scheduler_name=scheduler,
               extra_spec={"schedulingGroup": {"podGroupName": group}}, **kw)


def _outcome(kube: Kube, ns: str) -> dict[str, Any]:
    pods = kube.list(f"/api/v1/namespaces/{ns}/pods")
    events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    first: dict[str, tuple[str, str]] = {}
    for e in sorted(events, key=lambda e: e.get("eventTime") or ""):
        if e.get("reason") == "FailedScheduling":
            first.setdefault(e["regarding"]["name"], (e["type"], e["note"]))
    out: dict[str, Any] = {"pods": {}, "groups": {}}
    for p in pods:
        name = p["metadata"]["name"]
        cond = next((c for c in p["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)
        out["pods"][name] = {
            "bound": bool(p["spec"].get("nodeName")),
            "condition": (cond["status"], cond.get("reason", ""), cond.get("message", "")) if cond else None,
            "first_failure": first.get(name),
        }
    for g in kube.list(PODGROUPS.format(ns=ns)):
        conds = g.get("status", {}).get("conditions", [])
        out["groups"][g["metadata"]["name"]] = [(c["type"], c["status"], c["reason"], c["message"]) for c in conds]
    return out


def _settled(kube: Kube, ns: str, expect_groups: int) -> bool:
    outcome = _outcome(kube, ns)
    pods_done = all(p["bound"] or p["condition"] is not None for p in outcome["pods"].values())
    groups_done = sum(1 for c in outcome["groups"].values() if c) >= expect_groups
    return pods_done and groups_done


def _cleanup(kube: Kube, ns: str) -> None:
    """PodGroups keep the podgroup-protection finalizer (no controller removes it here): dropped first."""
    for g in kube.list(PODGROUPS.format(ns=ns)):
        path = f"{PODGROUPS.format(ns=ns)}/{g['metadata']['name']}"
        kube.patch(path, {"metadata": {"finalizers": None}})
        kube.delete(path, missing_ok=True)
    delete_namespace(kube, ns)


def _compare(kube: Kube, build: Callable[[str, str], int], *, settle: bool = True, wait: float = 30.0,
             after: Callable[[str, str], None] | None = None) -> dict[str, Any]:
    """Runs `build(namespace, schedulerName)` under each scheduler in turn; returns both outcomes.
    `build` returns how many PodGroups must have a condition before the outcome is read; `after`
    may look at the namespace before it is cleared."""
    outcomes = {}
    for scheduler in ("default-scheduler", KUBESCHED):
        ns = f"pg-{secrets.token_hex(4)}"
        kube.create("/api/v1/namespaces", make_namespace(ns))
        try:
            expect = build(ns, scheduler)
            deadline = time.monotonic() + wait
            if settle:
                while time.monotonic() < deadline and not _settled(kube, ns, expect):
                    time.sleep(0.2)
            time.sleep(SETTLE)
            outcomes[scheduler] = _outcome(kube, ns)
            if after is not None:
                after(ns, scheduler)
        finally:
            _cleanup(kube, ns)
    return outcomes


def _same(outcomes: dict[str, Any]) -> dict[str, Any]:
    kube_side, ours = outcomes["default-scheduler"], outcomes[KUBESCHED]
    assert ours == kube_side, f"kube-scheduler: {kube_side}\nkubesched:      {ours}"
    return ours


@pytest.mark.usefixtures("schedulers")
def test_a_gang_that_fits_is_placed_whole_by_both(kube: Kube, nodes: list[str]) -> None:
    def build(ns: str, scheduler: str) -> int:
        _group(kube, ns, "ga", 3)
        for i in range(3):
            _member(kube, ns, f"ga-{i}", "ga", scheduler, "500m")
        return 1

    ours = _same(_compare(kube, build))
    assert all(p["bound"] for p in ours["pods"].values())
    assert ours["groups"]["ga"] == [("PodGroupInitiallyScheduled", "True", "Scheduled", "")]


@pytest.mark.usefixtures("schedulers")
def test_a_gang_that_cannot_fit_is_placed_by_neither_with_the_same_messages(kube: Kube, nodes: list[str]) -> None:
    def build(ns: str, scheduler: str) -> int:
        _group(kube, ns, "gb", 3)
        for i in range(3):
            _member(kube, ns, f"gb-{i}", "gb", scheduler, "3")
        return 1

    ours = _same(_compare(kube, build))
    assert not any(p["bound"] for p in ours["pods"].values())
    (cond,) = ours["groups"]["gb"]
    assert cond[1:3] == ("False", "Unschedulable") and cond[3].startswith("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining")


@pytest.mark.usefixtures("schedulers")
def test_members_never_tried_and_a_basic_group_read_alike(kube: Kube, nodes: list[str]) -> None:
    def build(ns: str, scheduler: str) -> int:
        _group(kube, ns, "gc", 3)
        for i in range(3):
            _member(kube, ns, f"gc-{i}", "gc", scheduler, "8")
        _group(kube, ns, "basic", None)
        _member(kube, ns, "b-0", "basic", scheduler, "3")
        _member(kube, ns, "b-1", "basic", scheduler, "3")
        _member(kube, ns, "b-2", "basic", scheduler, "3")
        return 2

    outcomes = _compare(kube, build)
    # The basic group's condition races in kube-scheduler itself: its cycle placing two members
    # writes True, its member left over is retried at once, places nobody, and the False that
    # follows is judged against the PodGroup as the informer last delivered it, which may or may
    # not show the True yet (kubesched judges the same way). Either outcome is kube's.
    racy = {(("PodGroupInitiallyScheduled", "True", "Scheduled", ""),),
            (("PodGroupInitiallyScheduled", "False", "Unschedulable", f"pod group is unschedulable, {NO_VICTIMS}"),)}
    for side in outcomes.values():
        assert tuple(side["groups"].pop("basic")) in racy, side
    ours = _same(outcomes)
    assert sum(p["bound"] for p in ours["pods"].values()) == 2  # two of the basic group's three


@pytest.mark.usefixtures("schedulers")
def test_a_gang_short_of_members_waits_silently_and_its_last_member_releases_it(kube: Kube, nodes: list[str]) -> None:
    def build(ns: str, scheduler: str) -> int:
        _group(kube, ns, "gw", 3)
        _member(kube, ns, "gw-0", "gw", scheduler, "500m")
        _member(kube, ns, "gw-1", "gw", scheduler, "500m")
        time.sleep(2.0)
        waiting = _outcome(kube, ns)
        assert not any(p["bound"] or p["condition"] or p["first_failure"] for p in waiting["pods"].values()), waiting
        assert waiting["groups"]["gw"] == []
        _member(kube, ns, "gw-2", "gw", scheduler, "500m")
        return 1

    ours = _same(_compare(kube, build))
    assert all(p["bound"] for p in ours["pods"].values())


@pytest.mark.usefixtures("schedulers")
def test_members_created_before_their_pod_group_wait_for_it(kube: Kube, nodes: list[str]) -> None:
    def build(ns: str, scheduler: str) -> int:
        for i in range(2):
            _member(kube, ns, f"gl-{i}", "gl", scheduler, "500m")
        time.sleep(1.5)
        assert not any(p["bound"] or p["condition"] for p in _outcome(kube, ns)["pods"].values())
        _group(kube, ns, "gl", 2)
        return 1

    outcomes = _compare(kube, build)
    # kube-scheduler's queue may move the members on the PodGroup's event before its group cycle
    # can read the PodGroup; that cycle then fails at PreFilter, and DynamicResources' PodGroupPostFilter
    # (which kubesched does not have: docs/compatibility.md) reports its missing state as below. The
    # members are placed by the next cycle all the same. Seen on a fresh machine's first `make test` (2026-11-25).
    for pod in outcomes["default-scheduler"]["pods"].values():
        if pod["bound"] and pod["first_failure"] == ("Warning", DRA_MISSING_STATE):
            pod["first_failure"] = None
    ours = _same(outcomes)
    assert all(p["bound"] for p in ours["pods"].values())


@pytest.mark.usefixtures("schedulers")
def test_a_member_of_another_priority_fails_the_group_alike(kube: Kube, nodes: list[str]) -> None:
    kube.apply_manifest(make_priority_class("pg-high", 1000))

    def build(ns: str, scheduler: str) -> int:
        _group(kube, ns, "gp", 2, priorityClassName="pg-high")
        _member(kube, ns, "gp-0", "gp", scheduler, "500m")
        _member(kube, ns, "gp-1", "gp", scheduler, "500m")
        return 1

    ours = _same(_compare(kube, build))
    (cond,) = ours["groups"]["gp"]
    assert cond[1:] == ("False", "SchedulerError",
                        "all pods in a single pod group should have the same priority as the pod group's priority, got 0 and 1000")


def test_kubesched_watches_pod_groups_only_with_the_gate(control_plane: ControlPlane, kube: Kube, namespace: str,
                                                         make_node: Callable[..., JSON], tmp_path: Path) -> None:
    """Without GenericWorkload, schedulingGroup is not read (as kube-scheduler without the gate):
    members are scheduled one by one, whatever their group says."""
    make_node(cpu="4")
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name="kubesched-nogate")
    with run_kubesched(tmp_path, config):
        _group(kube, namespace, "gx", 5)
        _member(kube, namespace, "gx-0", "gx", "kubesched-nogate", "100m")
        kube.wait_for(f"/api/v1/namespaces/{namespace}/pods/gx-0", lambda p: bool(p["spec"].get("nodeName")), timeout=20)
    _cleanup_groups(kube, namespace)


def _cleanup_groups(kube: Kube, ns: str) -> None:
    for g in kube.list(PODGROUPS.format(ns=ns)):
        path = f"{PODGROUPS.format(ns=ns)}/{g['metadata']['name']}"
        kube.patch(path, {"metadata": {"finalizers": None}})
        kube.delete(path, missing_ok=True)


@pytest.mark.usefixtures("schedulers")
def test_a_higher_priority_gang_preempts_alike(kube: Kube, nodes: list[str]) -> None:
    kube.apply_manifest(make_priority_class("pg-preemptor", 1000))
    preempted: dict[str, list[str]] = {}

    def build(ns: str, scheduler: str) -> int:
        for i, node in enumerate(nodes):
            create_pod(kube, f"low-{i}", ns, cpu="3", node_name=node)
        _group(kube, ns, "gh", 2, priorityClassName="pg-preemptor")
        for i in range(2):
            _member(kube, ns, f"gh-{i}", "gh", scheduler, "3", priority_class="pg-preemptor")
        return 1

    def victims(ns: str, scheduler: str) -> None:
        uid = kube.get(f"{PODGROUPS.format(ns=ns)}/gh")["metadata"]["uid"]
        events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
        preempted[scheduler] = sorted(f"{e['regarding']['name']}: {e['note'].replace(uid, '<uid>')}"
                                      for e in events if e.get("reason") == "Preempted")

    outcomes = _compare(kube, build, after=victims)
    for side in outcomes.values():  # the victims are gone by now: only the gang is compared
        side["pods"] = {k: v for k, v in side["pods"].items() if k.startswith("gh-")}
    ours = _same(outcomes)
    assert all(p["bound"] for p in ours["pods"].values())
    assert ours["groups"]["gh"] == [("PodGroupInitiallyScheduled", "True", "Scheduled", "")]
    assert preempted[KUBESCHED] == preempted["default-scheduler"] == [
        "low-0: Preempted by podgroup <uid> on node cluster", "low-1: Preempted by podgroup <uid> on node cluster"]


@pytest.mark.usefixtures("schedulers")
def test_a_gang_whose_anti_affinity_a_victim_elsewhere_in_its_zone_breaks_preempts_it_alike(
        kube: Kube, make_node: Callable[..., JSON]) -> None:
    """Group preemption takes every candidate off before placing the group: a low-priority pod on
    another node of the member's zone, which its required anti-affinity refuses, is a victim too
    (a what-if that left it in the pod index found no placement at all)."""
    kube.apply_manifest(make_priority_class("pg-preemptor", 1000))
    zone = f"z-{secrets.token_hex(3)}"
    here, there = (make_node(cpu="4", labels={"pg-zone": zone})["metadata"]["name"] for _ in range(2))
    preempted: dict[str, list[str]] = {}

    def build(ns: str, scheduler: str) -> int:
        create_pod(kube, "low-near", ns, cpu="100m", labels={"app": "noisy"}, node_name=there)
        create_pod(kube, "low-full", ns, cpu="3", node_name=here)
        _group(kube, ns, "ga", 1, priorityClassName="pg-preemptor")
        create_pod(kube, "ga-0", ns, cpu="2", scheduler_name=scheduler, priority_class="pg-preemptor", extra_spec={
            "schedulingGroup": {"podGroupName": "ga"},
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [here]}]}]}},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": "pg-zone"}]}}})
        return 1

    def victims(ns: str, scheduler: str) -> None:
        events = kube.list(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
        preempted[scheduler] = sorted(e["regarding"]["name"] for e in events if e.get("reason") == "Preempted")

    outcomes = _compare(kube, build, after=victims)
    for side in outcomes.values():
        side["pods"] = {k: v for k, v in side["pods"].items() if k.startswith("ga-")}
    ours = _same(outcomes)
    assert ours["pods"]["ga-0"]["bound"]
    assert preempted[KUBESCHED] == preempted["default-scheduler"] == ["low-full", "low-near"]
