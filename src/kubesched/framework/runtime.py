"""The runtime of one profile: instantiates its plugins and runs each extension point.

It knows nothing of queues or backends; the scheduler (scheduler/cycle.py) drives it.
Filters run over the whole NodeTable: a row stays alive until the first plugin
rejects it, exactly as kube-scheduler stops at a node's first failing plugin, and
that plugin's reasons are what the failure message counts.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.detail import CycleDetail
from kubesched.framework.events import WILDCARD_EVENT, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    GroupAssignPlugin,
    NodeFilterPlugin,
    NodeScorePlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PodGroupPostFilterPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    RowFilter,
    ScorePlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Diagnosis,
    FilterOutcome,
    FilterResult,
    NodeInfo,
    PlaceGroup,
    PostFilterResult,
    PreFilterResult,
    StillFits,
)
from kubesched.observe import decisions
from kubesched.observe.tracing import BINDING, CycleTrace

if TYPE_CHECKING:
    from kubesched.api.dra import ResourceClaim
    from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
    from kubesched.cache.cache import Cache
    from kubesched.cache.nodetable import NodeTable
    from kubesched.devices.manager import DraManager
    from kubesched.framework.profile import Profile
    from kubesched.framework.registry import Registry
    from kubesched.framework.services import Services
    from kubesched.framework.shared import SharedObjects
    from kubesched.framework.waiting import PodAtPermit
    from kubesched.infra.clock import Clock
    from kubesched.observe.metrics import SchedulerMetrics

# kube-scheduler's adaptive sampling (schedule_one.go numFeasibleNodesToFind).
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
# Filters asked about this many rows or fewer judge those rows alone (RowFilter), not the table.
FEW_ROWS = 16
# The plugins whose rejections a pod waits out in the queue (kube's shouldHaveEnqueueExtensions).
_MAY_REJECT = (PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, NodeFilterPlugin, ReservePlugin, PermitPlugin)
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


T = TypeVar("T")
U = TypeVar("U")

# Each plugin instance's registered events are kept on the instance itself: their hints are its
# bound methods, so a table keyed by weak references to the instances would keep every instance
# (and the cache its handle reaches) alive for good.
_REGISTERED_ATTR = "_kubesched_registered_events"


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
class ScoreOutcome:
    rows: np.ndarray
    totals: np.ndarray
    by_plugin: list[tuple[str, np.ndarray]]  # weighted scores aligned with rows
    # Per plugin of by_plugin, in its order: the Score plugin's own scores before NormalizeScore,
    # and its weight (normalized = weighted // weight). For explanations; never copied per node.
    raw: list[np.ndarray] = field(default_factory=list)
    weights: list[int] = field(default_factory=list)


@dataclass(slots=True)
class FilterVerdict:
    """One Filter plugin's verdict on every row it was asked about, for explanations: nonzero
    codes are rejections, `describe` turns a code into its status."""

    plugin: str
    codes: np.ndarray
    describe: Callable[[int], tuple[Code, tuple[str, ...]]]


class _NodeFilterAdapter:
    """Runs a per-node Filter on the rows still alive and turns statuses into codes.

    Statuses keep their code: an Error stays an Error (the cycle fails with it, as in kube),
    and like kube, which cancels the other nodes' filters on the first error, it stops there."""

    def __init__(self, plugin: NodeFilterPlugin) -> None:
        self.plugin = plugin

    def run(self, state: CycleState, pi: PodInfo, table: NodeTable, alive: np.ndarray) -> FilterResult:
        codes = np.zeros(table.size, dtype=np.int32)
        verdicts: dict[tuple[Code, tuple[str, ...]], int] = {}
        for row in np.flatnonzero(alive):
            status = self.plugin.filter_node(state, pi, NodeInfo(table, int(row)))
            if status is None or status.code == Code.SUCCESS:
                continue
            codes[row] = verdicts.setdefault((status.code, status.reasons), len(verdicts) + 1)
            if status.code == Code.ERROR:
                break
        return FilterResult.from_reasons(codes, {v: k for k, v in verdicts.items()})


def plugin_error(point: str, plugin: str, status: Status) -> Status:
    """A plugin's failure that is not a rejection, as kube reports it: an Error naming the
    extension point and the plugin ("running Reserve plugin \"X\": ..."), never softened."""
    return Status(Code.ERROR, (f'running {point} plugin "{plugin}": {status.message()}',), plugin)


REJECTIONS = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def _out_of_range(scores: np.ndarray) -> int | None:
    """The first score outside MinNodeScore..MaxNodeScore, or None. One reduction on the common
    int64 case: seen as unsigned, a negative score is huge, so `max` alone finds both ends
    (this relies on MinNodeScore being 0, as it is in kube)."""
    if scores.size == 0:
        return None
    if scores.dtype == np.int64:
        if int(scores.view(np.uint64).max()) <= MAX_NODE_SCORE:
            return None
    elif scores.min() >= MIN_NODE_SCORE and scores.max() <= MAX_NODE_SCORE:
        return None
    bad = np.flatnonzero((scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE))
    return int(scores[bad[0]])


def _implementing(plugins: list[Plugin], point: str, kind: type[T], other: type[U] | None = None) -> list[T | U]:
    """The plugins of one extension point, typed by its interface (Filter and Score take either of
    two). Configuration already refused a plugin enabled at a point it does not implement; this
    keeps the type checker's view honest."""
    out: list[T | U] = []
    for plugin in plugins:
        if isinstance(plugin, kind) or (other is not None and isinstance(plugin, other)):
            out.append(plugin)
        else:
            raise TypeError(f"plugin {plugin.name!r} does not implement the {point} extension point")
    return out



# Verdict codes below this are tallied with bincount (a pass, no sort); others with np.unique.
_TALLY_BINCOUNT_BELOW = 1 << 16


def _tally(failed_codes: np.ndarray) -> list[tuple[int, int]]:
    """(code, rows) for each distinct code of the failed rows, codes ascending."""
    if failed_codes.size and failed_codes.dtype.kind in "ui":
        low, high = (0, int(failed_codes.max())) if failed_codes.dtype.kind == "u" else \
            (int(failed_codes.min()), int(failed_codes.max()))
        if low >= 0 and high < _TALLY_BINCOUNT_BELOW:
            counts = np.bincount(failed_codes.astype(np.intp, copy=False))
            values = np.flatnonzero(counts)
            return list(zip(values.tolist(), counts[values].tolist(), strict=True))
    values, counts = np.unique(failed_codes, return_counts=True)
    return list(zip(values.tolist(), counts.tolist(), strict=True))


class Framework:
    """One profile: its plugins per extension point, weights, and how to run them. It is also the
    handle its plugins receive (interface.Handle, as kube's frameworkImpl is framework.Handle),
    made of the collaborators in `services`."""

    def __init__(
        self,
        profile: Profile,
        registry: Registry,
        services: Services,
        *,
        percentage_of_nodes_to_score: int | None = None,
        reuse: Mapping[str, Plugin] | None = None,
    ) -> None:
        """`percentage_of_nodes_to_score`: the configuration's global value, for a profile that
        sets none. `reuse`: plugin instances of an earlier generation of this profile; one whose
        class and args are those configured now is kept, state and all, instead of built anew."""
        self.profile = profile
        self.services = services
        self.cache: Cache = services.cache
        self.metrics: SchedulerMetrics = services.metrics
        # Per-plugin timings are taken on a sample of cycles, as kube-scheduler does (10%):
        # extension points are always timed. The scheduler sets this before each cycle.
        self.plugin_metrics: SchedulerMetrics | None = None
        self.name = profile.scheduler_name
        self.percentage_of_nodes_to_score = (
            profile.percentage_of_nodes_to_score if profile.percentage_of_nodes_to_score is not None else percentage_of_nodes_to_score
        )
        self.instances: dict[str, Plugin] = {}
        self.reused: set[str] = set()
        handle: Handle = self
        try:
            for refs in profile.plugins.values():
                for ref in refs:
                    if ref.name in self.instances:
                        continue
                    cls = profile.plugin_classes.get(ref.name) or registry.resolve(ref.name)
                    args = profile.plugin_args.get(ref.name)
                    kept = (reuse or {}).get(ref.name)
                    if kept is not None and type(kept) is cls and kept.args == args:
                        self.instances[ref.name] = kept
                        self.reused.add(ref.name)
                    else:
                        self.instances[ref.name] = cls(args, handle)
        except Exception:
            self.close_new()  # what the plugins built so far holds (a usage provider) is let go
            raise

        # The same instances by the name statuses and verdicts carry (a plugin's own `name`: a
        # user's plugin is configured as `module:Class`).
        self.named: dict[str, Plugin] = {p.name: p for p in self.instances.values()}

        def at(point: str) -> list[Plugin]:
            return [self.instances[r.name] for r in profile.plugins.get(point, [])]

        self.pre_enqueue: list[PreEnqueuePlugin] = _implementing(at("preEnqueue"), "preEnqueue", PreEnqueuePlugin)
        sorts: list[QueueSortPlugin] = _implementing(at("queueSort"), "queueSort", QueueSortPlugin)
        self.queue_sort = sorts[0] if sorts else None
        self.pre_filter: list[PreFilterPlugin] = _implementing(at("preFilter"), "preFilter", PreFilterPlugin)
        self.filter: list[FilterPlugin | NodeFilterPlugin] = _implementing(at("filter"), "filter", FilterPlugin, NodeFilterPlugin)
        self.filter_adapters = {p.name: _NodeFilterAdapter(p) for p in self.filter if isinstance(p, NodeFilterPlugin)}
        self.post_filter: list[PostFilterPlugin] = _implementing(at("postFilter"), "postFilter", PostFilterPlugin)
        self.pre_score: list[PreScorePlugin] = _implementing(at("preScore"), "preScore", PreScorePlugin)
        scorers: list[ScorePlugin | NodeScorePlugin] = _implementing(at("score"), "score", ScorePlugin, NodeScorePlugin)
        self.score = list(zip(scorers, (r.weight for r in profile.plugins.get("score", [])), strict=True))
        self.reserve: list[ReservePlugin] = _implementing(at("reserve"), "reserve", ReservePlugin)
        self.permit: list[PermitPlugin] = _implementing(at("permit"), "permit", PermitPlugin)
        self.pre_bind: list[PreBindPlugin] = _implementing(at("preBind"), "preBind", PreBindPlugin)
        self.binders: list[BindPlugin] = _implementing(at("bind"), "bind", BindPlugin)
        self.post_bind: list[PostBindPlugin] = _implementing(at("postBind"), "postBind", PostBindPlugin)
        # Pod groups (groupcycle): placements proposed and scored, and the group's PostFilter.
        self.placement_generate: list[PlacementGeneratePlugin] = _implementing(
            at("placementGenerate"), "placementGenerate", PlacementGeneratePlugin)
        scorers_of_placements: list[PlacementScorePlugin] = _implementing(at("placementScore"), "placementScore", PlacementScorePlugin)
        self.placement_score = list(zip(scorers_of_placements, (r.weight for r in profile.plugins.get("placementScore", [])),
                                        strict=True))
        self.pod_group_post_filter: list[PodGroupPostFilterPlugin] = _implementing(
            at("podGroupPostFilter"), "podGroupPostFilter", PodGroupPostFilterPlugin)
        self.group_assign: list[GroupAssignPlugin] = _implementing(at("groupAssign"), "groupAssign", GroupAssignPlugin)
        # Bursts of identical pods placed jointly too (burstcycle), if the GroupAssign plugin says so.
        self.bursts = self.group_assign[0].burst_settings() if self.group_assign else None
        self.prefilter_extensions = [p for p in self.pre_filter if p.has_prefilter_extensions]
        # Round-robin start row for sampling, as kube's nextStartNodeIndex.
        self.next_start_row = 0
        self.dry_run = False  # see dry()
        self.trace: CycleTrace | None = None  # the sampled cycle being traced, set by the scheduler
        self.tracing = False  # tracing on: set by the scheduler; a binding cycle's trace is tracing.BINDING's
        # Every plugin's verdict per node, for a profile with a plugin that asks for it (see
        # framework.detail); set by the scheduler for each cycle of such a profile.
        self.detail: CycleDetail | None = None
        self.records_detail = any(getattr(p, "wants_cycle_detail", False) for p in self.instances.values())

    def close_new(self) -> None:
        """Closes the plugins this framework built itself (not those carried over)."""
        for name, plugin in self.instances.items():
            close = getattr(plugin, "close", None)
            if name not in self.reused and callable(close):
                with contextlib.suppress(Exception):
                    close()

    def adopt(self) -> None:
        """Makes this framework the handle of each of its plugins: an instance kept from an
        earlier generation must run the filters of the profile it now serves (preemption asks
        its handle to), and one handed back on a rollback those of the generation it returns to."""
        for plugin in self.instances.values():
            if plugin.handle is not None:
                plugin.handle = self

    # --- queueing ---------------------------------------------------------------------------

    def events_by_plugin(self) -> dict[str, Sequence[ClusterEventWithHint | ClusterEvent]]:
        """Each plugin's registered events with their queueing hints; a plugin that registers
        none through EnqueueExtensions is asked about every event (kube's wildcard). Asked once
        per plugin instance: a reload that carries an instance over does not ask it again."""
        out: dict[str, Sequence[ClusterEventWithHint | ClusterEvent]] = {}
        for name, plugin in self.instances.items():
            if isinstance(plugin, _MAY_REJECT):  # only these can leave a pod waiting for events
                events = getattr(plugin, _REGISTERED_ATTR, None)
                if events is None:
                    events = plugin.events_to_register() if isinstance(plugin, EnqueueExtensions) else [WILDCARD_EVENT]
                    with contextlib.suppress(AttributeError):  # a plugin with __slots__ is asked each time
                        setattr(plugin, _REGISTERED_ATTR, events)
                out[name] = events
        return out

    def run_pre_enqueue(self, pi: PodInfo) -> Status | None:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pi)
            if status is not None and status.code != Code.SUCCESS:
                status.plugin = plugin.name
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
            pname = plugin.name
            if metrics is not None:
                metrics.plugin(pname, "PreFilter", status_label(status), perf_counter() - t0)
            if self.detail is not None:
                self.detail.pre_filter_status[pname] = status.message() if status is not None and status.code != Code.SUCCESS \
                    else "success"
                if isinstance(result, PreFilterResult) and result.node_names is not None:
                    self.detail.pre_filter_result[pname] = sorted(result.node_names)
            if status is not None:
                if status.code == Code.SKIP:
                    state.skip_filter.add(pname)
                    continue
                if status.code != Code.SUCCESS:
                    # Only the two Unschedulable codes reject at PreFilter; anything else is an error.
                    if status.code in REJECTIONS:
                        status.plugin = pname
                    else:
                        status = plugin_error("PreFilter", pname, status)
                    self._point("PreFilter", status, started)
                    return names, ", ".join(narrowed_by), status
            if isinstance(result, PreFilterResult) and result.node_names is not None:
                names = result.node_names if names is None else names & result.node_names
                narrowed_by.append(pname)
        self._point("PreFilter", None, started)
        return names, ", ".join(narrowed_by), None

    def _point(self, point: str, status: Status | None, started: float) -> None:
        if self.dry_run:
            return
        ended = perf_counter()
        self.metrics.extension_point(point, status_label(status), self.name, ended - started)
        if self.tracing:
            trace = self.trace if self.trace is not None else BINDING.get()
            if trace is not None:
                trace.point(point, started, ended, status_label(status))

    @contextlib.contextmanager
    def dry(self) -> Iterator[None]:
        """Runs the block as a dry run: extension points and plugins are neither timed nor counted,
        so an explanation asked for leaves the scheduler's metrics as they were."""
        saved = self.plugin_metrics, self.dry_run, self.trace, self.detail
        self.plugin_metrics, self.dry_run, self.trace, self.detail = None, True, None, None
        try:
            yield
        finally:
            self.plugin_metrics, self.dry_run, self.trace, self.detail = saved

    def filter_verdicts(self, state: CycleState, pi: PodInfo, rows: np.ndarray) -> list[FilterVerdict]:
        """Every Filter plugin on every row of the mask `rows`, none narrowing the rows for the
        next: which plugins would reject each node, not only the first. A Filter's verdict on a
        node depends on the pod's cycle state and that node alone, so the first plugin to reject
        a node here is the one the cycle's narrowing pass stops at."""
        table = self.cache.table
        out = []
        for plugin in self.filter:
            if plugin.name in state.skip_filter:
                continue
            if isinstance(plugin, NodeFilterPlugin):
                result: FilterResult | None = self.filter_adapters[plugin.name].run(state, pi, table, rows)
            else:
                result = plugin.filter(state, pi, table)
            if result is None:
                continue
            codes = result.codes[: table.size]
            codes = np.where(rows, codes, np.zeros((), dtype=codes.dtype))
            if codes.any():
                out.append(FilterVerdict(plugin.name, codes, result.describe))
        return out

    def run_filters(self, state: CycleState, pi: PodInfo, alive: np.ndarray, *, explain: bool = True) -> FilterOutcome:
        """Runs every Filter over the table, narrowing `alive` (modified in place)."""
        table = self.cache.table
        if self.detail is None and np.count_nonzero(alive[: table.size]) <= FEW_ROWS:
            return self._filter_rows(state, pi, alive, np.flatnonzero(alive[: table.size]), explain)
        out = FilterOutcome(alive)
        # Preemption's dry runs (explain=False) are not timed: they would swamp the cycle's figures.
        metrics = self.plugin_metrics if explain else None
        started = perf_counter()
        for plugin in self.filter:
            pname = plugin.name
            if pname in state.skip_filter:
                continue
            t0 = perf_counter()
            if isinstance(plugin, NodeFilterPlugin):
                result: FilterResult | None = self.filter_adapters[pname].run(state, pi, table, alive)
            else:
                result = plugin.filter(state, pi, table)
            if self.detail is not None and explain:
                self.detail.add_filter(pname, alive.copy(), None if result is None else result.codes[: table.size].copy(),
                                       None if result is None else result.describe)
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

    def _filter_rows(self, state: CycleState, pi: PodInfo, alive: np.ndarray, rows: np.ndarray, explain: bool) -> FilterOutcome:
        """run_filters over a handful of rows (a hint, a nominated node): a plugin that can judge
        some rows alone (RowFilter) is asked about those only, any other is read at them."""
        table = self.cache.table
        out = FilterOutcome(alive)
        metrics = self.plugin_metrics if explain else None
        started = perf_counter()
        for plugin in self.filter:
            pname = plugin.name
            if pname in state.skip_filter or not rows.size:
                continue
            t0 = perf_counter()
            if isinstance(plugin, RowFilter):
                result = plugin.filter_rows(state, pi, table, rows)
                codes = None if result is None else result.codes
            else:
                result = self.filter_adapters[pname].run(state, pi, table, alive) if isinstance(plugin, NodeFilterPlugin) \
                    else plugin.filter(state, pi, table)
                codes = None if result is None else result.codes[rows]
            failed = np.zeros(0, dtype=bool) if codes is None else codes != 0
            count = int(np.count_nonzero(failed))
            if metrics is not None:
                metrics.plugin(pname, "Filter", "Unschedulable" if count else "Success", perf_counter() - t0)
            if not count or result is None or codes is None:
                continue
            out.rejected_by.append((pname, count))
            if explain:
                full_codes = np.zeros(table.size, dtype=codes.dtype)
                full_codes[rows] = codes
                full_failed = np.zeros(table.size, dtype=bool)
                full_failed[rows[failed]] = True
                self._explain(out, pname, full_codes, full_failed, result.describe)
            alive[rows[failed]] = False
            rows = rows[~failed]
        if explain:
            self._point("Filter", out.error, started)
        return out

    def _explain(
        self, out: FilterOutcome, pname: str, codes: np.ndarray, failed: np.ndarray,
        describe: Callable[[int], tuple[Code, tuple[str, ...]]],
    ) -> None:
        for value, n in _tally(codes[failed]):
            code, reasons = describe(value)
            if code == Code.ERROR:
                # kube: a Filter may only return Success or a rejection; anything else fails the
                # cycle as an error, wrapped with the plugin's name.
                reasons = (f'running "{pname}" filter plugin: {", ".join(reasons)}',)
                out.errors.append(Status(Code.ERROR, reasons, pname))
            for reason in reasons:
                out.rejections.append((pname, reason, n))
            if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                if out.unresolvable is None:
                    out.unresolvable = np.zeros(len(failed), dtype=bool)
                out.unresolvable |= failed & (codes == value)

    def run_filters_with_nominated(
        self, state: CycleState, pi: PodInfo, rows: np.ndarray, nominated: Mapping[int, Sequence[PodInfo]]
    ) -> FilterOutcome:
        """kube's RunFilterPluginsWithNominatedPods over the rows of the mask `rows` (which it may
        narrow in place, as run_filters does). A row with
        nominated pods (of priority >= the pod's, as the caller chose them) is filtered with those
        pods added, on a cloned state whose PreFilter extensions saw them added, then again without
        them: the pod must fit either way, so a preemptor keeps the room it made and a pod does not
        count on room a nominated pod has not taken yet. The reasons of both passes count.

        Rows are evaluated together while no PreFilter extension keeps state for the pod, or
        every active one says each nominated pod matters on its own row only (`local_to_row`);
        otherwise each crowded row gets its own clone, as kube evaluates node by node."""
        crowded = [row for row, pods in nominated.items() if pods and rows[row]]
        if not crowded:
            return self.run_filters(state, pi, rows, explain=True)  # the common case: no copy
        if len(crowded) == 1 or not self.prefilter_extensions_active(state) or self._local(state, pi, crowded, nominated):
            return self._filter_crowded(state, pi, rows, crowded, nominated)
        alone = rows.copy()
        alone[crowded] = False
        out = self.run_filters(state, pi, alone, explain=True)
        for row in crowded:
            single = np.zeros_like(rows)
            single[row] = True
            part = self._filter_crowded(state, pi, single, [row], nominated)
            out.alive[row] = part.alive[row]
            out.absorb(part)
        return out

    def _local(self, state: CycleState, pi: PodInfo, crowded: list[int], nominated: Mapping[int, Sequence[PodInfo]]) -> bool:
        """Whether every active PreFilter extension finds each nominated pod (not already counted
        on its row) local to the row it is nominated to."""
        table = self.cache.table
        for plugin in self.active_prefilter_extensions(state):
            for row in crowded:
                on_row = table.pods[row]
                if not all(p.uid in on_row or plugin.local_to_row(state, pi, p, row) for p in nominated[row]):
                    return False
        return True

    def _filter_crowded(
        self, state: CycleState, pi: PodInfo, rows: np.ndarray, crowded: list[int], nominated: Mapping[int, Sequence[PodInfo]]
    ) -> FilterOutcome:
        table = self.cache.table
        trial = state.clone()
        added: list[tuple[int, PodInfo]] = []
        errors: list[Status] = []
        try:
            for row in crowded:
                for p in nominated[row]:
                    if p.uid in table.pods[row]:
                        continue  # counted on the row already (assumed there): adding it again would count it twice
                    table.add_pod(row, p)
                    added.append((row, p))
                    status = self.run_prefilter_add_pod(trial, pi, p, row)
                    if status is not None:
                        errors.append(status)
            first = self.run_filters(trial, pi, rows.copy(), explain=True)
        finally:
            for row, p in added:
                table.remove_pod(row, p)
        first.errors[:0] = errors
        again = np.zeros_like(first.alive)
        again[crowded] = first.alive[crowded]
        if again.any():
            second = self.run_filters(state, pi, again.copy(), explain=True)
            first.alive &= ~(again & ~second.alive)
            first.absorb(second)
        return first

    def sample(self, alive: np.ndarray, num_nodes: int | None = None) -> tuple[np.ndarray, int]:
        """The feasible rows to score, kube's adaptive percentage of `num_nodes` (the cluster's, or
        a pod group placement's), round-robin from the last stop."""
        size = len(alive)
        want = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, len(self.cache.table) if num_nodes is None else num_nodes)
        start = self.next_start_row % max(size, 1)
        # Most nodes feasible (the common case): the rows from `start` on, a window twice the
        # wanted size, usually hold enough, without listing every feasible row of the table.
        window = np.flatnonzero(alive[start : start + 2 * want])
        if window.size >= want:
            chosen = window[:want] + start
            self.next_start_row = (int(chosen[-1]) + 1) % size
            return chosen, want
        feasible = np.flatnonzero(alive)
        if feasible.size <= want:
            return feasible, int(feasible.size)
        pos = int(np.searchsorted(feasible, start))
        # The `want` rows from `pos` on, wrapping around; returned in row order.
        end = pos + want
        if end <= feasible.size:
            chosen = feasible[pos:end]
            last = int(chosen[-1])
        else:
            wrapped = end - feasible.size
            chosen = np.concatenate((feasible[:wrapped], feasible[pos:]))
            last = int(feasible[wrapped - 1])
        self.next_start_row = (last + 1) % size
        return chosen, want

    # --- PreFilter extensions (preemption) -------------------------------------------------------

    def active_prefilter_extensions(self, state: CycleState) -> list[PreFilterPlugin]:
        """The PreFilter plugins with AddPod/RemovePod extensions that keep state for this pod
        (not skipped at its PreFilter)."""
        return [p for p in self.prefilter_extensions if p.name not in state.skip_filter]

    def run_prefilter_add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        for plugin in self.active_prefilter_extensions(state):
            status = plugin.add_pod(state, pi, added, row)
            if status is not None and status.code != Code.SUCCESS:
                return plugin_error("AddPod on PreFilter", plugin.name, status)
        return None

    def run_prefilter_remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        for plugin in self.active_prefilter_extensions(state):
            status = plugin.remove_pod(state, pi, removed, row)
            if status is not None and status.code != Code.SUCCESS:
                return plugin_error("RemovePod on PreFilter", plugin.name, status)
        return None

    # --- PostFilter -------------------------------------------------------------------------------

    def run_post_filter(
        self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        """kube's RunPostFilterPlugins: the first PostFilter that succeeds wins, an unresolvable
        rejection or an error ends the run; otherwise every rejection's reasons are kept, in
        profile order, and the last result that nominates (or clears, with nominated_node == "")
        is still returned."""
        last: Status | None = None
        last_result: PostFilterResult | None = None
        reasons: list[str] = []
        started = perf_counter()
        for plugin in self.post_filter:
            t0 = perf_counter()
            result, status = plugin.post_filter(state, pi, diagnosis)
            if self.plugin_metrics is not None:
                self.plugin_metrics.plugin(plugin.name, "PostFilter", status_label(status), perf_counter() - t0)
            if status is None or status.code == Code.SUCCESS:
                self._point("PostFilter", None, started)
                if self.detail is not None and result is not None and result.nominated_node:
                    self.detail.post_filter = (plugin.name, result.nominated_node)
                return result, status  # a success may carry a message for the FitError text
            if result is not None and result.nominated_node is not None:
                last_result = result
            if status.code != Code.UNSCHEDULABLE:
                self._point("PostFilter", status, started)
                return last_result, status
            reasons.extend(status.reasons)
            last = last or Status(Code.UNSCHEDULABLE, (), plugin.name)  # the first rejector is named
        if last is not None:
            last = Status(Code.UNSCHEDULABLE, tuple(reasons), last.plugin)
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
                metrics.plugin(plugin.name, "PreScore", status_label(status), perf_counter() - t0)
            if self.detail is not None:
                self.detail.pre_score[plugin.name] = status.message() if status is not None and status.code not in (
                    Code.SUCCESS, Code.SKIP) else "success"
            if status is not None:
                if status.code == Code.SKIP:
                    state.skip_score.add(plugin.name)
                elif status.code != Code.SUCCESS:
                    # kube: PreScore has no rejection; anything but Success or Skip is an error.
                    status = plugin_error("PreScore", plugin.name, status)
                    self._point("PreScore", status, started)
                    return status
        self._point("PreScore", None, started)
        started = perf_counter()
        totals = np.zeros(rows.size, dtype=np.int64)
        by_plugin: list[tuple[str, np.ndarray]] = []
        normalized: list[np.ndarray] = []
        raw: list[np.ndarray] = []
        weights: list[int] = []
        for scorer, weight in self.score:
            pname = scorer.name
            if pname in state.skip_score:
                continue
            t0 = perf_counter()
            if isinstance(scorer, NodeScorePlugin):
                scores = np.fromiter(
                    (scorer.score_node(state, pi, NodeInfo(table, int(r))) for r in rows), dtype=np.int64, count=rows.size
                )
            else:
                scores = scorer.score(state, pi, table, rows)
            # Kept for explanations, not copied: a NormalizeScore returns a new array (every default
            # plugin's does); one that works in place only makes the explained raw scores normalized.
            raw.append(scores)
            if scorer.has_normalize:
                scores = scorer.normalize_score(state, pi, scores)
            if metrics is not None:
                metrics.plugin(pname, "Score", "Success", perf_counter() - t0)
            normalized.append(scores)
            weighted = scores * weight if weight != 1 else scores
            totals += weighted
            by_plugin.append((pname, weighted))
            weights.append(weight)
        # kube checks every score after NormalizeScore and fails the cycle with an Error. One check
        # over all plugins' scores keeps the common (valid) case to a single reduction per cycle.
        together = normalized[0] if len(normalized) == 1 else np.concatenate(normalized) if normalized else None
        if together is not None and _out_of_range(together) is not None:
            for (pname, _), scores in zip(by_plugin, normalized, strict=True):
                bad = _out_of_range(scores)
                if bad is not None:
                    status = Status.error(
                        f'applying score defaultWeights on Score plugins: plugin "{pname}" returns an invalid score {bad}, '
                        f"it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    )
                    self._point("Score", status, started)
                    return status
        self._point("Score", None, started)
        if not self.dry_run and decisions.log.isEnabledFor(logging.DEBUG):  # kube: -v=10 "Calculated node's final score for pod"
            decisions.log_final_scores(pi.key, table, rows, totals)
        if self.detail is not None:
            self.detail.scored_rows = rows
            self.detail.scores = [(name, r, w, weight) for (name, w), r, weight in zip(by_plugin, raw, weights, strict=True)]
        return ScoreOutcome(rows, totals, by_plugin, raw, weights)

    # --- reserve, permit and the binding cycle ------------------------------------------------------

    def run_reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        for plugin in self.reserve:
            status = plugin.reserve(state, pi, node)
            if status is not None and status.code != Code.SUCCESS:
                if status.rejected:
                    status.plugin = plugin.name
                else:
                    status = plugin_error("Reserve", plugin.name, status)
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
            pname = plugin.name
            if status.code == Code.WAIT:
                waits[pname] = timeout
                continue
            if status.rejected:
                status.plugin = pname
            else:
                status = plugin_error("Permit", pname, status)
            self._point("Permit", status, started)
            return status, waits
        self._point("Permit", Status(Code.WAIT) if waits else None, started)
        return None, waits

    def run_pod_group_post_filter(
        self,
        group: Any,
        members: Sequence[PodInfo],
        place: PlaceGroup,
        still_fits: StillFits,
    ) -> Status:
        """kube's RunPodGroupPostFilterPlugins: the PostFilter plugins that preempt for groups, in
        profile order; the first success or unresolvable rejection ends it, other rejections are
        collected, anything else is an error."""
        reasons: list[str] = []
        for plugin in self.pod_group_post_filter:
            status = plugin.pod_group_post_filter(group, members, place, still_fits)
            if status.code in (Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
                return status
            if status.code != Code.UNSCHEDULABLE:
                return Status(Code.ERROR, (f'error in "{plugin.name}" PodGroupPostFilter plugins: {status.message()}',), plugin.name)
            reasons.extend(status.reasons)
        return Status(Code.UNSCHEDULABLE, tuple(reasons))

    def run_pre_bind_pre_flights(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        """kube's RunPreBindPreFlights: None (Success) when a PreBind plugin has work, SKIP when
        none has, or the first error; the plugins that answered SKIP are left out of PreBind."""
        started = perf_counter()
        answer: Status | None = SKIP
        skipped: set[str] = set()
        for plugin in self.pre_bind:
            status = plugin.pre_bind_pre_flight(state, pi, node)
            if status is None or status.code == Code.SUCCESS:
                answer = None
            elif status.code == Code.SKIP:
                skipped.add(plugin.name)
            else:
                if status.code == Code.ERROR:
                    message = f'running PreBindPreFlight "{plugin.name}": {status.message()}'
                else:
                    message = (f'PreBindPreFlight {plugin.name} returned "{STATUS_LABEL[status.code]}", which is unsupported. '
                               "It is supposed to return Success, Skip, or Error status")
                error = Status.error(message, plugin.name)
                self._point("PreBindPreFlight", error, started)
                return error
        state.skip_pre_bind = skipped
        self._point("PreBindPreFlight", answer, started)
        return answer

    async def run_pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        for plugin in self.pre_bind:
            if plugin.name in state.skip_pre_bind:
                continue
            status = await plugin.pre_bind(state, pi, node)
            if status is not None and status.code != Code.SUCCESS:
                if status.rejected:
                    status.plugin = plugin.name
                else:
                    status = plugin_error("PreBind", plugin.name, status)
                self._point("PreBind", status, started)
                return status
        self._point("PreBind", None, started)
        return None

    async def run_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        for plugin in self.binders:
            status = await plugin.bind(state, pi, node)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and status.code != Code.SUCCESS:
                if status.rejected:
                    status.plugin = plugin.name
                else:
                    status = plugin_error("Bind", plugin.name, status)
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


    # --- the handle its plugins receive (interface.Handle) ----------------------------------------------

    # `cache` and `metrics` are attributes (set in __init__): read on every cycle.

    @property
    def table(self) -> NodeTable:
        return self.services.cache.table

    @property
    def dra(self) -> DraManager:
        return self.services.dra

    @property
    def clock(self) -> Clock:
        return self.services.clock

    def now(self) -> float:
        return self.services.clock.now()

    @property
    def shared(self) -> SharedObjects:
        return self.services.shared

    def prefilter_extensions_active(self, state: CycleState) -> bool:
        return any(p.name not in state.skip_filter for p in self.prefilter_extensions)

    def nominate(self, pi: PodInfo, node: str | None) -> None:
        self.services.nominator.nominate(pi, node)
        self.services.cluster.set_nominated_node(pi, node)

    def nominated_pods(self, node: str) -> list[PodInfo]:
        return self.services.nominator.pods_on(node)

    def nominated_node(self, pi: PodInfo) -> str | None:
        return self.services.nominator.nominated_node(pi.uid)

    def waiting_pod(self, uid: str) -> PodAtPermit | None:
        return self.services.waiting.get(uid)

    def waiting_pods(self) -> list[PodAtPermit]:
        return list(self.services.waiting.values())

    async def bind(self, pi: PodInfo, node: str) -> Status | None:
        return await self.services.cluster.bind(pi, node)

    async def delete_pod(self, pi: PodInfo, reason: str) -> None:
        await self.services.cluster.delete_pod(pi, reason)

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        return await self.services.cluster.update_persistent_volume(pv)

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        return await self.services.cluster.update_persistent_volume_claim(pvc)

    async def get_resource_claim(self, namespace: str, name: str) -> ResourceClaim:
        return await self.services.cluster.get_resource_claim(namespace, name)

    async def update_resource_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return await self.services.cluster.update_resource_claim(claim)

    async def update_resource_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        return await self.services.cluster.update_resource_claim_status(claim)

    async def unreserve_resource_claim(self, claim: ResourceClaim, pod_uid: str) -> None:
        await self.services.cluster.unreserve_resource_claim(claim, pod_uid)

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None:
        self.services.cluster.record_event(pi, type_, reason, message)

    def record_preemption(self, victims: Sequence[PodInfo], pdb_violations: int = 0, preemptor: str = "pod") -> None:
        self.services.record_preemption(victims, pdb_violations, preemptor)

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        self.services.spawn(coro, what)

    def cluster_event(self, event: ClusterEvent) -> None:
        self.services.cluster_event(event)

    def activate(self, uids: Iterable[str]) -> None:
        self.services.activate(uids)

    def pending_pods(self) -> Iterable[PodInfo]:
        return self.services.pending_pods()
