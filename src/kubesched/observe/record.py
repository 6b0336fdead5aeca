"""Decision records: what every scheduling cycle decided and why, kept compactly.

A record holds counts and a few top scores, never per-node arrays, so recording
every cycle costs microseconds. It feeds the kube-format failure message, the
events and the metrics, and the latest record per pod is what the simulator's report
gives as the reason a pod stayed pending.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ScoredNode = tuple[str, int, tuple[tuple[str, int, int, int], ...]]  # as DecisionRecord.top


@dataclass(slots=True)
class TopScores:
    """A cycle's best scored nodes as plain lists, best first: what a record keeps of the scores.
    Every scoring cycle makes one and few are ever read, so the per-plugin tuples of
    DecisionRecord.top are only built when asked for."""

    nodes: list[str]
    totals: list[int]
    plugins: tuple[str, ...]
    weights: tuple[int, ...]
    raw: list[list[int]]  # per node, per plugin: the Score plugin's own score
    weighted: list[list[int]]  # per node, per plugin: normalized score times weight

    def expand(self) -> list[ScoredNode]:
        return [
            (node, int(total), tuple((name, int(r), int(w) // weight, int(w))
                                     for name, r, w, weight in zip(self.plugins, raw, weighted, self.weights, strict=True)))
            for node, total, raw, weighted in zip(self.nodes, self.totals, self.raw, self.weighted, strict=True)
        ]

    def margin(self, chosen: str | None) -> tuple[int | None, str | None]:
        """score_margin over these nodes, without expanding them."""
        return _lead(self.nodes, self.totals, self.weighted, self.plugins, chosen)


@dataclass(slots=True)
class DecisionRecord:
    pod: str
    profile: str
    attempt: int
    time: float
    nodes_total: int
    uid: str = ""  # the pod object's uid: a pod recreated under the same name is another pod
    feasible: int = 0
    scored: int = 0
    # (plugin, reason, nodes): why nodes were rejected, first failing plugin per node.
    rejections: list[tuple[str, str, int]] = field(default_factory=list)
    # The best scored nodes, kept compact; `top` expands them when something reads them.
    scored_top: TopScores | None = None
    chosen: str | None = None
    message: str = ""
    nominated: str | None = None
    victims: tuple[str, ...] = ()
    result: str = ""  # scheduled | unschedulable | error
    duration: float = 0.0
    # What shadow profiles (scheduler/shadow.py) decided for the same pod on the same snapshot.
    shadow: tuple[Any, ...] = ()
    # Placed on the node a joint plan chose for its burst of this many pods (burstcycle); 0: alone.
    jointly: int = 0

    @property
    def top(self) -> list[ScoredNode]:
        """Best nodes, best first (the chosen one among them): (node, total, ((plugin, raw score,
        normalized score, weighted score), ...)); the weighted scores sum to the total."""
        return self.scored_top.expand() if self.scored_top is not None else []

    def as_dict(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "profile": self.profile,
            "attempt": self.attempt,
            "time": self.time,
            "result": self.result,
            "nodes_total": self.nodes_total,
            "feasible": self.feasible,
            "scored": self.scored,
            "rejections": [{"plugin": p, "reason": r, "nodes": n} for p, r, n in self.rejections],
            "top": [
                {"node": node, "score": total,
                 "plugins": {p: {"raw": raw, "normalized": norm, "weighted": w} for p, raw, norm, w in parts}}
                for node, total, parts in self.top
            ],
            "chosen": self.chosen,
            "message": self.message,
            "nominated": self.nominated,
            "victims": list(self.victims),
            "duration_ms": round(self.duration * 1000, 3),
            **({"shadow": [d.as_dict() for d in self.shadow]} if self.shadow else {}),
            **({"placed_jointly_with": self.jointly} if self.jointly else {}),
        }


class Recorder:
    """Keeps the latest record of each pod that still exists and a bounded history of recent cycles.

    A scheduler runs for months while pods come and go by the million, so `latest` holds only
    live pods: the scheduler calls `forget` with the uid when a pod is deleted or reaches a
    terminal phase. Records are looked up by namespace/name (what a user asks about) but
    forgotten by uid, since a delete may arrive when nothing else remembers the pod's name
    (after a bind that failed because the pod was already gone, say).
    """

    # Recent cycles kept for inspection. A record costs about 1.5 kB (rejections, top nodes with
    # their plugin scores), so the window is a few MB at most.
    def __init__(self, history: int = 1000) -> None:
        self.latest: dict[str, DecisionRecord] = {}
        self.recent: deque[DecisionRecord] = deque(maxlen=history)
        self._key_of: dict[str, str] = {}  # uid -> namespace/name, for records that have a uid

    def add(self, record: DecisionRecord) -> None:
        previous = self.latest.get(record.pod)
        if previous is not None and previous.uid and previous.uid != record.uid:
            self._key_of.pop(previous.uid, None)  # replaced by a new pod of the same name
        self.latest[record.pod] = record
        if record.uid:
            self._key_of[record.uid] = record.pod
        self.recent.append(record)

    def forget(self, uid: str) -> None:
        """The pod with this uid is gone: its latest record goes (the recent history keeps it)."""
        key = self._key_of.pop(uid, None)
        if key is None:
            return
        record = self.latest.get(key)
        if record is not None and record.uid == uid:
            del self.latest[key]


def score_margin(top: Sequence[ScoredNode], chosen: str | None) -> tuple[int | None, str | None]:
    """The chosen node's lead over the best other scored node, and the score plugin whose
    weighted score gave it the most of that lead. (None, None) without another node to compare
    with; (0, None) for a tie, broken at random."""
    plugins = [part[0] for part in top[0][2]] if top else []
    return _lead([e[0] for e in top], [e[1] for e in top], [[part[3] for part in e[2]] for e in top], plugins, chosen)


def _lead(nodes: Sequence[str], totals: Sequence[int], weighted: Sequence[Sequence[int]], plugins: Sequence[str],
          chosen: str | None) -> tuple[int | None, str | None]:
    """score_margin's work over parallel lists. Runs after every scoring cycle, so it is plain
    loops: the nodes' plugin lists come from one cycle and are in the same order."""
    mine = runner = -1
    for i, node in enumerate(nodes):
        if node == chosen and mine < 0:
            mine = i
        elif runner < 0 or totals[i] > totals[runner]:
            runner = i
    if mine < 0 or runner < 0:
        return None, None
    margin = int(totals[mine] - totals[runner])
    if margin <= 0:
        return margin, None
    best, lead = None, 0
    for name, ours, theirs in zip(plugins, weighted[mine], weighted[runner], strict=False):
        if best is None or ours - theirs > lead:
            best, lead = name, int(ours - theirs)
    return margin, best
