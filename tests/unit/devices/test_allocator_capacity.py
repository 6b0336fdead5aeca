"""Consumable capacity in the device allocator (devices/capacity.py, devices/allocator.py): devices
with allowMultipleAllocations shared by several claims and requests, capacity requests rounded up
by request policies, what allocated claims already consume, counters paid once per shared device,
All mode, kube's messages; and the property that no device's capacity is ever over-consumed.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from kubesched.api.dra import AllocationResult, DeviceAllocationResult, DeviceRequestAllocationResult
from kubesched.api.quantity import parse
from kubesched.devices.allocatedstate import allocated_state
from kubesched.devices.allocator import AllocationError
from unit.devices.allocgen import NODE, Case, generate
from unit.devices.capacitycases import GPU
from unit.devices.capacitycases import case as _case
from unit.devices.capacitycases import claim as _claim
from unit.devices.capacitycases import node_slice as _slice
from unit.devices.capacitycases import request as _request
from unit.devices.capacitycases import shareable as _gpu


def _allocate(case: Case) -> list[AllocationResult] | None:
    ids = (f"00000000-0000-4000-8000-{i:012d}" for i in itertools.count())
    return case.allocator(new_share_id=lambda: next(ids)).allocate(case.typed_node(), case.typed_claims())


def _shares(case: Case) -> list[list[tuple[str, str | None, dict[str, str]]]] | None:
    results = _allocate(case)
    if results is None:
        return None
    return [[(r.device, r.share_id and r.share_id[-2:], r.consumed_capacity) for r in result.devices.results]
            for result in results]


def test_claims_share_a_device_each_with_its_own_share_and_consumed_capacity() -> None:
    case = _case([_slice([_gpu("g0")])], [_claim(0, _request(memory="30Gi")), _claim(1, _request(memory="50Gi"))])
    assert _shares(case) == [[("g0", "00", {"memory": "30Gi"})], [("g0", "01", {"memory": "50Gi"})]]


def test_requests_of_one_claim_share_a_device_a_request_never_takes_it_twice() -> None:
    case = _case([_slice([_gpu("g0"), _gpu("g1")])], [_claim(0, _request("a", memory="10Gi", count=2), _request("b", memory="10Gi"))])
    assert _shares(case) == [[("g0", "00", {"memory": "10Gi"}), ("g1", "01", {"memory": "10Gi"}),
                              ("g0", "02", {"memory": "10Gi"})]]


def test_without_a_capacity_request_a_share_takes_the_default_or_the_whole_capacity() -> None:
    whole = _case([_slice([_gpu("g0")])], [_claim(0, _request()), _claim(1, _request())])
    assert _shares(whole) is None
    default = _case([_slice([_gpu("g0", "40Gi", {"default": "10Gi"})])], [_claim(i, _request()) for i in range(4)])
    assert _shares(default) == [[("g0", f"0{i}", {"memory": "10Gi"})] for i in range(4)]


@pytest.mark.parametrize(("policy", "asked", "consumed"), [
    ({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, "11Gi", "20Gi"),
    ({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, "40Gi", "40Gi"),
    ({"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}, "9Gi", "16Gi"),
    ({"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}, "1Gi", "8Gi"),
    ({"default": "8Gi", "validRange": {"min": "8Gi"}}, "9Gi", "9Gi"),
    # A decimal step: the result keeps the step's format; the request is read in whole units.
    ({"default": "2G", "validRange": {"min": "2G", "step": "1G"}}, "8Gi", "9G"),
])
def test_a_request_is_rounded_up_by_the_policy(policy: dict[str, Any], asked: str, consumed: str) -> None:
    case = _case([_slice([_gpu("g0", "80Gi", policy)])], [_claim(0, _request(memory=asked))])
    assert _shares(case) == [[("g0", "00", {"memory": consumed})]]


def test_a_device_the_policy_or_its_capacities_refuse_is_skipped() -> None:
    over_max = _gpu("g0", "80Gi", {"default": "8Gi", "validRange": {"min": "8Gi", "max": "16Gi", "step": "8Gi"}})
    assert _shares(_case([_slice([over_max, _gpu("g1")])], [_claim(0, _request(memory="20Gi"))])) == [
        [("g1", "00", {"memory": "20Gi"})]]
    beyond_values = _gpu("g0", "80Gi", {"default": "10Gi", "validValues": ["10Gi", "20Gi"]})
    assert _shares(_case([_slice([beyond_values])], [_claim(0, _request(memory="30Gi"))])) is None
    lacking = _case([_slice([_gpu("g0")])], [_claim(0, {"name": "r", "exactly": {
        "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1, "capacity": {"requests": {"cores": "1"}}}})])
    assert _shares(lacking) is None


def test_what_allocated_claims_consume_is_not_available() -> None:
    devices = [_gpu("g0"), _gpu("g1")]
    state = {"shared": [f"{GPU}/p/g0/11111111-1111-4111-8111-111111111111"], "aggregated": {f"{GPU}/p/g0": {"memory": "60Gi"}}}
    assert _shares(_case([_slice(devices)], [_claim(0, _request(memory="20Gi"))], **state)) == [[("g0", "00", {"memory": "20Gi"})]]
    assert _shares(_case([_slice(devices)], [_claim(0, _request(memory="21Gi"))], **state)) == [[("g1", "00", {"memory": "21Gi"})]]


def test_all_mode_needs_every_matching_device_to_have_room() -> None:
    devices = [_gpu("g0"), _gpu("g1")]
    state = {"shared": [f"{GPU}/p/g0/11111111-1111-4111-8111-111111111111"], "aggregated": {f"{GPU}/p/g0": {"memory": "70Gi"}}}
    all_mode = [_claim(0, _request(memory="20Gi", mode="All", count=0))]
    assert _shares(_case([_slice(devices)], all_mode)) == [[("g0", "00", {"memory": "20Gi"}), ("g1", "01", {"memory": "20Gi"})]]
    assert _shares(_case([_slice(devices)], all_mode, **state)) is None
    # A device that could never hold the request is not part of "all".
    small = [_gpu("g0", "10Gi"), _gpu("g1")]
    assert _shares(_case([_slice(small)], all_mode)) == [[("g1", "00", {"memory": "20Gi"})]]


def test_a_shared_device_pays_its_counters_once() -> None:
    counters = [{"counterSet": "set", "counters": {"mem": {"value": "1"}}}]
    pool = {"name": "p", "generation": 1, "resourceSliceCount": 2}
    slices = [_slice([_gpu("g0", consumesCounters=counters), _gpu("g1", consumesCounters=counters)], count=2),
              {"metadata": {"name": "t"}, "spec": {"driver": GPU, "nodeName": NODE, "pool": pool,
                                                   "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "1"}}}]}}]
    claims = [_claim(i, _request(memory="10Gi")) for i in range(3)]
    assert _shares(_case(slices, claims)) == [[("g0", f"0{i}", {"memory": "10Gi"})] for i in range(3)]
    # g1 would need the counters g0 took.
    assert _shares(_case(slices, [_claim(0, _request(memory="75Gi")), _claim(1, _request(memory="10Gi"))])) is None


def test_admin_access_to_a_shared_device() -> None:
    case = _case([_slice([_gpu("g0")])], [_claim(0, _request(memory="80Gi")), _claim(1, _request(adminAccess=True, memory="1Gi"))])
    assert _shares(case) is None  # admin access shares the device but still consumes its capacity
    room = [_claim(0, _request(memory="60Gi")), _claim(1, _request(adminAccess=True, memory="1Gi"))]
    results = _allocate(_case([_slice([_gpu("g0")])], room))
    assert results is not None and results[1].devices.results[0].admin_access


def test_kubes_messages_for_amounts_that_cannot_be() -> None:
    negative = _case([_slice([_gpu("g0", "-1Gi")])], [_claim(0, _request())])
    with pytest.raises(AllocationError) as caught:
        _allocate(negative)
    assert caught.value.message == ('claim ns/c0, request r: checking capacity for device gpu.example.com/p/g0: '
                                    'capacity "memory": capacity value is negative')
    huge = _case([_slice([_gpu("g0", "80Gi", {"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}})])],
                 [_claim(0, _request(memory="1e19", mode="All", count=0))])
    with pytest.raises(AllocationError) as caught:
        _allocate(huge)
    assert caught.value.message == ("claim ns/c0, request r: checking capacity for device g0: capacity \"memory\": capacity request "
                                    "cannot be represented in the device's range arithmetic: request 10e18 exceeds MaxInt64")


def test_allocated_state_folds_results_as_kubes_tracker() -> None:
    def result(device: str, share: str | None = None, admin: bool | None = None, **consumed: str) -> DeviceRequestAllocationResult:
        return DeviceRequestAllocationResult(request="r", driver=GPU, pool="p", device=device, admin_access=admin,
                                             share_id=share, consumed_capacity=dict(consumed))
    state = allocated_state([AllocationResult(devices=DeviceAllocationResult(results=[
        result("g0", "a", memory="10Gi"), result("g0", "b", memory="6Gi"), result("g1"), result("g2", admin=True), result("g3", "c")]))])
    assert state.devices == {(GPU, "p", "g1")}
    assert state.shared_devices == {(GPU, "p", "g0", "a"), (GPU, "p", "g0", "b"), (GPU, "p", "g3", "c")}
    assert state.aggregated_capacity == {(GPU, "p", "g0"): {"memory": 16 * 2**30 * 10**9}}
    assert state.is_allocated((GPU, "p", "g3")) and not state.is_allocated((GPU, "p", "g2"))


# --- property: no capacity over-consumed, no exclusive device twice -----------------------------------------------


def _capacities(case: Case) -> dict[tuple[str, str, str], tuple[bool, dict[str, int]]]:
    out = {}
    for s in case.slices:
        for d in s["spec"].get("devices", []):
            device_id = (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
            amounts = {name: parse(c["value"]).nanos or 0 for name, c in d.get("capacity", {}).items()}
            out[device_id] = (bool(d.get("allowMultipleAllocations")), amounts)
    return out


def test_no_device_capacity_is_ever_over_consumed() -> None:
    rng = random.Random(11)
    shared_allocations = 0
    for _ in range(1500):
        case = generate(rng)
        try:
            results = _allocate(case)
        except AllocationError:
            continue
        if results is None:
            continue
        state = case.allocated_state()
        devices = _capacities(case)
        fresh = allocated_state(results)
        for device_id, consumed in fresh.aggregated_capacity.items():
            shareable, capacity = devices[device_id]
            assert shareable, device_id
            before = state.aggregated_capacity.get(device_id, {})
            for name, amount in consumed.items():
                assert before.get(name, 0) + amount <= capacity[name], (device_id, name, case.oracle_request())
        exclusive = [(r.driver, r.pool, r.device) for result in results for r in result.devices.results
                     if not r.admin_access and r.share_id is None]
        assert len(exclusive) == len(set(exclusive))
        assert not set(exclusive) & (state.devices | {s[:3] for s in state.shared_devices})
        assert all(not devices[d][0] for d in exclusive), "a shareable device was given whole"
        shares = [r.share_id for result in results for r in result.devices.results if r.share_id]
        assert len(shares) == len(set(shares))
        shared_allocations += bool(shares)
    assert shared_allocations > 50
