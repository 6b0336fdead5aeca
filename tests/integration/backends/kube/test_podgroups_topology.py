"""Topology-aware placement of pod groups, differentially: kube-scheduler v1.37.2 and `kubesched run`
both with GenericWorkload and TopologyAwareWorkloadScheduling, on one apiserver (see
test_podgroups.py for how a scenario runs under each in turn and what is compared)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from integration.backends.kube.test_podgroups import KUBESCHED, _compare, _group, _member, _same
from integration.harness.controlplane import ControlPlane
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.rest import JSON, Kube

GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"


@pytest.fixture(scope="module")
def schedulers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    workdir = tmp_path_factory.mktemp("podgroups-tas")
    config = kubesched_config(control_plane.admin_kubeconfig, scheduler_name=KUBESCHED)
    with run_kube_scheduler(control_plane, feature_gates=GATES), run_kubesched(workdir, config, args=["--feature-gates", GATES]):
        yield


@pytest.fixture
def racks(make_node: Callable[..., JSON]) -> dict[str, list[str]]:
    suffix = secrets.token_hex(2)
    out: dict[str, list[str]] = {}
    for rack in ("ra", "rb"):
        out[rack] = [make_node(f"tas-{rack}{i}-{suffix}", cpu="4", labels={"tas-rack": f"{rack}-{suffix}"})["metadata"]["name"]
                     for i in range(2)]
    return out


def _in_rack(kube: Kube, ns: str, name: str, min_count: int) -> None:
    _group(kube, ns, name, min_count, schedulingConstraints={"topology": [{"key": "tas-rack"}]})


def _nodes(kube: Kube, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in kube.list(f"/api/v1/namespaces/{ns}/pods")}


@pytest.mark.usefixtures("schedulers")
def test_a_gang_that_cannot_fit_without_a_constraint_reads_alike(kube: Kube, racks: dict[str, Any]) -> None:
    def build(ns: str, scheduler: str) -> int:
        _group(kube, ns, "g", 5)
        for i in range(5):
            _member(kube, ns, f"g-{i}", "g", scheduler, "3")
        return 1

    ours = _same(_compare(kube, build))
    assert not any(p["bound"] for p in ours["pods"].values())
    (cond,) = ours["groups"]["g"]
    assert "0/1 placements are available, first placement status: minCount (5) cannot be satisfied: 4 scheduled" in cond[3]


@pytest.mark.usefixtures("schedulers")
def test_a_gang_in_one_rack_is_placed_in_one_rack_by_both(kube: Kube, racks: dict[str, list[str]]) -> None:
    placed: dict[str, set[str]] = {}

    def build(ns: str, scheduler: str) -> int:
        _in_rack(kube, ns, "g", 4)
        for i in range(4):
            _member(kube, ns, f"g-{i}", "g", scheduler, "1500m")
        return 1

    outcomes = _compare(kube, build, after=lambda ns, scheduler: placed.__setitem__(scheduler, set(_nodes(kube, ns).values())))
    ours = _same(outcomes)
    assert all(p["bound"] for p in ours["pods"].values())
    for nodes in placed.values():  # both kept the gang inside one rack (which one is random upstream)
        assert nodes <= set(racks["ra"]) or nodes <= set(racks["rb"]), nodes


@pytest.mark.usefixtures("schedulers")
def test_no_rack_holds_the_gang_and_both_say_so(kube: Kube, racks: dict[str, list[str]]) -> None:
    def build(ns: str, scheduler: str) -> int:
        _in_rack(kube, ns, "g", 3)
        for i in range(3):
            _member(kube, ns, f"g-{i}", "g", scheduler, "3")
        return 1

    ours = _same(_compare(kube, build))
    (cond,) = ours["groups"]["g"]
    assert cond[3].startswith("pod group is unschedulable, 0/2 placements are available, first placement status: ")
