"""The simulated cluster's disruption controller: PodDisruptionBudget status as kube's computes it
(expected, desired and current healthy pods, disruptions allowed), kept current as pods come, run,
finish and go."""

from __future__ import annotations

from typing import Any

from builders import make_node, make_pdb, make_pod
from kubesched.api.policy import PodDisruptionBudget
from kubesched.backends.sim.manifests import load_objects
from unit.simkit import run


def _status(objects: list[dict], name: str = "budget") -> Any:
    _, sim = run([make_node("n1").capacity(cpu="64", pods=200).manifest(), *objects])
    assert sim.cluster.disruption is not None
    (pdb,) = [p for p in sim.cluster.disruption.budgets() if p.metadata.name == name]
    return pdb.status


def _bound(name: str, app: str = "db", **more: Any) -> dict:
    return make_pod(name).req(cpu="100m", memory="100Mi").label(app=app).node("n1").manifest()


def _pending(name: str, app: str = "db") -> dict:
    # Too big for any node: stays pending.
    return make_pod(name).req(cpu="1000", memory="100Mi").label(app=app).manifest()


def test_an_integer_min_available_counts_the_selected_pods() -> None:
    s = _status([_bound("a"), _bound("b"), _bound("c"), _pending("d"), _bound("x", app="web"),
                 make_pdb("budget", min_available=2, match_labels={"app": "db"})])
    assert (s.expected_pods, s.current_healthy, s.desired_healthy, s.disruptions_allowed) == (4, 3, 2, 1)
    (cond,) = s.conditions
    assert (cond.type, cond.status, cond.reason) == ("DisruptionAllowed", "True", "SufficientPods")


def test_no_disruption_is_allowed_below_the_minimum() -> None:
    s = _status([_bound("a"), make_pdb("budget", min_available=2, match_labels={"app": "db"})])
    assert (s.expected_pods, s.current_healthy, s.desired_healthy, s.disruptions_allowed) == (1, 1, 2, 0)
    assert (s.conditions[0].status, s.conditions[0].reason) == ("False", "InsufficientPods")


def _deployment(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "pause",
                                                           "resources": {"requests": {"cpu": "100m"}}}]}}}}


def test_max_unavailable_scales_by_the_owning_controller() -> None:
    s = _status([_deployment("web", 3), make_pdb("budget", max_unavailable=1, match_labels={"app": "web"})])
    assert (s.expected_pods, s.current_healthy, s.desired_healthy, s.disruptions_allowed) == (3, 3, 2, 1)


def test_percentages_round_up() -> None:
    s = _status([_deployment("web", 3), make_pdb("budget", min_available="50%", match_labels={"app": "web"})])
    assert (s.expected_pods, s.desired_healthy, s.disruptions_allowed) == (3, 2, 1)
    s = _status([_deployment("web", 3), make_pdb("budget", max_unavailable="50%", match_labels={"app": "web"})])
    assert (s.expected_pods, s.desired_healthy, s.disruptions_allowed) == (3, 1, 2)


def test_pods_without_a_controller_are_not_expected_by_a_max_unavailable_budget() -> None:
    s = _status([_bound("a"), _bound("b"), make_pdb("budget", max_unavailable=1, match_labels={"app": "db"})])
    assert (s.expected_pods, s.current_healthy, s.disruptions_allowed) == (0, 2, 0)


def test_a_job_has_no_scale_and_the_budget_fails_safe() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch", "namespace": "default"},
           "spec": {"template": {"metadata": {"labels": {"app": "batch"}},
                                 "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}}}
    s = _status([job, make_pdb("budget", max_unavailable=0, match_labels={"app": "batch"})])
    assert s.disruptions_allowed == 0
    (cond,) = s.conditions
    assert (cond.status, cond.reason, cond.message) == ("False", "SyncFailed",
                                                        "jobs.batch does not implement the scale subresource")


def test_a_status_given_in_the_manifest_stands_where_none_can_be_computed() -> None:
    """A budget dumped from a real cluster whose pods' ReplicaSet is not in the input."""
    owned = make_pod("a").req(cpu="100m", memory="100Mi").label(app="db").node("n1").manifest()
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "db-5d9",
                                             "uid": "0b3c", "controller": True}]
    given = {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "observedGeneration": 1}
    s = _status([owned, make_pdb("budget", max_unavailable=1, match_labels={"app": "db"}, status=given)])
    assert (s.disruptions_allowed, s.current_healthy, s.expected_pods) == (1, 3, 3)
    # Without one, kube's fail-safe: none allowed, and why.
    s = _status([owned, make_pdb("budget", max_unavailable=1, match_labels={"app": "db"})])
    assert s.disruptions_allowed == 0 and s.conditions[0].message == 'found no controllers for pod "a"'


def test_selectors_empty_selects_every_pod_of_the_namespace_and_none_selects_none() -> None:
    pods = [_bound("a"), _bound("b", app="web")]
    assert _status([*pods, make_pdb("budget", min_available=1, selector={})]).expected_pods == 2
    assert _status([*pods, make_pdb("budget", min_available=1)]).expected_pods == 0


def test_a_pod_a_ready_condition_calls_not_ready_is_not_healthy() -> None:
    unready = _bound("b")
    unready["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
    s = _status([_bound("a"), unready, make_pdb("budget", min_available=1, match_labels={"app": "db"})])
    assert (s.expected_pods, s.current_healthy, s.disruptions_allowed) == (2, 1, 0)


def test_the_status_follows_pods_bound_finished_and_preempted() -> None:
    """Two pods arrive and are bound (healthy), then one finishes; a third is preempted by a
    high-priority pod: the scheduler sees the status of the moment at each step."""
    node = make_node("n1").capacity(cpu="2", memory="8Gi", pods=10).without("ephemeral-storage").manifest()
    a = make_pod("a").req(cpu="1", memory="100Mi").label(app="db").priority(10).manifest()
    b = make_pod("b").req(cpu="1", memory="100Mi").label(app="db").priority(10).manifest()
    b["metadata"]["annotations"] = {"sim.kubesched.io/duration": "30s"}
    urgent = make_pod("urgent").req(cpu="2", memory="100Mi").priority(1000).manifest()
    urgent["metadata"]["annotations"] = {"sim.kubesched.io/arrival": "60s"}
    budget = make_pdb("budget", min_available=0, match_labels={"app": "db"})
    result, sim = run([node, a, b, urgent, budget])
    assert result.placements["default/urgent"] == "n1" and result.preempted == ["default/a"]
    (pdb,) = sim.cluster.disruption.budgets()
    assert (pdb.status.expected_pods, pdb.status.current_healthy) == (1, 0)  # b finished, a preempted
    assert sim.scheduler.cache.pdbs.all()[0].allowed == 0


def test_budgets_are_validated_as_the_api_server_validates_them() -> None:
    import pytest

    from kubesched.backends.sim.clusterinput import ManifestError

    with pytest.raises(ManifestError) as err:
        load_objects([make_pdb("both", min_available=1, max_unavailable="50%", match_labels={"app": "db"})], "pdb.yaml")
    assert str(err.value) == (
        'pdb.yaml: document 1: PodDisruptionBudget default/both: The PodDisruptionBudget "both" is invalid: spec: '
        'Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"app":"db"}},"MaxUnavailable":"50%",'
        '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set')
    loaded = load_objects([make_pdb("ok", min_available="100%", match_labels={"app": "db"})], "pdb.yaml")
    (pdb, arrival), = loaded.pdbs
    assert isinstance(pdb, PodDisruptionBudget) and pdb.key == "default/ok" and arrival == 0
