"""The simulated API server's writes for the claim behind a pod's DRA-served extended resources:
the claim created under a generated name and delivered to the scheduler's claim tracker, deleted
on its uid's precondition, and the pod's status.extendedResourceClaimStatus written."""

from __future__ import annotations

import asyncio

import pytest

from builders import make_node, make_pod
from kubesched.api.dra import RESOURCE_CLAIM, ResourceClaimWriteError
from kubesched.api.podinfo import make_pod_info
from kubesched.devices.extendedclaim import claim_to_create, extended_claim_status, in_memory_claim, requests_and_mappings, with_requests
from unit.simkit import run

GPU = "example.com/gpu"


class ByResource:
    def class_for(self, resource: str) -> str | None:
        return "gpu" if resource == GPU else None


def test_the_claim_is_created_found_by_the_scheduler_and_deleted_on_its_uid() -> None:
    _, sim = run([make_node("n1").without("ephemeral-storage").manifest(),
                  make_pod("trainer").node("n1").req({"cpu": "100m", GPU: "1"}).limits({GPU: "1"}).manifest()])
    cluster, dra = sim.cluster, sim.scheduler.dra
    (pod,) = cluster.pods.values()
    requests, mappings = requests_and_mappings(pod, {GPU: 1}, ByResource())
    wanted = claim_to_create(with_requests(in_memory_claim(pod), requests))

    created = asyncio.run(cluster.create_resource_claim(wanted))
    again = asyncio.run(cluster.create_resource_claim(wanted))
    name = created.metadata.name
    assert name.startswith("trainer-extended-resources-") and len(name) == len("trainer-extended-resources-") + 5
    assert again.metadata.name != name  # each create draws another name
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.owner_references == wanted.metadata.owner_references
    assert dra.claims.get("default", name).metadata.uid == created.metadata.uid
    assert cluster.devices[RESOURCE_CLAIM][f"default/{name}"] == created
    # A name in use is refused.
    with pytest.raises(ResourceClaimWriteError, match=rf'^resourceclaims.resource.k8s.io "{name}" already exists$'):
        asyncio.run(cluster.create_resource_claim(created))

    # Deleting on another uid is refused, with the API server's words; the claim stays.
    refused = r"the UID in the precondition \(other\) does not match the UID in record \(claim-"
    with pytest.raises(ResourceClaimWriteError, match=refused) as err:
        asyncio.run(cluster.delete_resource_claim("default", name, "other"))
    assert err.value.conflict
    assert dra.claims.find("default", name) is not None
    asyncio.run(cluster.delete_resource_claim("default", name, created.metadata.uid))
    assert dra.claims.find("default", name) is None and f"default/{name}" not in cluster.devices[RESOURCE_CLAIM]
    # Gone already: no error.
    asyncio.run(cluster.delete_resource_claim("default", name, created.metadata.uid))

    pi = make_pod_info(pod)
    status = extended_claim_status(pod, mappings, again.metadata.name)
    asyncio.run(cluster.set_extended_resource_claim_status(pi, status))
    assert cluster.pods[pod.metadata.uid].status.extended_resource_claim_status == status
    assert [m.request_name for m in status.request_mappings] == ["container-0-request-1"]
