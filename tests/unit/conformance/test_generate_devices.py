"""The conformance generator's devices (tests/integration/conformance/devices.py), without a
cluster: they leave the rest of a seed's scenario as it was, the objects they make are ones the
simulator's loader (the API server's validation) accepts, and claim_view compares claims of two
runs modulo their prefix and random shareIDs."""

from __future__ import annotations

import copy
from unittest import mock

import pytest

from integration.conformance import devices, generate
from integration.conformance.runner import claim_key, claim_view, pod_claim_keys
from integration.conformance.simside import _objects
from kubesched.backends.sim.manifests import load_objects

SEEDS = range(1, 121)


def _without_devices(sc: generate.JSON) -> generate.JSON:
    sc = copy.deepcopy(sc)
    sc.pop("dra", None)
    for pod in sc["pending"]:
        pod["spec"].pop("resourceClaims", None)
    return sc


def test_devices_leave_the_rest_of_every_seed_as_it_was() -> None:
    with_devices = [generate.scenario(seed) for seed in SEEDS]
    with mock.patch.object(devices, "DRA_SHARE", 0.0):
        without = [generate.scenario(seed) for seed in SEEDS]
    assert all("dra" not in sc for sc in without)
    assert [_without_devices(sc) for sc in with_devices] == without
    share = sum(1 for sc in with_devices if sc.get("dra")) / len(SEEDS)
    assert 0.2 < share < 0.5


@pytest.mark.parametrize("templates", [False, True])
def test_every_device_object_is_one_the_api_server_accepts(templates: bool) -> None:
    checked = 0
    for seed in SEEDS:
        sc = generate.scenario(seed)
        if not sc.get("dra"):
            continue
        if templates:  # the same seed with templates in the draw
            sc = {**_without_devices(sc)}
            devices.add_devices(seed, sc, templates=True)
        load_objects(_objects(sc))  # raises on any object the validation refuses
        claims = {c["name"] for c in sc["dra"]["claims"]}
        for pod in sc["pending"]:
            for key, entry in zip(pod_claim_keys(pod), pod["spec"].get("resourceClaims", ()), strict=True):
                assert key in claims if entry.get("resourceClaimName") else key == f"{pod['name']}:{entry['name']}"
        checked += 1
    assert checked > 20


def test_claim_view_is_the_same_for_both_runs_modulo_prefix_and_share_ids() -> None:
    def claim(prefix: str, share_id: str) -> generate.JSON:
        return {"metadata": {"name": "web-0-c0-x7k2p", "annotations": {"resource.kubernetes.io/pod-claim-name": "c0"},
                             "ownerReferences": [{"kind": "Pod", "name": "web-0", "uid": "u"}],
                             "finalizers": ["resource.kubernetes.io/delete-protection"]},
                "status": {"allocation": {"devices": {"results": [
                    {"request": "r0", "driver": "gpu.example.com", "pool": f"{prefix}node-1-shared", "device": "shared-gpu-0",
                     "shareID": share_id, "consumedCapacity": {"memory": "10Gi"}, "tolerations": []}]},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [f"{prefix}node-1"]}]}]}},
                    "reservedFor": [{"resource": "pods", "name": "web-0", "uid": f"{prefix}uid"}]}}

    kube, sim = claim("s7-", "0b9a7d6e-1111-4e1f-a000-000000000001"), claim("", "sim-share-1")
    assert claim_key(kube) == claim_key(sim) == "web-0:c0"
    assert claim_view(kube, "s7-") == claim_view(sim, "") == {
        "reservedFor": ["web-0"],
        "allocation": {"results": [{"request": "r0", "driver": "gpu.example.com", "pool": "node-1-shared", "device": "shared-gpu-0",
                                    "shareID": "(set)", "consumedCapacity": {"memory": "10Gi"}}],
                       "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                           {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
        "finalizers": ["resource.kubernetes.io/delete-protection"],
    }
    unshared = copy.deepcopy(sim)
    del unshared["status"]["allocation"]["devices"]["results"][0]["shareID"]
    assert claim_view(unshared, "") != claim_view(sim, "")
