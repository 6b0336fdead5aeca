"""Framework.run_filters_with_nominated, the one RunFilterPluginsWithNominatedPods that the
scheduling cycle and DefaultPreemption share."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, ClassVar

import numpy as np
import pytest

from builders import cache_with, make_node, make_pod
from kubesched.api.objects import Pod
from kubesched.api.podinfo import PodInfo, make_pod_info
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, Plugin, PreFilterPlugin
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import FilterResult
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.noderesourcesfit import NodeResourcesFit
from kubesched.plugins.podtopologyspread import PodTopologySpread

from .fwkit import all_rows, framework, names

HOSTNAME = "kubernetes.io/hostname"

SEEN: list[tuple[str, ...]] = []  # the pods Counting had seen added, per Filter call


class OnePodPerNode(Plugin, FilterPlugin):
    """Rejects every node that already runs a pod (nominated pods included while they are added)."""

    name: ClassVar[str] = "OnePodPerNode"

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        taken = np.array([bool(table.pods[r]) for r in range(table.size)])
        return FilterResult.reject(taken, "node(s) already run a pod")


class Counting(Plugin, PreFilterPlugin, FilterPlugin):
    """A PreFilter extension that keeps per-pod state (the pods added to its clone), so each
    crowded node must be evaluated on a clone of its own."""

    name: ClassVar[str] = "Counting"

    class Added:
        def __init__(self) -> None:
            self.pods: list[str] = []

        def clone(self) -> Counting.Added:
            out = Counting.Added()
            out.pods = list(self.pods)
            return out

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[None, Status | None]:
        state.write(self.name, Counting.Added())
        return None, None

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        state.read(self.name).pods.append(added.pod.metadata.name)
        return None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        seen = tuple(state.read(self.name).pods)
        SEEN.append(seen)
        return None


def nominated(name: str) -> PodInfo:
    return make_pod(name).info()


def test_a_node_must_fit_with_its_nominated_pods_and_the_table_is_left_as_it_was() -> None:
    fwk = framework({"filter": [OnePodPerNode]})
    table = fwk.cache.table
    before = [dict(table.pods[r]) for r in range(table.size)]
    out = fwk.run_filters_with_nominated(CycleState(), make_pod("p").info(), all_rows(fwk), {1: [nominated("ahead")]})
    assert names(fwk, out.alive) == ["n0", "n2", "n3"]
    assert out.rejections == [("OnePodPerNode", "node(s) already run a pod", 1)]
    assert [dict(table.pods[r]) for r in range(table.size)] == before


def test_without_nominated_pods_it_is_run_filters() -> None:
    fwk = framework({"filter": [OnePodPerNode]})
    out = fwk.run_filters_with_nominated(CycleState(), make_pod("p").info(), all_rows(fwk), {})
    assert names(fwk, out.alive) == ["n0", "n1", "n2", "n3"]
    assert out.rejections == [] and out.errors == []


def test_each_crowded_node_gets_its_own_clone_while_an_extension_keeps_state() -> None:
    SEEN.clear()
    fwk = framework({"preFilter": [Counting], "filter": [Counting]})
    state = CycleState()
    fwk.run_pre_filter(state, make_pod("p").info())
    fwk.run_filters_with_nominated(state, make_pod("p").info(), all_rows(fwk), {1: [nominated("x")], 2: [nominated("y")]})
    # Once for the nodes without nominated pods, then per crowded node with only its own pod
    # added, then without it; the caller's state never saw an added pod.
    assert SEEN == [(), ("x",), (), ("y",), ()]
    assert state.read("Counting").pods == []


def test_crowded_nodes_are_evaluated_together_when_no_extension_keeps_state() -> None:
    SEEN.clear()
    fwk = framework({"filter": [OnePodPerNode, Counting]})
    state = CycleState()
    state.write("Counting", Counting.Added())
    state.skip_filter.add("Counting")  # no active PreFilter extension
    out = fwk.run_filters_with_nominated(state, make_pod("p").info(), all_rows(fwk), {1: [nominated("x")], 2: [nominated("y")]})
    assert names(fwk, out.alive) == ["n0", "n3"]
    assert out.rejections == [("OnePodPerNode", "node(s) already run a pod", 2)]


ZONE = "topology.kubernetes.io/zone"


def _random_pod(rng: random.Random, name: str, node_name: str = "") -> Pod:
    """Pods with or without required pod (anti-)affinity by hostname or zone and zone spreading,
    over two apps."""
    spec: dict[str, Any] = {}
    key = rng.choice([HOSTNAME, ZONE])
    app = rng.choice(["a", "b"])
    kind = rng.randrange(5)
    if kind == 1:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}
    elif kind == 2:
        spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}
    elif kind == 3:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"app": app}}}]
    return make_pod(name).req(cpu="500m").label(app=rng.choice(["a", "b", "c"])).node(node_name).spec(**spec).obj()


def _outcome(fwk: Framework, state: CycleState, pi: PodInfo, nominated_pods: dict[int, list[PodInfo]]
             ) -> tuple[list[str], dict[tuple[str, str], int], list[str]]:
    """The nodes that pass, the rejections summed per plugin and reason, the errors."""
    out = fwk.run_filters_with_nominated(state, pi, all_rows(fwk), nominated_pods)
    reasons: Counter[tuple[str, str]] = Counter()
    for plugin, reason, count in out.rejections:
        reasons[(plugin, reason)] += count
    return names(fwk, out.alive), dict(reasons), [e.message() for e in out.errors]


def test_crowded_nodes_whose_nominated_pods_matter_there_only_are_evaluated_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """With pod affinity, anti-affinity and spreading active, nominated pods every extension calls
    local to their node are filtered on one state, and each node's verdict and the reasons are
    those of kube's node-by-node evaluation; both leave the table as they found it."""
    together = 0
    for seed in range(150):
        rng = random.Random(seed)
        nodes = [make_node(f"n{i}").capacity(cpu="2").label({HOSTNAME: f"n{i}", ZONE: f"z{i % 3}" if i < 5 else f"solo{i}"}).obj()
                 for i in range(8)]
        placed = [_random_pod(rng, f"on{i}", f"n{rng.randrange(8)}") for i in range(rng.randint(0, 8))]
        fwk = framework({"preFilter": [InterPodAffinity, PodTopologySpread],
                         "filter": [NodeResourcesFit, InterPodAffinity, PodTopologySpread]}, cache_with(nodes, placed))
        incoming = make_pod_info(_random_pod(rng, "incoming"))
        state = CycleState()
        fwk.run_pre_filter(state, incoming)
        nominated_pods = {row: [make_pod_info(_random_pod(rng, f"nom{row}-{j}")) for j in range(rng.randint(1, 2))]
                          for row in rng.sample(range(8), rng.randint(2, 5))}
        before = [dict(fwk.cache.table.pods[r]) for r in range(8)]

        local = fwk._local(state, incoming, list(nominated_pods), nominated_pods) if fwk.prefilter_extensions_active(state) else False
        got = _outcome(fwk, state, incoming, nominated_pods)
        monkeypatch.setattr(fwk, "_local", lambda *_a: False)
        expected = _outcome(fwk, state, incoming, nominated_pods)
        monkeypatch.undo()
        assert got == expected, seed
        assert [dict(fwk.cache.table.pods[r]) for r in range(8)] == before
        together += local
    assert together >= 20  # the shortcut is taken, and not only trivially
