"""What allocated claims already hold, as the allocator reads it (kube's AllocatedState): devices
given whole, the shares of devices with allowMultipleAllocations (device and shareID), and the
capacity those shares consume, summed per device. `allocated_state` folds claims' allocation
results into one, as kube-scheduler's claim tracker does for allocated and in-flight claims
(DRAConsumableCapacity on): a result with admin access holds nothing, one with a shareID is a
share (its consumed capacity added to the device's sum), any other result holds its device whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api.dra import AllocationResult
from kubesched.devices.capacity import Consumed, add_consumed, nanos

DeviceID = tuple[str, str, str]  # driver, pool, device
SharedDeviceID = tuple[str, str, str, str]  # driver, pool, device, shareID


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """The devices already allocated to claims (kube's AllocatedState)."""

    devices: frozenset[DeviceID] = frozenset()
    shared_devices: frozenset[SharedDeviceID] = frozenset()
    # Capacity consumed from shared devices, by device: nano-units by capacity name.
    aggregated_capacity: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)
    _shared_ids: frozenset[DeviceID] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_shared_ids", frozenset(s[:3] for s in self.shared_devices))

    def is_allocated(self, device_id: DeviceID) -> bool:
        """IsDeviceAllocated: whole, or shared at least once."""
        return device_id in self.devices or device_id in self._shared_ids or device_id in self.aggregated_capacity

    def is_shared(self, device_id: DeviceID) -> bool:
        """Whether allocated claims share the device (its counters are then already consumed)."""
        return device_id in self.aggregated_capacity or device_id in self._shared_ids


def allocated_state(allocations: Iterable[AllocationResult]) -> AllocatedState:
    """The state of the claims with these allocations (foreachAllocatedDevice over each)."""
    whole: set[DeviceID] = set()
    shares: set[SharedDeviceID] = set()
    capacity: dict[DeviceID, Consumed] = {}
    for allocation in allocations:
        for result in allocation.devices.results:
            if result.admin_access:
                continue
            device_id = (result.driver, result.pool, result.device)
            if result.share_id is not None:
                shares.add((*device_id, result.share_id))
                if result.consumed_capacity:
                    add_consumed(capacity, device_id, {name: nanos(q) for name, q in result.consumed_capacity.items()})
                continue
            whole.add(device_id)
    return AllocatedState(frozenset(whole), frozenset(shares), capacity)
