"""Why a pod is pending, or why it landed where it did.

An explanation has two sources. The pod's latest decision record says what its last scheduling
cycle decided (for a scheduled pod: the chosen node and the runners-up with every score plugin's
raw, normalized and weighted score). A dry run of the same framework on the current cache says
what a cycle would find now, node by node: which plugin rejects each node and why, the nearest
misses with what they lack, whether preemption could help and which victims it would pick, and
the scores of the feasible nodes. The dry run has no side effects: nothing is assumed, nominated,
evicted, timed or counted, and it takes no random numbers from the scheduler.

The result is plain JSON (the debug endpoint, `--output json`, the simulation report and saved
simulations all carry it); `observe.explainview` renders it for a terminal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterMisses, PlacementDetails, PostFilterPreview, PreFilterMisses
from kubesched.framework.runtime import FilterVerdict, ScoreOutcome, num_feasible_nodes_to_find
from kubesched.framework.status import fit_error_message
from kubesched.observe.record import DecisionRecord, Recorder, score_margin
from kubesched.scheduler.nodechoice import DRY_RUN, NOMINATED, ONLY, Feasibility, NodeChoice, Nominations, choose_among, find_feasible

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.cache.cache import Cache
    from kubesched.cache.nodetable import NodeTable
    from kubesched.framework.runtime import Framework
    from kubesched.queue.scheduling_queue import SchedulingQueue

NODES_LISTED = 20  # node names shown per group of rejected nodes (the count is always whole)
NEAREST_MISSES = 5
TOP_SCORED = 5
NOMINATED_GROUP = "(nominated pods)"
NOMINATED_REASON = "fits only without the pods nominated to the node ahead of it"

JSON = dict[str, Any]


class Scheduler(Protocol):
    """What an explanation reads of the scheduler (kubesched.scheduler.core.Scheduler is one)."""

    @property
    def recorder(self) -> Recorder: ...

    @property
    def queue(self) -> SchedulingQueue: ...

    @property
    def cache(self) -> Cache: ...

    @property
    def frameworks(self) -> Mapping[str, Framework]: ...

    @property
    def nominations(self) -> Nominations: ...


def explain_pod(sched: Scheduler, namespace: str, name: str) -> JSON | None:
    """The explanation of pod `namespace/name` as the scheduler knows it; None if it knows
    neither the pod nor a decision about it."""
    key = f"{namespace}/{name}"
    record = sched.recorder.latest.get(key)
    pi, status, node = _locate(sched, key, record.uid if record is not None else "")
    if pi is None and record is None:
        return None
    if record is not None and pi is not None and record.uid and record.uid != pi.uid:
        record = None  # a decision about an earlier pod of the same name
    profile = pi.scheduler_name if pi is not None else record.profile if record is not None else ""
    out: JSON = {
        "pod": key,
        "uid": pi.uid if pi is not None else record.uid if record is not None else "",
        "profile": profile,
        "status": status,
        "node": node,
        "nodes_total": len(sched.cache.table),
        "record": record.as_dict() if record is not None else None,
    }
    fwk = sched.frameworks.get(profile)
    if status in ("scheduled", "binding"):
        out["scores"] = scores_from_record(record, fwk) if record is not None else None
        if out["scores"] and pi is not None and fwk is not None:
            _score_notes(fwk, CycleState(), pi, sched.cache.table, out["scores"].get("nodes") or [])
        if pi is not None and fwk is not None and node is not None:
            out.update(_placement_details(fwk, pi, node))
        if record is None:
            out["note"] = "no decision record: placed before this scheduler started, or by another scheduler"
        return out
    if pi is None or fwk is None:
        out["note"] = "the pod is no longer pending here" if pi is None else f"no profile {profile!r} in this scheduler"
        return out
    out.update(dry_run(sched, fwk, pi))
    return out


def _placement_details(fwk: Framework, pi: PodInfo, node: str) -> JSON:
    """What plugins add about what the placed pod got besides its node (DynamicResources: `devices`)."""
    out: JSON = {}
    for plugin in fwk.named.values():
        if isinstance(plugin, PlacementDetails):
            out.update(plugin.placement_details(pi, node))
    return out


def _locate(sched: Scheduler, key: str, uid: str) -> tuple[PodInfo | None, str, str | None]:
    """The pod, its state (pending, gated, binding, scheduled or unknown) and its node."""
    qpi = sched.queue.pods.get(uid) if uid else None
    placed = sched.cache.placed.get(uid) if uid else None
    if qpi is None and placed is None:
        qpi = next((q for q in sched.queue.pods.values() if q.pi.key == key), None)
        if qpi is None:
            placed = next((p for p in sched.cache.placed.values() if p.info.key == key), None)
    if placed is not None:
        return placed.info, "binding" if placed.assumed else "scheduled", placed.node
    if qpi is not None:
        return qpi.pi, "gated" if qpi.gated_by is not None else "pending", None
    return None, "unknown", None


# --- the dry run ----------------------------------------------------------------------------------------


def dry_run(sched: Scheduler, fwk: Framework, pi: PodInfo) -> JSON:
    """A scheduling cycle for the pod on the current cache, up to the choice of a node, with every
    node's verdict kept: `filter`, `preemption` (when no node fits), `scores` (when some do),
    `message` (kube's FitError text when none does) or `error`. The cycle's own node choice
    (scheduler.nodechoice), scoring every feasible node and breaking no tie."""
    with fwk.dry():
        state = CycleState()
        found = find_feasible(fwk, state, pi, lambda alive: sched.nominations.ahead(pi, alive))
        if found.failure is not None:
            return {"error": found.failure.message(), "filter": None, "preemption": None, "scores": None}
        table = fwk.cache.table
        filtered = _filter_view(fwk, state, pi, table, found)
        out: JSON = {"filter": filtered, "preemption": None, "scores": None}
        if found.feasible == 0:
            out["preemption"] = _preemption(fwk, state, pi, found)
            diagnosis = found.diagnosis
            out["message"] = fit_error_message(diagnosis.num_nodes, diagnosis.reasons.items(), diagnosis.pre_filter_msg)
            return out
        choice = choose_among(fwk, state, pi, found, sched.nominations, rules=DRY_RUN)
        out["scores"] = _score_view(fwk, state, pi, table, choice)
        return out


def _filter_view(fwk: Framework, state: CycleState, pi: PodInfo, table: NodeTable, found: Feasibility) -> JSON:
    size = table.size
    present = table.present[:size]
    groups: list[JSON] = []
    if found.prefilter_status is not None:
        status = found.prefilter_status
        rows = np.flatnonzero(present)
        group = _group("PreFilter:" + status.plugin, status.message(), rows, table)
        plugin = fwk.named.get(status.plugin)
        if isinstance(plugin, PreFilterMisses):
            detail = plugin.pre_filter_detail(state, pi, status)
            if detail:
                group["detail"] = detail
        groups.append(group)
        return {"feasible": 0, "evaluated": 0, "rejected": groups, "nearest": []}
    evaluated = found.evaluated if found.evaluated is not None else present.copy()
    if found.prefilter_cut is not None:
        groups.append(_group("PreFilter", found.prefilter_cut[0], np.flatnonzero(present & ~evaluated), table))
    verdicts = fwk.filter_verdicts(state, pi, evaluated)
    first = np.full(size, -1, dtype=np.int32)
    failed_by = np.zeros(size, dtype=np.int32)
    for i, verdict in enumerate(verdicts):
        failing = verdict.codes != 0
        first[failing & (first < 0)] = i
        failed_by += failing
    for i, verdict in enumerate(verdicts):
        rows = np.flatnonzero(first == i)
        if rows.size == 0:
            continue
        codes = verdict.codes[rows]
        for code in np.unique(codes).tolist():
            groups.append(_group(verdict.plugin, _reason(verdict, code), rows[codes == code], table))
    assert found.outcome is not None
    crowded = np.flatnonzero(evaluated & (failed_by == 0) & ~found.outcome.alive)
    if crowded.size:
        groups.append(_group(NOMINATED_GROUP, NOMINATED_REASON, crowded, table))
    return {
        "feasible": found.feasible,
        "evaluated": int(np.count_nonzero(evaluated)),
        "rejected": groups,
        "nearest": _nearest(fwk, state, pi, table, verdicts, failed_by),
    }


def _reason(verdict: FilterVerdict, code: int) -> str:
    return ", ".join(verdict.describe(int(code))[1])


def _group(plugin: str, reason: str, rows: np.ndarray, table: NodeTable) -> JSON:
    return {"plugin": plugin, "reason": reason, "count": int(rows.size), "nodes": table.names_of(rows[:NODES_LISTED].tolist())}


def _nearest(
    fwk: Framework, state: CycleState, pi: PodInfo, table: NodeTable, verdicts: Sequence[FilterVerdict], failed_by: np.ndarray
) -> list[JSON]:
    """The rejected nodes closest to fitting: fewest plugins against them, then the smallest
    shortfall as the rejecting plugins measure it (FilterMisses), then the table's order."""
    rows = np.flatnonzero(failed_by > 0)
    if rows.size == 0:
        return []
    distance = np.zeros(rows.size)
    for verdict in verdicts:
        failing = verdict.codes[rows] != 0
        plugin = fwk.named.get(verdict.plugin)
        if isinstance(plugin, FilterMisses):
            distance[failing] += plugin.miss_distance(state, pi, table, rows[failing])
        else:
            distance[failing] += 1.0
    order = np.lexsort((rows, distance, failed_by[rows]))[:NEAREST_MISSES]
    out = []
    for row in rows[order].tolist():
        failed = []
        for verdict in verdicts:
            code = int(verdict.codes[row])
            if not code:
                continue
            plugin = fwk.named.get(verdict.plugin)
            detail = plugin.miss_detail(state, pi, table, row) if isinstance(plugin, FilterMisses) else ""
            failed.append({"plugin": verdict.plugin, "reason": _reason(verdict, code), "detail": detail})
        out.append({"node": table.name_of(row), "failed": failed})
    return out


def _preemption(fwk: Framework, state: CycleState, pi: PodInfo, found: Feasibility) -> JSON | None:
    for plugin in fwk.post_filter:
        if isinstance(plugin, PostFilterPreview):
            plan = plugin.preview(state.clone(), pi, found.diagnosis)
            return {
                "plugin": plugin.name,
                "possible": plan.node is not None,
                "node": plan.node,
                "victims": [v.key for v in plan.victims],
                "violating_budgets": [v.key for v in plan.violating],
                "message": plan.message,
            }
    return None


def _score_view(fwk: Framework, state: CycleState, pi: PodInfo, table: NodeTable, choice: NodeChoice) -> JSON:
    sample = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(table))
    feasible = choice.found.feasible
    view: JSON = {
        "source": "dry-run",
        "feasible": feasible,
        "sample": min(sample, feasible),
        "plugins": [{"name": s.name, "weight": w} for s, w in fwk.score],
    }
    if choice.how == NOMINATED:
        return view | {"chosen": choice.node, "why": "its nominated node fits: a cycle takes it without scoring", "nodes": []}
    if choice.how == ONLY:
        return view | {"chosen": choice.node, "why": "the only feasible node: a cycle takes it without scoring", "nodes": []}
    scored = choice.scored
    if scored is None:
        assert choice.failure is not None
        return view | {"error": choice.failure.message(), "nodes": []}
    top = _top_rows(scored)
    nodes = [
        (table.name_of(int(scored.rows[i])), int(scored.totals[i]), _parts(scored, i))
        for i in top
    ]
    view.update(_decision(nodes, nodes[0][0]))
    _score_notes(fwk, state, pi, table, view["nodes"])
    if sample < feasible:
        view["why_sample"] = (
            f"a cycle scores {sample} of the {feasible} feasible nodes, taken round-robin; "
            "this dry run scored them all"
        )
    ties = int(np.count_nonzero(scored.totals == scored.totals.max()))
    if ties > 1:
        view["ties"] = ties
    return view


def _score_notes(fwk: Framework, state: CycleState, pi: PodInfo, table: NodeTable, nodes: list[JSON]) -> None:
    """A listed node's "why" from each Score plugin that has the optional method
    `explain_score(state, pi, table, row) -> str` (CELScore: the rules that matched), evaluated on
    the cache as it is now (for a placed pod, its node counts it)."""
    for plugin, _ in fwk.score:
        explain = getattr(plugin, "explain_score", None)
        if explain is None:
            continue
        for entry in nodes:
            part, row = entry["plugins"].get(plugin.name), table.index.get(entry["node"])
            if part is not None and row is not None:
                part["why"] = str(explain(state, pi, table, row))


def _top_rows(scored: ScoreOutcome) -> list[int]:
    totals = scored.totals
    k = min(TOP_SCORED, totals.size)
    top = np.argpartition(-totals, k - 1)[:k]
    ordered: list[int] = top[np.argsort(-totals[top], kind="stable")].tolist()
    return ordered


def _parts(scored: ScoreOutcome, i: int) -> tuple[tuple[str, int, int, int], ...]:
    return tuple(
        (name, int(raw[i]), int(weighted[i]) // weight, int(weighted[i]))
        for (name, weighted), raw, weight in zip(scored.by_plugin, scored.raw, scored.weights, strict=True)
    )


def _decision(nodes: Sequence[tuple[str, int, tuple[tuple[str, int, int, int], ...]]], chosen: str | None) -> JSON:
    """The scored nodes as JSON, with the margin of the chosen node over the best other one and
    the plugin that gave it the most of that margin."""
    margin, decided_by = score_margin(nodes, chosen)
    nodes = sorted(nodes, key=lambda entry: entry[0] != chosen)  # the chosen node first, the rest as they were
    return {
        "chosen": chosen,
        "margin": margin,
        "decided_by": decided_by,
        "nodes": [
            {
                "node": node,
                "total": total,
                "plugins": {p: {"raw": raw, "normalized": norm, "weighted": w} for p, raw, norm, w in parts},
            }
            for node, total, parts in nodes
        ],
    }


def scores_from_record(record: DecisionRecord, fwk: Framework | None) -> JSON | None:
    """The scores of the cycle that placed the pod, as its decision record kept them."""
    if record.result != "scheduled" and not record.top:
        return None
    view: JSON = {
        "source": "record",
        "feasible": record.feasible,
        "sample": record.scored,
        "plugins": [{"name": s.name, "weight": w} for s, w in fwk.score] if fwk is not None else [],
    }
    if not record.top:
        why = ("its nominated node fit: the cycle took it without scoring" if record.scored == 0 and record.feasible > 1
               else "the only feasible node: the cycle took it without scoring")
        return view | {"chosen": record.chosen, "why": why, "nodes": []}
    return view | _decision(record.top, record.chosen)


def explain_many(sched: Scheduler, keys: Iterable[str], limit: int) -> dict[str, JSON]:
    """Explanations of up to `limit` of the pods named (namespace/name), in that order."""
    out: dict[str, JSON] = {}
    for key in keys:
        if len(out) >= limit:
            break
        namespace, _, name = key.partition("/")
        explanation = explain_pod(sched, namespace, name)
        if explanation is not None:
            out[key] = explanation
    return out
