"""TenantOvercommit: NodeResourcesFit's fit check stretched by a tenant's ElasticQuota annotation
`kubesched.io/overcommit` ("tenant A may oversell 5%, tenant B never")."""

from __future__ import annotations

import numpy as np
import pytest

from builders import make_node, make_pod
from kubesched.backends.sim.clusterinput import ManifestError
from kubesched.plugins.tenantovercommit import ANNOTATION, PolicyError, parse_policy, stretched
from unit.plugins.xk8skit import overcommit, quota
from unit.simkit import profile_config, run

ANY = {"cpu": "100", "memory": "100Gi"}


def tenants(a_policy: str | None, b_policy: str | None = None) -> list[dict]:
    objs = []
    for ns, policy in (("team-a", a_policy), ("team-b", b_policy)):
        objs.append(quota(ns, None, None, annotations={ANNOTATION: policy} if policy is not None else None))
    return objs


def test_policies_read_as_documented() -> None:
    assert parse_policy("5%") == {"cpu": 500, "memory": 500, "ephemeral-storage": 500}
    assert parse_policy("never") == {} and parse_policy("") == {}
    assert parse_policy("0%") == {"cpu": 0, "memory": 0, "ephemeral-storage": 0}
    assert parse_policy("cpu=12.5%, memory=0%") == {"cpu": 1250, "memory": 0}
    assert parse_policy("100%")["cpu"] == 10000


@pytest.mark.parametrize(
    ("text", "error"),
    [("5", "is not a percentage"), ("101%", "is not a percentage"), ("-1%", "is not a percentage"),
     ("5.125%", "is not a percentage"), ("nvidia.com/gpu=5%", "cannot be overcommitted"), ("cpu=1%,cpu=2%", "given twice")],
)
def test_bad_policies_are_refused(text: str, error: str) -> None:
    with pytest.raises(PolicyError, match=error):
        parse_policy(text)


def test_stretching_rounds_down_and_does_not_overflow() -> None:
    alloc = np.array([2000, 2**62], dtype=np.int64)
    out = stretched(alloc, np.array([500, 500], dtype=np.int64))
    assert out[0] == 2100 and out[1] == 2**62 + 2**62 // 20


def test_a_tenant_may_oversell_its_share_and_another_never() -> None:
    # 1900m already requested on a 2-cpu node; 200m more is 105% of allocatable.
    objs = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), *tenants("5%")]
    objs += [
        make_pod("base").ns("other").req(cpu="1900m", memory="100Mi").manifest(),
        make_pod("a").ns("team-a").req(cpu="200m", memory="100Mi").arrival("1").manifest(),
        make_pod("b").ns("team-b").req(cpu="200m", memory="100Mi").arrival("1").manifest(),
    ]
    result, _sim = run(objs, profile_config(overcommit()))
    assert result.placements["team-a/a"] == "n1"
    assert not result.placements["team-b/b"]
    assert result.unschedulable["team-b/b"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_beyond_the_stretched_allocatable_the_messages_are_kubes() -> None:
    objs = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), *tenants("5%")]
    objs += [
        make_pod("base").ns("other").req(cpu="1900m", memory="100Mi").manifest(),
        make_pod("a").ns("team-a").req(cpu="201m", memory="100Mi").arrival("1").manifest(),
        make_pod("huge").ns("team-a").req(cpu="2101m", memory="100Mi").arrival("1").manifest(),
    ]
    result, _ = run(objs, profile_config(overcommit()))
    assert not result.placements["team-a/a"]
    assert result.unschedulable["team-a/a"].startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes "
                                                       "are available: 1 No preemption victims found for incoming pod.")
    # Larger than the node even stretched: preemption cannot help.
    assert result.unschedulable["team-a/huge"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful "
        "for scheduling.")


def test_per_resource_policies_and_resources_never_overcommitted() -> None:
    gpu = {"nvidia.com/gpu": "1"}
    objs = [make_node("n1").capacity(cpu="2", memory="1Gi").without("ephemeral-storage").capacity(gpu).manifest(), *tenants("cpu=50%")]
    objs += [
        make_pod("cpu").ns("team-a").req(cpu="3", memory="100Mi").manifest(),
        make_pod("mem").ns("team-a").req(cpu="100m", memory="1100Mi").manifest(),
        make_pod("gpu").ns("team-a").req(cpu="100m", memory="100Mi").arrival("1").manifest(),
    ]
    resources = objs[-1]["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = "2"
    resources["limits"] = {"nvidia.com/gpu": "2"}
    result, _ = run(objs, profile_config(overcommit()))
    assert result.placements["team-a/cpu"] == "n1"  # 3 cpu within 2 x 150%
    assert not result.placements["team-a/mem"]  # memory is not in this tenant's policy
    assert "Insufficient memory" in result.unschedulable["team-a/mem"]
    assert "Insufficient nvidia.com/gpu" in result.unschedulable["team-a/gpu"]


def test_pods_without_a_quota_get_the_plain_fit_check() -> None:
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        *tenants("50%"),
        make_pod("free").ns("other").req(cpu="2500m", memory="100Mi").manifest(),
    ]
    result, _ = run(objs, profile_config(overcommit()))
    assert not result.placements["other/free"]


def test_a_bad_annotation_is_refused_naming_the_quota_and_field() -> None:
    objs = [make_node("n1").without("ephemeral-storage").manifest(), *tenants("lots")]
    with pytest.raises(ManifestError, match=r"ElasticQuota team-a/quota: metadata.annotations\[kubesched.io/overcommit\]: "
                                             r"invalid value 'lots': 'lots' is not a percentage"):
        run(objs, profile_config(overcommit()))


def test_with_capacity_scheduling_both_apply() -> None:
    from builders import make_node, make_pod
    from unit.plugins.xk8skit import capacity

    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        quota("team-a", ANY, ANY, annotations={ANNOTATION: "10%"}),
        quota("team-b", ANY, ANY),
    ]
    objs += [make_pod(f"a{i}").ns("team-a").req(cpu="550m", memory="100Mi").manifest() for i in range(4)]
    result, _ = run(objs, profile_config(capacity(overcommit=True)))
    assert sum(1 for v in result.placements.values() if v) == 4  # 2200m on 2 cpu: the 10% allowance
