"""The runtime of one profile: instantiates its plugins and runs each extension point.

It knows nothing of queues or backends; the scheduler (scheduler.py) drives it.
Filters run over the whole NodeTable: a row stays alive until the first plugin
rejects it, exactly as kube-scheduler stops at a node's first failing plugin, and
that plugin's reasons are what the failure message counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.interface import (
    BindPlugin,
    ClusterEvent,
    Code,
    CycleState,
    Diagnosis,
    EnqueueExtensions,
    NodeFilterPlugin,
    NodeInfo,
    NodeScorePlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    Status,
)

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache
    from kubesched.cache.nodetable import NodeTable
    from kubesched.config import Profile
    from kubesched.observe.metrics import SchedulerMetrics

# kube-scheduler's adaptive sampling (schedule_one.go numFeasibleNodesToFind).
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
ALL_EVENTS = [ClusterEvent("*", "*")]
# Status labels of the metrics, as kube-scheduler spells the codes.
STATUS_LABEL = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


def status_label(status: Status | None) -> str:
    return "Success" if status is None else STATUS_LABEL[status.code]


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct >= 100:
        return num_all_nodes
    if pct == 0:
        pct = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class FilterOutcome:
    """Result of running every Filter: surviving rows plus why the others fell."""

    alive: np.ndarray
    rejections: list[tuple[str, str, int]] = field(default_factory=list)  # plugin, reason, nodes
    rejected_by: list[tuple[str, int]] = field(default_factory=list)  # plugin, nodes
    unresolvable: np.ndarray | None = None
    error: Status | None = None


@dataclass(slots=True)
class ScoreOutcome:
    rows: np.ndarray
    totals: np.ndarray
    by_plugin: list[tuple[str, np.ndarray]]  # weighted scores aligned with rows


class _NodeFilterAdapter:
    """Runs a per-node Filter on the rows still alive and turns statuses into codes."""

    def __init__(self, plugin: NodeFilterPlugin) -> None:
        self.plugin = plugin

    def run(self, state: CycleState, pi: PodInfo, table: NodeTable, alive: np.ndarray) -> tuple[np.ndarray, Callable]:
        codes = np.zeros(table.size, dtype=np.int32)
        verdicts: dict[tuple[Code, tuple[str, ...]], int] = {}
        for row in np.flatnonzero(alive):
            status = self.plugin.filter_node(state, pi, NodeInfo(table, int(row)))
            if status is None or status.code == Code.SUCCESS:
                continue
            key = (Code.UNSCHEDULABLE if status.code == Code.ERROR else status.code, status.reasons)
            codes[row] = verdicts.setdefault(key, len(verdicts) + 1)
        table_of = {v: k for k, v in verdicts.items()}
        return codes, table_of.__getitem__


class Framework:
    """One profile: its plugins per extension point, weights, and how to run them."""

    def __init__(
        self,
        profile: Profile,
        registry: Any,
        handle_factory: Callable[[Framework], Any],
        cache: Cache,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.profile = profile
        self.metrics = metrics
        # Per-plugin timings are taken on a sample of cycles, as kube-scheduler does (10%):
        # extension points are always timed. The scheduler sets this before each cycle.
        self.plugin_metrics: SchedulerMetrics | None = None
        self.name = profile.scheduler_name
        self.cache = cache
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        self.handle = handle_factory(self)
        self.instances: dict[str, Plugin] = {}
        for refs in profile.plugins.values():
            for ref in refs:
                if ref.name not in self.instances:
                    cls = registry.resolve(ref.name)
                    self.instances[ref.name] = cls(profile.plugin_args.get(ref.name), self.handle)

        def at(point: str) -> list[Any]:
            return [self.instances[r.name] for r in profile.plugins.get(point, [])]

        self.pre_enqueue: list[PreEnqueuePlugin] = at("preEnqueue")
        sorts = at("queueSort")
        self.queue_sort: QueueSortPlugin | None = sorts[0] if sorts else None
        self.pre_filter: list[PreFilterPlugin] = at("preFilter")
        self.filter: list[Any] = at("filter")
        self.filter_adapters = {
            p.name: _NodeFilterAdapter(p) for p in self.filter if isinstance(p, NodeFilterPlugin) and isinstance(p, Plugin)
        }
        self.post_filter: list[PostFilterPlugin] = at("postFilter")
        self.pre_score: list[PreScorePlugin] = at("preScore")
        self.score: list[tuple[Any, int]] = [
            (self.instances[r.name], r.weight) for r in profile.plugins.get("score", [])
        ]
        self.reserve: list[ReservePlugin] = at("reserve")
        self.permit: list[PermitPlugin] = at("permit")
        self.pre_bind: list[PreBindPlugin] = at("preBind")
        self.bind: list[BindPlugin] = at("bind")
        self.post_bind: list[PostBindPlugin] = at("postBind")
        self.prefilter_extensions = [p for p in self.pre_filter if getattr(p, "has_prefilter_extensions", False)]
        # Round-robin start row for sampling, as kube's nextStartNodeIndex.
        self.next_start_row = 0

    # --- queueing ---------------------------------------------------------------------------

    def events_by_plugin(self) -> dict[str, list[ClusterEvent]]:
        out: dict[str, list[ClusterEvent]] = {}
        for name, plugin in self.instances.items():
            out[name] = plugin.events_to_register() if isinstance(plugin, EnqueueExtensions) else ALL_EVENTS
        return out

    def run_pre_enqueue(self, pi: PodInfo) -> Status | None:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pi)
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = plugin.name  # type: ignore[attr-defined]
                return status
        return None

    # --- filtering ------------------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[frozenset[str] | None, str, Status | None]:
        """Runs PreFilter. Returns the narrowed node names (None: all), the plugins that narrowed,
        and a rejection/error status if one plugin refused the pod outright."""
        names: frozenset[str] | None = None
        narrowed_by: list[str] = []
        metrics = self.plugin_metrics
        started = perf_counter()
        for plugin in self.pre_filter:
            t0 = perf_counter()
            result, status = plugin.pre_filter(state, pi)
            pname = plugin.name  # type: ignore[attr-defined]
            if metrics is not None:
                metrics.plugin(pname, "PreFilter", status_label(status), perf_counter() - t0)
            if status is not None:
                if status.code == Code.SKIP:
                    state.skip_filter.add(pname)
                    continue
                if status.code != Code.SUCCESS:
                    status.plugin = pname
                    self._point("PreFilter", status, started)
                    return names, ", ".join(narrowed_by), status
            if isinstance(result, PreFilterResult) and result.node_names is not None:
                names = result.node_names if names is None else names & result.node_names
                narrowed_by.append(pname)
        self._point("PreFilter", None, started)
        return names, ", ".join(narrowed_by), None

    def _point(self, point: str, status: Status | None, started: float) -> None:
        if self.metrics is not None:
            self.metrics.extension_point(point, status_label(status), self.name, perf_counter() - started)

    def run_filters(self, state: CycleState, pi: PodInfo, alive: np.ndarray, *, explain: bool = True) -> FilterOutcome:
        """Runs every Filter over the table, narrowing `alive` (modified in place)."""
        table = self.cache.table
        out = FilterOutcome(alive)
        # Preemption's dry runs (explain=False) are not timed: they would swamp the cycle's figures.
        metrics = self.plugin_metrics if explain else None
        started = perf_counter()
        for plugin in self.filter:
            pname = plugin.name
            if pname in state.skip_filter:
                continue
            t0 = perf_counter()
            adapter = self.filter_adapters.get(pname)
            if adapter is not None:
                codes, describe = adapter.run(state, pi, table, alive)
            else:
                result = plugin.filter(state, pi, table)
                if result is None:
                    if metrics is not None:
                        metrics.plugin(pname, "Filter", "Success", perf_counter() - t0)
                    continue
                codes, describe = result.codes, result.describe
            codes = codes[: table.size]
            failed = alive & codes.view(np.bool_) if codes.dtype == np.uint8 else alive & (codes != 0)
            count = int(np.count_nonzero(failed))
            if metrics is not None:
                metrics.plugin(pname, "Filter", "Unschedulable" if count else "Success", perf_counter() - t0)
            if not count:
                continue
            alive &= ~failed
            out.rejected_by.append((pname, count))
            if explain:
                self._explain(out, pname, codes, failed, describe)
            if not alive.any():
                break
        if explain:
            self._point("Filter", out.error, started)
        return out

    def _explain(self, out: FilterOutcome, pname: str, codes: np.ndarray, failed: np.ndarray, describe: Callable) -> None:
        values, counts = np.unique(codes[failed], return_counts=True)
        for value, n in zip(values.tolist(), counts.tolist(), strict=True):
            code, reasons = describe(value)
            if code == Code.ERROR:
                out.error = Status(Code.ERROR, reasons, pname)
            for reason in reasons:
                out.rejections.append((pname, reason, n))
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                if out.unresolvable is None:
                    out.unresolvable = np.zeros(len(failed), dtype=bool)
                out.unresolvable |= failed & (codes == value)

    def filter_row(self, state: CycleState, pi: PodInfo, row: int) -> bool:
        """Whether every Filter passes one row (preemption dry runs)."""
        alive = np.zeros(self.cache.table.size, dtype=bool)
        alive[row] = self.cache.table.present[row]
        return bool(self.run_filters(state, pi, alive, explain=False).alive[row])

    def sample(self, alive: np.ndarray) -> tuple[np.ndarray, int]:
        """The feasible rows to score, kube's adaptive percentage, round-robin from the last stop."""
        feasible = np.flatnonzero(alive)
        size = len(alive)
        want = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, len(self.cache.table))
        if feasible.size <= want:
            return feasible, int(feasible.size)
        start = self.next_start_row % max(size, 1)
        pos = int(np.searchsorted(feasible, start))
        rotated = np.concatenate((feasible[pos:], feasible[:pos]))
        chosen = rotated[:want]
        self.next_start_row = (int(chosen[-1]) + 1) % size
        return np.sort(chosen), want

    # --- PreFilter extensions (preemption) -------------------------------------------------------

    def run_prefilter_add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        for plugin in self.prefilter_extensions:
            if plugin.name in state.skip_filter:  # type: ignore[attr-defined]
                continue
            status = plugin.add_pod(state, pi, added, row)
            if status is not None and status.code != Code.SUCCESS:
                return status
        return None

    def run_prefilter_remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        for plugin in self.prefilter_extensions:
            if plugin.name in state.skip_filter:  # type: ignore[attr-defined]
                continue
            status = plugin.remove_pod(state, pi, removed, row)
            if status is not None and status.code != Code.SUCCESS:
                return status
        return None

    # --- PostFilter -------------------------------------------------------------------------------

    def run_post_filter(
        self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        """The first PostFilter that succeeds wins. On failure the last result is still returned:
        a plugin may use it to clear the pod's nomination (nominated_node == "")."""
        last: Status | None = None
        last_result: PostFilterResult | None = None
        started = perf_counter()
        for plugin in self.post_filter:
            t0 = perf_counter()
            result, status = plugin.post_filter(state, pi, diagnosis)
            if self.plugin_metrics is not None:
                self.plugin_metrics.plugin(plugin.name, "PostFilter", status_label(status), perf_counter() - t0)  # type: ignore[attr-defined]
            if status is None or status.code == Code.SUCCESS:
                self._point("PostFilter", None, started)
                return result, None
            last_result = result or last_result
            if status.code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                self._point("PostFilter", status, started)
                return last_result, status
            last = status
        self._point("PostFilter", last, started)
        return last_result, last

    # --- scoring -------------------------------------------------------------------------------------

    def run_scores(self, state: CycleState, pi: PodInfo, rows: np.ndarray) -> ScoreOutcome | Status:
        table = self.cache.table
        metrics = self.plugin_metrics
        started = perf_counter()
        for plugin in self.pre_score:
            t0 = perf_counter()
            status = plugin.pre_score(state, pi, table, rows)
            if metrics is not None:
                metrics.plugin(plugin.name, "PreScore", status_label(status), perf_counter() - t0)  # type: ignore[attr-defined]
            if status is not None:
                if status.code == Code.SKIP:
                    state.skip_score.add(plugin.name)  # type: ignore[attr-defined]
                elif status.code != Code.SUCCESS:
                    status.plugin = plugin.name  # type: ignore[attr-defined]
                    self._point("PreScore", status, started)
                    return status
        self._point("PreScore", None, started)
        started = perf_counter()
        totals = np.zeros(rows.size, dtype=np.int64)
        by_plugin: list[tuple[str, np.ndarray]] = []
        for plugin, weight in self.score:
            pname = plugin.name
            if pname in state.skip_score:
                continue
            t0 = perf_counter()
            if isinstance(plugin, NodeScorePlugin):
                scores = np.fromiter(
                    (plugin.score_node(state, pi, NodeInfo(table, int(r))) for r in rows), dtype=np.int64, count=rows.size
                )
            else:
                scores = plugin.score(state, pi, table, rows)
            if plugin.has_normalize:
                scores = plugin.normalize_score(state, pi, scores)
            if metrics is not None:
                metrics.plugin(pname, "Score", "Success", perf_counter() - t0)
            weighted = scores * weight if weight != 1 else scores
            totals += weighted
            by_plugin.append((pname, weighted))
        self._point("Score", None, started)
        return ScoreOutcome(rows, totals, by_plugin)

    # --- reserve, permit and the binding cycle ------------------------------------------------------

    def run_reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        for plugin in self.reserve:
            status = plugin.reserve(state, pi, node)
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = plugin.name  # type: ignore[attr-defined]
                self._point("Reserve", status, started)
                return status
        self._point("Reserve", None, started)
        return None

    def run_unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        started = perf_counter()
        for plugin in reversed(self.reserve):
            plugin.unreserve(state, pi, node)
        self._point("Unreserve", None, started)

    def run_permit(self, state: CycleState, pi: PodInfo, node: str) -> tuple[Status | None, dict[str, float]]:
        """Returns a rejection, or the plugins that asked to wait with their timeouts."""
        waits: dict[str, float] = {}
        started = perf_counter()
        for plugin in self.permit:
            status, timeout = plugin.permit(state, pi, node)
            if status is None or status.code == Code.SUCCESS:
                continue
            pname = plugin.name  # type: ignore[attr-defined]
            if status.code == Code.WAIT:
                waits[pname] = timeout
                continue
            status.plugin = pname
            if status.code not in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                status = Status(Code.ERROR, status.reasons, pname)
            self._point("Permit", status, started)
            return status, waits
        self._point("Permit", Status(Code.WAIT) if waits else None, started)
        return None, waits

    async def run_pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        for plugin in self.pre_bind:
            status = await plugin.pre_bind(state, pi, node)
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = plugin.name  # type: ignore[attr-defined]
                self._point("PreBind", status, started)
                return status
        self._point("PreBind", None, started)
        return None

    async def run_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        for plugin in self.bind:
            status = await plugin.bind(state, pi, node)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = plugin.name  # type: ignore[attr-defined]
            self._point("Bind", status, started)
            return status
        status = Status.error("no bind plugin handled the pod")
        self._point("Bind", status, started)
        return status

    def run_post_bind(self, state: CycleState, pi: PodInfo, node: str) -> None:
        started = perf_counter()
        for plugin in self.post_bind:
            plugin.post_bind(state, pi, node)
        self._point("PostBind", None, started)

