"""The slice index: a node's candidate slices and their pools, checked against a scan of every
slice on random add/update/delete sequences; columns built once per slice version; the manager's
allocator for a node finding the same devices as one given every slice."""

from __future__ import annotations

import random

import pytest

from kubesched.api.dra import (
    Device,
    DeviceClass,
    ExactDeviceRequest,
    ResourceClaim,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from kubesched.api.dra.claims import DeviceClaim, DeviceClassSpec, DeviceRequest, ResourceClaimSpec
from kubesched.api.dra.common import CELDeviceSelector, DeviceSelector
from kubesched.api.objects import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
)
from kubesched.devices.allocator import Allocator
from kubesched.devices.manager import DraManager
from kubesched.devices.nodematch import node_matches
from kubesched.devices.slicetracker import SliceIndex

NODES = [f"n{i}" for i in range(4)]


def node(name: str) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels={"rack": "a" if name in ("n0", "n1") else "b"}))


def make_slice(name: str, pool: str, generation: int, where: str, devices: int = 2, **spec: object) -> ResourceSlice:
    """`where`: a node name, "all", "rack" (a selector), or "per-device:<node>,<node>|*"."""
    kwargs: dict[str, object] = {}
    device_nodes: list[dict[str, object]] = [{} for _ in range(devices)]
    if where == "all":
        kwargs["all_nodes"] = True
    elif where == "rack":
        kwargs["node_selector"] = NodeSelector(node_selector_terms=[NodeSelectorTerm(
            match_expressions=[NodeSelectorRequirement(key="rack", operator="In", values=["a"])])])
    elif where.startswith("per-device:"):
        kwargs["per_device_node_selection"] = True
        targets = where.split(":", 1)[1].split(",")
        device_nodes = [{"all_nodes": True} if t == "*" else {"node_name": t} for t in (targets * devices)[:devices]]
    else:
        kwargs["node_name"] = where
    return ResourceSlice(metadata=ObjectMeta(name=name), spec=ResourceSliceSpec(
        driver="gpu.example.com", pool=ResourcePool(name=pool, generation=generation, resource_slice_count=1),
        devices=[Device(name=f"{name}-d{i}", **device_nodes[i]) for i in range(devices)],  # type: ignore[arg-type]
        **kwargs, **spec))  # type: ignore[arg-type]


def on_node(rs: ResourceSlice, n: Node) -> bool:
    """A scan's answer: has the slice any device the node can use."""
    spec = rs.spec
    if spec.per_device_node_selection:
        return any(node_matches(n, d.node_name, d.all_nodes, d.node_selector) for d in spec.devices or [])
    return node_matches(n, spec.node_name, spec.all_nodes, spec.node_selector)


def random_slice(rng: random.Random, name: str) -> ResourceSlice:
    where = rng.choice([*NODES, "all", "rack", f"per-device:{rng.choice(NODES)},{rng.choice(NODES)}",
                        f"per-device:{rng.choice(NODES)},*"])
    return make_slice(name, f"pool-{rng.randrange(3)}", rng.randrange(3), where, devices=rng.randint(1, 3))


@pytest.mark.parametrize("seed", range(30))
def test_candidates_and_pools_match_a_scan(seed: int) -> None:
    rng = random.Random(seed)
    index = SliceIndex()
    live: dict[str, ResourceSlice] = {}
    for step in range(60):
        name = f"s{rng.randrange(12)}"
        if name in live and rng.random() < 0.3:
            assert index.remove(name) is live.pop(name)
        else:
            rs = random_slice(rng, name)
            assert index.set(rs) is live.get(name)
            live[name] = rs
        assert len(index) == len(live)
        for n in map(node, NODES):
            candidates, pool_slices = index.for_node(n.metadata.name)
            # Every slice with a device on the node is a candidate; none is given twice.
            assert {s.metadata.name for s in live.values() if on_node(s, n)} <= {s.metadata.name for s in candidates}
            assert len(candidates) == len({id(s) for s in candidates})
            pools = {(s.spec.driver, s.spec.pool.name) for s in candidates}
            assert sorted(s.metadata.name for s in pool_slices) == sorted(
                s.metadata.name for s in live.values() if (s.spec.driver, s.spec.pool.name) in pools), step


def test_a_slice_pinned_to_nodes_is_only_their_candidate() -> None:
    index = SliceIndex()
    index.set(make_slice("own", "p1", 0, "n1"))
    index.set(make_slice("pinned", "p2", 0, "per-device:n2,n3"))
    index.set(make_slice("everywhere", "p3", 0, "all"))
    index.set(make_slice("selected", "p4", 0, "rack"))
    names = {n: sorted(s.metadata.name for s in index.candidates(n)) for n in NODES}
    assert names == {"n0": ["everywhere", "selected"], "n1": ["everywhere", "own", "selected"],
                     "n2": ["everywhere", "pinned", "selected"], "n3": ["everywhere", "pinned", "selected"]}
    assert index.remove("pinned") is not None and index.remove("pinned") is None
    assert [s.metadata.name for s in index.candidates("n2")] == ["everywhere", "selected"]


def test_columns_are_built_once_per_slice_version() -> None:
    index = SliceIndex()
    first = make_slice("s", "p", 0, "n0")
    index.set(first)
    columns = index.columns(first)
    assert index.columns(first) is columns
    assert [d.driver for d in columns.inputs] == ["gpu.example.com", "gpu.example.com"]
    second = make_slice("s", "p", 1, "n0", devices=3)
    index.set(second)
    assert index.columns(second) is not columns and len(index.columns(second).inputs) == 3
    assert index.columns(second) is index.columns(second)
    assert len(index.columns(first).inputs) == 2  # an old version still answers, uncached


def claim_for(count: int) -> ResourceClaim:
    return ResourceClaim(metadata=ObjectMeta(name="c", namespace="ns", uid="u"), spec=ResourceClaimSpec(
        devices=DeviceClaim(requests=[DeviceRequest(name="r", exactly=ExactDeviceRequest(
            device_class_name="gpu", allocation_mode="ExactCount", count=count))])))


@pytest.mark.parametrize("seed", range(15))
def test_the_managers_allocator_for_a_node_answers_as_one_over_every_slice(seed: int) -> None:
    rng = random.Random(seed)
    classes = {"gpu": DeviceClass(metadata=ObjectMeta(name="gpu"))}
    manager = DraManager(classes)
    for i in range(10):
        manager.on_slice(random_slice(rng, f"s{i}"))
    for n in map(node, NODES):
        for count in (1, 3):
            everything = Allocator(classes, manager.slices.all()).allocate(n, [claim_for(count)])
            assert manager.allocator_for(n).allocate(n, [claim_for(count)]) == everything


def test_the_managers_allocators_convert_each_slice_for_selectors_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import kubesched.devices.slicetracker as slicetracker

    built: list[str] = []
    real = slicetracker.slice_columns

    def counting(rs: ResourceSlice) -> object:
        built.append(rs.metadata.name)
        return real(rs)

    monkeypatch.setattr(slicetracker, "slice_columns", counting)
    selector = DeviceSelector(cel=CELDeviceSelector(expression='device.driver != ""'))
    classes = {"gpu": DeviceClass(metadata=ObjectMeta(name="gpu"), spec=DeviceClassSpec(selectors=[selector]))}
    manager = DraManager(classes)
    rng = random.Random(3)
    for i in range(6):
        manager.on_slice(random_slice(rng, f"s{i}"))
    for _ in range(2):
        for n in map(node, NODES):
            manager.allocator_for(n).allocate(n, [claim_for(1)])
    assert built and len(built) == len(set(built))  # kept by the slice index across allocators and nodes
