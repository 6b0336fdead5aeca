"""OpportunisticBatching, as kube v1.37 does it (runtime/batch.go; gate OpportunisticBatching, beta, on).

A profile whose PreFilter, Filter, PreScore and Score plugins can all sign a pod gives each pod a
signature: what those plugins read of it. When a pod was placed by a scoring cycle, the other
scored nodes are kept in score order. If the next cycle's pod has the same signature (and nothing
else was scheduled in between, the last pod did not fail, the kept list is younger than half a
second, and the pod is not nominated), it is not filtered and scored over the cluster: the node
the last pod went to is filtered again for it (and, if it still fits, scored again and put back
among the kept nodes, their scores normalized again together), and the best kept node is its
hint. The hint is then filtered like a nominated node; if it passes, the pod goes there, and the
list, one node shorter, serves the pod after it. Placements are therefore kube-scheduler's own:
the second pod of a batch takes the first pod's second-best node of the same sample of nodes.

A profile with the default topology spread constraints (kube's default profile) signs no pod:
PodTopologySpread refuses, as upstream's does, and every cycle is a whole one.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import NodeScorePlugin, SignPlugin
from kubesched.framework.status import Code
from kubesched.framework.types import NodeInfo

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.framework.runtime import Framework, ScoreOutcome

MAX_BATCH_AGE = 0.5  # seconds a kept list serves pods (kube's maxBatchAge)
SCHEDULER_NAME_SIGNER = "v1.Pod.Spec.SchedulerName"
_SIGNATURE_KEY = "OpportunisticBatching/signature"

Signature = tuple[tuple[str, Hashable], ...]


def signers(fwk: Framework) -> list[SignPlugin] | None:
    """The profile's PreFilter, Filter, PreScore and Score plugins, once each, if all of them sign
    pods; None if one does not (kube's computeBatchablePlugins)."""
    out: dict[str, SignPlugin] = {}
    for plugin in [*fwk.pre_filter, *fwk.filter, *fwk.pre_score, *(p for p, _ in fwk.score)]:
        if plugin.name in out:
            continue
        if not isinstance(plugin, SignPlugin):
            return None
        out[plugin.name] = plugin
    # Those that may refuse to sign go first: a refusal ends the signing (the others' work is wasted).
    return sorted(out.values(), key=lambda p: not getattr(p, "may_refuse_signing", False))


@dataclass
class Candidates:
    """The nodes of a scoring cycle not taken yet, best first: ties broken by a random draw per
    node (kube's Randomizer), a node scored again drawing lowest (its Randomizer is zero)."""

    rows: np.ndarray  # table rows
    plugins: tuple[str, ...]  # the Score plugins of `raw`, in profile order
    raw: np.ndarray  # (plugins, rows): each plugin's score before NormalizeScore
    totals: np.ndarray
    draws: np.ndarray
    order: np.ndarray = field(init=False)
    taken: int = 0

    def __post_init__(self) -> None:
        self.order = np.lexsort((-self.draws, -self.totals))

    def __len__(self) -> int:
        return int(self.rows.size) - self.taken

    def pop(self) -> int:
        i = int(self.order[self.taken])
        self.taken += 1
        return int(self.rows[i])

    def left(self) -> np.ndarray:
        """Indices (into rows) of the nodes not taken, in no particular order."""
        return self.order[self.taken:]


def ranked(scored: ScoreOutcome, rng: np.random.Generator) -> tuple[int, Candidates]:
    """A scoring cycle's choice, as an index into its rows (the highest total, ties at random),
    and the other nodes, as kept."""
    names = tuple(name for name, _ in scored.by_plugin)
    raw = np.vstack(scored.raw) if scored.raw else np.zeros((0, scored.rows.size), dtype=np.int64)
    cands = Candidates(scored.rows, names, raw, scored.totals, rng.random(scored.rows.size))
    first = int(cands.order[0])
    cands.taken = 1
    return first, cands


@dataclass
class _LastCycle:
    cycle: int = -2
    chosen: int = -1
    succeeded: bool = False


class OpportunisticBatch:
    """One profile's kept list and what it needs to judge whether the next pod may use it."""

    def __init__(self, fwk: Framework) -> None:
        self.fwk = fwk
        self.signers = signers(fwk)
        self.signature: Signature | None = None
        self.candidates: Candidates | None = None
        self.created = 0.0
        self.last = _LastCycle()
        self.batched = 0  # pods placed on a hint

    def sign(self, pi: PodInfo) -> Signature | None:
        """The pod's signature (computed once per PodInfo; an update builds a new one), or None."""
        if self.signers is None:
            return None
        if _SIGNATURE_KEY in pi.extra:
            cached: Signature | None = pi.extra[_SIGNATURE_KEY]
            return cached
        parts: dict[str, Hashable] = {SCHEDULER_NAME_SIGNER: pi.scheduler_name}
        signature: Signature | None = None
        for plugin in self.signers:
            fragments = plugin.sign_pod(pi)
            if fragments is None:
                break
            parts.update(fragments)
        else:
            signature = tuple(sorted(parts.items()))
        pi.extra[_SIGNATURE_KEY] = signature
        return signature

    # --- kube's GetNodeHint ---------------------------------------------------------------------

    def hint(self, state: CycleState, pi: PodInfo, signature: Signature | None, cycle: int) -> int | None:
        """The row the pod should try first, or None for a whole cycle (counted as kube counts it)."""
        row = self._hint(state, pi, signature, cycle)
        if row is None:
            self.fwk.metrics.batch_attempts.inc((self.fwk.name, "no_hint"))
        return row

    def _hint(self, state: CycleState, pi: PodInfo, signature: Signature | None, cycle: int) -> int | None:
        cands = self.candidates
        if cands is None or not len(cands) or self.signature is None:
            return None
        if cycle != self.last.cycle + 1 or not self.last.succeeded:
            return None
        if pi.pod.status.nominated_node_name or signature is None or signature != self.signature:
            return None
        if self.fwk.clock.now() > self.created + MAX_BATCH_AGE:
            return None
        if not self._refresh(state, pi):
            return None
        cands = self.candidates  # rebuilt when the last chosen node was scored again
        return cands.pop() if cands is not None and len(cands) else None

    def _refresh(self, state: CycleState, pi: PodInfo) -> bool:
        """The last chosen node filtered again for this pod; scored again and put back if it fits."""
        table = self.fwk.cache.table
        row = self.last.chosen
        if row < 0 or row >= table.size or not table.present[row]:
            return False
        mask = np.zeros(table.size, dtype=bool)
        mask[row] = True
        outcome = self.fwk.run_filters(state, pi, mask, explain=True)
        if outcome.error is not None:
            return False
        if outcome.alive[row]:
            return self._rescore(state, pi, row)
        return True

    def _rescore(self, state: CycleState, pi: PodInfo, row: int) -> bool:
        """kube's rescoreHintedNode: PreScore over the kept nodes and this one, Score for this one
        alone, every node's scores normalized again together, the list rebuilt."""
        cands = self.candidates
        assert cands is not None
        table = self.fwk.cache.table
        left = cands.left()
        kept_rows = cands.rows[left]
        if not table.present[kept_rows].all():
            return False
        rows = np.append(kept_rows, row)
        trial = state.clone()
        for plugin in self.fwk.pre_score:
            status = plugin.pre_score(trial, pi, table, rows)
            if status is not None and status.code == Code.SKIP:
                trial.skip_score.add(plugin.name)
            elif status is not None and status.code != Code.SUCCESS:
                return False
        one = np.array([row], dtype=np.intp)
        raw_rows: list[np.ndarray] = []
        names: list[str] = []
        totals = np.zeros(rows.size, dtype=np.int64)
        for scorer, weight in self.fwk.score:
            if scorer.name in trial.skip_score:
                continue
            if isinstance(scorer, NodeScorePlugin):
                fresh = np.array([scorer.score_node(trial, pi, NodeInfo(table, row))], dtype=np.int64)
            else:
                fresh = np.asarray(scorer.score(trial, pi, table, one), dtype=np.int64)
            if scorer.name in cands.plugins:
                kept = cands.raw[cands.plugins.index(scorer.name), left]
            else:
                kept = np.zeros(left.size, dtype=np.int64)  # kube: a plugin with no score kept reads 0
            raw = np.concatenate((kept, fresh))
            normalized = scorer.normalize_score(trial, pi, raw) if scorer.has_normalize else raw
            if normalized.size and (normalized.min() < 0 or normalized.max() > 100):
                return False
            totals += normalized * weight
            raw_rows.append(raw)
            names.append(scorer.name)
        draws = np.append(cands.draws[left], -1.0)  # the node scored again: kube's zero Randomizer
        raw_all = np.vstack(raw_rows) if raw_rows else np.zeros((0, rows.size), dtype=np.int64)
        self.candidates = Candidates(rows, tuple(names), raw_all, totals, draws)
        return True

    # --- kube's StoreScheduleResults ------------------------------------------------------------

    def store(self, signature: Signature | None, hinted: int | None, chosen: int, others: Candidates | None, cycle: int) -> None:
        """After a cycle that chose a node: keep its other scored nodes for the next pod, unless
        the pod took its hint (the list stays as it is) or cannot be batched."""
        self.last = _LastCycle(cycle, chosen, True)
        if hinted is not None and hinted == chosen:
            self.batched += 1
            self.fwk.metrics.batch_attempts.inc((self.fwk.name, "hint_used"))
            return
        if hinted is not None:
            self.fwk.metrics.batch_attempts.inc((self.fwk.name, "hint_not_used"))
        if signature is not None and others is not None and len(others) > 0:
            self.signature, self.candidates, self.created = signature, others, self.fwk.clock.now()
        else:
            self.signature, self.candidates = None, None

