"""PodDisruptionBudgets in preemption, on the real control plane, side by side with kube-scheduler.

kube-controller-manager's disruption controller runs beside the apiserver, so the budgets carry
the status a real cluster gives them; the bound pods are marked Ready as a kubelet would. Each
scenario runs once under kube-scheduler v1.37.2 and once under `kubesched run`, and both must
evict the same pods, and put the preemptor on the same node, as the expected outcome says. Each
scenario is built so that ignoring the budget gives a different answer.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from builders import make_pdb, make_priority_class
from integration.harness.controlplane import ControlPlane
from integration.harness.disruption import mark_ready, run_disruption_controller
from integration.harness.kube_scheduler import run_kube_scheduler
from integration.harness.kubesched import kubesched_config, run_kubesched
from integration.harness.objects import create_pod, wait_bound
from integration.harness.rest import JSON, Kube
from kubesched.tools.devcluster.procs import wait_until

SCHEDULERS = ("kube-scheduler", "kubesched")


@pytest.fixture(scope="module")
def disruption_controller(control_plane: ControlPlane) -> Iterator[None]:
    with run_disruption_controller(control_plane):
        yield


@pytest.fixture(scope="module")
def priorities(kube: Kube) -> Iterator[dict[str, str]]:
    suffix = secrets.token_hex(3)
    names = {value: f"pdb-test-{value}-{suffix}" for value in (10, 20, 1000)}
    for value, name in names.items():
        kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", make_priority_class(name, value))
    try:
        yield {str(value): name for value, name in names.items()}
    finally:
        for name in names.values():
            kube.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", missing_ok=True)


def _scheduler(which: str, control_plane: ControlPlane, tmp_path: Path) -> tuple[AbstractContextManager[object], str | None]:
    """The scheduler's context and the schedulerName its pods carry."""
    if which == "kube-scheduler":
        return run_kube_scheduler(control_plane), None
    return run_kubesched(tmp_path, kubesched_config(control_plane.admin_kubeconfig)), "kubesched"


def _bound_pod(kube: Kube, namespace: str, name: str, node: str, priority: str, cpu: str,
               labels: dict[str, str] | None = None) -> None:
    create_pod(kube, name, namespace, cpu=cpu, node_name=node, priority_class=priority, labels=labels)
    mark_ready(kube, namespace, name)


def _budget(kube: Kube, namespace: str, name: str, *, min_available: int, labels: dict[str, str],
            expected_pods: int) -> None:
    """Creates the budget and waits until the disruption controller has counted its pods."""
    kube.create(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
                make_pdb(name, namespace=namespace, min_available=min_available, match_labels=labels))

    def counted(pdb: JSON) -> bool:
        status = pdb.get("status") or {}
        return (status.get("observedGeneration") == pdb["metadata"]["generation"]
                and status.get("expectedPods") == expected_pods
                and status.get("currentHealthy") == expected_pods)

    pdb = kube.wait_for(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}", counted, timeout=60)
    assert pdb["status"]["disruptionsAllowed"] == 0, pdb["status"]


def _pods(kube: Kube, namespace: str) -> set[str]:
    return {p["metadata"]["name"] for p in kube.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
            if not p["metadata"].get("deletionTimestamp")}


@pytest.mark.parametrize("which", SCHEDULERS)
def test_preemption_chooses_the_node_whose_victims_no_budget_protects(
    which: str, control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON],
    tmp_path: Path, disruption_controller: None, priorities: dict[str, str],
) -> None:
    # Without the budget node a would win: its victims' highest priority (10) is below node b's (20).
    tag = {"kubesched.test/pdb": secrets.token_hex(3)}
    a = make_node(cpu="1", labels=tag)["metadata"]["name"]
    b = make_node(cpu="1", labels=tag)["metadata"]["name"]
    quorum = {"app": "quorum"}
    for i in range(2):
        _bound_pod(kube, namespace, f"quorum-{i}", a, priorities["10"], "400m", quorum)
        _bound_pod(kube, namespace, f"batch-{i}", b, priorities["20"], "400m")
    _budget(kube, namespace, "quorum", min_available=2, labels=quorum, expected_pods=2)
    context, scheduler_name = _scheduler(which, control_plane, tmp_path)
    with context:
        create_pod(kube, "preemptor", namespace, cpu="900m", scheduler_name=scheduler_name,
                   priority_class=priorities["1000"], extra_spec={"nodeSelector": tag})
        assert wait_bound(kube, namespace, "preemptor", timeout=60) == b
    assert _pods(kube, namespace) == {"quorum-0", "quorum-1", "preemptor"}


@pytest.mark.parametrize("which", SCHEDULERS)
def test_victims_spare_the_pod_a_budget_protects(
    which: str, control_plane: ControlPlane, kube: Kube, namespace: str, make_node: Callable[..., JSON],
    tmp_path: Path, disruption_controller: None, priorities: dict[str, str],
) -> None:
    # Without the budget the more important pods would be tried back first: batch-0 would stay, and
    # batch-1 and the protected pod would go.
    tag = {"kubesched.test/pdb": secrets.token_hex(3)}
    node = make_node(cpu="1", labels=tag)["metadata"]["name"]
    quorum = {"app": "quorum"}
    _bound_pod(kube, namespace, "quorum-0", node, priorities["10"], "400m", quorum)
    _bound_pod(kube, namespace, "batch-0", node, priorities["20"], "300m")
    _bound_pod(kube, namespace, "batch-1", node, priorities["20"], "300m")
    _budget(kube, namespace, "quorum", min_available=1, labels=quorum, expected_pods=1)
    context, scheduler_name = _scheduler(which, control_plane, tmp_path)
    with context:
        create_pod(kube, "preemptor", namespace, cpu="600m", scheduler_name=scheduler_name,
                   priority_class=priorities["1000"], extra_spec={"nodeSelector": tag})
        assert wait_bound(kube, namespace, "preemptor", timeout=60) == node
    wait_until(lambda: _pods(kube, namespace) == {"quorum-0", "preemptor"}, timeout=30,
               what="only the protected pod and the preemptor left")
