"""The DRA manager: a pod's claims named as kube names them, classes read from the scheduler's
index, and the simulator's claims and slices reaching it (at their arrival time)."""

from __future__ import annotations

import pytest

from builders import make_device_class, make_node, make_pod, make_resource_claim, make_resource_slice
from kubesched.api.dra import DeviceClass
from kubesched.api.objects import ObjectMeta, Pod, PodResourceClaim, PodResourceClaimStatus, PodSpec, PodStatus
from kubesched.devices.manager import DraManager, PodClaimError, PodClaimName, pod_claim_name
from unit.simkit import run


def pod(*claims: PodResourceClaim, statuses: tuple[PodResourceClaimStatus, ...] = ()) -> Pod:
    return Pod(metadata=ObjectMeta(name="p", namespace="ns"), spec=PodSpec(resource_claims=list(claims)),
               status=PodStatus(resource_claim_statuses=list(statuses)))


def test_claim_names_resolve_as_kube_resolves_them() -> None:
    direct = PodResourceClaim(name="gpu", resource_claim_name="shared-gpu")
    templated = PodResourceClaim(name="nic", resource_claim_template_name="one-nic")
    assert pod_claim_name(pod(direct), direct) == PodClaimName("shared-gpu", False)
    with pytest.raises(PodClaimError, match=r'^pod "ns/p": ResourceClaim not created yet$') as err:
        pod_claim_name(pod(templated), templated)
    assert err.value.not_created
    made = pod(templated, statuses=(PodResourceClaimStatus(name="nic", resource_claim_name="p-nic-x7k2q"),))
    assert pod_claim_name(made, templated) == PodClaimName("p-nic-x7k2q", True)
    # The controller found no claim needed: no name, and the claim is left out.
    unneeded = pod(templated, statuses=(PodResourceClaimStatus(name="nic"),))
    assert pod_claim_name(unneeded, templated) == PodClaimName(None, True)
    assert DraManager().pod_claims(unneeded) == []
    empty = PodResourceClaim(name="odd")
    with pytest.raises(PodClaimError, match=r'^pod "ns/p", spec.resourceClaim "odd": none of the supported fields are set$'):
        pod_claim_name(pod(empty), empty)


def test_classes_are_the_schedulers_index_read_not_copied() -> None:
    classes: dict[str, DeviceClass] = {}
    manager = DraManager(classes)
    assert manager.device_class("gpu") is None
    classes["gpu"] = DeviceClass(metadata=ObjectMeta(name="gpu"))
    assert manager.device_class("gpu") is classes["gpu"]


def test_the_simulators_claims_slices_and_classes_reach_the_manager() -> None:
    late = make_resource_slice("n2-gpus", "n2", devices=4)
    late["metadata"]["annotations"] = {"sim.kubesched.io/arrival": "30"}
    _, sim = run([make_node("n1").without("ephemeral-storage").manifest(),
                  make_node("n2").without("ephemeral-storage").manifest(),
                  make_device_class("gpu"), make_resource_claim("shared-gpu"), make_resource_slice("n1-gpus", "n1"), late,
                  make_pod("p").req(cpu="100m").manifest()])
    dra = sim.scheduler.dra
    assert dra.device_class("gpu") is not None
    claim = dra.claims.get("default", "shared-gpu")
    assert claim.metadata.uid and int(claim.metadata.resource_version) > 0
    assert [s.metadata.name for s in dra.slices.candidates("n1")] == ["n1-gpus"]
    assert [s.metadata.name for s in dra.slices.candidates("n2")] == ["n2-gpus"]
    assert dra is next(iter(sim.scheduler.frameworks.values())).dra  # what a plugin's handle reads
