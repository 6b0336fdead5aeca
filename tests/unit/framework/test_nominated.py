"""Framework.run_filters_with_nominated, the one RunFilterPluginsWithNominatedPods that the
scheduling cycle and DefaultPreemption share."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from builders import info, pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.interface import CycleState, FilterPlugin, FilterResult, Plugin, PreFilterPlugin, Status

from .fwkit import a_pod, all_rows, framework, names

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
    return info(pod(name))


def test_a_node_must_fit_with_its_nominated_pods_and_the_table_is_left_as_it_was() -> None:
    fwk = framework({"filter": [OnePodPerNode]})
    table = fwk.cache.table
    before = [dict(table.pods[r]) for r in range(table.size)]
    out = fwk.run_filters_with_nominated(CycleState(), a_pod(), all_rows(fwk), {1: [nominated("ahead")]})
    assert names(fwk, out.alive) == ["n0", "n2", "n3"]
    assert out.rejections == [("OnePodPerNode", "node(s) already run a pod", 1)]
    assert [dict(table.pods[r]) for r in range(table.size)] == before


def test_without_nominated_pods_it_is_run_filters() -> None:
    fwk = framework({"filter": [OnePodPerNode]})
    out = fwk.run_filters_with_nominated(CycleState(), a_pod(), all_rows(fwk), {})
    assert names(fwk, out.alive) == ["n0", "n1", "n2", "n3"]
    assert out.rejections == [] and out.errors == []


def test_each_crowded_node_gets_its_own_clone_while_an_extension_keeps_state() -> None:
    SEEN.clear()
    fwk = framework({"preFilter": [Counting], "filter": [Counting]})
    state = CycleState()
    fwk.run_pre_filter(state, a_pod())
    fwk.run_filters_with_nominated(state, a_pod(), all_rows(fwk), {1: [nominated("x")], 2: [nominated("y")]})
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
    out = fwk.run_filters_with_nominated(state, a_pod(), all_rows(fwk), {1: [nominated("x")], 2: [nominated("y")]})
    assert names(fwk, out.alive) == ["n0", "n3"]
    assert out.rejections == [("OnePodPerNode", "node(s) already run a pod", 2)]
