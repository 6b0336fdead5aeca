"""DynamicResources' binding conditions (DRADeviceBindingConditions, beta on in v1.37.2) on the
simulated cluster: PreBind waits, polling every 5 s of virtual time, until the driver reports
every condition of the allocated device True in the claim's status; a failure condition or the
binding timeout ends the attempt with kube's error, and the pod is tried again."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

import msgspec

from builders import make_device_class, make_node, make_pod, make_resource_claim
from builders.dra import make_resource_slice
from kubesched.api.dra import RESOURCE_CLAIM, ResourceClaim
from kubesched.api.dra.claims import AllocatedDeviceStatus
from kubesched.api.podgroups import Condition
from kubesched.backends.sim.cluster import SimCluster
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.manifests import load_objects
from kubesched.config.parse import parse_config

from ...simkit import profile_config


def _objects() -> list[dict[str, Any]]:
    rs = make_resource_slice("n1-gpus", "n1", devices=1)
    rs["spec"]["devices"][0].update(bindsToNode=True, bindingConditions=["attached"], bindingFailureConditions=["broken"])
    pod = make_pod("trainer").req(cpu="100m").resource_claim("gpu", claim="c1").manifest()
    return [make_node("n1").capacity(cpu="4").manifest(), make_device_class("gpu"), rs, make_resource_claim("c1"), pod]


def _config(binding_timeout: str) -> Any:
    return parse_config(profile_config({"schedulerName": "default-scheduler", "pluginConfig": [
        {"name": "DynamicResources", "args": {"bindingTimeout": binding_timeout}}]}))


def _run(binding_timeout: str, report: tuple[float, str] | None = None) -> tuple[Any, list[Any]]:
    """The simulation, with the driver setting `report`'s condition True on the claim's allocated
    device at its time; the result and the cluster's events."""
    create_pod = SimCluster.create_pod
    clusters: list[SimCluster] = []

    def creating(cluster: SimCluster, *args: Any, **kwargs: Any) -> Any:
        if report is not None and not clusters:
            clusters.append(cluster)
            cluster.at(report[0], lambda: _write_condition(cluster, report[1]))
        return create_pod(cluster, *args, **kwargs)

    sim = Simulation(load_objects(_objects()), _config(binding_timeout))
    with mock.patch.object(SimCluster, "create_pod", creating):
        result = asyncio.run(sim.run())
    return result, sim.cluster.events


def _write_condition(cluster: SimCluster, condition: str) -> None:
    claims = cluster.devices[RESOURCE_CLAIM]
    claim: ResourceClaim = claims["default/c1"]
    assert claim.status.allocation is not None, "the driver reports on an allocated claim"
    (result,) = claim.status.allocation.devices.results
    device = AllocatedDeviceStatus(driver=result.driver, pool=result.pool, device=result.device,
                                   conditions=[Condition(type=condition, status="True", reason="Driver", message="by test")])
    cluster.resource_version += 1
    updated = msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, resource_version=str(cluster.resource_version)),
        status=msgspec.structs.replace(claim.status, devices=[device]))
    claims["default/c1"] = updated
    assert cluster.scheduler is not None
    cluster.scheduler.on_resource_claim(msgspec.structs.replace(updated))


def _of(events: list[Any], reason: str) -> list[Any]:
    return [e for e in events if e.reason == reason]


def test_prebind_waits_for_the_drivers_condition_then_binds() -> None:
    result, events = _run("10m", (22.0, "attached"))
    assert result.placements == {"default/trainer": "n1"}
    (pending,) = _of(events, "BindingConditionsPending")
    assert pending.message == "waiting for binding conditions for device on node n1"
    (scheduled,) = _of(events, "Scheduled")
    assert 22.0 <= scheduled.time <= 27.0  # seen at the next 5-second poll


def test_a_failure_condition_ends_the_attempt_with_kubes_error() -> None:
    _, events = _run("10m", (12.0, "broken"))
    failures = _of(events, "FailedScheduling")
    assert failures and failures[0].message == (
        'running PreBind plugin "DynamicResources": device binding failed: claim=c1, reason=Driver, message="by test"')


def test_no_condition_within_the_binding_timeout_ends_the_attempt() -> None:
    _, events = _run("1m")
    failures = _of(events, "FailedScheduling")
    assert failures and failures[0].message.startswith('running PreBind plugin "DynamicResources": device binding timeout')
    assert 60.0 <= failures[0].time <= 66.0
