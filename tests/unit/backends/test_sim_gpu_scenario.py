"""The gpu-cluster built-in scenario: a heterogeneous GPU cluster stated through DRA (device
inventories stamped onto node groups, classes, claim templates) whose pods get their claims from
the resourceclaim controller, and which DynamicResources places on the devices of their nodes."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from kubesched.api.dra import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE, RESOURCE_SLICE
from kubesched.backends.sim.clusterinput import ClusterInput
from kubesched.backends.sim.engine import SimResult, Simulation
from kubesched.backends.sim.resourceclaims import POD_CLAIM_ANNOTATION
from kubesched.backends.sim.scenarios import load_scenario
from kubesched.config.parse import default_config


@pytest.fixture(scope="module")
def cluster() -> ClusterInput:
    return load_scenario("gpu-cluster")


@pytest.fixture(scope="module")
def ran() -> tuple[SimResult, Simulation]:
    sim = Simulation(load_scenario("gpu-cluster"), default_config())
    return asyncio.run(sim.run()), sim


def _gpu_pods(cluster: ClusterInput) -> list[Any]:
    return [sp.pod for sp in cluster.pods if sp.pod.spec.resource_claims]


def test_it_loads_and_expands_its_inventory(cluster: ClusterInput) -> None:
    assert (cluster.warnings, cluster.errors) == ([], [])
    by_kind = Counter(resource for resource, _, _ in cluster.devices)
    assert by_kind == {RESOURCE_SLICE: 200, DEVICE_CLASS: 5, RESOURCE_CLAIM_TEMPLATE: 4}
    assert len(cluster.nodes) == 320
    slices = [obj for resource, obj, _ in cluster.devices if resource == RESOURCE_SLICE]
    devices_by_model = Counter(d.attributes["model"].string_value for rs in slices for d in rs.spec.devices or [])
    assert devices_by_model == {"A100-80GB": 48 * 8 + 24 * 8, "V100-32GB": 64 * 4, "T4-16GB": 64 * 4}
    nodes = {n.metadata.name: n for n in cluster.nodes}
    for rs in slices:
        # Each slice is its node's own pool, and only GPU nodes have one.
        assert rs.spec.pool.name == rs.spec.node_name and rs.spec.node_name in nodes
        assert nodes[rs.spec.node_name].metadata.labels["gpu.example.com/model"]
    shared = [d for rs in slices for d in rs.spec.devices or [] if d.allow_multiple_allocations]
    assert len(shared) == 24 * 8
    assert shared[0].capacity["memory"].request_policy is not None


def test_it_has_gpu_and_cpu_only_pods(cluster: ClusterInput) -> None:
    templates = Counter(entry.resource_claim_template_name for pod in _gpu_pods(cluster) for entry in pod.spec.resource_claims)
    assert templates == {"gpu-share-10gi": 120, "two-a100-one-island": 64, "a100-else-v100": 120, "one-gpu": 200}
    assert len(cluster.pods) - len(_gpu_pods(cluster)) == 450


def test_every_gpu_pod_gets_its_claims_from_the_templates(ran: tuple[SimResult, Simulation]) -> None:
    _, sim = ran
    claims = sim.cluster.devices[RESOURCE_CLAIM]
    owners = {claim.metadata.owner_references[0].uid: claim for claim in claims.values()}
    gpu_pods = [pod for pod in sim.cluster.pods.values() if pod.spec.resource_claims]
    assert len(gpu_pods) == 504
    for pod in gpu_pods:
        (status,) = pod.status.resource_claim_statuses
        claim = claims.get(f"ml/{status.resource_claim_name}")
        if pod.status.phase == "Succeeded":  # a finished Job pod's claim is deleted with it
            assert claim is None
            continue
        assert claim is not None and owners[pod.metadata.uid] is claim
        assert claim.metadata.annotations[POD_CLAIM_ANNOTATION] == pod.spec.resource_claims[0].name
    assert len(claims) == 120  # the inference Deployment's, still running


def test_every_pod_is_placed_and_its_claims_are_allocated_on_its_node(ran: tuple[SimResult, Simulation]) -> None:
    result, sim = ran
    assert result.pods_unschedulable == 0 and result.pods_scheduled == result.pods_total
    claims = sim.cluster.devices[RESOURCE_CLAIM]
    inference = [pod for pod in sim.cluster.pods.values() if pod.metadata.labels.get("app") == "inference"]
    assert len(inference) == 120
    for pod in inference:  # the Deployment runs on; the Jobs' claims went with their finished pods
        claim = claims[f"ml/{pod.status.resource_claim_statuses[0].resource_claim_name}"]
        allocation = claim.status.allocation
        assert allocation is not None
        (device,) = allocation.devices.results
        assert device.pool == pod.spec.node_name and device.consumed_capacity == {"memory": "10Gi"}
        assert [ref.uid for ref in claim.status.reserved_for] == [pod.metadata.uid]
