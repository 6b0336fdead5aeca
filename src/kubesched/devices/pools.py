"""The resource pools a node can allocate from, as kube's GatherPools (structured, incubating)
finds them: the slices available on the node (by nodeName, nodeSelector, allNodes or per device),
the newest generation of each pool, whether the pool is complete (all its slices seen) or invalid
(duplicate device names, counter sets missing or duplicated), pools sorted by driver then pool
name (pools with binding conditions last), slices by name. The allocator's first-fit search walks
them in exactly this order, so the order is observable in which devices get picked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubesched.api.dra import CounterSet, Device, ResourceSlice
from kubesched.api.objects import Node
from kubesched.devices.nodematch import NodeSelectorError, node_matches


class PoolGatherError(Exception):
    """A slice whose node selection could not be evaluated (GatherPools' error)."""


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    # Slices with devices available on the node, sorted by name.
    device_slices: list[ResourceSlice] = field(default_factory=list)
    # The pool's other device slices (only gathered when the node's view was incomplete); their
    # allocated devices still consume the pool's shared counters.
    other_slices: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def devices_of(slice_: ResourceSlice) -> list[Device]:
    return slice_.spec.devices or []


def _relevant(slice_: ResourceSlice, node: Node) -> bool | None:
    """Whether the slice has devices for the node; None when it names no known node selection."""
    spec = slice_.spec
    try:
        if spec.node_name or spec.all_nodes or spec.node_selector is not None:
            return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
        if spec.per_device_node_selection:
            return any(node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in devices_of(slice_))
    except NodeSelectorError as exc:
        raise PoolGatherError(f"failed to perform node selection for slice {slice_.metadata.name}: {exc}") from None
    return None


def _add_slice(pools: dict[tuple[str, str], list[ResourceSlice]], slice_: ResourceSlice) -> None:
    key = (slice_.spec.driver, slice_.spec.pool.name)
    have = pools.get(key)
    generation = slice_.spec.pool.generation
    if have is None or generation > have[0].spec.pool.generation:
        pools[key] = [slice_]
    elif generation == have[0].spec.pool.generation:
        have.append(slice_)


def gather_pools(slices_for_node: Sequence[ResourceSlice], node: Node, all_slices: Sequence[ResourceSlice]) -> list[Pool]:
    """The node's pools in the allocator's order (DRAPartitionableDevices on, compatibility groups
    not modelled: the API server drops them with their gate off)."""
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for slice_ in slices_for_node:
        if _relevant(slice_, node):
            _add_slice(by_pool, slice_)
    pools: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for (driver, name), node_slices in by_pool.items():
        expected = node_slices[0].spec.pool.resource_slice_count
        all_for_pool: list[ResourceSlice] | None = None
        if len(node_slices) != expected:
            obsolete, all_for_pool = _slices_in_pool(all_slices, driver, name, node_slices[0].spec.pool.generation)
            if obsolete:
                continue
            if len(all_for_pool) != expected:
                pools.append(Pool(driver, name, incomplete=True))
                continue
        pool = _build_pool(driver, name, node_slices, all_for_pool or [])
        (with_binding_conditions if _has_binding_conditions(pool) else pools).append(pool)
    pools.sort(key=lambda p: (p.driver, p.name))
    with_binding_conditions.sort(key=lambda p: (p.driver, p.name))
    return pools + with_binding_conditions


def _slices_in_pool(all_slices: Sequence[ResourceSlice], driver: str, name: str,
                    generation: int) -> tuple[bool, list[ResourceSlice]]:
    """(a newer generation exists, the pool's slices of this generation)."""
    found: list[ResourceSlice] = []
    for slice_ in all_slices:
        spec = slice_.spec
        if spec.driver != driver or spec.pool.name != name:
            continue
        if spec.pool.generation == generation:
            found.append(slice_)
        elif spec.pool.generation > generation:
            return True, []
    return False, found


def _build_pool(driver: str, name: str, node_slices: list[ResourceSlice], all_for_pool: list[ResourceSlice]) -> Pool:
    node_slices = sorted(node_slices, key=lambda s: s.metadata.name)
    device_slices = [s for s in node_slices if not s.spec.shared_counters]
    counter_slices = [s for s in node_slices if s.spec.shared_counters]
    others: list[ResourceSlice] = []
    if len(node_slices) < len(all_for_pool):
        seen = {s.metadata.name for s in node_slices}
        for s in all_for_pool:
            if s.metadata.name not in seen:
                (counter_slices if s.spec.shared_counters else others).append(s)
    problem = _duplicate_device(device_slices)
    if problem is None:
        counter_sets, problem = _counter_sets(counter_slices)
        problem = problem or _missing_counters(counter_sets, device_slices) or _missing_counters(counter_sets, others)
    if problem is not None:
        return Pool(driver, name, invalid=True, invalid_reason=problem)
    return Pool(driver, name, device_slices=device_slices, other_slices=others, counter_sets=counter_sets)


def _duplicate_device(slices: list[ResourceSlice]) -> str | None:
    names: set[str] = set()
    for s in slices:
        for d in devices_of(s):
            if d.name in names:
                return f"duplicate device name {d.name}"
            names.add(d.name)
    return None


def _counter_sets(slices: list[ResourceSlice]) -> tuple[dict[str, CounterSet], str | None]:
    sets: dict[str, CounterSet] = {}
    for s in slices:
        for counter_set in s.spec.shared_counters or []:
            if counter_set.name in sets:
                return {}, f"duplicate counter set name {counter_set.name}"
            sets[counter_set.name] = counter_set
    return sets, None


def _missing_counters(counter_sets: dict[str, CounterSet], slices: list[ResourceSlice]) -> str | None:
    for s in slices:
        for d in devices_of(s):
            for consumption in d.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for counter in consumption.counters:
                    if counter not in counter_set.counters:
                        return f"counter {counter} not found in counter set {counter_set.name}"
    return None


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.device_slices for d in devices_of(s))
