"""The device allocator (devices/allocator.py): kube's order and messages on hand-made inventories,
the first solution against a brute-force enumeration on random tiny ones (consumable capacity
included), and the property that no device is ever given twice (consumable capacity's own cases
and property: test_allocator_capacity.py). The differential test against kube's own allocator is in
tests/integration/devices/test_allocator_differential.py.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest

from kubesched.api.dra import ResourceClaim
from kubesched.api.quantity import parse
from kubesched.devices.allocator import AllocationError, Allocator, _tolerates
from kubesched.devices.capacity import request_fits, share_of_request
from kubesched.devices.cel import SelectorRuntimeError, compile_selector
from kubesched.devices.constraints import Constraint
from kubesched.devices.pools import devices_of, gather_pools
from kubesched.devices.sliceinputs import device_input
from kubesched.devices.slicetracker import SliceIndex
from unit.devices.allocgen import NODE, Case, generate


def _slice(name: str, pool: str, devices: list[dict[str, Any]], *, driver: str = "gpu.example.com", count: int = 1,
           **where: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
                                                 "devices": devices, **(where or {"nodeName": NODE})}}


def _claim(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices = {"requests": list(requests), "constraints": constraints or []}
    return {"metadata": {"name": "c", "namespace": "ns"}, "spec": {"devices": devices}}


def _exact(name: str = "r", count: int = 1, mode: str = "ExactCount", **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu", "allocationMode": mode, "count": count, **extra}}


def _case(slices: list[dict[str, Any]], claims: list[dict[str, Any]], selector: str | None = None,
          allocated: list[str] | None = None) -> Case:
    spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
    return Case({"metadata": {"name": NODE, "labels": {"zone": "a"}}}, [{"metadata": {"name": "gpu"}, "spec": spec}],
                slices, claims, allocated or [])


def _picked(case: Case) -> list[list[str]] | None:
    results = case.allocator().allocate(case.typed_node(), case.typed_claims())
    if results is None:
        return None
    return [[f"{r.request}:{r.pool}/{r.device}" for r in result.devices.results] for result in results]


def test_pools_by_driver_and_name_slices_by_name_devices_as_listed() -> None:
    case = _case([_slice("z", "pool-b", [{"name": "b0"}]), _slice("y", "pool-a", [{"name": "a1"}, {"name": "a0"}], count=2),
                  _slice("x", "pool-a", [{"name": "a2"}], count=2), _slice("w", "pool-0", [{"name": "n0"}], driver="nic.example.org")],
                 [_claim(_exact(count=4))])
    assert _picked(case) == [["r:pool-a/a2", "r:pool-a/a1", "r:pool-a/a0", "r:pool-b/b0"]]


def test_first_available_falls_back_to_the_next_subrequest() -> None:
    case = _case([_slice("s", "p", [{"name": "d0", "attributes": {"model": {"string": "l4"}}}])],
                 [_claim({"name": "r", "firstAvailable": [
                     {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2},
                     {"name": "small", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}]})])
    assert _picked(case) == [["r/small:p/d0"]]


def test_in_use_devices_are_skipped_unless_admin_access() -> None:
    slices = [_slice("s", "p", [{"name": "d0"}, {"name": "d1"}])]
    assert _picked(_case(slices, [_claim(_exact())], allocated=["gpu.example.com/p/d0"])) == [["r:p/d1"]]
    assert _picked(_case(slices, [_claim(_exact(adminAccess=True))], allocated=["gpu.example.com/p/d0"])) == [["r:p/d0"]]


def test_taints_need_a_toleration() -> None:
    tainted = [_slice("s", "p", [{"name": "d0", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}])]
    assert _picked(_case(tainted, [_claim(_exact())])) is None
    assert _picked(_case(tainted, [_claim(_exact(tolerations=[{"key": "k", "operator": "Exists"}]))])) == [["r:p/d0"]]


def test_shared_counters_limit_partitions() -> None:
    parts = [{"name": f"part-{i}", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"mem": {"value": "40Gi"}}}]} for i in range(3)]
    slices = [_slice("a", "p", parts, count=2),
              {"metadata": {"name": "b"}, "spec": {"driver": "gpu.example.com", "nodeName": NODE,
                                                   "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                                                   "sharedCounters": [{"name": "gpu-0", "counters": {"mem": {"value": "80Gi"}}}]}}]
    assert _picked(_case(slices, [_claim(_exact(count=2))])) == [["r:p/part-0", "r:p/part-1"]]
    assert _picked(_case(slices, [_claim(_exact(count=3))])) is None


def test_all_mode_refuses_an_incomplete_pool_with_kubes_message() -> None:
    case = _case([_slice("s", "p", [{"name": "d0"}], count=2)], [_claim(_exact(mode="All", count=0))])
    with pytest.raises(AllocationError) as caught:
        _picked(case)
    assert caught.value.message == ("claim ns/c, request r: asks for all devices, but resource pool gpu.example.com/p "
                                    "is currently being updated")


def test_invalid_pool_fails_on_the_node_only() -> None:
    case = _case([_slice("s", "p", [{"name": "d0"}, {"name": "d0"}])], [_claim(_exact())])
    with pytest.raises(AllocationError) as caught:
        _picked(case)
    assert caught.value.message == "invalid resource pools were encountered"
    assert caught.value.failed_on_node


def test_a_constraint_that_all_mode_cannot_satisfy_is_an_error() -> None:
    devices = [{"name": f"d{i}", "attributes": {"model": {"string": m}}} for i, m in enumerate(["a", "b"])]
    same_model = [{"matchAttribute": "gpu.example.com/model"}]
    case = _case([_slice("s", "p", devices)], [_claim(_exact(mode="All", count=0), constraints=same_model)])
    with pytest.raises(AllocationError) as caught:
        _picked(case)
    assert caught.value.message == ("claim ns/c, request r: cannot add device gpu.example.com/p/d1 because a claim constraint "
                                    "would not be satisfied")


def test_a_selector_error_is_raised_only_when_the_search_reaches_the_device() -> None:
    devices = [{"name": "d0", "attributes": {"model": {"string": "a100"}}}, {"name": "d1"}]
    selector = 'device.attributes["gpu.example.com"].model == "a100"'
    assert _picked(_case([_slice("s", "p", devices)], [_claim(_exact())], selector)) == [["r:p/d0"]]
    with pytest.raises(AllocationError) as caught:
        _picked(_case([_slice("s", "p", devices)], [_claim(_exact(count=2))], selector))
    assert caught.value.message.startswith("class gpu: selector #0 on device gpu.example.com/p/d1: CEL runtime error: no such key: model")


# --- brute force: the first valid assignment in kube's order is ours ---------------------------------------------


def _tiny_cases(count: int, seed: int) -> Iterator[Case]:
    rng = random.Random(seed)
    while count:
        case = generate(rng)
        requests = [r for c in case.claims for r in c["spec"]["devices"]["requests"]]
        subs = [s for r in requests for s in r.get("firstAvailable", [r.get("exactly")])]
        if any(s["allocationMode"] == "All" for s in subs):
            continue
        if any("consumesCounters" in d for s in case.slices for d in s["spec"].get("devices", [])):
            continue
        count -= 1
        yield case


def _brute_force(case: Case) -> list[list[str]] | None:
    """Every assignment in kube's order (claim, request, subrequest, then device positions in
    increasing order), each checked whole; the first valid one."""
    node, claims = case.typed_node(), case.typed_claims()
    allocator = case.allocator()
    pools = gather_pools(allocator.slices_on_node.get(NODE, []) + allocator.slices_shared, node, allocator.all_slices)
    candidates = [(pool, s, d) for pool in pools if not (pool.incomplete or pool.invalid) for s in pool.device_slices for d in devices_of(s)
                  if not s.spec.per_device_node_selection or d.node_name == NODE or d.all_nodes]
    allocated = {tuple(d.split("/")) for d in case.allocated}
    state = case.allocated_state()

    def selected(expressions: list[str], driver: str, device: Any) -> bool:
        return all(compile_selector(e).matches(device_input(driver, device)) for e in expressions)

    slots: list[tuple[int, str, list[tuple[str | None, Any]]]] = []  # (claim, request, [(subrequest, spec)])
    for ci, claim in enumerate(claims):
        for request in claim.spec.devices.requests:
            options = [(None, request.exactly)] if request.exactly is not None else [(s.name, s) for s in request.first_available]
            slots.append((ci, request.name, options))

    def fits(ci: int, name: str, sub: str | None, spec: Any, picked: tuple[int, ...], taken: dict[tuple[str, str, str], set[int]]) -> bool:
        admin = bool(getattr(spec, "admin_access", None))
        class_selectors = [s.cel.expression for s in case.allocator().classes[spec.device_class_name].spec.selectors if s.cel]
        for index in picked:
            pool, s, d = candidates[index]
            device_id = (pool.driver, pool.name, d.name)
            if d.allow_multiple_allocations:
                if not admin and device_id in allocated:
                    return False
            elif admin and ci in taken.get(device_id, set()):
                return False
            if not admin and (device_id in allocated or taken.get(device_id)):
                return False
            if not selected(class_selectors + [x.cel.expression for x in spec.selectors if x.cel], s.spec.driver, d):
                return False
            if any(t.effect in ("NoSchedule", "NoExecute") and not any(_tolerates(o, t.key, t.value, t.effect) for o in spec.tolerations)
                   for t in d.taints):
                return False
        return True

    Chosen = list[tuple[int, str, str | None, int]]

    def search(slot: int, taken: dict[tuple[str, str, str], set[int]], chosen: Chosen) -> list[list[str]] | None:
        if slot == len(slots):
            valid = _constraints_hold(chosen, claims, candidates) and _capacity_holds(chosen, claims, candidates, state)
            return _render(chosen, claims, candidates) if valid else None
        ci, name, options = slots[slot]
        for sub, spec in options:
            for picked in itertools.combinations(range(len(candidates)), spec.count):
                if not fits(ci, name, sub, spec, picked, taken):
                    continue
                for index in picked:
                    pool, _, d = candidates[index]
                    if not d.allow_multiple_allocations:
                        taken.setdefault((pool.driver, pool.name, d.name), set()).add(ci)
                found = search(slot + 1, taken, chosen + [(ci, name, sub, i) for i in picked])
                for index in picked:
                    pool, _, d = candidates[index]
                    taken.get((pool.driver, pool.name, d.name), set()).discard(ci)
                if found is not None:
                    return found
        return None

    return search(0, {}, [])


def _constraints_hold(chosen: list[tuple[int, str, str | None, int]], claims: list[ResourceClaim], candidates: list[Any]) -> bool:
    for ci, claim in enumerate(claims):
        for c in claim.spec.devices.constraints:
            attribute = c.match_attribute or c.distinct_attribute or ""
            constraint = Constraint(attribute, frozenset(c.requests), distinct=c.distinct_attribute is not None)
            for cj, name, sub, index in chosen:
                pool, _, device = candidates[index]
                if cj == ci and not constraint.add(name, sub or "", device, pool.driver):
                    return False
    return True


def _capacity_holds(chosen: list[tuple[int, str, str | None, int]], claims: list[ResourceClaim], candidates: list[Any],
                    state: Any) -> bool:
    """Every pick's capacity request suits its device, and the shares of each shared device,
    with what allocated claims consume, stay within its capacities (consumption only grows, so the
    whole assignment holds exactly when each step of kube's search did)."""
    used: dict[tuple[str, str, str], dict[str, int]] = {}
    for ci, name, sub, index in chosen:
        pool, _, device = candidates[index]
        request = next(r for r in claims[ci].spec.devices.requests if r.name == name)
        spec = request.exactly if sub is None else next(s for s in request.first_available if s.name == sub)
        asked = spec.capacity.requests if spec is not None and spec.capacity is not None else None
        device_id = (pool.driver, pool.name, device.name)
        if not request_fits(asked, device.capacity, state.aggregated_capacity.get(device_id), None):
            return False
        if device.allow_multiple_allocations:
            for capacity, amount in share_of_request(asked, device.capacity).items():
                total = used.setdefault(device_id, {})
                total[capacity] = total.get(capacity, state.aggregated_capacity.get(device_id, {}).get(capacity, 0)) + (amount.nanos or 0)
                if total[capacity] > (parse_nanos(device.capacity[capacity].value)):
                    return False
    return True


def parse_nanos(raw: Any) -> int:
    return parse(raw).nanos or 0


def _render(chosen: list[tuple[int, str, str | None, int]], claims: list[ResourceClaim], candidates: list[Any]) -> list[list[str]]:
    out: list[list[str]] = [[] for _ in claims]
    for ci, name, sub, index in chosen:
        pool, _, device = candidates[index]
        out[ci].append(f"{name if sub is None else f'{name}/{sub}'}:{pool.name}/{device.name}")
    return out


def test_first_solution_is_the_first_valid_assignment_in_kubes_order() -> None:
    compared = shared = 0
    for case in _tiny_cases(250, seed=77):
        try:
            ours = _picked(case)
            expected = _brute_force(case)
        except (AllocationError, SelectorRuntimeError):
            continue  # a selector failing on some device, an invalid pool: the differential test checks those
        assert ours == expected, case.oracle_request()
        compared += 1
        shared += ours is not None and any(d.get("allowMultipleAllocations") for s in case.slices for d in s["spec"].get("devices", []))
    assert compared > 100
    assert shared > 10


# --- property: no device twice ----------------------------------------------------------------------------------


def test_no_device_is_given_twice_or_when_in_use() -> None:
    rng = random.Random(5)
    allocations = 0
    for _ in range(400):
        case = generate(rng)
        try:
            results = case.allocator().allocate(case.typed_node(), case.typed_claims())
        except AllocationError:
            continue
        if results is None:
            continue
        allocations += 1
        exclusive: list[tuple[str, str, str]] = []
        for claim_index, result in enumerate(results):
            admin = [(r.driver, r.pool, r.device) for r in result.devices.results if r.admin_access and r.share_id is None]
            assert len(admin) == len(set(admin)), f"claim {claim_index} got an admin-access device twice"
            exclusive += [(r.driver, r.pool, r.device) for r in result.devices.results if not r.admin_access and r.share_id is None]
        assert len(exclusive) == len(set(exclusive))
        assert not {"/".join(d) for d in exclusive} & set(case.allocated)
    assert allocations > 50


def test_slice_columns_are_kept_across_allocators_while_the_slice_is_unchanged() -> None:
    case = _case([_slice("s", "p", [{"name": "d0", "attributes": {"model": {"string": "a100"}}}])], [_claim(_exact())],
                 'device.attributes["gpu.example.com"].model == "a100"')
    columns = SliceIndex()
    first = case.allocator()
    columns.set(first.all_slices[0])
    kept = Allocator(first.classes, first.all_slices, columns=columns.columns)
    assert kept.allocate(case.typed_node(), case.typed_claims()) is not None
    built = columns.columns(first.all_slices[0])
    again = Allocator(first.classes, first.all_slices, columns=columns.columns)
    assert again.allocate(case.typed_node(), case.typed_claims()) is not None
    assert columns.columns(first.all_slices[0]) is built
    replaced = case.allocator().all_slices  # the same slice as a new object: converted again, the old one forgotten
    columns.set(replaced[0])
    Allocator(first.classes, replaced, columns=columns.columns)
    assert columns.columns(replaced[0]) is not built
    assert len(columns._columns) == 1
