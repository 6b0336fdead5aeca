"""The Scheduling Framework's extension points, as kube-scheduler defines them.

A plugin is a class that subclasses `Plugin` and the extension-point interfaces it
implements (like a Go type implementing interfaces). Filter and Score work on the
whole NodeTable at once: a Filter returns one result code per row, a Score one
integer per candidate row. Plugins that are easier to write one node at a time
implement `NodeFilterPlugin` / `NodeScorePlugin` instead and the framework adapts
them. What the points pass each other is in framework.types, Status in framework.status,
events in framework.events, the handle in framework.handle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.status import Status
from kubesched.framework.types import (
    BurstSettings,
    Diagnosis,
    FilterResult,
    GroupPlacement,
    NodeInfo,
    PlaceGroup,
    PostFilterResult,
    PreemptionPlan,
    PreFilterResult,
    SignFragment,
    StillFits,
)

if TYPE_CHECKING:
    from kubesched.cache.nodetable import NodeTable


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


class PreFilterMisses(Named):
    """Optional for PreFilter plugins: what the pod lacks when this plugin's PreFilter refused it,
    beyond the status's reasons (which stay kube's words), for explanations ("claim ns/data is
    unbound: ..."). Called with the refusing status; "" when there is nothing to add."""

    def pre_filter_detail(self, state: CycleState, pi: PodInfo, status: Status) -> str:
        raise NotImplementedError


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


class PodGroupPostFilterPlugin(Named):
    """Runs once for a PodGroup its cycle could not place (kube's PodGroupPostFilter: group
    preemption). Success nominates members where room was made; a rejection says why not."""

    def pod_group_post_filter(self, group: Any, members: Sequence[PodInfo], place: PlaceGroup, still_fits: StillFits) -> Status:
        raise NotImplementedError


class PreBindPlugin(Named):
    def pre_bind_pre_flight(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        """Whether PreBind will have work for the pod on the node (kube's PreBindPreFlight, asked
        before Permit's wait): None (Success) if so, SKIP if not, or an error. When any plugin has
        work, the binding cycle nominates the node first, so that others (a cluster autoscaler)
        see where the pod is about to land; PreBind then skips the plugins that answered SKIP. A
        plugin that does not answer is taken to have work."""
        return None

    async def pre_bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Named):
    async def bind(self, state: CycleState, pi: PodInfo, node: str) -> Status | None:
        """Bind, or return SKIP to let the next bind plugin handle the pod."""
        raise NotImplementedError


class PostBindPlugin(Named):
    def post_bind(self, state: CycleState, pi: PodInfo, node: str) -> None:
        raise NotImplementedError


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
