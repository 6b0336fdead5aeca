"""The decisions logger: each scored cycle's feasible nodes and final scores, only when enabled."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from builders import make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.cli.run import _log_levels
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import Plugin, ScorePlugin
from kubesched.framework.status import Status
from kubesched.observe import decisions
from unit.framework.fwkit import all_rows, framework


class Scorer(Plugin, ScorePlugin):
    scores: dict[str, int] = {}

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.array([self.scores[table.name_of(int(r))] for r in rows], dtype=np.int64)


class A(Scorer):
    name = "A"
    scores = {"n0": 10, "n1": 20, "n2": 30, "n3": 40}


class B(Scorer):
    name = "B"
    scores = {"n0": 100, "n1": 0, "n2": 50, "n3": 1}


def test_one_line_per_scored_cycle_with_the_weighted_summed_scores(caplog: pytest.LogCaptureFixture) -> None:
    fwk = framework({"score": [(A, 3), (B, 2)]})
    rows = np.flatnonzero(all_rows(fwk))[1:]  # n1..n3 feasible
    with caplog.at_level(logging.DEBUG, logger=decisions.LOGGER_NAME):
        scored = fwk.run_scores(CycleState(), make_pod("web").info(), rows)
    assert not isinstance(scored, Status)
    lines = [r.getMessage() for r in caplog.records if r.name == decisions.LOGGER_NAME]
    assert lines == ["final scores pod=default/web feasible=3 n1=60 n2=190 n3=122"]
    assert decisions.parse_final_scores("2026-01-01 DEBUG kubesched.decisions: " + lines[0]) == [
        ("default/web", {"n1": 60, "n2": 190, "n3": 122})
    ]


def test_nothing_is_built_when_the_logger_is_off(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def boom(*args: object) -> None:
        raise AssertionError("formatted while disabled")

    monkeypatch.setattr(decisions, "log_final_scores", boom)
    fwk = framework({"score": [A]})
    with caplog.at_level(logging.INFO, logger=decisions.LOGGER_NAME):
        assert not isinstance(fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk))), Status)
    assert not [r for r in caplog.records if r.name == decisions.LOGGER_NAME]


def test_parse_reads_every_line_in_order_and_refuses_a_miscounted_one() -> None:
    text = "\n".join([
        "x INFO other: unrelated",
        decisions.format_final_scores("ns/a", ["node-1", "node-2"], np.array([5, -1])),
        "y DEBUG kubesched.decisions: " + decisions.format_final_scores("ns/b", [], np.array([], dtype=np.int64)),
    ])
    assert decisions.parse_final_scores(text) == [("ns/a", {"node-1": 5, "node-2": -1}), ("ns/b", {})]
    with pytest.raises(ValueError, match="malformed"):
        decisions.parse_final_scores("final scores pod=ns/a feasible=2 n=1")


def test_log_level_takes_levels_for_single_loggers() -> None:
    assert _log_levels("info") == (logging.INFO, {})
    assert _log_levels("warning, kubesched.decisions=DEBUG") == (logging.WARNING, {"kubesched.decisions": logging.DEBUG})
    for bad in ("loud", "info,kubesched.decisions", "info,=debug", "info,x=loud"):
        with pytest.raises(ValueError):
            _log_levels(bad)
