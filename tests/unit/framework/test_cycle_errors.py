"""Plugin errors reach the scheduling cycle as errors (not as unschedulable nodes), through a whole simulation."""

from __future__ import annotations

import numpy as np

from builders import make_node, make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import NodeFilterPlugin, Plugin, ScorePlugin
from kubesched.framework.status import Status
from kubesched.framework.types import NodeInfo
from unit.simkit import profile_config, run


class BrokenOnN2(Plugin, NodeFilterPlugin):
    name = "BrokenOnN2"

    def filter_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> Status | None:
        return Status.error("cannot read the node's devices") if node.name == "n2" else None


class ScoresTooHigh(Plugin, ScorePlugin):
    name = "ScoresTooHigh"

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.full(rows.size, 250, dtype=np.int64)


def _profile(point: str, ref: str) -> dict:
    return profile_config({"schedulerName": "default-scheduler", "plugins": {point: {"enabled": [{"name": ref}]}}})


def test_a_per_node_filter_error_fails_the_cycle_as_an_error() -> None:
    result, sim = run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_node("n2").without("ephemeral-storage").manifest(),
            make_node("n3").without("ephemeral-storage").manifest(),
            make_pod("a").req(cpu="100m", memory="100Mi").manifest(),
        ],
        _profile("filter", f"{__name__}:BrokenOnN2"),
    )
    assert result.placements["default/a"] is None
    record = sim.scheduler.recorder.latest["default/a"]
    assert record.result == "error"
    message = 'running "BrokenOnN2" filter plugin: cannot read the node\'s devices'
    assert record.message == message
    assert any(e.reason == "FailedScheduling" and e.message == message for e in sim.cluster.events)


def test_a_score_out_of_range_fails_the_cycle_as_an_error() -> None:
    result, sim = run(
        [
            make_node("n1").without("ephemeral-storage").manifest(),
            make_node("n2").without("ephemeral-storage").manifest(),
            make_pod("a").req(cpu="100m", memory="100Mi").manifest(),
        ],
        _profile("score", f"{__name__}:ScoresTooHigh"),
    )
    assert result.placements["default/a"] is None
    record = sim.scheduler.recorder.latest["default/a"]
    assert record.result == "error"
    assert record.message == (
        'applying score defaultWeights on Score plugins: plugin "ScoresTooHigh" returns an invalid score 250, '
        "it should in the range of [0, 100] after normalizing"
    )
