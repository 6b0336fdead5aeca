"""The claim tracker: kube's assume cache (newer versions win, restore), in-flight allocations,
and the allocated state kept incrementally, checked against a full recomputation on random event
sequences."""

from __future__ import annotations

import random

import msgspec
import pytest

from kubesched.api.dra import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceClaimStatus,
)
from kubesched.api.objects import ObjectMeta
from kubesched.devices.allocatedstate import AllocatedState, allocated_state
from kubesched.devices.claimtracker import ClaimNotFound, ClaimTracker, ClaimTrackerError

Result = DeviceRequestAllocationResult


def claim(name: str, version: int, *results: Result, uid: str = "", namespace: str = "ns") -> ResourceClaim:
    allocation = AllocationResult(devices=DeviceAllocationResult(results=list(results))) if results else None
    return ResourceClaim(metadata=ObjectMeta(name=name, namespace=namespace, uid=uid or f"uid-{name}",
                                             resource_version=str(version)),
                         status=ResourceClaimStatus(allocation=allocation))


def dev(device: str, *, admin: bool = False, share: str | None = None, **consumed: str) -> Result:
    return Result(request="r", driver="d.example.com", pool="p", device=device, admin_access=admin or None,
                  share_id=share, consumed_capacity=dict(consumed))


def ids(*devices: str) -> frozenset[tuple[str, str, str]]:
    return frozenset(("d.example.com", "p", d) for d in devices)


# --- the assume cache ---------------------------------------------------------------------------------


def test_an_assumed_newer_claim_wins_until_the_informer_catches_up() -> None:
    t = ClaimTracker()
    t.on_add(claim("c", 5))
    allocated = claim("c", 6, dev("gpu-0"))
    t.assume(allocated)
    assert t.get("ns", "c") is allocated and t.is_assumed("ns", "c")
    assert t.api_object("ns", "c") is not allocated
    # An informer object not newer than the assumed one is ignored whole (its api copy too).
    stale = claim("c", 6)
    t.on_update(stale)
    assert t.get("ns", "c") is allocated and t.api_object("ns", "c") is not stale
    assert t.gather_allocated_state().devices == ids("gpu-0")
    # A newer one replaces both.
    fresh = claim("c", 7, dev("gpu-0"))
    t.on_update(fresh)
    assert t.get("ns", "c") is fresh and t.api_object("ns", "c") is fresh and not t.is_assumed("ns", "c")


def test_restore_goes_back_to_the_informer_object_and_frees_its_devices() -> None:
    t = ClaimTracker()
    original = claim("c", 5)
    t.on_add(original)
    t.assume(claim("c", 6, dev("gpu-0")))
    assert t.list_all_allocated_devices() == ids("gpu-0")
    t.restore("ns", "c")
    assert t.get("ns", "c") is original
    assert t.list_all_allocated_devices() == frozenset()
    t.restore("ns", "unknown")  # nothing to restore: no error, as kube's


def test_assume_errors_have_kubes_messages() -> None:
    t = ClaimTracker()
    with pytest.raises(ClaimNotFound, match=r'^could not find ResourceClaim "ns/c"$'):
        t.assume(claim("c", 1))
    with pytest.raises(ClaimNotFound, match=r'^could not find ResourceClaim "ns/c"$'):
        t.get("ns", "c")
    t.on_add(claim("c", 5))
    with pytest.raises(ClaimTrackerError, match=r'^ResourceClaim "ns/c" is out of sync \(stored: 5, assume: 4\)$'):
        t.assume(claim("c", 4))
    t.assume(claim("c", 5))  # the same version is accepted
    bad = msgspec.structs.replace(claim("c", 0), metadata=ObjectMeta(name="c", namespace="ns", resource_version="x1"))
    with pytest.raises(ClaimTrackerError) as err:
        t.assume(bad)
    assert str(err.value) == ('error parsing ResourceVersion "x1" for ResourceClaim "ns/c": '
                              'strconv.ParseInt: parsing "x1": invalid syntax')


def test_delete_drops_an_assumed_claim_and_its_devices() -> None:
    t = ClaimTracker()
    t.on_add(claim("c", 1))
    t.assume(claim("c", 2, dev("gpu-0")))
    t.on_delete("ns", "c")
    assert t.find("ns", "c") is None and t.list_all_allocated_devices() == frozenset()


# --- in flight -------------------------------------------------------------------------------------


def test_an_in_flight_allocation_is_allocated_for_everyone_until_removed() -> None:
    t = ClaimTracker()
    t.on_add(claim("c", 1))
    pending = claim("c", 1, dev("gpu-1"))
    t.signal_pending_allocation("uid-c", pending)
    assert t.gather_allocated_state().devices == ids("gpu-1")
    assert t.pending_allocation("uid-c") is pending
    # A second pod sharing the claim adds a reference; removal counts down.
    t.signal_pending_allocation("uid-c", pending)
    assert not t.maybe_remove_pending_allocation("uid-c")
    assert t.gather_allocated_state().devices == ids("gpu-1")
    assert t.maybe_remove_pending_allocation("uid-c")
    assert t.gather_allocated_state().devices == frozenset()
    assert not t.maybe_remove_pending_allocation("uid-c")
    t.signal_pending_allocation("uid-c", pending)
    t.signal_pending_allocation("uid-c", pending)
    assert t.maybe_remove_pending_allocation("uid-c", force=True)
    assert t.pending_allocation("uid-c") is None


def test_a_claim_already_allocated_is_not_put_in_flight() -> None:
    t = ClaimTracker()
    t.on_add(claim("c", 3, dev("gpu-0")))
    t.signal_pending_allocation("uid-c", claim("c", 3, dev("gpu-9")))
    assert t.pending_allocation("uid-c") is None
    assert t.gather_allocated_state().devices == ids("gpu-0")
    with pytest.raises(ClaimTrackerError, match=r'^look up assumed claim ns/x, UID=u: could not find ResourceClaim "ns/x"$'):
        t.signal_pending_allocation("u", claim("x", 1, dev("gpu-1")))
    # The in-memory claim of extended resources is not looked up.
    t.signal_pending_allocation("ext", claim("<extended-resources>", 0, dev("gpu-2")))
    assert t.gather_allocated_state().devices == ids("gpu-0", "gpu-2")


def test_admin_access_holds_nothing_and_shares_hold_capacity() -> None:
    t = ClaimTracker()
    t.on_add(claim("a", 1, dev("gpu-0", admin=True)))
    t.on_add(claim("b", 1, dev("nic-0", share="s1", bandwidth="10Gi")))
    t.on_add(claim("c", 1, dev("nic-0", share="s2", bandwidth="6Gi")))
    state = t.gather_allocated_state()
    assert state.devices == frozenset()
    assert state.shared_devices == {("d.example.com", "p", "nic-0", "s1"), ("d.example.com", "p", "nic-0", "s2")}
    assert state.aggregated_capacity == {("d.example.com", "p", "nic-0"): {"bandwidth": 16 * 2**30 * 10**9}}  # nano-units
    t.on_delete("ns", "b")
    t.on_delete("ns", "c")
    assert t.gather_allocated_state().aggregated_capacity == {}


# --- incremental vs recomputed, on random event sequences ---------------------------------------------


def recomputed(t: ClaimTracker) -> AllocatedState:
    """GatherAllocatedState from scratch (the allocator's own fold of allocation results) over every
    claim's latest object and every in-flight one."""
    claims = [*t.list(), *t.in_flight()]
    return allocated_state(c.status.allocation for c in claims if c.status.allocation is not None)


@pytest.mark.parametrize("seed", range(40))
def test_allocated_state_matches_a_full_recomputation(seed: int) -> None:
    rng = random.Random(seed)
    t = ClaimTracker()
    names = [f"c{i}" for i in range(6)]
    versions = dict.fromkeys(names, 0)
    free = [f"gpu-{i}" for i in range(10)]
    held: dict[str, list[str]] = {}  # devices a claim's informer or assumed object holds (kept disjoint)

    def results() -> list[Result]:
        out: list[Result] = []
        for _ in range(rng.randint(1, 2)):
            if free and rng.random() < 0.6:
                out.append(dev(free.pop(rng.randrange(len(free))), admin=rng.random() < 0.1))
            else:
                out.append(dev(f"nic-{rng.randrange(2)}", share=f"s{rng.randrange(1000)}", bw=f"{rng.randint(1, 4)}Gi"))
        return out

    def release(name: str) -> None:
        free.extend(held.pop(name, []))

    for _ in range(120):
        name = rng.choice(names)
        current = t.find("ns", name)
        action = rng.random()
        if current is None or action < 0.25:
            if current is None:
                versions[name] += 1
                t.on_add(claim(name, versions[name]))
        elif action < 0.45 and current.status.allocation is None:
            versions[name] += 1
            allocated = claim(name, versions[name], *results())
            held[name] = [r.device for r in allocated.status.allocation.devices.results  # type: ignore[union-attr]
                          if r.share_id is None]
            if rng.random() < 0.5:
                t.assume(allocated)
            else:
                t.on_update(allocated)
        elif action < 0.55:
            if t.is_assumed("ns", name):
                release(name)
            t.restore("ns", name)
        elif action < 0.65:
            release(name)
            versions[name] += 1
            t.on_update(claim(name, versions[name]))  # deallocated
        elif action < 0.72:
            t.on_update(claim(name, versions[name] - 1))  # stale: ignored
        elif action < 0.8:
            release(name)
            t.on_delete("ns", name)
        elif action < 0.9 and current.status.allocation is None:
            # Its devices never go back to the free list: whatever happens to the claim later, the
            # in-flight object may still hold them.
            t.signal_pending_allocation(current.metadata.uid, claim(name, versions[name], *results()))
        else:
            t.maybe_remove_pending_allocation(current.metadata.uid, force=True)
        assert t.gather_allocated_state() == recomputed(t)
        assert t.list_all_allocated_devices() == recomputed(t).devices


def test_listeners_hear_the_informers_changes_and_the_assumed_ones_once() -> None:
    tracker = ClaimTracker()
    heard: list[tuple[str | None, str | None]] = []
    tracker.listeners.append(lambda old, new: heard.append(
        (old.metadata.resource_version if old else None, new.metadata.resource_version if new else None)))
    tracker.on_add(claim("c", 1))
    tracker.assume(claim("c", 2, dev("gpu-0")))  # the scheduler's own write: heard now
    tracker.on_add(claim("c", 2, dev("gpu-0")))  # the informer catching up: nothing newer, not heard
    tracker.restore("ns", "c")  # back to the informer's object, which is now version 1
    tracker.on_delete("ns", "c")
    assert heard == [(None, "1"), ("1", "2"), ("2", "1"), ("1", None)]
