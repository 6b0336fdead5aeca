"""DefaultPreemption, end to end: the real Scheduler and runtime over the simulated cluster backend,
with a profile of real plugins, checked against kube-scheduler's documented preemption behaviour."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterable
from typing import Any, ClassVar

import pytest

from builders import UnitHandle, make_node, make_pod, make_priority_class
from kubesched.api.objects import Pod, PodCondition
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.backends.sim.cluster import SimCluster
from kubesched.cache.cache import Cache
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config
from kubesched.config.types import API_VERSION, KIND, SchedulerConfig
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, UNSCHEDULED_POD, ActionType, ClusterEvent, QueueingHint
from kubesched.framework.interface import PermitPlugin, Plugin
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import Diagnosis
from kubesched.infra.clock import VirtualClock
from kubesched.observe.record import DecisionRecord
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption import (
    NO_VICTIMS,
    NOT_HELPFUL,
    DefaultPreemption,
    DefaultPreemptionArgs,
    preempted_message,
)
from kubesched.plugins.helper.preemption import NOT_ELIGIBLE_NEVER, NOT_ELIGIBLE_TERMINATING
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.noderesourcesfit import NodeResourcesFit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.scheduler.core import Scheduler

PROFILE = "default-scheduler"


class HoldAtPermit(Plugin, PermitPlugin):
    """Test Permit plugin: pods labelled hold=yes wait at Permit (for an hour)."""

    name: ClassVar[str] = "HoldAtPermit"

    def permit(self, state: CycleState, pi: PodInfo, node: str) -> tuple[Status | None, float]:
        if pi.labels.get("hold") == "yes":
            return Status(Code.WAIT), 3600.0
        return None, 0.0


REGISTRY = Registry(
    [
        PrioritySort,
        NodeUnschedulable,
        NodeAffinity,
        NodeResourcesFit,
        PodTopologySpread,
        DefaultPreemption,
        DefaultBinder,
        HoldAtPermit,
        InterPodAffinity,
    ]
)
PLUGINS = [
    "PrioritySort",
    "NodeUnschedulable",
    "NodeAffinity",
    "NodeResourcesFit",
    "PodTopologySpread",
    "DefaultPreemption",
    "DefaultBinder",
]


def make_config(plugins: Iterable[str] = PLUGINS, preemption_args: dict[str, Any] | None = None) -> SchedulerConfig:
    profile: dict[str, Any] = {
        "schedulerName": PROFILE,
        "plugins": {"multiPoint": {"enabled": [{"name": n} for n in plugins], "disabled": [{"name": "*"}]}},
    }
    if preemption_args is not None:
        profile["pluginConfig"] = [{"name": "DefaultPreemption", "args": preemption_args}]
    return parse_config({"apiVersion": API_VERSION, "kind": KIND, "profiles": [profile]}, REGISTRY)


def running(name: str, node_name: str, cpu: str, priority: int, *, start: str | None = None,
            labels: dict[str, str] | None = None) -> Pod:
    p = make_pod(name).req(cpu=cpu).priority(priority).node(node_name).label(labels or {}).obj()
    p.status.phase = "Running"
    p.status.start_time = start
    return p


class Cluster:
    """The scheduler wired to the simulated backend on a virtual clock."""

    def __init__(
        self, nodes: Iterable[Any], pods: Iterable[Pod] = (), *, config: SchedulerConfig | None = None
    ) -> None:
        self.clock = VirtualClock()
        self.sim = SimCluster(self.clock)
        self.sched = Scheduler(config or make_config(), self.sim, self.clock, registry=REGISTRY, seed=1)
        self.sim.scheduler = self.sched
        for n in nodes:
            self.sched.on_node_add(n)
        for p in pods:
            self.sim.create_pod(p)

    @property
    def fwk(self) -> Framework:
        return self.sched.frameworks[PROFILE]

    @property
    def plugin(self) -> DefaultPreemption:
        plugin = self.fwk.instances["DefaultPreemption"]
        assert isinstance(plugin, DefaultPreemption)
        return plugin

    def add(self, *pods: Pod) -> None:
        for p in pods:
            self.sim.create_pod(p)

    async def settle(self, rounds: int = 200) -> None:
        """Runs scheduling cycles, binding cycles, deletions and due timers until nothing moves."""
        for _ in range(rounds):
            self.clock.run_due()
            for _ in range(1000):
                if not self.sched.schedule_one():
                    break
                await asyncio.sleep(0)
            if self.sched.binder.tasks:
                # Bounded: a binding held at Permit only moves on when the virtual clock does.
                await asyncio.wait(list(self.sched.binder.tasks.values()), timeout=0.5)
            await self.side_effects()
            await asyncio.sleep(0)
            if len(self.sched.queue):
                continue
            nxt = self.clock.next_time()
            if nxt is None or not self.sched.queue.has_timed_work():
                return
            self.clock.advance_to(nxt)
        raise AssertionError("the cluster did not settle")

    async def cycle(self) -> DecisionRecord:
        """One scheduling cycle, then the side effects it started."""
        assert self.sched.schedule_one()
        await self.side_effects()
        return self.sched.recorder.recent[-1]

    async def side_effects(self) -> None:
        """Waits for the deletions (and other background work) the last cycles started."""
        while self.sched.background:
            await asyncio.gather(*self.sched.background)

    def node_of(self, name: str) -> str | None:
        for p in self.sim.pods.values():
            if p.metadata.name == name:
                return p.spec.node_name or None
        return None

    def exists(self, name: str) -> bool:
        return any(p.metadata.name == name for p in self.sim.pods.values())

    def preempted(self) -> set[str]:
        return {key.split("/", 1)[1] for key in self.sim.preempted}

    def events(self, reason: str) -> list[tuple[str, str]]:
        return [(e.pod.split("/", 1)[1], e.message) for e in self.sim.events if e.reason == reason]

    def failure_messages(self, name: str) -> list[str]:
        return [msg for who, msg in self.events("FailedScheduling") if who == name]

    def uid(self, name: str) -> str:
        for p in self.sim.pods.values():
            if p.metadata.name == name:
                return p.metadata.uid or ""
        raise KeyError(name)


# --- args -----------------------------------------------------------------------------------------


def test_events_are_kubes_with_async_preemption() -> None:
    # kube (SchedulerAsyncPreemption, on by default) registers a victim's deletion and leaves the
    # decision to requeue to the plugins that rejected the pod: its hint always skips.
    plugin = DefaultPreemption(None, UnitHandle(Cache()))
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (ASSIGNED_POD, ActionType.Delete, plugin.is_pod_schedulable_after_assigned_pod_deletion)
    ]
    for resource, action in [(UNSCHEDULED_POD, ActionType.Delete), (ASSIGNED_POD, ActionType.Add), (NODE, ActionType.Add)]:
        assert not events[0].event.covers(ClusterEvent(resource, action))
    victim = make_pod("victim").node("n1").info()
    assert plugin.is_pod_schedulable_after_assigned_pod_deletion(make_pod("p").info(), victim, None) == QueueingHint.QueueSkip


def test_args_defaults() -> None:
    args = DefaultPreemptionArgs()
    assert args.min_candidate_nodes_percentage == 10
    assert args.min_candidate_nodes_absolute == 100
    parsed = DefaultPreemptionArgs.model_validate({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5})
    assert (parsed.min_candidate_nodes_percentage, parsed.min_candidate_nodes_absolute) == (0, 5)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"minCandidateNodesPercentage": -1}, "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]"),
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        ({"minCandidateNodesAbsolute": 2**31}, "minCandidateNodesAbsolute: Invalid value: 2147483648: out of range for a 32-bit"),
        ({"minCandidateNodesPercentage": "10"}, "valid integer"),
        ({"minCandidateNodesAbsolute": 1.5}, "valid integer"),
        ({"minCandidateNodes": 1}, "Extra inputs are not permitted"),
    ],
)
def test_args_validation(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        DefaultPreemptionArgs.model_validate(raw)


def test_args_through_configuration() -> None:
    cfg = make_config(preemption_args={"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 1})
    args = cfg.profiles[0].plugin_args["DefaultPreemption"]
    assert isinstance(args, DefaultPreemptionArgs)
    assert args.min_candidate_nodes_percentage == 50
    with pytest.raises(ConfigError, match=r"pluginConfig\[0\]\.args.*minCandidateNodesPercentage"):
        make_config(preemption_args={"minCandidateNodesPercentage": 200})


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "expected"),
    [
        (10, 100, 50, 50),  # the absolute floor is capped by the nodes there are
        (10, 100, 5000, 500),  # 10% of 5000 is above the floor
        (10, 100, 999, 100),  # 99 is below the floor
        (0, 5, 50, 5),
        (50, 1, 7, 3),  # 7 * 50 / 100 truncates to 3
        (5, 0, 10, 0),  # 10 * 5 / 100 truncates to 0 and nothing raises it
    ],
)
def test_num_candidates(pct: int, absolute: int, nodes: int, expected: int) -> None:
    plugin = DefaultPreemption(
        DefaultPreemptionArgs(minCandidateNodesPercentage=pct, minCandidateNodesAbsolute=absolute), UnitHandle(Cache())
    )
    assert plugin.num_candidates(nodes) == expected


# --- victims ---------------------------------------------------------------------------------------


async def test_minimal_victims_are_the_least_important() -> None:
    # A full 4-cpu node; the preemptor needs 2 cpu, so two of the four 1-cpu pods must go: the two
    # of lowest priority, the others being spared in decreasing priority order.
    c = Cluster(
        [make_node("n1").capacity(cpu="4").obj()],
        [running(f"p{prio}", "n1", "1", prio) for prio in (1, 2, 3, 4)],
    )
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    record = await c.cycle()
    assert record.result == "unschedulable"
    assert record.nominated == "n1"
    assert c.preempted() == {"p1", "p2"}
    assert c.exists("p3") and c.exists("p4")
    await c.settle()
    assert c.node_of("high") == "n1"


async def test_reprieve_goes_by_priority_not_size() -> None:
    # Evicting p5 alone would make room, but victims are spared most important first: p5 goes
    # back and the preemptor still fits, then neither p3 nor p1 fits beside them.
    c = Cluster(
        [make_node("n1").capacity(cpu="4").obj()],
        [running("p5", "n1", "2", 5), running("p3", "n1", "1", 3), running("p1", "n1", "1", 1)],
    )
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    await c.cycle()
    assert c.preempted() == {"p3", "p1"}
    assert c.exists("p5")


async def test_equal_start_time_tie_keeps_older_pod() -> None:
    # Same priority: the pod that started earlier is more important and is spared first.
    c = Cluster(
        [make_node("n1").capacity(cpu="2").obj()],
        [
            running("young", "n1", "1", 1, start="2024-06-01T00:00:00Z"),
            running("old", "n1", "1", 1, start="2024-01-01T00:00:00Z"),
        ],
    )
    c.add(make_pod("high").req(cpu="1").priority(10).obj())
    await c.cycle()
    assert c.preempted() == {"young"}


async def test_only_lower_priority_pods_are_victims() -> None:
    # The equal-priority pod is untouchable: even with the lower one gone the pod does not fit,
    # so the node is no candidate and nothing is evicted.
    c = Cluster(
        [make_node("n1").capacity(cpu="4").obj()],
        [running("same", "n1", "2", 10), running("low", "n1", "2", 5)],
    )
    c.add(make_pod("high").req(cpu="4").priority(10).obj())
    record = await c.cycle()
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )


async def test_no_lower_priority_pods_message() -> None:
    c = Cluster(
        [make_node(f"n{i}").capacity(cpu="2").obj() for i in range(3)],
        [running(f"p{i}", f"n{i}", "2", 100) for i in range(3)],
    )
    c.add(make_pod("high").req(cpu="1").priority(10).obj())
    record = await c.cycle()
    assert record.nominated is None
    assert record.message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


async def test_preemption_policy_never() -> None:
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low", "n1", "2", 1)])
    c.add(make_pod("high").req(cpu="1").priority(10).spec(preemptionPolicy="Never").obj())
    record = await c.cycle()
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: " + NOT_ELIGIBLE_NEVER
    )
    await c.settle()
    assert c.exists("low") and c.node_of("high") is None


async def test_unresolvable_nodes_are_not_candidates() -> None:
    # n1 is cordoned (UnschedulableAndUnresolvable): its low-priority pods must survive although
    # evicting them would make room; n2 has only more important pods.
    c = Cluster(
        [make_node("n1").capacity(cpu="2").unschedulable().obj(), make_node("n2").capacity(cpu="2").obj()],
        [running("low", "n1", "2", 1), running("vip", "n2", "2", 100)],
    )
    c.add(make_pod("high").req(cpu="1").priority(10).obj())
    record = await c.cycle()
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


async def test_all_nodes_unresolvable() -> None:
    c = Cluster(
        [make_node("n1").capacity(cpu="2").unschedulable().obj(), make_node("n2").capacity(cpu="2").unschedulable().obj()],
        [running("low", "n1", "2", 1)],
    )
    c.add(make_pod("high").req(cpu="1").priority(10).obj())
    record = await c.cycle()
    assert record.message == (
        "0/2 nodes are available: 2 node(s) were unschedulable. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


async def test_nodes_cut_by_prefilter_are_not_candidates() -> None:
    # Required node affinity on metadata.name narrows the cycle to n1 in PreFilter; n2 (with an
    # evictable pod) was never evaluated and cannot be a candidate.
    c = Cluster(
        [make_node("n1").capacity(cpu="2").obj(), make_node("n2").capacity(cpu="2").obj()],
        [running("vip", "n1", "2", 100), running("low", "n2", "2", 1)],
    )
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
            }
        }
    }
    c.add(make_pod("high").req(cpu="1").priority(10).spec(affinity=affinity).obj())
    record = await c.cycle()
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message.endswith(
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


# --- choosing the node -------------------------------------------------------------------------------


async def _nominated_for(nodes: list[Any], pods: list[Pod], preemptor: Pod) -> str | None:
    c = Cluster(nodes, pods)
    c.plugin.offset = lambda n: 0  # type: ignore[method-assign]
    c.add(preemptor)
    record = await c.cycle()
    return record.nominated


async def test_pick_lowest_highest_priority_victim() -> None:
    nominated = await _nominated_for(
        [make_node("n1").capacity(cpu="2").obj(), make_node("n2").capacity(cpu="2").obj()],
        [running("a", "n1", "2", 5), running("b", "n2", "2", 3)],
        make_pod("high").req(cpu="2").priority(10).obj(),
    )
    assert nominated == "n2"


async def test_pick_smallest_priority_sum() -> None:
    # Both need two victims with highest priority 3; n2's sum (3 + 1) is smaller than n1's (3 + 3).
    nominated = await _nominated_for(
        [make_node("n1").capacity(cpu="4").obj(), make_node("n2").capacity(cpu="4").obj()],
        [running("a1", "n1", "2", 3), running("a2", "n1", "2", 3), running("b1", "n2", "2", 3), running("b2", "n2", "2", 1)],
        make_pod("high").req(cpu="4").priority(10).obj(),
    )
    assert nominated == "n2"


async def test_pick_fewest_victims_via_priority_sum() -> None:
    # Fewer victims of the same priorities also means a smaller shifted sum: one victim beats two.
    nominated = await _nominated_for(
        [make_node("n1").capacity(cpu="4").obj(), make_node("n2").capacity(cpu="4").obj()],
        [running("a1", "n1", "2", -5), running("a2", "n1", "2", -5), running("b1", "n2", "4", -5)],
        make_pod("high").req(cpu="4").priority(10).obj(),
    )
    assert nominated == "n2"


async def test_pick_latest_start_of_top_victims() -> None:
    nominated = await _nominated_for(
        [make_node("n1").capacity(cpu="2").obj(), make_node("n2").capacity(cpu="2").obj()],
        [
            running("old", "n1", "2", 3, start="2024-01-01T00:00:00Z"),
            running("new", "n2", "2", 3, start="2024-06-01T00:00:00Z"),
        ],
        make_pod("high").req(cpu="2").priority(10).obj(),
    )
    assert nominated == "n2"


async def test_pick_first_when_all_ties() -> None:
    pods = [running(f"p{i}", f"n{i}", "2", 3, start="2024-01-01T00:00:00Z") for i in (1, 2, 3)]
    nominated = await _nominated_for(
        [make_node(f"n{i}").capacity(cpu="2").obj() for i in (1, 2, 3)], pods, make_pod("high").req(cpu="2").priority(10).obj()
    )
    assert nominated == "n1"


# --- after the choice -----------------------------------------------------------------------------------


async def test_nominated_then_scheduled_after_victims_deleted() -> None:
    c = Cluster(
        [make_node("n1").capacity(cpu="4").obj(), make_node("n2").capacity(cpu="4").obj()],
        [running("a", "n1", "4", 1), running("b", "n2", "2", 50), running("c", "n2", "2", 50)],
    )
    c.add(make_pod("high").req(cpu="3").priority(100).obj())
    record = await c.cycle()
    assert record.result == "unschedulable"
    assert record.nominated == "n1"
    # PostFilter succeeded: the failure message is the filters' alone.
    assert record.message == (  # kube 1.37 says a preemption is under way in the message
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: found a potential placement for pod on node n1, preempting 1 victims"
    )
    assert c.sched.nominator.node_of.get(c.uid("high")) == "n1"
    assert c.preempted() == {"a"}
    assert c.events("Preempted") == [("a", f"Preempted by pod {c.uid('high')} on node n1")]
    await c.settle()
    assert c.node_of("high") == "n1"
    assert c.exists("b") and c.exists("c")
    assert c.sched.nominator.node_of.get(c.uid("high")) is None


async def test_preempted_event_message() -> None:
    c = Cluster([make_node("n1").capacity(cpu="1").obj()], [running("victim", "n1", "1", 0)])
    high = make_pod("high").req(cpu="1").priority(1).obj()
    c.add(high)
    await c.cycle()
    assert c.events("Preempted") == [("victim", f"Preempted by pod {high.metadata.uid} on node n1")]


async def test_lower_priority_nominations_are_cleared() -> None:
    # `mid` was nominated to n1 earlier; `high` now preempts there and takes the room, so mid's
    # nomination is dropped (and its status cleared) to let it look elsewhere.
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low", "n1", "2", 1)])
    mid = make_pod("mid").req(cpu="2").priority(5).obj()
    mid.status.nominated_node_name = "n1"
    c.add(mid)
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    assert c.sched.nominator.node_of.get(c.uid("mid")) == "n1"
    record = await c.cycle()
    assert record.pod == "default/high"
    assert record.nominated == "n1"
    assert c.sched.nominator.node_of.get(c.uid("mid")) is None
    assert c.sim.pods[c.uid("mid")].status.nominated_node_name == ""


async def test_equal_priority_nominations_are_kept_and_respected() -> None:
    # A nominated pod of equal priority keeps its room: the dry run counts it on the node, so
    # evicting `low` would not make room for both and the node is no candidate.
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low", "n1", "2", 1)])
    twin = make_pod("twin").req(cpu="2").priority(10).obj()
    twin.status.nominated_node_name = "n1"
    c.add(twin)
    c.sched.queue.delete(c.uid("twin"))  # keep it nominated but out of the way
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    record = await c.cycle()
    assert record.pod == "default/high"
    assert record.nominated is None
    assert c.preempted() == set()
    assert c.sched.nominator.node_of.get(c.uid("twin")) == "n1"


async def test_clears_own_nomination_when_preemption_cannot_help() -> None:
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("vip", "n1", "2", 100)])
    p = make_pod("high").req(cpu="2").priority(10).obj()
    p.status.nominated_node_name = "n1"
    c.add(p)
    record = await c.cycle()
    assert record.nominated is None
    assert c.sim.pods[c.uid("high")].status.nominated_node_name == ""
    assert c.sched.nominator.node_of.get(c.uid("high")) is None


async def test_clears_a_nomination_its_status_does_not_show_yet() -> None:
    """The scheduler's own nomination counts even before the pod's status carries it (kube's
    nominator is the scheduler's, not the pod's status)."""
    c = Cluster(
        [make_node("n1").capacity(cpu="2").obj(), make_node("n2").capacity(cpu="2").obj()],
        [running("vip", "n1", "2", 100), running("vip2", "n2", "2", 100)],
    )
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    c.sched.nominator.nominate(make_pod_info(c.sim.pods[c.uid("high")]), "n2")
    record = await c.cycle()
    assert record.nominated is None
    assert c.sched.nominator.node_of.get(c.uid("high")) is None


async def test_waiting_pod_victim_is_rejected_not_deleted() -> None:
    cfg = make_config([*PLUGINS, "HoldAtPermit"])
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], config=cfg)
    c.add(make_pod("held").req(cpu="2").label(hold="yes").priority(1).obj())
    record = await c.cycle()
    assert record.result == "scheduled"
    assert c.plugin.handle.waiting_pod(c.uid("held")) is not None  # type: ignore[union-attr]
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    record = await c.cycle()
    assert record.nominated == "n1"
    assert c.preempted() == set()  # not deleted: rejected at Permit
    assert c.events("Preempted") == [("held", f"Preempted by pod {c.uid('high')} on node n1")]
    await c.settle()
    assert c.node_of("high") == "n1"
    assert c.exists("held") and c.node_of("held") is None


async def test_nominated_preemptor_waits_for_terminating_victims() -> None:
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low", "n1", "2", 1)])
    p = make_pod("high").req(cpu="2").priority(10).obj()
    p.status.nominated_node_name = "n1"
    c.add(p)
    # The victim is being deleted by an earlier preemption but the cache still holds it.
    low = next(iter(c.sched.cache.table.pods[c.sched.cache.table.index["n1"]].values()))
    low.pod.metadata.deletion_timestamp = "2024-01-01T00:00:00Z"
    low.pod.status.conditions.append(
        PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")
    )
    record = await c.cycle()
    assert record.nominated is None
    assert record.message.endswith("preemption: " + NOT_ELIGIBLE_TERMINATING)
    assert c.preempted() == set()



# --- how many nodes are dry-run ---------------------------------------------------------------------


async def test_candidate_count_and_offset_limit_the_search() -> None:
    # With room for one candidate, the dry run stops at the first node that works, starting at the
    # offset: n1 would be the better choice (lower victim priority) but is never looked at.
    cfg = make_config(preemption_args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1})
    c = Cluster(
        [make_node("n1").capacity(cpu="2").obj(), make_node("n2").capacity(cpu="2").obj(), make_node("n3").capacity(cpu="2").obj()],
        [running("a", "n1", "2", 1), running("b", "n2", "2", 5), running("c", "n3", "2", 100)],
        config=cfg,
    )
    c.plugin.offset = lambda n: 1  # type: ignore[method-assign]
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    record = await c.cycle()
    assert record.nominated == "n2"
    assert c.preempted() == {"b"}


async def test_zero_candidates_wanted_finds_none() -> None:
    # 3 nodes * 5% truncates to 0 and minCandidateNodesAbsolute is 0: kube dry-runs the nodes but
    # keeps no candidate, so the nodes that would have been one count as not helped.
    cfg = make_config(preemption_args={"minCandidateNodesPercentage": 5, "minCandidateNodesAbsolute": 0})
    c = Cluster(
        [make_node(f"n{i}").capacity(cpu="2").obj() for i in range(3)],
        [running("low0", "n0", "2", 1), running("low1", "n1", "2", 1), running("vip", "n2", "2", 100)],
        config=cfg,
    )
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    record = await c.cycle()
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message.endswith(
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


# --- the dry run itself ---------------------------------------------------------------------------------


def _table_snapshot(c: Cluster) -> tuple[Any, ...]:
    t = c.sched.cache.table
    return (
        t.requested[: t.size].copy().tolist(),
        t.non_zero_requested[: t.size].copy().tolist(),
        [sorted(p) for p in t.pods[: t.size]],
        [dict(p) for p in t.ports[: t.size]],
    )


def _summary(run: Any) -> tuple[Any, ...]:
    return (
        [(cand.node, [v.key for v in cand.victims]) for cand in run.candidates],
        sorted(run.reasons.items()),
        run.errors,
        run.examined,
    )


@pytest.mark.parametrize("seed", range(25))
async def test_batched_dry_run_matches_node_by_node(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without PreFilter extensions the dry run evaluates many nodes per filter pass; it must choose
    # exactly what kube's one-node-at-a-time SelectVictimsOnNode chooses, and leave the table as it was.
    rng = random.Random(seed)
    nodes = [make_node(f"n{i}").capacity(cpu=str(rng.choice([2, 4, 8])), pods=rng.choice([3, 110])).obj() for i in range(10)]
    pods: list[Pod] = []
    counter = itertools.count()
    for n in nodes:
        free = int(n.status.allocatable["cpu"])
        while free > 0 and rng.random() < 0.9:
            cpu = rng.randint(1, min(free, 3))
            free -= cpu
            start = f"2024-0{rng.randint(1, 9)}-01T00:00:00Z" if rng.random() < 0.7 else None
            name = f"p{next(counter)}"
            pods.append(running(name, n.metadata.name, str(cpu), rng.randint(0, 10), start=start))
    c = Cluster(nodes, pods)
    for i in range(rng.randint(0, 3)):
        nominee = make_pod(f"nom{i}").req(cpu=str(rng.randint(1, 2))).priority(rng.randint(0, 12)).info()
        c.sched.nominator.nominate(nominee, f"n{rng.randrange(10)}")
    preemptor = make_pod("high").req(cpu=str(rng.randint(1, 6))).priority(rng.randint(3, 12)).info()
    state = CycleState()
    _, _, status = c.fwk.run_pre_filter(state, preemptor)
    assert status is None
    plugin = c.plugin
    assert not plugin.extensions_active(state)
    order = list(range(10))
    rng.shuffle(order)
    wanted = rng.randint(1, 10)
    before = _table_snapshot(c)
    batched = _summary(plugin.dry_run(state, preemptor, order, wanted))
    assert _table_snapshot(c) == before
    monkeypatch.setattr(plugin, "extensions_active", lambda _state: True)
    one_by_one = _summary(plugin.dry_run(state, preemptor, order, wanted))
    assert _table_snapshot(c) == before
    assert batched == one_by_one
    # The search stops at `wanted` candidates, or examines every row trying.
    assert len(batched[0]) == wanted or batched[3] == len(order)


async def test_prefilter_extensions_get_each_node_its_own_state() -> None:
    # The preemptor must spread evenly over zones with the web pods. On n-a both web pods have to go:
    # only PodTopologySpread's RemovePod/AddPod extensions let the dry run see the zone's count drop
    # and rise again. n-b needs its one pod evicted, which is the cheaper choice.
    web = {"app": "web"}
    c = Cluster(
        [make_node("n-a").capacity(cpu="4").label(zone="a").obj(), make_node("n-b").capacity(cpu="4").label(zone="b").obj()],
        [
            running("w1", "n-a", "2", 1, labels=web, start="2024-01-01T00:00:00Z"),
            running("w2", "n-a", "2", 1, labels=web, start="2024-02-01T00:00:00Z"),
            running("x", "n-b", "4", 1),
        ],
    )
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": web},
        }
    ]
    preemptor = make_pod("high").req(cpu="2").label(web).priority(10).spec(topologySpreadConstraints=spread).obj()
    pi = make_pod_info(preemptor)
    state = CycleState()
    assert c.fwk.run_pre_filter(state, pi)[2] is None
    plugin = c.plugin
    assert plugin.extensions_active(state)
    before = _table_snapshot(c)
    run = plugin.dry_run(state, pi, [0, 1], 2)
    assert _table_snapshot(c) == before
    assert _summary(run)[0] == [("n-a", ["default/w1", "default/w2"]), ("n-b", ["default/x"])]
    # The shared cycle state is untouched by the per-node what-ifs.
    again = plugin.dry_run(state, pi, [0, 1], 2)
    assert _summary(again) == _summary(run)
    # End to end the cheaper node wins and the pod lands there.
    c.add(preemptor)
    record = await c.cycle()
    assert record.nominated == "n-b"
    assert c.preempted() == {"x"}
    await c.settle()
    assert c.node_of("high") == "n-b"


async def test_post_filter_without_nodes_is_an_error() -> None:
    c = Cluster([])
    pi = make_pod("high").req(cpu="1").priority(10).info()
    result, status = c.plugin.post_filter(CycleState(), pi, Diagnosis(0))
    assert result is None
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == ("preemption: no nodes available",)


def test_reason_constants() -> None:
    assert NO_VICTIMS == "No preemption victims found for incoming pod"
    assert NOT_HELPFUL == "Preemption is not helpful for scheduling"
    assert NOT_ELIGIBLE_NEVER == "not eligible due to preemptionPolicy=Never."
    assert preempted_message(make_pod("p").info(), "n9").startswith("Preempted by pod uid-p-")


async def test_nominated_pods_must_not_be_relied_on() -> None:
    # The preemptor needs a db pod on its node. The only one is merely nominated there (it may never
    # arrive): counted, the node would fit after evicting `low`; not counted, it does not. kube asks
    # both ways, so the node is no candidate and nothing is evicted.
    cfg = make_config([*PLUGINS, "InterPodAffinity"])
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low", "n1", "2", 1)], config=cfg)
    db = make_pod("db").req(cpu="0").label(app="db").priority(50).obj()
    db.status.nominated_node_name = "n1"
    c.add(db)
    c.sched.queue.delete(c.uid("db"))  # nominated, but not scheduled in this test
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    c.add(make_pod("high").req(cpu="2").priority(10).spec(affinity=affinity).obj())
    record = await c.cycle()
    assert record.pod == "default/high"
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 node(s) didn't match pod affinity rules."
    )


async def test_a_node_held_for_a_nominated_pod_reports_the_real_reason() -> None:
    # n1 is empty but held for a nominated preemptor of higher priority: a smaller pod filtered
    # against it runs the filters with the preemptor added and says why it does not fit there.
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [])
    big = make_pod("big").req(cpu="2").priority(50).obj()
    big.status.nominated_node_name = "n1"
    c.add(big)
    c.sched.queue.delete(c.uid("big"))  # nominated, waiting for its victims to go
    c.add(make_pod("small").req(cpu="1").priority(1).spec(preemptionPolicy="Never").obj())
    record = await c.cycle()
    assert record.pod == "default/small"
    assert record.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )


async def test_nominated_pods_count_through_prefilter_extensions() -> None:
    # A more important pod nominated to n1 refuses web pods beside it. The dry run adds it to the
    # node through InterPodAffinity's AddPod extension, so n1 cannot host the web preemptor even with
    # `low` gone: no candidate.
    cfg = make_config([*PLUGINS, "InterPodAffinity"])
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low", "n1", "2", 1)], config=cfg)

    def anti(labels: dict[str, str]) -> dict[str, Any]:
        term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}

    guard = make_pod("guard").req(cpu="0").priority(50).spec(affinity=anti({"app": "web"})).obj()
    guard.status.nominated_node_name = "n1"
    c.add(guard)
    c.sched.queue.delete(c.uid("guard"))
    c.add(make_pod("high").req(cpu="2").label(app="web").priority(10).spec(affinity=anti({"app": "none"})).obj())
    record = await c.cycle()
    assert record.pod == "default/high"
    assert record.nominated is None
    assert c.preempted() == set()
    assert record.message.endswith(
        "preemption: 0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    )


async def test_no_second_preemption_while_victims_are_being_deleted() -> None:
    # The victims' deletions run in the background. Until they complete the victims are still in the
    # cache; like kube's victims in graceful termination they make the preemptor wait instead of
    # preempting again (and deleting the same pods twice).
    c = Cluster(
        [make_node("n1").capacity(cpu="2").obj(), make_node("n2").capacity(cpu="2").obj()],
        [running("a", "n1", "2", 1), running("b", "n2", "2", 2)],
    )
    preemptor = make_pod("high").req(cpu="2").priority(10).obj()
    c.add(preemptor)
    pi = c.sched.queue.pods[c.uid("high")].pi
    plugin = c.plugin

    def attempt() -> tuple[Any, Status | None]:
        state = CycleState()
        assert c.fwk.run_pre_filter(state, pi)[2] is None
        return plugin.post_filter(state, pi, Diagnosis(2))

    result, status = attempt()
    assert result is not None and result.nominated_node == "n1"
    assert status == Status(
        Code.SUCCESS, ("preemption: found a potential placement for pod on node n1, preempting 1 victims",), "DefaultPreemption"
    )
    assert plugin.executor.deleting == {c.uid("a"): "n1"}
    result, status = attempt()  # the deletion has not run yet
    assert result is None
    assert status == Status(Code.UNSCHEDULABLE, ("preemption: " + NOT_ELIGIBLE_TERMINATING,), "DefaultPreemption")
    assert len(c.sched.background) == 1
    await c.side_effects()
    assert c.preempted() == {"a"}
    assert plugin.executor.deleting == {} and plugin.executor.waiting_on == {}
    assert c.exists("b")


async def test_the_preemptor_waits_at_pre_enqueue_until_its_last_victim_is_deleted() -> None:
    """kube's async preemption: every victim but the last deleted at once, then the last; the
    preemptor is held back by PreEnqueue meanwhile (the first deletions' events do not send it
    round the cycle), and its next attempt, once the last victim is gone, places it."""
    c = Cluster([make_node("n1").capacity(cpu="3").obj()], [running(f"low{i}", "n1", "1", 1) for i in range(3)])
    first, last = asyncio.Event(), asyncio.Event()
    real_delete = c.sim.delete_pod
    order: list[str] = []

    async def held_delete(pi: PodInfo, reason: str) -> None:
        order.append(pi.pod.metadata.name)
        await (first if len(order) < 3 else last).wait()
        await real_delete(pi, reason)

    async def spin() -> None:
        for _ in range(10):
            await asyncio.sleep(0)

    c.sim.delete_pod = held_delete  # type: ignore[method-assign]
    c.add(make_pod("high").req(cpu="3").priority(10).obj())
    assert c.sched.schedule_one()
    await spin()
    plugin, uid = c.plugin, c.uid("high")
    high = c.sched.queue.pods[uid].pi
    assert sorted(order) == ["low0", "low1"]  # the first two at once; the last waits for them
    waiting = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for the preemption for this pod to be finished",),
                     "DefaultPreemption")
    assert plugin.pre_enqueue(high) == waiting
    first.set()
    await spin()
    assert len(order) == 3 and not c.exists("low0") and not c.exists("low1")
    # Their deletion events moved the preemptor as far as PreEnqueue, which holds it.
    c.clock.advance_to(c.clock.now() + 30)
    c.clock.run_due()
    assert not c.sched.schedule_one()
    assert c.sched.queue.pods[uid].where == "gated"
    last.set()
    await c.side_effects()
    assert plugin.executor.preempting == {} and plugin.pre_enqueue(high) is None
    await c.settle()
    assert c.node_of("high") == "n1"
    # Two attempts: the one that preempted and the one that placed it.
    assert [r.result for r in c.sched.recorder.recent if r.pod == "default/high"] == ["unschedulable", "scheduled"]


async def test_the_preemptor_waits_until_the_cache_sees_its_last_victim_go() -> None:
    """The deletions' API calls return before the watch reports them: the preemptor stays held at
    PreEnqueue until the cache sees its last victim go, and does not delete the victims still
    reported running a second time."""
    c = Cluster([make_node("n1").capacity(cpu="3").obj()], [running(f"low{i}", "n1", "1", 1) for i in range(3)])
    real_delete, observe = c.sim.delete_pod, c.sched.on_pod_delete
    calls: list[str] = []
    lagging: list[str] = []

    async def delete_reported_later(pi: PodInfo, reason: str) -> None:
        calls.append(pi.pod.metadata.name)
        c.sched.on_pod_delete = lagging.append  # type: ignore[method-assign]
        try:
            await real_delete(pi, reason)
        finally:
            c.sched.on_pod_delete = observe  # type: ignore[method-assign]

    c.sim.delete_pod = delete_reported_later  # type: ignore[method-assign]
    c.add(make_pod("high").req(cpu="3").priority(10).obj())
    plugin, uid = c.plugin, c.uid("high")
    assert c.sched.schedule_one()
    await c.side_effects()
    assert sorted(calls) == ["low0", "low1", "low2"] and len(lagging) == 3
    high = c.sched.queue.pods[uid].pi
    waiting = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for the preemption for this pod to be finished",),
                     "DefaultPreemption")
    assert plugin.pre_enqueue(high) == waiting
    # The first two are reported: the events move the preemptor as far as PreEnqueue.
    for victim in lagging[:2]:
        observe(victim)
    c.clock.advance_to(c.clock.now() + 30)
    c.clock.run_due()
    assert not c.sched.schedule_one()
    assert c.sched.queue.pods[uid].where == "gated"
    assert plugin.executor.deleting.get(lagging[2]) == "n1"  # still going: not a victim again
    observe(lagging[2])
    await c.settle()
    assert c.node_of("high") == "n1" and sorted(calls) == ["low0", "low1", "low2"]
    assert [r.result for r in c.sched.recorder.recent if r.pod == "default/high"] == ["unschedulable", "scheduled"]
    assert plugin.executor.preempting == {} and plugin.executor.deleting == {}


async def test_a_failed_deletion_activates_the_preemptor() -> None:
    c = Cluster([make_node("n1").capacity(cpu="2").obj()], [running("low0", "n1", "1", 1), running("low1", "n1", "1", 1)])
    failing = True

    async def broken_delete(pi: PodInfo, reason: str) -> None:
        if failing:
            raise RuntimeError("apiserver said no")

    c.sim.delete_pod = broken_delete  # type: ignore[method-assign]
    activated: list[str] = []
    real_activate = c.fwk.activate
    c.fwk.activate = lambda uids: (activated.extend(uids), real_activate(uids))  # type: ignore[method-assign, func-returns-value]
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    assert c.sched.schedule_one()
    with pytest.raises(RuntimeError):
        await asyncio.gather(*c.sched.background)
    assert activated == [c.uid("high")] and c.plugin.executor.preempting == {}


async def test_simulation_with_the_default_profile() -> None:
    # The whole default profile on the simulator, from manifests: the high-priority pod evicts the
    # two cheapest pods it needs gone and runs; the pod of the same priority is left alone.
    from kubesched.backends.sim.engine import Simulation
    from kubesched.backends.sim.manifests import load_objects
    from kubesched.config.parse import default_config

    def manifest(name: str, cpu: str, priority_class: str, node_name: str = "") -> dict[str, Any]:
        return make_pod(name).image("app").req(cpu=cpu).priority_class(priority_class).node(node_name).manifest()

    objects = [
        make_node("n1").capacity(memory="8Gi").without("ephemeral-storage").manifest(),
        make_priority_class("low", 1),
        make_priority_class("mid", 5),
        make_priority_class("high", 1000),
        manifest("a", "1", "low", "n1"),
        manifest("b", "1", "low", "n1"),
        manifest("c", "1", "mid", "n1"),
        manifest("peer", "1", "high", "n1"),
        manifest("urgent", "2", "high"),
    ]
    sim = Simulation(load_objects(objects), default_config())
    result = await sim.run()
    assert result.placements == {"default/urgent": "n1"}
    assert sorted(result.preempted) == ["default/a", "default/b"]
    assert result.events.get("Preempted") == 2
    uid = next(p.pod.metadata.uid for p in sim.input.pods if p.pod.metadata.name == "urgent")
    messages = {e.pod: e.message for e in sim.cluster.events if e.reason == "Preempted"}
    assert messages == {
        "default/a": f"Preempted by pod {uid} on node n1",
        "default/b": f"Preempted by pod {uid} on node n1",
    }
