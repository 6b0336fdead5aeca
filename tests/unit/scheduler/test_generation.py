"""Configuration generations: built beside the one in force, put in force between two cycles
(Scheduler.build_generation / activate), and retired."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import make_node, make_pod
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.dump import configuration_digest
from kubesched.config.parse import parse_config_text
from kubesched.infra.clock import VirtualClock
from kubesched.plugins.registry import in_tree_registry
from kubesched.scheduler.core import Scheduler
from kubesched.scheduler.generation import retire
from kubesched.usage.service import UsageService, UsageTransport
from unit.sample_plugins import Closing
from unit.simkit import config_text


def scheduler(text: str, objects: list[dict] | None = None) -> tuple[Scheduler, SimCluster]:
    clock = VirtualClock()
    sim = SimCluster(clock)
    sched = Scheduler(parse_config_text(text, "config.yaml"), sim, clock, seed=1,
                      shared=[UsageTransport(lambda a: _NoPrometheus())])
    sim.scheduler = sched
    loaded = load_objects(objects or [])
    for n in loaded.nodes:
        sched.on_node_add(n)
    for sp in loaded.pods:
        sim.create_pod(sp.pod)
    return sched, sim


class _NoPrometheus:
    async def query(self, promql: str) -> list[Any]:
        return []

    async def close(self) -> None:
        return None


def swap(sched: Scheduler, text: str) -> Any:
    registry = in_tree_registry()
    cfg = parse_config_text(text, "new.yaml", registry)
    gen = sched.build_generation(cfg, registry, digest=configuration_digest(cfg), origin="new.yaml")
    return gen, sched.activate(gen)


def drain(sched: Scheduler) -> None:
    async def go() -> None:
        while sched.schedule_one():
            pass
        await sched.drain_bindings()

    asyncio.run(go())


def test_unchanged_plugins_are_carried_over_and_changed_ones_built_anew() -> None:
    sched, _ = scheduler(config_text({}))
    before = sched.frameworks["default-scheduler"].instances
    gen, old = swap(sched, config_text({"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "MostAllocated"}}}]}))
    after = sched.frameworks["default-scheduler"].instances
    assert old.number == 1 and gen.number == 2 and sched.generation is gen
    assert after["NodeResourcesFit"] is not before["NodeResourcesFit"]
    assert after["TaintToleration"] is before["TaintToleration"]
    assert after["DefaultPreemption"] is before["DefaultPreemption"]
    # A carried-over plugin now serves the new framework: preemption asks it for the profile's filters.
    assert after["DefaultPreemption"].handle is sched.frameworks["default-scheduler"]
    # Handed back on a rollback, it serves the old framework again.
    sched.activate(old)
    assert before["DefaultPreemption"].handle is old.frameworks["default-scheduler"]


def test_a_usage_provider_stays_warm_across_a_reload_and_stops_when_no_plugin_reads_it() -> None:
    la = {"name": "LoadAware", "args": {"prometheus": {"address": "http://prom:9090"}}}
    sched, _ = scheduler(config_text({"plugins": {"multiPoint": {"enabled": [{"name": "LoadAware"}]}}, "pluginConfig": [la]}))
    service = sched.shared.find(UsageService)
    assert service is not None
    (provider,) = service.providers.values()

    async def reloads() -> None:
        # Other LoadAware args (its thresholds), same Prometheus: a new plugin instance, the same provider.
        la2 = {"name": "LoadAware", "args": {"prometheus": {"address": "http://prom:9090"}, "thresholds": {"cpu": 80}}}
        gen, old = swap(sched, config_text({"plugins": {"multiPoint": {"enabled": [{"name": "LoadAware"}]}}, "pluginConfig": [la2]}))
        assert list(service.providers.values()) == [provider]
        retire(old, [gen])  # the old instance lets go of it; the new one still reads it
        assert list(service.providers.values()) == [provider]
        # Without any load-aware plugin, once the generation that had one is retired, it stops.
        gen3, old3 = swap(sched, config_text({}))
        retire(old3, [gen3])
        assert service.providers == {}
        await sched.drain_bindings()  # its connection is closed in the background

    asyncio.run(reloads())


def test_retire_closes_what_no_kept_generation_holds() -> None:
    Closing.closed.clear()
    text = config_text({"plugins": {"multiPoint": {"enabled": [{"name": "unit.sample_plugins:Closing"}]}}})
    sched, _ = scheduler(config_text({}))
    gen2, gen1 = swap(sched, text)
    plugin = gen2.frameworks["default-scheduler"].instances["unit.sample_plugins:Closing"]
    assert retire(gen1, [gen2]) == []  # gen1 held nothing closable that gen2 lacks
    gen3, _ = swap(sched, config_text({}))
    assert retire(gen2, [gen3, gen1]) == ["unit.sample_plugins:Closing"]
    assert Closing.closed == [id(plugin)]


def test_activation_keeps_the_queue_and_retries_pooled_pods_under_the_new_configuration() -> None:
    # Nothing fits the node selector: the pod waits in the unschedulable pool.
    sched, _ = scheduler(
        config_text({}),
        [
            make_node("n1").without("ephemeral-storage").label(disk="hdd").manifest(),
            make_pod("p").req(cpu="100m", memory="100Mi").spec(nodeSelector={"disk": "ssd"}).manifest(),
        ],
    )
    drain(sched)
    assert sched.queue.counts().unschedulable == 1
    # A profile without NodeAffinity places it: the change itself moved it back.
    swap(sched, config_text({"plugins": {"multiPoint": {"disabled": [{"name": "NodeAffinity"}]}}}))
    assert sched.queue.counts().unschedulable == 0
    sched.clock.advance_to(sched.clock.now() + 11)  # its backoff
    sched.clock.run_due()
    drain(sched)
    assert sched.cache.node_of(next(iter(sched.cache.placed))) == "n1"


def test_pods_of_a_dropped_profile_leave_the_queue() -> None:
    text = config_text({"schedulerName": "a"}, {"schedulerName": "b"})
    sched, _ = scheduler(
        text,
        [
            make_pod("pa").req(cpu="100m", memory="100Mi").scheduler("a").manifest(),
            make_pod("pb").req(cpu="100m", memory="100Mi").scheduler("b").manifest(),
        ],
    )
    assert len(sched.queue.pods) == 2
    swap(sched, config_text({"schedulerName": "a"}))
    assert [q.pi.pod.metadata.name for q in sched.queue.pods.values()] == ["pa"]
    assert not sched.responsible_for(load_objects([make_pod("x").req(cpu="100m", memory="100Mi").scheduler("b").manifest()]).pods[0].pod)


def test_a_new_queue_sort_reorders_the_pods_waiting() -> None:
    objects = [make_pod(f"p{i}").req(cpu="100m", memory="100Mi").priority(i).manifest() for i in range(5)]
    from unit.simkit import priority_classes

    sched, _ = scheduler(config_text({}), priority_classes(objects) + objects)
    # PrioritySort: the highest priority first. A sort that reverses it is what the queue obeys now.
    assert sched.queue.pop().pi.pod.metadata.name == "p4"
    swap(sched, config_text({"plugins": {"queueSort": {"enabled": [{"name": "SLAQueueSort"}],
                                                       "disabled": [{"name": "PrioritySort"}]}}}))
    assert sched.frameworks["default-scheduler"].queue_sort.name == "SLAQueueSort"
    assert sched.queue.pop() is not None


def test_the_global_percentage_of_nodes_to_score_applies_to_a_profile_without_one() -> None:
    sched, _ = scheduler(config_text({"schedulerName": "a"}, {"schedulerName": "b", "percentageOfNodesToScore": 70},
                                     percentageOfNodesToScore=30))
    assert sched.frameworks["a"].percentage_of_nodes_to_score == 30
    assert sched.frameworks["b"].percentage_of_nodes_to_score == 70
