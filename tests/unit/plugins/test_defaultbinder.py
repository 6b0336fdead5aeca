"""DefaultBinder through the real Scheduler, runtime and FrameworkHandle over the simulated backend."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import UnitHandle, make_node, make_pod
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.backends.sim.cluster import SimCluster
from kubesched.cache.cache import Cache
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config
from kubesched.config.types import API_VERSION, KIND, SchedulerConfig
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import BindPlugin, EnqueueExtensions
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code, Status
from kubesched.infra.clock import VirtualClock
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.noderesourcesfit import NodeResourcesFit
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.scheduler.core import Scheduler

REGISTRY = Registry([PrioritySort, NodeResourcesFit, DefaultBinder])


def make_config(extra_profile: dict[str, Any] | None = None) -> SchedulerConfig:
    profile: dict[str, Any] = {
        "schedulerName": "default-scheduler",
        "plugins": {
            "multiPoint": {
                "enabled": [{"name": "PrioritySort"}, {"name": "NodeResourcesFit"}, {"name": "DefaultBinder"}],
                "disabled": [{"name": "*"}],
            }
        },
    }
    profile.update(extra_profile or {})
    return parse_config({"apiVersion": API_VERSION, "kind": KIND, "profiles": [profile]}, REGISTRY)


class FailingCluster(SimCluster):
    """The simulated backend with a bind that raises, as an API client might."""

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        raise ConnectionError("connection refused by apiserver")


def start(backend_cls: type[SimCluster] = SimCluster) -> tuple[Scheduler, SimCluster, DefaultBinder]:
    clock = VirtualClock()
    sim = backend_cls(clock)
    sched = Scheduler(make_config(), sim, clock, registry=REGISTRY)
    sim.scheduler = sched
    sched.on_node_add(make_node("n1").capacity(cpu="2").obj())
    binder = sched.frameworks["default-scheduler"].instances["DefaultBinder"]
    assert isinstance(binder, DefaultBinder)
    return sched, sim, binder


def test_plugin_shape() -> None:
    assert DefaultBinder.name == "DefaultBinder"
    assert DefaultBinder.Args is None
    assert issubclass(DefaultBinder, BindPlugin)
    with pytest.raises(ValueError, match="DefaultBinder takes no args"):
        DefaultBinder({"anything": 1}, UnitHandle(Cache()))
    with pytest.raises(ConfigError, match="takes no args"):
        make_config({"pluginConfig": [{"name": "DefaultBinder", "args": {"x": 1}}]})


async def test_bind_assigns_the_pod_through_the_backend() -> None:
    sched, sim, binder = start()
    p = make_pod("web").req(cpu="1").obj()
    sim.create_pod(p)
    pi = sched.queue.pods[p.metadata.uid or ""].pi
    status = await binder.bind(CycleState(), pi, "n1")
    assert status is None
    assert sim.pods[p.metadata.uid or ""].spec.node_name == "n1"
    assert sim.binds == 1
    assert sched.cache.node_of(pi.uid) == "n1"


async def test_backend_refusal_is_returned() -> None:
    _sched, sim, binder = start()
    ghost = make_pod("ghost").req(cpu="1").info()  # never created in the cluster
    status = await binder.bind(CycleState(), ghost, "n1")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('pods "ghost" not found',)
    assert sim.binds == 0


async def test_backend_exception_becomes_error_status() -> None:
    _sched, sim, binder = start(FailingCluster)
    p = make_pod("web").req(cpu="1").obj()
    sim.create_pod(p)
    status = await binder.bind(CycleState(), make_pod_info(p), "n1")
    assert status == Status(Code.ERROR, ("connection refused by apiserver",), "DefaultBinder")


async def test_scheduling_cycle_binds_with_default_binder() -> None:
    sched, sim, _ = start()
    p = make_pod("web").req(cpu="1").obj()
    sim.create_pod(p)
    assert sched.schedule_one()
    await sched.drain_bindings()
    assert sim.pods[p.metadata.uid or ""].spec.node_name == "n1"
    assert [(e.reason, e.message) for e in sim.events] == [("Scheduled", "Successfully assigned default/web to n1")]


async def test_failed_bind_requeues_the_pod() -> None:
    sched, sim, _ = start(FailingCluster)
    p = make_pod("web").req(cpu="1").obj()
    sim.create_pod(p)
    assert sched.schedule_one()
    await sched.drain_bindings()
    await asyncio.sleep(0)
    uid = p.metadata.uid or ""
    assert sched.cache.node_of(uid) is None  # the assumption was forgotten
    assert uid in sched.queue.pods
    assert [(e.reason, e.message) for e in sim.events] == [
        ("FailedScheduling", 'running Bind plugin "DefaultBinder": connection refused by apiserver')
    ]


def test_registers_no_events_as_kube() -> None:
    # kube's DefaultBinder has no EnqueueExtensions: a Bind plugin rejects no pod, so no event needs a hint.
    assert not issubclass(DefaultBinder, EnqueueExtensions)
