"""Facts the framework reads from a plugin's class: derived from its methods, not from flags."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, NodeScorePlugin, Plugin, PreFilterPlugin, ScorePlugin
from kubesched.framework.status import Status
from kubesched.framework.types import NodeInfo, PreFilterResult
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.noderesourcesfit import NodeResourcesFit
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.tainttoleration import TaintToleration


class Scores(Plugin, ScorePlugin):
    name = "Scores"

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        return np.zeros(rows.size, dtype=np.int64)


class Normalizes(Scores):
    name = "Normalizes"

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores


class InheritsNormalize(Normalizes):
    name = "InheritsNormalize"


class ClaimsWithoutOverride(Scores):
    """A stale flag is not believed: nothing would run."""

    name = "ClaimsWithoutOverride"
    has_normalize: ClassVar[bool] = True


class NodeScores(Plugin, NodeScorePlugin):
    name = "NodeScores"

    def score_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> int:
        return 0


class BothScoreForms(Plugin, ScorePlugin, NodeScorePlugin):
    name = "BothScoreForms"


def test_has_normalize_follows_the_override() -> None:
    assert not Scores.has_normalize
    assert Normalizes.has_normalize
    assert InheritsNormalize.has_normalize
    assert not ClaimsWithoutOverride.has_normalize
    assert not NodeScores.has_normalize
    assert not BothScoreForms.has_normalize


class PreFilters(Plugin, PreFilterPlugin, FilterPlugin):
    name = "PreFilters"

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return None, None


class AddsPods(PreFilters):
    name = "AddsPods"

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        return None


class RemovesPods(PreFilters):
    name = "RemovesPods"

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        return None


def test_has_prefilter_extensions_follows_the_override() -> None:
    assert not PreFilters.has_prefilter_extensions
    assert AddsPods.has_prefilter_extensions
    assert RemovesPods.has_prefilter_extensions


def test_in_tree_plugins_keep_the_facts_they_declared() -> None:
    for cls in (InterPodAffinity, PodTopologySpread, NodeAffinity, TaintToleration):
        assert cls.has_normalize, cls.name
    assert not NodeResourcesFit.has_normalize
    assert InterPodAffinity.has_prefilter_extensions and PodTopologySpread.has_prefilter_extensions
    assert not NodeAffinity.has_prefilter_extensions


def test_a_plugins_own_name_wins_whatever_the_order_of_its_bases() -> None:
    class InterfaceFirst(ScorePlugin, Plugin):
        name = "InterfaceFirst"

    class Unnamed(ScorePlugin, Plugin):
        pass

    assert InterfaceFirst().name == "InterfaceFirst"
    assert Unnamed.name == ""
