"""Coscheduling (scheduler-plugins v0.34.7) end to end on the simulated cluster, and its parts: args,
queue order, messages word for word as upstream writes them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from builders import make_node, make_pod, make_xk8s_pod_group
from kubesched.api.goquantity import GoQuantity, go_resource_list, parse
from kubesched.plugins.coscheduling import CoschedulingArgs
from unit.plugins.xk8skit import coscheduling, notes
from unit.simkit import profile_config, run


def gang_run(objects: list[dict], args: dict | None = None):  # type: ignore[no-untyped-def]
    return run(objects, profile_config(coscheduling(args)))


# --- args ---------------------------------------------------------------------------------------------------


def test_args_defaults_are_upstreams() -> None:
    a = CoschedulingArgs()
    assert (a.permit_waiting_time_seconds, a.pod_group_backoff_seconds, a.pod_group_reject_percentage) == (60, 0, 10)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"permitWaitingTimeSeconds": -1}, "permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0"),
        ({"podGroupBackoffSeconds": -5}, "podGroupBackoffSeconds: Invalid value: -5: must be greater than 0"),
        ({"podGroupRejectPercentage": 101}, "podGroupRejectPercentage: Invalid value: 101: must be between 0 and 100"),
        ({"permitWaitingTimeSeconds": -1, "podGroupRejectPercentage": -1},
         "[permitWaitingTimeSeconds: Invalid value: -1: must be greater than 0, "
         "podGroupRejectPercentage: Invalid value: -1: must be between 0 and 100]"),
    ],
)
def test_args_are_validated_as_upstream(args: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        CoschedulingArgs.model_validate(args)


def test_a_profile_with_bad_args_is_refused_naming_the_field() -> None:
    from kubesched.config.errors import ConfigError
    from kubesched.config.parse import parse_config

    with pytest.raises(ConfigError, match="podGroupRejectPercentage: Invalid value: 200: must be between 0 and 100"):
        parse_config(profile_config(coscheduling({"podGroupRejectPercentage": 200})))


# --- gangs ----------------------------------------------------------------------------------------------------


def test_a_gang_that_fits_is_placed_whole() -> None:
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_xk8s_pod_group("g", 3),
    ]
    objs += [make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(3)]
    result, _ = gang_run(objs)
    assert all(result.placements[f"default/g-{i}"] for i in range(3))


def test_a_gang_whose_members_arrive_one_by_one_starts_when_the_last_one_comes() -> None:
    objs = [make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(), make_xk8s_pod_group("g", 3)]
    objs += [make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").arrival(str(10.0 * i)).manifest() for i in range(3)]
    result, sim = gang_run(objs)
    assert all(result.placements[f"default/g-{i}"] for i in range(3))
    # The first member alone: too few siblings, refused before Filter (no preemption can help).
    assert notes(sim, "default/g-0")[0] == (
        "0/1 nodes are available: pre-filter pod g-0 cannot find enough sibling pods, current pods number: 1, "
        "minMember of group: 3. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling., "
        "PodGroup default/g gets rejected due to Pod g-0 is unschedulable even after PostFilter"
    )
    # ...and all bound together when the last arrived: its Permit activated the first two.
    assert sorted(sim.cluster.bound_at.values()) == [20.0, 20.0, 20.0]


def test_a_gang_that_cannot_fit_is_placed_not_at_all() -> None:
    objs = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), make_xk8s_pod_group("g", 3)] + [
        make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(3)
    ]
    result, sim = gang_run(objs)
    assert not any(result.placements.values())
    assert not [e for e in sim.cluster.events if e.reason == "Scheduled"]
    every = [m for i in range(3) for m in notes(sim, f"default/g-{i}")]
    assert "0/1 nodes are available: 1 optimistic rejection in PostFilter." in every
    assert any(m.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption "
                            "victims found for incoming pod., PodGroup default/g gets rejected due to Pod ") for m in every)


def test_a_group_in_backoff_is_refused_before_filter() -> None:
    objs = [make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(), make_xk8s_pod_group("g", 3)] + [
        make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(3)
    ]
    result, sim = gang_run(objs, {"podGroupBackoffSeconds": 60})
    assert not any(result.placements.values())
    every = [m for i in range(3) for m in notes(sim, f"default/g-{i}")]
    assert any(m.startswith("0/1 nodes are available: podGroup default/g failed recently.") for m in every), every


def test_gated_siblings_hold_the_group() -> None:
    objs = [make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(), make_xk8s_pod_group("g", 3)] + [
        make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(2)
    ]
    objs.append(
        make_pod("g-2").req(cpu="1", memory="100Mi").xk8s_group("g").gate("example.com/hold").manifest()
    )
    result, sim = gang_run(objs)
    assert not any(result.placements.values())
    assert notes(sim, "default/g-0")[0].startswith(
        "0/1 nodes are available: pre-filter pod g-0 cannot proceed due to gated pods in the same PodGroup.")


def test_a_member_held_at_permit_times_out_after_its_groups_timeout() -> None:
    # podGroupRejectPercentage 100: the member that fits nowhere never rejects the one waiting.
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_xk8s_pod_group("g", 2, scheduleTimeoutSeconds=7),
    ]
    objs += [
        make_pod("big").req(cpu="3", memory="100Mi").xk8s_group("g").manifest(),
        make_pod("small").req(cpu="1", memory="100Mi").xk8s_group("g").arrival("1.0").manifest(),
    ]
    result, sim = gang_run(objs, {"podGroupRejectPercentage": 100})
    assert not any(result.placements.values())
    timeout = "0/1 nodes are available: 1 rejected due to timeout after waiting 7s at plugin Coscheduling."
    assert timeout in notes(sim, "default/small")


def test_the_permit_wait_falls_back_to_the_args_and_is_capped_at_15_minutes() -> None:
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_xk8s_pod_group("g", 2, scheduleTimeoutSeconds=3600),
    ]
    objs += [
        make_pod("big").req(cpu="3", memory="100Mi").xk8s_group("g").manifest(),
        make_pod("small").req(cpu="1", memory="100Mi").xk8s_group("g").arrival("1.0").manifest(),
    ]
    _, sim = gang_run(objs, {"podGroupRejectPercentage": 100})
    assert "0/1 nodes are available: 1 rejected due to timeout after waiting 15m0s at plugin Coscheduling." in notes(sim, "default/small")
    objs[1] = make_xk8s_pod_group("g", 2)
    _, sim = gang_run(objs, {"podGroupRejectPercentage": 100, "permitWaitingTimeSeconds": 9})
    assert "0/1 nodes are available: 1 rejected due to timeout after waiting 9s at plugin Coscheduling." in notes(sim, "default/small")


def test_a_member_whose_pod_group_does_not_exist_is_refused_at_permit() -> None:
    result, sim = gang_run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_pod("lost").req(cpu="1", memory="100Mi").xk8s_group("nowhere").manifest(),
        ]
    )
    assert not result.placements["default/lost"]
    assert notes(sim, "default/lost")[0] == "0/1 nodes are available: 1 PodGroup not found."


def test_a_pod_without_a_group_schedules_and_fails_as_usual_with_upstreams_postfilter_remark() -> None:
    result, sim = gang_run(
        [
            make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
            make_pod("plain").req(cpu="1", memory="100Mi").manifest(),
            make_pod("huge").req(cpu="4", memory="100Mi").manifest(),
        ]
    )
    assert result.placements["default/plain"] == "n1"
    # Coscheduling's PostFilter runs after DefaultPreemption's, and says it found no group.
    assert notes(sim, "default/huge")[0] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful "
        "for scheduling., can not find pod group"
    )


# --- minResources -----------------------------------------------------------------------------------------------


def test_min_resources_beyond_the_cluster_print_the_gap_as_go_does() -> None:
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_xk8s_pod_group("g", 2, minResources={"cpu": "10", "memory": "100Gi"}),
    ]
    objs += [make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(2)]
    result, sim = gang_run(objs)
    assert not any(result.placements.values())
    # 10 cpu less 2 x 2000m free; 100Gi less 2 x 32Gi: what Go's %v prints of the ResourceList left.
    assert notes(sim, "default/g-0")[0].startswith(
        "0/2 nodes are available: resource gap: map[cpu:{{6000 -3} {<nil>}  DecimalSI} "
        "memory:{{38654705664 0} {<nil>}  BinarySI}]."
    )


def test_min_resources_within_the_cluster_let_the_gang_through() -> None:
    objs = [
        make_node("n1").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_xk8s_pod_group("g", 2, minResources={"cpu": "3"}),
    ]
    objs += [make_pod(f"g-{i}").req(cpu="1", memory="100Mi").xk8s_group("g").manifest() for i in range(2)]
    result, _ = gang_run(objs)
    assert all(result.placements.values())


def test_go_quantity_arithmetic_and_printing() -> None:
    q = parse("1.5")
    assert (q.value, q.scale, q.format) == (15, -1, "DecimalSI")
    q.sub(GoQuantity(400, -3, "DecimalSI"))
    assert (q.value, q.scale) == (1100, -3)
    assert parse("2Gi").value == 2 << 30 and parse("2Gi").format == "BinarySI"
    assert parse("1e3").format == "DecimalExponent" and (parse("1e3").value, parse("1e3").scale) == (1, 3)
    assert parse("100m").s == "100m" and parse("0.5").s == ""
    assert go_resource_list({"pods": GoQuantity(1, 0, "DecimalSI"), "cpu": GoQuantity(500, -3, "DecimalSI")}) == (
        "map[cpu:{{500 -3} {<nil>}  DecimalSI} pods:{{1 0} {<nil>}  DecimalSI}]")


# --- the queue ----------------------------------------------------------------------------------------------------


def test_queue_order_is_priority_then_group_time_then_name() -> None:
    from kubesched.plugins.coscheduling import Coscheduling

    class Custom:
        def __init__(self) -> None:
            self.objects: dict[str, object] = {}

        def watching(self, resource: str) -> bool:
            return True

        def get(self, resource: str, ns: str, name: str) -> object | None:
            return self.objects.get(f"{ns}/{name}")

        def first_seen(self, resource: str, obj: object) -> float | None:
            return getattr(obj, "seen", None)

    custom = Custom()
    handle = SimpleNamespace(cache=SimpleNamespace(custom=custom), now=lambda: 100.0)
    plugin = Coscheduling(None, handle)  # type: ignore[arg-type]
    custom.objects["default/early"] = SimpleNamespace(seen=5.0)
    custom.objects["default/late"] = SimpleNamespace(seen=50.0)

    def qpi(name: str, group: str | None, priority: int = 0, first: float = 10.0):  # type: ignore[no-untyped-def]
        labels = {"scheduling.x-k8s.io/pod-group": group} if group else {}
        pi = SimpleNamespace(priority=priority, labels=labels, namespace="default", key=f"default/{name}")
        return SimpleNamespace(pi=pi, initial_attempt_timestamp=first, timestamp=first)

    entries = [qpi("late-b", "late"), qpi("plain", None, first=20.0), qpi("early-b", "early"), qpi("early-a", "early"),
               qpi("late-a", "late"), qpi("vip", None, priority=10, first=99.0)]
    order = [e.pi.key.split("/")[1] for e in sorted(entries, key=plugin.sort_key)]
    assert order == ["vip", "early-a", "early-b", "plain", "late-a", "late-b"]
    # A group's failure sends it behind the pods queued before it.
    plugin.last_failed["default/early"] = 30.0
    order = [e.pi.key.split("/")[1] for e in sorted(entries, key=plugin.sort_key)]
    assert order == ["vip", "plain", "early-a", "early-b", "late-a", "late-b"]
