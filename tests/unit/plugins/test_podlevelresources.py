"""Pod-level resources (spec.resources) in the plugins that read a pod's requests: NodeResourcesFit's
Filter and scoring, BalancedAllocation, and the sizes of preemption's victims, as kube-scheduler
v1.37.2 counts them (component-helpers' PodRequests; the non-zero defaults of schedutil)."""

from __future__ import annotations

from typing import Any

import numpy as np

from builders import UnitHandle, cache_with, make_node, make_pod
from builders.pods import PodBuilder
from kubesched.api.objects import Pod
from kubesched.api.podinfo import DEFAULT_MEMORY_REQUEST
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.plugins.noderesourcesbalancedallocation import NodeResourcesBalancedAllocation
from unit.plugins.test_defaultpreemption import Cluster
from unit.plugins.test_noderesourcesfit import make, run_filter, run_score, verdicts

MI = 2**20


def two_containers(name: str) -> PodBuilder:
    """A pod of two containers that request nothing themselves."""
    return make_pod(name).spec(containers=[{"name": "a", "image": "i"}, {"name": "b", "image": "i"}])


# --- NodeResourcesFit's Filter --------------------------------------------------------------------


def test_the_filter_checks_the_pod_level_request_not_the_containers() -> None:
    # More than the whole node: unresolvable there, as for a container request.
    cache = cache_with([make_node("small").capacity(cpu="2").obj(), make_node("big").capacity(cpu="4").obj()])
    pod = make_pod("p").req(cpu="100m").pod_resources(requests={"cpu": "3"}).info()
    assert verdicts(run_filter(make(cache), cache, pod), cache) == {
        "small": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",)), "big": None}


def test_a_node_counts_the_pod_level_requests_of_its_pods() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4").obj()],
                       [make_pod("old").req(cpu="100m").pod_resources(requests={"cpu": "3"}).node("n").obj()])
    result = run_filter(make(cache), cache, make_pod("p").req(cpu="2").info())
    assert verdicts(result, cache) == {"n": (Code.UNSCHEDULABLE, ("Insufficient cpu",))}


def test_pod_level_hugepages_are_filtered_like_a_container_request() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", **{"hugepages-2Mi": "2Mi"}).obj()])
    pod = make_pod("p").req(cpu="1").pod_resources(requests={"cpu": "1", "hugepages-2Mi": "4Mi"},
                                                   limits={"hugepages-2Mi": "4Mi"}).info()
    assert verdicts(run_filter(make(cache), cache, pod), cache) == {
        "n": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient hugepages-2Mi",))}


# --- scoring -------------------------------------------------------------------------------------


def test_least_allocated_scores_the_containers_not_the_pod_level() -> None:
    # kube-scheduler v1.37.2 builds NodeResourcesFit's scorer without enablePodLevelResources.
    cache = cache_with([make_node("n").capacity(cpu="4", memory="10000").obj()])
    by_pod_level = make_pod("p").req(cpu="1", memory="1000").pod_resources(requests={"cpu": "3", "memory": "5000"}).info()
    # cpu (4000-1000)*100/4000 = 75, memory (10000-1000)*100/10000 = 90: 82 (not 37 for 3 cpu, 5000 bytes).
    assert run_score(make(cache), cache, by_pod_level) == [82]


def test_the_scorer_fills_each_container_missing_request_and_ignores_the_pod_level() -> None:
    cache = cache_with([make_node("n").capacity(cpu="4", memory="1000Mi").obj()])
    pod = two_containers("p").pod_resources(requests={"cpu": "3"}).info()
    assert (pod.scoring_cpu, pod.scoring_memory) == (200, 2 * DEFAULT_MEMORY_REQUEST)
    # cpu (4000-200)*100/4000 = 95, memory (1000-400)*100/1000 = 60: (95+60)/2 = 77.
    assert run_score(make(cache), cache, pod) == [77]


def test_a_node_counts_no_default_memory_for_a_pod_level_pod_whose_containers_name_memory() -> None:
    # On the node, `old` counts 100Mi of memory (a container names memory, so no default is added
    # for its other container) and its pod-level 1 cpu.
    old = (make_pod("old").spec(containers=[{"name": "a", "image": "i", "resources": {"requests": {"memory": "100Mi"}}},
                                            {"name": "b", "image": "i"}])
           .pod_resources(requests={"cpu": "1"}).node("n").obj())
    cache = cache_with([make_node("n").capacity(cpu="4", memory="2000Mi").obj()], [old])
    # The pod: 100m, 200Mi (best effort). cpu (4000-1100)*100/4000 = 72, memory (2000-300)*100/2000 = 85: 78.
    assert run_score(make(cache), cache, make_pod("p").info()) == [78]


def balanced(cache: Cache, pod: Any) -> list[int]:
    plugin = NodeResourcesBalancedAllocation(None, UnitHandle(cache))
    table = cache.table
    rows = np.arange(table.size, dtype=np.intp)
    state = CycleState()
    assert plugin.pre_score(state, pod, table, rows) is None
    return [int(s) for s in plugin.score(state, pod, table, rows)]


def test_balanced_allocation_scores_the_pod_level_requests_without_defaults() -> None:
    nodes = [make_node("n").capacity(cpu="4", memory="4Gi").obj()]
    by_pod_level = make_pod("p").req(cpu="100m", memory="100Mi").pod_resources(requests={"cpu": "2", "memory": "1Gi"}).info()
    by_containers = make_pod("q").req(cpu="2", memory="1Gi").info()
    assert balanced(cache_with(nodes), by_pod_level) == balanced(cache_with(nodes), by_containers)
    assert balanced(cache_with(nodes), by_pod_level) != balanced(cache_with(nodes), make_pod("r").req(cpu="100m", memory="100Mi").info())


# --- preemption's victims ---------------------------------------------------------------------------


def running(builder: PodBuilder, node: str, priority: int) -> Pod:
    pod = builder.priority(priority).node(node).obj()
    pod.status.phase = "Running"
    return pod


async def test_a_victim_frees_its_pod_level_request() -> None:
    # `big` requests 100m in its container but 3 cpu for the pod: the node is full, and evicting the
    # 1-cpu pod of higher priority would not do. The preemptor takes big's place; the other stays.
    c = Cluster(
        [make_node("n1").capacity(cpu="4").obj()],
        [running(make_pod("big").req(cpu="100m").pod_resources(requests={"cpu": "3"}), "n1", 1),
         running(make_pod("small").req(cpu="1"), "n1", 3)],
    )
    c.add(make_pod("high").req(cpu="2").priority(10).obj())
    record = await c.cycle()
    assert record.nominated == "n1"
    assert c.preempted() == {"big"}
    await c.settle()
    assert c.node_of("high") == "n1"
    assert c.exists("small")


async def test_a_preemptor_sized_by_its_pod_level_request() -> None:
    # The preemptor's containers would fit beside both pods; its pod level (2 cpu) needs a victim.
    c = Cluster(
        [make_node("n1").capacity(cpu="4").obj()],
        [running(make_pod("low").req(cpu="2"), "n1", 1), running(make_pod("mid").req(cpu="1"), "n1", 3)],
    )
    c.add(make_pod("high").req(cpu="100m").pod_resources(requests={"cpu": "2"}).priority(10).obj())
    await c.cycle()
    assert c.preempted() == {"low"}
