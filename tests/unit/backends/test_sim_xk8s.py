"""The simulator's scheduler-plugins objects: PodGroup and ElasticQuota manifests refused as an API
server with their CRDs refuses them, delivered at their arrival, and the quota figures of a run."""

from __future__ import annotations

from typing import Any

import pytest

from builders import make_node, make_pod, make_xk8s_pod_group
from kubesched.api.xk8s import ELASTICQUOTAS, PODGROUPS, CoschedulingPodGroup, ElasticQuota
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.backends.sim.manifests import load_objects
from unit.plugins.xk8skit import capacity, quota
from unit.simkit import profile_config, run


def test_objects_are_read_typed_with_their_arrival() -> None:
    late = quota("team-a", {"cpu": "1"}, {"cpu": "2"})
    late["metadata"]["annotations"]["sim.kubesched.io/arrival"] = "30s"
    cluster = load_objects([make_node("n1").without("ephemeral-storage").manifest(), make_xk8s_pod_group("g", 2, namespace="team-b"), late])
    (pg_res, pg, pg_at), (eq_res, eq, eq_at) = cluster.custom_objects
    assert (pg_res, pg_at, eq_res, eq_at) == (PODGROUPS.resource, 0.0, ELASTICQUOTAS.resource, 30.0)
    assert isinstance(pg, CoschedulingPodGroup) and pg.spec.min_member == 2 and pg.metadata.namespace == "team-b"
    assert isinstance(eq, ElasticQuota) and eq.spec.min == {"cpu": "1"} and eq.metadata.uid
    # Their namespaces exist, as for any object.
    assert {"team-a", "team-b"} <= {ns.metadata.name for ns in cluster.namespaces}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (make_xk8s_pod_group("g", 0), 'PodGroup default/g: The PodGroup "g" is invalid: spec.minMember: Invalid value: 0: '
                            "spec.minMember in body should be greater than or equal to 1"),
        (make_xk8s_pod_group("g", 2, minResources={"cpu": "many"}), "PodGroup default/g: spec.minResources[cpu]: quantities must match"),
        (make_xk8s_pod_group("g", 2, minMembers=3), 'PodGroup default/g: PodGroup in version "v1alpha1" cannot be handled as a '
                                          'PodGroup: strict decoding error: unknown field "spec.minMembers"'),
        (quota("q", None, {"cpu": "x"}), "ElasticQuota default/quota: spec.max[cpu]: quantities must match"),
        (quota("q", None, None, annotations={"kubesched.io/overcommit": "5"}),
         "ElasticQuota default/quota: metadata.annotations[kubesched.io/overcommit]: invalid value '5'"),
        ({**quota("q", None, None), "apiVersion": "scheduling.x-k8s.io/v1beta3"},
         "no matches for kind 'ElasticQuota' in version 'scheduling.x-k8s.io/v1beta3'"),
    ],
)
def test_what_the_crds_refuse_is_refused_naming_the_object_and_field(obj: dict[str, Any], message: str) -> None:
    if obj["kind"] == "ElasticQuota":
        obj["metadata"]["namespace"] = "default"
    with pytest.raises(ManifestError) as exc:
        load_objects([obj])
    assert message in str(exc.value), str(exc.value)


def test_a_second_object_of_the_same_name_is_refused() -> None:
    with pytest.raises(ManifestError, match="defined twice"):
        load_objects([make_xk8s_pod_group("g", 2), make_xk8s_pod_group("g", 3)])


def test_keep_going_leaves_the_bad_object_out() -> None:
    cluster = load_objects([make_xk8s_pod_group("bad", 0), make_xk8s_pod_group("good", 1)], keep_going=True)
    assert [o.metadata.name for _, o, _ in cluster.custom_objects] == ["good"]
    assert len(cluster.errors) == 1


def test_a_run_reports_borrowing_and_reclaims() -> None:
    both, high = {"cpu": "2", "memory": "1Gi"}, {"cpu": "4", "memory": "2Gi"}
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        quota("team-a", both, high),
        quota("team-b", both, high),
    ]
    objs += [make_pod(f"a{i}").ns("team-a").req(cpu="1", memory="100Mi").manifest() for i in range(4)]
    objs += [make_pod(f"b{i}").ns("team-b").req(cpu="1", memory="100Mi").arrival("100").manifest() for i in range(2)]
    result, _ = run(objs, profile_config(capacity()))
    # a2 and a3 ran borrowing B's min: one from 0 to its preemption at 100, one to the end (100).
    assert result.quota == {"tenants": 2, "borrowing_pods": 2, "borrowed_pod_seconds": 200.0, "reclaims": 2}
    assert result.as_dict()["quota"]["reclaims"] == 2


def test_a_run_without_quotas_reports_none() -> None:
    result, _ = run([make_node("n1").without("ephemeral-storage").manifest(), make_pod("p").req(cpu="1", memory="100Mi").manifest()])
    assert result.quota == {}


def test_a_gang_that_can_never_fit_ends_the_run() -> None:
    # Upstream retries such a gang at once, forever (its siblings activate each other); the run jumps
    # to the next cluster change instead (here none, then a pod arriving at 40 s).
    from builders import make_node, make_pod, make_xk8s_pod_group
    from unit.plugins.xk8skit import coscheduling

    objs = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), make_xk8s_pod_group("g", 3)] + [
        make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(3)
    ]
    result, _ = run(objs, profile_config(coscheduling()))
    assert not any(result.placements.values())
    assert result.virtual_seconds == 0.0
    result, sim = run([*objs, make_pod("later").req(cpu="100m", memory="100Mi").arrival("40").manifest()], profile_config(coscheduling()))
    assert result.virtual_seconds >= 40.0
    assert sim.cluster.created_at[next(sp.pod.metadata.uid for sp in sim.input.pods if sp.pod.metadata.name == "later")] == 40.0


def test_simulate_prints_the_quota_figures() -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from kubesched.cli import app

    examples = Path(__file__).resolve().parents[3] / "examples"
    result = CliRunner().invoke(app, ["simulate", str(examples / "tenants"), "-c", str(examples / "profiles" / "capacity-scheduling.yaml")],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines() if line.count("│") == 3}
    assert rows["quota: reclaims"] == "36" and rows["quota: borrowing pods (pod-s)"] == "47 (68400)"
