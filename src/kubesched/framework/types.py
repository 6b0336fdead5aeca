"""What extension points hand each other (kube's framework types): PreFilter's node names, a
Filter's per-row verdicts and the outcome of every Filter, the diagnosis of a pod that fits
nowhere, PostFilter's nomination and preview, pod-group placements, and NodeInfo, the per-node
view of the table for plugins written one node at a time."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.status import Code, Status

if TYPE_CHECKING:
    from kubesched.cache.nodetable import NodeTable


MAX_NODE_SCORE = 100


MIN_NODE_SCORE = 0


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
    # The pods a successful preemption evicts, for the cycle's decision record.
    victims: Sequence[PodInfo] = ()


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


@dataclass(slots=True)
class PreemptionPlan:
    """What a PostFilter plugin would do for a pod that fits nowhere: the node it would nominate
    and the pods it would evict there, or no node and the message saying why it cannot help."""

    node: str | None
    victims: list[PodInfo]
    message: str = ""
    # Those of the victims whose eviction would violate a PodDisruptionBudget.
    violating: list[PodInfo] = field(default_factory=list)


# One part of a pod's scheduling signature: a signer's name and a hashable value (kube's SignFragment).
SignFragment = tuple[str, Hashable]


@dataclass(slots=True)
class GroupPlacement:
    """A set of nodes a pod group may be placed on as a whole (kube's Placement): one topology
    domain, say. `rows` is a mask over the node table."""

    name: str
    rows: np.ndarray


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
