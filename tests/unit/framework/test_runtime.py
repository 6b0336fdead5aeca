"""The framework runtime on its own: extension-point order, weights, Skip, errors, normalize, score range."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    NodeFilterPlugin,
    NodeScorePlugin,
    Plugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.framework.runtime import _tally
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import FilterResult, NodeInfo, PreFilterResult

from .fwkit import all_rows, framework, names

LOG: list[tuple[str, str]] = []


@pytest.fixture(autouse=True)
def _clear_log() -> None:
    LOG.clear()


class Recording(Plugin, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Records each call; rejects the nodes in `reject`, scores nodes by `scores` (default 0)."""

    reject: frozenset[str] = frozenset()
    scores: dict[str, int] = {}

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        LOG.append(("PreFilter", self.name))
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        LOG.append(("Filter", self.name))
        failed = np.array([table.name_of(r) in self.reject if table.present[r] else False for r in range(table.size)])
        return FilterResult.reject(failed, f"rejected by {self.name}")

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        LOG.append(("PreScore", self.name))
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        LOG.append(("Score", self.name))
        return np.array([self.scores.get(table.name_of(int(r)), 0) for r in rows], dtype=np.int64)


class A(Recording):
    name = "A"
    scores = {"n0": 10, "n1": 20, "n2": 30, "n3": 40}


class B(Recording):
    name = "B"
    scores = {"n0": 100, "n1": 0, "n2": 50, "n3": 1}


class RejectAll(Recording):
    name = "RejectAll"
    reject = frozenset({"n0", "n1", "n2", "n3"})


class RejectN0(Recording):
    name = "RejectN0"
    reject = frozenset({"n0"})


def test_each_point_runs_its_plugins_in_configured_order() -> None:
    fwk = framework({"preFilter": [B, A], "filter": [A, B], "preScore": [B, A], "score": [A, B]})
    state, pi = CycleState(), make_pod("p").info()
    assert fwk.run_pre_filter(state, pi) == (None, "", None)
    outcome = fwk.run_filters(state, pi, all_rows(fwk))
    rows = np.flatnonzero(outcome.alive)
    scored = fwk.run_scores(state, pi, rows)
    assert not isinstance(scored, Status)
    assert LOG == [
        ("PreFilter", "B"), ("PreFilter", "A"),
        ("Filter", "A"), ("Filter", "B"),
        ("PreScore", "B"), ("PreScore", "A"),
        ("Score", "A"), ("Score", "B"),
    ]


def test_filters_stop_once_no_node_is_left_and_the_first_rejecting_plugin_counts() -> None:
    fwk = framework({"filter": [RejectN0, RejectAll, A]})
    outcome = fwk.run_filters(CycleState(), make_pod("p").info(), all_rows(fwk))
    assert not outcome.alive.any()
    assert LOG == [("Filter", "RejectN0"), ("Filter", "RejectAll")]
    # n0 fell to the first plugin, so only the other three count against RejectAll.
    assert outcome.rejected_by == [("RejectN0", 1), ("RejectAll", 3)]
    assert outcome.rejections == [("RejectN0", "rejected by RejectN0", 1), ("RejectAll", "rejected by RejectAll", 3)]
    assert outcome.error is None


def test_score_weights_multiply_each_plugins_score() -> None:
    fwk = framework({"score": [(A, 3), (B, 2)]})
    rows = np.flatnonzero(all_rows(fwk))
    scored = fwk.run_scores(CycleState(), make_pod("p").info(), rows)
    assert not isinstance(scored, Status)
    assert [name for name, _ in scored.by_plugin] == ["A", "B"]
    assert scored.by_plugin[0][1].tolist() == [30, 60, 90, 120]
    assert scored.by_plugin[1][1].tolist() == [200, 0, 100, 2]
    assert scored.totals.tolist() == [230, 60, 190, 122]


class SkipsPreFilter(RejectAll):
    name = "SkipsPreFilter"

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        LOG.append(("PreFilter", self.name))
        return None, SKIP


class SkipsPreScore(A):
    name = "SkipsPreScore"

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        LOG.append(("PreScore", self.name))
        return Status(Code.SKIP)


def test_skip_at_prefilter_skips_that_plugins_filter() -> None:
    fwk = framework({"preFilter": [SkipsPreFilter], "filter": [SkipsPreFilter, A]})
    state, pi = CycleState(), make_pod("p").info()
    assert fwk.run_pre_filter(state, pi) == (None, "", None)
    assert state.skip_filter == {"SkipsPreFilter"}
    outcome = fwk.run_filters(state, pi, all_rows(fwk))
    assert names(fwk, outcome.alive) == ["n0", "n1", "n2", "n3"]
    assert ("Filter", "SkipsPreFilter") not in LOG and ("Filter", "A") in LOG


def test_skip_at_prescore_skips_that_plugins_score() -> None:
    fwk = framework({"preScore": [SkipsPreScore, B], "score": [SkipsPreScore, B]})
    state = CycleState()
    scored = fwk.run_scores(state, make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert not isinstance(scored, Status)
    assert state.skip_score == {"SkipsPreScore"}
    assert [name for name, _ in scored.by_plugin] == ["B"]
    assert ("Score", "SkipsPreScore") not in LOG


class NarrowsToN1N2(A):
    name = "NarrowsToN1N2"

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return PreFilterResult(frozenset({"n1", "n2"})), None


class NarrowsToN2N3(A):
    name = "NarrowsToN2N3"

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return PreFilterResult(frozenset({"n2", "n3"})), None


class RefusesAtPreFilter(A):
    name = "RefusesAtPreFilter"

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return None, Status.unresolvable("pod refused")


def test_prefilter_results_intersect_and_a_rejection_stops_prefilter() -> None:
    fwk = framework({"preFilter": [NarrowsToN1N2, NarrowsToN2N3]})
    assert fwk.run_pre_filter(CycleState(), make_pod("p").info()) == (frozenset({"n2"}), "NarrowsToN1N2, NarrowsToN2N3", None)
    fwk = framework({"preFilter": [RefusesAtPreFilter, A]})
    _, _, status = fwk.run_pre_filter(CycleState(), make_pod("p").info())
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.plugin == "RefusesAtPreFilter"
    assert ("PreFilter", "A") not in LOG


# --- errors -----------------------------------------------------------------------------------


class FilterError(A):
    name = "FilterError"

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        codes = np.zeros(table.size, dtype=np.int32)
        codes[table.row_of("n1")] = 1
        return FilterResult.from_reasons(codes, {1: (Code.ERROR, ("disk on fire",))})


class NodeFilterError(Plugin, NodeFilterPlugin):
    name = "NodeFilterError"
    calls: list[str] = []

    def filter_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> Status | None:
        NodeFilterError.calls.append(node.name)
        if node.name == "n1":
            return Status.error("lost the node's state")
        if node.name == "n0":
            return Status.unschedulable("n0 is full")
        return None


def test_an_error_from_a_filter_fails_the_cycle_with_kubes_message() -> None:
    fwk = framework({"filter": [FilterError]})
    outcome = fwk.run_filters(CycleState(), make_pod("p").info(), all_rows(fwk))
    assert outcome.error == Status(Code.ERROR, ('running "FilterError" filter plugin: disk on fire',), "FilterError")


def test_an_error_from_a_per_node_filter_stays_an_error() -> None:
    NodeFilterError.calls.clear()
    fwk = framework({"filter": [NodeFilterError]})
    outcome = fwk.run_filters(CycleState(), make_pod("p").info(), all_rows(fwk))
    assert outcome.error is not None and outcome.error.code == Code.ERROR
    assert outcome.error.message() == 'running "NodeFilterError" filter plugin: lost the node\'s state'
    assert outcome.error.plugin == "NodeFilterError"
    # As kube cancels the other nodes' filters on the first error, the adapter stops there.
    assert NodeFilterError.calls == ["n0", "n1"]
    # The plain rejection of n0 is still an ordinary unschedulable reason.
    assert ("NodeFilterError", "n0 is full", 1) in outcome.rejections


def test_per_node_filter_rejections_are_unschedulable_not_errors() -> None:
    class Picky(Plugin, NodeFilterPlugin):
        name = "Picky"

        def filter_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> Status | None:
            return Status.unresolvable("never here") if node.name == "n3" else None

    fwk = framework({"filter": [Picky]})
    outcome = fwk.run_filters(CycleState(), make_pod("p").info(), all_rows(fwk))
    assert outcome.error is None
    assert names(fwk, outcome.alive) == ["n0", "n1", "n2"]
    assert outcome.unresolvable is not None and names(fwk, outcome.unresolvable) == ["n3"]


class PreScoreError(A):
    name = "PreScoreError"

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        return Status.error("no data")


def test_an_error_from_prescore_fails_scoring() -> None:
    fwk = framework({"preScore": [PreScoreError], "score": [A]})
    status = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert status == Status(Code.ERROR, ('running PreScore plugin "PreScoreError": no data',), "PreScoreError")
    assert ("Score", "A") not in LOG


class PreScoreRejects(A):
    name = "PreScoreRejects"

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        return Status.unschedulable("not today")


def test_prescore_has_no_rejection_so_unschedulable_is_an_error_too() -> None:
    fwk = framework({"preScore": [PreScoreRejects]})
    status = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert status == Status(Code.ERROR, ('running PreScore plugin "PreScoreRejects": not today',), "PreScoreRejects")


class PreFilterError(A):
    name = "PreFilterError"

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return None, Status.error("cannot list claims")


def test_an_error_from_prefilter_is_an_error_naming_the_plugin() -> None:
    fwk = framework({"preFilter": [PreFilterError, A]})
    _, _, status = fwk.run_pre_filter(CycleState(), make_pod("p").info())
    assert status == Status(Code.ERROR, ('running PreFilter plugin "PreFilterError": cannot list claims',), "PreFilterError")
    assert ("PreFilter", "A") not in LOG


# --- normalize and the score range ---------------------------------------------------------------


class NormalizesWithoutFlag(Plugin, ScorePlugin):
    """Overrides normalize_score and never sets has_normalize: it must still be normalized."""

    name = "NormalizesWithoutFlag"

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.arange(1, rows.size + 1, dtype=np.int64) * 1000

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores * 100 // scores.max()


class PerNodeNormalized(Plugin, NodeScorePlugin):
    name = "PerNodeNormalized"

    def score_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> int:
        return 500 + int(node.name[-1])

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores - 500


def test_a_plugin_overriding_normalize_score_is_normalized_without_a_flag() -> None:
    assert NormalizesWithoutFlag.has_normalize and PerNodeNormalized.has_normalize
    fwk = framework({"score": [NormalizesWithoutFlag, PerNodeNormalized]})
    scored = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert not isinstance(scored, Status)
    assert dict((n, s.tolist()) for n, s in scored.by_plugin) == {
        "NormalizesWithoutFlag": [25, 50, 75, 100],
        "PerNodeNormalized": [0, 1, 2, 3],
    }


class TooHigh(Plugin, ScorePlugin):
    name = "TooHigh"

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.array([50, 101, 100, 0], dtype=np.int64)[: rows.size]


class Negative(Plugin, ScorePlugin):
    name = "Negative"

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.array([0, 5, -3, 7], dtype=np.int64)[: rows.size]


class NegativeInt32(Plugin, ScorePlugin):
    name = "NegativeInt32"

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.array([0, 5, -1, 7], dtype=np.int32)[: rows.size]


class NormalizesOutOfRange(Plugin, NodeScorePlugin):
    name = "NormalizesOutOfRange"

    def score_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> int:
        return 10

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores * 20


@pytest.mark.parametrize(
    ("plugin", "bad"),
    [(TooHigh, 101), (Negative, -3), (NegativeInt32, -1), (NormalizesOutOfRange, 200)],
)
def test_a_score_outside_0_to_100_after_normalize_is_an_error(plugin: type[Plugin], bad: int) -> None:
    fwk = framework({"score": [(A, 1), (plugin, 5)]})
    status = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert isinstance(status, Status)
    assert status.code == Code.ERROR
    assert status.message() == (
        f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" returns an invalid score {bad}, '
        "it should in the range of [0, 100] after normalizing"
    )


def test_scores_at_the_ends_of_the_range_are_fine() -> None:
    class Ends(Plugin, ScorePlugin):
        name = "Ends"

        def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
            return np.array([0, 100, 0, 100], dtype=np.int64)[: rows.size]

    fwk = framework({"score": [(Ends, 2)]})
    scored = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert not isinstance(scored, Status)
    assert scored.totals.tolist() == [0, 200, 0, 200]


def test_the_range_is_checked_before_weighting() -> None:
    # 60 is in range; weighted by 5 it is 300, which is fine (kube checks the unweighted score).
    class Sixty(Plugin, ScorePlugin):
        name = "Sixty"

        def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
            return np.full(rows.size, 60, dtype=np.int64)

    fwk = framework({"score": [(Sixty, 5)]})
    scored = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert not isinstance(scored, Status)
    assert scored.totals.tolist() == [300] * 4


class ExtensionFails(A):
    name = "ExtensionFails"

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        LOG.append(("AddPod", self.name))
        return Status.unschedulable("cannot count it")

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        LOG.append(("RemovePod", self.name))
        return Status.error("lost track")


def test_prefilter_extensions_run_unless_skipped_and_fail_as_errors() -> None:
    fwk = framework({"preFilter": [A, ExtensionFails]})
    assert fwk.prefilter_extensions == [fwk.instances["ExtensionFails"]]
    state, pi, other = CycleState(), make_pod("p").info(), make_pod("other").info()
    assert fwk.run_prefilter_add_pod(state, pi, other, 0) == Status(
        Code.ERROR, ('running AddPod on PreFilter plugin "ExtensionFails": cannot count it',), "ExtensionFails"
    )
    assert fwk.run_prefilter_remove_pod(state, pi, other, 0) == Status(
        Code.ERROR, ('running RemovePod on PreFilter plugin "ExtensionFails": lost track',), "ExtensionFails"
    )
    state.skip_filter.add("ExtensionFails")
    assert fwk.run_prefilter_add_pod(state, pi, other, 0) is None
    assert LOG == [("AddPod", "ExtensionFails"), ("RemovePod", "ExtensionFails")]


def test_the_first_plugin_with_an_invalid_score_is_reported() -> None:
    fwk = framework({"score": [(A, 1), (Negative, 1), (B, 1), (TooHigh, 1)]})
    status = fwk.run_scores(CycleState(), make_pod("p").info(), np.flatnonzero(all_rows(fwk)))
    assert isinstance(status, Status) and 'plugin "Negative" returns an invalid score -3' in status.message()


class Hinted(RejectAll, EnqueueExtensions):
    name = "Hinted"
    asked = 0

    def events_to_register(self) -> list[ClusterEventWithHint]:
        Hinted.asked += 1
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add), self.hint)]

    def hint(self, pi: PodInfo, old: object, new: object) -> QueueingHint:
        return QueueingHint.Queue


def test_registered_events_are_asked_once_and_do_not_outlive_the_plugin() -> None:
    # The hints are the plugin's bound methods: kept in a table outside the instance, they kept
    # every framework (and its cache) of a process alive; a benchmark of many workloads grew to
    # gigabytes.
    Hinted.asked = 0
    fwk = framework({"filter": [Hinted]})
    first = fwk.events_by_plugin()["Hinted"]
    assert fwk.events_by_plugin()["Hinted"] is first and Hinted.asked == 1
    plugin = weakref.ref(fwk.instances["Hinted"])
    del fwk, first
    gc.collect()
    assert plugin() is None


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.int64, np.uint64])
def test_tally_counts_each_failed_code_as_np_unique_does(dtype: type) -> None:
    rng = np.random.default_rng(7)
    for high in (1, 3, 200, 70_000):
        if np.iinfo(dtype).max < high:
            continue
        codes = rng.integers(1, high + 1, size=5_000).astype(dtype)
        values, counts = np.unique(codes, return_counts=True)
        assert _tally(codes) == list(zip(values.tolist(), counts.tolist(), strict=True))
    negative = np.array([-3, 5, -3, 2], dtype=np.int64) if np.dtype(dtype).kind == "i" else np.array([], dtype=dtype)
    values, counts = np.unique(negative, return_counts=True)
    assert _tally(negative) == list(zip(values.tolist(), counts.tolist(), strict=True))


# --- sampling the feasible nodes to score -------------------------------------------------------


def _sample_by_rotation(feasible: np.ndarray, size: int, start: int, want: int) -> tuple[list[int], int]:
    """The definition: feasible rows rotated to begin at the first at or after `start`, the first
    `want` of them, in row order; the next start follows the last one taken."""
    pos = int(np.searchsorted(feasible, start % size))
    rotated = np.concatenate((feasible[pos:], feasible[:pos]))[:want]
    return sorted(rotated.tolist()), (int(rotated[-1]) + 1) % size


@settings(max_examples=300, deadline=None)
@given(alive=st.lists(st.booleans(), min_size=120, max_size=400), start=st.integers(0, 1000), percentage=st.integers(1, 60))
def test_sample_takes_the_next_feasible_rows_round_robin(alive, start, percentage) -> None:
    fwk = framework({})
    fwk.percentage_of_nodes_to_score = percentage
    mask = np.array(alive, dtype=bool)
    fwk.next_start_row = start
    feasible = np.flatnonzero(mask)
    rows, want = fwk.sample(mask, len(mask))
    if feasible.size <= want:
        assert rows.tolist() == feasible.tolist()
        return
    expected, next_start = _sample_by_rotation(feasible, len(mask), start, want)
    assert rows.tolist() == expected
    assert fwk.next_start_row == next_start
