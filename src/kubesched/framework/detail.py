"""Every plugin's verdict on every node it ran on, for one cycle: what kube-scheduler-simulator's
debuggable scheduler writes into pod annotations, so that its users' tools read kubesched's
results.

Collected only for profiles that enable a plugin asking for it (`wants_cycle_detail`, e.g.
plugins/resultannotations.py): the runtime checks one attribute otherwise. Filter verdicts keep
the rows each Filter ran on (a node a plugin rejected is not run through the next ones, as in
kube), so the annotations say "passed" or the reason exactly where the cycle decided.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.status import Code

if TYPE_CHECKING:
    from kubesched.cache.nodetable import NodeTable

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PASSED = "passed"
SUCCESS = "success"
PREEMPTION_VICTIM = "preemption victim"  # kube-scheduler-simulator's word for the nominated node


@dataclass(slots=True)
class FilterRun:
    plugin: str
    rows: np.ndarray  # the rows the plugin ran on
    codes: np.ndarray | None  # None: it passed them all
    describe: Callable[[int], tuple[Code, tuple[str, ...]]] | None


@dataclass(slots=True)
class CycleDetail:
    pre_filter_status: dict[str, str] = field(default_factory=dict)
    pre_filter_result: dict[str, list[str]] = field(default_factory=dict)
    filters: list[FilterRun] = field(default_factory=list)
    pre_score: dict[str, str] = field(default_factory=dict)
    # Scored rows, and per score plugin: (name, raw, weighted, weight), aligned with the rows.
    scored_rows: np.ndarray | None = None
    scores: list[tuple[str, np.ndarray, np.ndarray, int]] = field(default_factory=list)
    post_filter: tuple[str, str] | None = None  # (plugin, nominated node)
    selected_node: str = ""

    def add_filter(self, plugin: str, rows: np.ndarray, codes: np.ndarray | None,
                   describe: Callable[[int], tuple[Code, tuple[str, ...]]] | None) -> None:
        if any(run.plugin == plugin for run in self.filters):
            return  # a second pass (with nominated pods) adds nothing new to the record
        self.filters.append(FilterRun(plugin, rows, codes, describe))

    def annotations(self, table: NodeTable, late: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
        """kube-scheduler-simulator's annotations (JSON strings), plus the binding cycle's results
        in `late` (reserve, permit, prebind, bind: plugin -> status)."""
        filters: dict[str, dict[str, str]] = {}
        for run in self.filters:
            rows = np.flatnonzero(run.rows)
            codes = run.codes[rows] if run.codes is not None else None
            for i, row in enumerate(rows.tolist()):
                code = int(codes[i]) if codes is not None else 0
                if code and run.describe is not None:
                    verdict = ", ".join(run.describe(code)[1])
                else:
                    verdict = PASSED
                filters.setdefault(table.name_of(row), {})[run.plugin] = verdict
        score: dict[str, dict[str, str]] = {}
        final: dict[str, dict[str, str]] = {}
        if self.scored_rows is not None:
            names = table.names_of(self.scored_rows.tolist())
            for plugin, raw, weighted, _weight in self.scores:
                for name, r, w in zip(names, raw.tolist(), weighted.tolist(), strict=True):
                    score.setdefault(name, {})[plugin] = str(r)
                    final.setdefault(name, {})[plugin] = str(w)
        post: dict[str, dict[str, str]] = {}
        if self.post_filter is not None:
            plugin, node = self.post_filter
            post[node] = {plugin: PREEMPTION_VICTIM}
        late = late or {}
        out = {
            "prefilter-result-status": self.pre_filter_status,
            "prefilter-result": self.pre_filter_result,
            "filter-result": filters,
            "postfilter-result": post,
            "prescore-result": self.pre_score,
            "score-result": score,
            "finalscore-result": final,
            "reserve-result": late.get("reserve", {}),
            "permit-result": late.get("permit", {}),
            "permit-result-timeout": late.get("permit-timeout", {}),
            "prebind-result": late.get("prebind", {}),
            "bind-result": late.get("bind", {}),
        }
        result = {PREFIX + key: json.dumps(value, separators=(",", ":"), sort_keys=True) for key, value in out.items()}
        result[PREFIX + "selected-node"] = self.selected_node
        return result
