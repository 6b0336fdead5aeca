"""The Scheduling Framework's extension points, as kube-scheduler defines them.

A plugin is a class that subclasses `Plugin` and the extension-point interfaces it
implements (like a Go type implementing interfaces). Filter and Score work on the
whole NodeTable at once: a Filter returns one result code per row, a Score one
integer per candidate row. Plugins that are easier to write one node at a time
implement `NodeFilterPlugin` / `NodeScorePlugin` instead and the framework adapts
them.

Convention: `None` is a Success status (as nil is in Go), so the common path
allocates nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Coroutine, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from pydantic import BaseModel

from kubesched.api.podinfo import PodInfo

if TYPE_CHECKING:
    from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
    from kubesched.cache.cache import Cache
    from kubesched.cache.nodetable import NodeTable
    from kubesched.framework.shared import SharedObjects
    from kubesched.infra.clock import Clock
    from kubesched.observe.metrics import SchedulerMetrics

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


@dataclass(slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, reasons, plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, (message,), plugin)

    @property
    def success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)


SKIP = Status(Code.SKIP)


class CycleState:
    """Per-cycle scratch space shared by a profile's plugins, keyed by plugin name.

    Values that a PreFilter extension (AddPod/RemovePod) mutates must provide
    `clone()`, because preemption evaluates each candidate node on a clone.
    """

    __slots__ = ("data", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def read(self, key: str) -> Any:
        return self.data.get(key)

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value

    def clone(self) -> CycleState:
        out = CycleState()
        out.data = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self.data.items()}
        out.skip_filter = set(self.skip_filter)
        out.skip_score = set(self.skip_score)
        return out


# --- results ------------------------------------------------------------------------------


@dataclass(slots=True)
class PreFilterResult:
    """Narrows the nodes to evaluate; None means every node."""

    node_names: frozenset[str] | None = None


@dataclass(slots=True)
class FilterResult:
    """A Filter's verdict on every row of the table at once.

    `codes[row] == 0` means the node passes; any other value is a failure whose status
    code and reasons are `describe(value)`. Rows that are not nodes may hold anything.
    """

    codes: np.ndarray
    describe: Callable[[int], tuple[Code, tuple[str, ...]]]

    @classmethod
    def reject(cls, failed: np.ndarray, reason: str, code: Code = Code.UNSCHEDULABLE) -> FilterResult:
        """One reason for every failing row (the common case)."""
        verdict = (code, (reason,))
        return cls(failed.view(np.uint8) if failed.dtype == np.bool_ else failed, lambda _c: verdict)

    @classmethod
    def from_reasons(cls, codes: np.ndarray, reasons: Mapping[int, tuple[Code, tuple[str, ...]]]) -> FilterResult:
        return cls(codes, reasons.__getitem__)


@dataclass(slots=True)
class FilterOutcome:
    """Every Filter run over the table: the rows still alive and why the others fell."""

    alive: np.ndarray
    rejections: list[tuple[str, str, int]] = field(default_factory=list)  # plugin, reason, nodes
    rejected_by: list[tuple[str, int]] = field(default_factory=list)  # plugin, nodes
    unresolvable: np.ndarray | None = None
    errors: list[Status] = field(default_factory=list)  # a Filter that failed with an Error

    @property
    def error(self) -> Status | None:
        return self.errors[0] if self.errors else None

    def absorb(self, other: FilterOutcome) -> None:
        """Counts the reasons, errors and unresolvable rows of another pass over some of the
        same rows (which rows stay alive is the caller's to decide)."""
        self.rejections.extend(other.rejections)
        self.rejected_by.extend(other.rejected_by)
        self.errors.extend(other.errors)
        if other.unresolvable is not None:
            self.unresolvable = other.unresolvable if self.unresolvable is None else self.unresolvable | other.unresolvable


@dataclass(slots=True)
class PostFilterResult:
    nominated_node: str | None = None


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits nowhere: input to PostFilter and to the failure message."""

    num_nodes: int
    reasons: dict[str, int] = field(default_factory=dict)
    # Rows rejected with UnschedulableAndUnresolvable: preemption cannot help there.
    unresolvable: np.ndarray | None = None
    # Rows that were evaluated (not cut by a PreFilter result).
    evaluated: np.ndarray | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class ActionType(enum.IntFlag):
    """What happened to an object (kube's fwk.ActionType): a bit each, combinable. Member names
    are kube's own, so an event label (resource + action) reads as kube-scheduler's metrics do."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4  # a taint or spec.unschedulable changed
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdateNodeDeclaredFeature = 1 << 7
    UpdateNodePreemptionPolicy = 1 << 8
    UpdatePodLabel = 1 << 9
    UpdatePodScaleDown = 1 << 10
    UpdatePodScaleUp = 1 << 11
    UpdatePodToleration = 1 << 12
    UpdatePodSchedulingGatesEliminated = 1 << 13
    UpdatePodGeneratedResourceClaim = 1 << 14
    All = (1 << 15) - 1
    Update = All & ~(Add | Delete)


class QueueingHint(enum.IntEnum):
    """A plugin's answer to "may this event make the pod I rejected schedulable?"."""

    QueueSkip = 0
    Queue = 1


# Event resources, as kube names them. "Pod" registered matches the three kinds of pod event.
POD = "Pod"
ASSIGNED_POD = "AssignedPod"  # a pod bound (or assumed) to a node
UNSCHEDULED_POD = "UnscheduledPod"  # another pending pod
TARGET_POD = "TargetPod"  # the pending pod the hint is asked about, itself
NODE = "Node"
WILDCARD = "*"
_POD_KINDS = frozenset({ASSIGNED_POD, UNSCHEDULED_POD, TARGET_POD})


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster change that may make an unschedulable pod schedulable (kube's
    fwk.ClusterEvent). `resource` is "Node", "Pod" (registered: any pod), "AssignedPod",
    "UnscheduledPod", "TargetPod", a storage or custom resource, or "*"."""

    resource: str
    action: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """The event as kube-scheduler's metrics name it: NodeAdd, AssignedPodDelete, NodeUpdateNodeTaint..."""
        return self.custom_label or f"{self.resource}{self.action.name}"

    @property
    def wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.All

    def covers(self, incoming: ClusterEvent) -> bool:
        """Whether this registered event matches an incoming one (kube's MatchClusterEvents): the
        resource matches and the incoming action is one the registration asks for, all of it."""
        if self.wildcard:
            return True
        if self.resource != incoming.resource and not (self.resource == POD and incoming.resource in _POD_KINDS):
            return False
        return bool(self.action & incoming.action) and incoming.action <= self.action


QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]
"""(the rejected pod, the object before, the object after) -> hint. Objects are PodInfo for pod
events and the API object (Node, ...) otherwise; `before` is None for Add, `after` for Delete.
An exception counts as Queue, as a hint's error does in kube."""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event and the plugin's hint for it (None: every such event may help)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


WILDCARD_EVENT = ClusterEvent(WILDCARD, ActionType.All)
# Requeues that are no cluster change: every pod they reach is moved (kube's wildcard events).
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.All, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.All, "ForceActivate")


# --- the handle plugins get -----------------------------------------------------------------


class WaitingPod(Protocol):
    """A pod held at Permit (kube's framework.WaitingPod): the plugins that still have to allow it."""

    uid: str
    node: str
    pending: set[str]

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class Handle(Protocol):
    """Everything a plugin may ask of the framework (kube's framework.Handle), passed to every
    plugin's constructor. The runtime's Framework implements it over narrow collaborators
    (framework/services.py); a plugin never sees the scheduler, the queue or a backend."""

    # --- the cluster as the scheduler sees it, and time
    @property
    def cache(self) -> Cache: ...

    @property
    def table(self) -> NodeTable: ...

    @property
    def clock(self) -> Clock: ...

    def now(self) -> float: ...

    @property
    def metrics(self) -> SchedulerMetrics: ...

    @property
    def shared(self) -> SharedObjects:
        """Objects one scheduler's plugins share across profiles (a usage service, say), made by
        the first plugin that asks; a backend may provide some in advance."""
        ...

    # --- filtering on behalf of PostFilter (preemption), as the profile runs it
    def prefilter_extensions_active(self, state: CycleState) -> bool:
        """Whether a PreFilter AddPod/RemovePod extension keeps state for this cycle's pod."""
        ...

    def run_filters_with_nominated(
        self, state: CycleState, pi: PodInfo, rows: np.ndarray, nominated: Mapping[int, Sequence[PodInfo]]
    ) -> FilterOutcome:
        """Every Filter over `rows` (a mask), each row also with the pods nominated to it that are
        given (kube's RunFilterPluginsWithNominatedPods): a row passes only if it fits both with
        and without them. Reasons of both passes are returned."""
        ...

    def run_prefilter_add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None: ...

    def run_prefilter_remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None: ...

    # --- nominations and pods waiting at Permit
    def nominate(self, pi: PodInfo, node: str | None) -> None:
        """Sets (or with None clears) the pod's nominated node, in the scheduler and the cluster."""
        ...

    def nominated_pods(self, node: str) -> list[PodInfo]: ...

    def nominated_node(self, pi: PodInfo) -> str | None:
        """The node this scheduler has nominated the pod to, if any (the pod's status may lag)."""
        ...

    def waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def waiting_pods(self) -> Sequence[WaitingPod]: ...

    # --- side effects
    async def bind(self, pi: PodInfo, node: str) -> Status | None: ...

    async def delete_pod(self, pi: PodInfo, reason: str) -> None: ...

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """The volume binder's PV write (claimRef, annotations; conditional on the resourceVersion)."""
        ...

    async def update_persistent_volume_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        """The volume binder's PVC write (annotations: the selected node; conditional on the resourceVersion)."""
        ...

    def record_event(self, pi: PodInfo, type_: str, reason: str, message: str) -> None: ...

    def record_preemption(self, victims: Sequence[PodInfo]) -> None:
        """Counts a preemption and its victims (metrics, the decision record)."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        """Runs a side effect from a synchronous extension point in the background; the scheduler
        tracks it, so a simulation waits for it and a failure is logged."""
        ...

    def cluster_event(self, event: ClusterEvent) -> None:
        """Reports a change outside the API objects (new usage samples, say) that may make pods
        rejected by plugins registered for `event` schedulable."""
        ...

    # --- the scheduling queue (kube's PodActivator and pod lister)
    def activate(self, uids: Iterable[str]) -> None:
        """Moves these pending pods from the unschedulable pool or backoff to activeQ now."""
        ...

    def pending_pods(self) -> Iterable[PodInfo]:
        """The pending pods this scheduler holds (queued, backing off, unschedulable, gated, or
        being scheduled now)."""
        ...


# --- plugin interfaces -----------------------------------------------------------------------


class Named:
    """What every plugin and every extension-point interface share: the name configuration
    refers to the plugin by. Only declared here (no value), so a plugin's own `name` wins
    whatever order it lists its bases in, and code holding a `FilterPlugin` can read `.name`."""

    name: ClassVar[str]


def overrides(cls: type, method: str, *defaults: Callable[..., Any]) -> bool:
    """Whether `cls` brings its own `method` rather than an interface's default. Facts such as
    "has NormalizeScore" are read from the class this way, as kube reads them from whether a
    plugin returns ScoreExtensions: a flag a plugin author can forget would silently skip it."""
    return getattr(cls, method, None) not in defaults


class Plugin(Named):
    """Base of every plugin. `name` is how configuration refers to it; `Args` is the pydantic
    model of its pluginConfig args (None: it takes none)."""

    name: ClassVar[str] = ""
    Args: ClassVar[type[BaseModel] | None] = None

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        # The runtime always passes the handle; a plugin that uses it takes `handle: Handle`
        # itself and keeps it typed so. None is for plugins built alone in unit tests.
        self.args = args
        self.handle = handle


class EnqueueExtensions(Named):
    def events_to_register(self) -> Sequence[ClusterEventWithHint | ClusterEvent]:
        """Events that may make a pod this plugin rejected schedulable, each with the plugin's
        queueing hint. A plugin without this interface is retried on every event; one that
        returns no events only after the unschedulable timeout (or when activated)."""
        raise NotImplementedError


class PreEnqueuePlugin(Named):
    def pre_enqueue(self, pi: PodInfo) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Named):
    def sort_key(self, qpi: Any) -> Any:
        """A key whose ascending order is the pop order (kube's Less as a sort key)."""
        raise NotImplementedError


class PreFilterPlugin(Named):
    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    # PreFilterExtensions: keep precomputed state right when preemption adds or removes pods.
    # Derived, for every subclass, from whether it overrides add_pod or remove_pod.
    has_prefilter_extensions: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.has_prefilter_extensions = overrides(cls, "add_pod", PreFilterPlugin.add_pod) or overrides(
            cls, "remove_pod", PreFilterPlugin.remove_pod
        )

    def add_pod(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> Status | None:
        return None

    def remove_pod(self, state: CycleState, pi: PodInfo, removed: PodInfo, row: int) -> Status | None:
        return None

    def harmless_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        """With its extensions active for the pod: whether `added`, put on `row`, can never turn
        the pod's Filter verdict on another row, `own_row`, from pass to fail. Group preemption's
        reprieve check skips a victim no member's active plugins can see. False (not known)
        unless the plugin knows better."""
        return False

    def local_to_row(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int) -> bool:
        """With its extensions active for the pod: whether `added`, put on `row` (AddPod), leaves
        the pod's Filter verdict on every other row as it was. Nominated pods that all are let the
        nodes they are nominated to be filtered together on one state. False (not known) unless
        the plugin knows better."""
        return False

    def cannot_help_elsewhere(self, state: CycleState, pi: PodInfo, added: PodInfo, row: int, own_row: int) -> bool:
        """With its extensions active for the pod: whether `added`, put on `row`, can never turn
        the pod's Filter verdict on another row, `own_row`, from fail to pass. Group preemption's
        reprieve check trusts a member's failure found without such pods. False (not known)
        unless the plugin knows better."""
        return False


class FilterPlugin(Named):
    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        """Verdict for every row; None means every node passes."""
        raise NotImplementedError


class RowFilter(Named):
    """Optional for Filter plugins: the verdict on a few rows only, codes aligned with `rows` (None:
    every one passes). The framework asks it when it filters a handful of nodes (OpportunisticBatching's
    hint and re-check); a plugin without it is run over the table and read at those rows."""

    def filter_rows(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        raise NotImplementedError


class PostFilterPlugin(Named):
    def post_filter(
        self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


@dataclass(slots=True)
class PreemptionPlan:
    """What a PostFilter plugin would do for a pod that fits nowhere: the node it would nominate
    and the pods it would evict there, or no node and the message saying why it cannot help."""

    node: str | None
    victims: list[PodInfo]
    message: str = ""


class PostFilterPreview(Named):
    """Optional for PostFilter plugins: say what post_filter would do, without doing any of it
    (no eviction, no nomination, no event). Explanations ask it whether preemption could help."""

    def preview(self, state: CycleState, pi: PodInfo, diagnosis: Diagnosis) -> PreemptionPlan:
        raise NotImplementedError


class FilterMisses(Named):
    """Optional for Filter plugins: what a node lacks for the pod, for explanations of a pending
    pod's nearest misses ("needs 300m more cpu"). Called on nodes the plugin rejects."""

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """How far each of the rows is from passing, >= 0, comparable within the plugin (say the
        largest shortfall as a fraction of allocatable); nearest misses are the smallest."""
        raise NotImplementedError

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        """What the node lacks, in a few words."""
        raise NotImplementedError


# One part of a pod's scheduling signature: a signer's name and a hashable value (kube's SignFragment).
SignFragment = tuple[str, Hashable]


class SignPlugin(Named):
    """kube's SignPlugin, for OpportunisticBatching: the parts of the pod this plugin's PreFilter,
    Filter, PreScore and Score read, so that two pods with equal signatures get the same
    feasibility and scores on the same nodes. None: the pod cannot be signed (its placement
    depends on more than the node it lands on). A profile signs pods only if every one of its
    PreFilter, Filter, PreScore and Score plugins is a SignPlugin, as kube's does."""

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        raise NotImplementedError


class PreScorePlugin(Named):
    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Named):
    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Scores for `rows` (same order), any integers; NormalizeScore brings them to 0..100."""
        raise NotImplementedError

    # ScoreExtensions: derived, for every subclass, from whether it overrides normalize_score.
    has_normalize: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.has_normalize = overrides(cls, "normalize_score", *_KEEP_SCORES)

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores


class ReservePlugin(Named):
    def reserve(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pi: PodInfo, node: str) -> None:
        """Must be idempotent: it may run for a pod whose Reserve did not."""
        raise NotImplementedError


class PermitPlugin(Named):
    def permit(self, state: CycleState, pi: PodInfo, node: str) -> tuple[Status | None, float]:
        """Success, a rejection, or Wait with a timeout in seconds."""
        raise NotImplementedError


class PlacementFeasiblePlugin(Named):
    """A PodGroup scheduling cycle's quorum check (kube's PlacementFeasible: not configurable,
    only GangScheduling implements it): run before the group's members are tried and after each
    one, given how many members are scheduled (already, or placed so far in the cycle) and how
    many remain to try. Success, Wait (not yet) or Unschedulable (it cannot be met any more)."""

    def placement_feasible(self, group: Any, scheduled: int, remaining: int) -> Status | None:
        raise NotImplementedError


@dataclass(slots=True)
class GroupPlacement:
    """A set of nodes a pod group may be placed on as a whole (kube's Placement): one topology
    domain, say. `rows` is a mask over the node table."""

    name: str
    rows: np.ndarray


class PlacementGeneratePlugin(Named):
    """Proposes the placements a PodGroup is tried on (kube's PlacementGenerate, with
    TopologyAwareWorkloadScheduling): only the first such plugin of a profile runs."""

    def generate_placements(self, group: Any, parent: np.ndarray) -> list[GroupPlacement] | Status:
        raise NotImplementedError


class PlacementScorePlugin(Named):
    """Scores the placements a PodGroup fits on (kube's PlacementScore): raw scores, then optionally
    normalized to 0..100 across the candidates, weighted by the plugin's weight."""

    def score_placement(self, group: Any, placement: GroupPlacement, assigned: Sequence[tuple[PodInfo, int]], scheduled: int) -> int:
        raise NotImplementedError

    def normalize_placement_scores(self, scores: list[int]) -> list[int] | Status:
        return scores


class GroupAssignPlugin(Named):
    """kubesched's, not kube's: chooses the nodes of a pod group's members together (jointly)
    before the group cycle places them; the cycle then places each member on its chosen node
    with every Filter run as usual, and falls back to the per-pod order if one does not pass.
    `feasible[m, n]`, `scores[m, n]` are each member's Filter and Score results on the snapshot
    (each alone), `crowding[m, n]` how far its score there falls for each one like it already
    there; returns a node index per member (-1: leave it to the per-pod order), or None."""

    def assign_group(self, group: Any, members: Sequence[PodInfo], feasible: np.ndarray, scores: np.ndarray,
                     requests: np.ndarray, free: np.ndarray, allocatable: np.ndarray, min_count: int,
                     crowding: np.ndarray | None = None) -> np.ndarray | None:
        raise NotImplementedError

    def burst_settings(self) -> BurstSettings | None:
        """Whether bursts (identical pending pods of one owner, no PodGroup) are placed jointly
        too, and how they are gathered (burstcycle); None: pods without a group go one by one."""
        return None


@dataclass(frozen=True, slots=True)
class BurstSettings:
    """How a profile gathers bursts: a new pod of an owner waits up to `window` seconds for its
    siblings (0: a burst is the siblings already in activeQ), at most `limit` pods to a burst."""

    window: float
    limit: int


# The group algorithm run on the cluster as it stands: its status (None: placed) and the
# proposed node of each member it placed, every assumption undone.
PlaceGroup = Callable[[], tuple[Status | None, list[tuple[PodInfo, str]]]]
# Whether a proposed placement (members in order) still passes every Filter, each member with the
# ones before it assumed and reserved, all undone after; the second argument is the pods put back
# (row, pod) since it last passed: the members on their nodes are checked first.
StillFits = Callable[[Sequence[tuple[PodInfo, str]], Sequence[tuple[int, PodInfo]]], bool]


class PodGroupPostFilterPlugin(Named):
    """Runs once for a PodGroup its cycle could not place (kube's PodGroupPostFilter: group
    preemption). Success nominates members where room was made; a rejection says why not."""

    def pod_group_post_filter(self, group: Any, members: Sequence[PodInfo], place: PlaceGroup, still_fits: StillFits) -> Status:
        raise NotImplementedError


class PreBindPlugin(Named):
    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Named):
    async def bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        """Bind, or return SKIP to let the next bind plugin handle the pod."""
        raise NotImplementedError


class PostBindPlugin(Named):
    def post_bind(self, state: CycleState, pi: PodInfo, node: str) -> None:
        raise NotImplementedError


# --- the simple per-node form, adapted by the framework -----------------------------------------


class NodeInfo:
    """A read-only view of one node for per-node plugins."""

    __slots__ = ("row", "table")

    def __init__(self, table: NodeTable, row: int) -> None:
        self.table = table
        self.row = row

    @property
    def name(self) -> str:
        return self.table.name_of(self.row)

    @property
    def node(self) -> Any:
        return self.table.nodes[self.row]

    @property
    def labels(self) -> dict[str, str]:
        return self.table.node_labels[self.row]

    @property
    def allocatable(self) -> dict[str, int]:
        return {r: int(self.table.allocatable[self.row, i]) for i, r in enumerate(self.table.resources)}

    @property
    def requested(self) -> dict[str, int]:
        return {r: int(self.table.requested[self.row, i]) for i, r in enumerate(self.table.resources)}

    @property
    def pods(self) -> list[PodInfo]:
        return list(self.table.pods[self.row].values())


class NodeFilterPlugin(Named):
    """Per-node Filter: simple to write, one Python call per node."""

    def filter_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> Status | None:
        raise NotImplementedError


class NodeScorePlugin(Named):
    """Per-node Score: simple to write, one Python call per candidate node."""

    # Derived from the class as ScorePlugin's is.
    has_normalize: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.has_normalize = overrides(cls, "normalize_score", *_KEEP_SCORES)

    def score_node(self, state: CycleState, pi: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def normalize_score(self, state: CycleState, pi: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores


# The do-nothing NormalizeScore of both score interfaces: a class still using one has no ScoreExtensions.
_KEEP_SCORES = (ScorePlugin.normalize_score, NodeScorePlugin.normalize_score)

EXTENSION_POINTS: dict[str, tuple[type, ...]] = {
    "preEnqueue": (PreEnqueuePlugin,),
    "queueSort": (QueueSortPlugin,),
    "preFilter": (PreFilterPlugin,),
    "filter": (FilterPlugin, NodeFilterPlugin),
    "postFilter": (PostFilterPlugin,),
    "preScore": (PreScorePlugin,),
    "score": (ScorePlugin, NodeScorePlugin),
    "reserve": (ReservePlugin,),
    "permit": (PermitPlugin,),
    "preBind": (PreBindPlugin,),
    "bind": (BindPlugin,),
    "postBind": (PostBindPlugin,),
    # kube v1.37's pod group points (GenericWorkload, TopologyAwareWorkloadScheduling).
    "placementGenerate": (PlacementGeneratePlugin,),
    "placementScore": (PlacementScorePlugin,),
    "podGroupPostFilter": (PodGroupPostFilterPlugin,),
    # kubesched's own: a pod group's members placed jointly (plugins/jointplacement.py).
    "groupAssign": (GroupAssignPlugin,),
}


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Scale scores so the highest becomes MAX_NODE_SCORE (kube's DefaultNormalizeScore);
    with reverse, the highest raw score becomes the lowest."""
    if scores.size == 0:
        return scores
    top = int(scores.max())
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out
