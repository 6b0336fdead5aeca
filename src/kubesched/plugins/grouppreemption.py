"""Group preemption, kube v1.37's workload-aware preemption: DefaultPreemption's PodGroupPostFilter.

For a PodGroup its cycle could not place, the whole cluster is one candidate domain:

1. Eligibility: a member with `preemptionPolicy: Never` makes the whole group ineligible.
2. Ongoing preemption: a member already nominated to a node where a lower-priority pod is being
   deleted by preemption means the room is coming: success, members keep their nominations.
3. Victim units: every pod scheduled with a lower priority than the group's is one, except that
   the scheduled members of a PodGroup with `disruptionMode: all` go (or stay) together. None:
   "No preemption victims found for incoming preemptor".
4. Every candidate is taken off its node and the group algorithm runs once: if the group does
   not fit even then, that is the answer.
5. Candidates are put back one by one while the group's proposed placement still passes every
   Filter with them (the check is the group cycle's, kubesched.scheduler.reprieve); those that
   cannot stay are the victims. The units whose eviction would violate a PodDisruptionBudget are
   tried first, then the others; each kind most important first (higher priority, a group before
   a pod, more pods, earlier start).
6. Victims are evicted (pods held at Permit are rejected instead), each with a Preempted event
   naming the PodGroup, and every member with a proposed node is nominated to it.

"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.podgroups import member_key
from kubesched.framework.handle import Handle
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PlaceGroup, StillFits
from kubesched.plugins.helper.preemption import split_by_budgets, start_time

NO_GROUP_VICTIMS = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"
CANDIDATE_NODE = "cluster"  # kube names the whole-cluster domain's node this in its events


@dataclass(slots=True)
class Unit:
    """Pods that are preempted, or spared, together."""

    pods: list[tuple[int, PodInfo]]  # (row, pod)
    priority: int
    grouped: bool

    def key(self) -> tuple[int, int, int, float]:
        """Ascending: the most important unit first (higher priority, a group before a pod, more
        pods, earlier start), as group preemption spares them."""
        earliest = min(start_time(pi) for _, pi in self.pods)
        return (-self.priority, -int(self.grouped), -len(self.pods), earliest)


def victim_units(handle: Handle, group: PodGroup) -> list[Unit]:
    """The candidate units: scheduled pods of lower priority than the group's, grouped where their
    PodGroup wants them disrupted all together."""
    table: NodeTable = handle.table
    priority = group.spec.priority or 0
    singles: list[Unit] = []
    whole: dict[str, Unit] = {}
    for row in range(table.size):
        if not table.present[row]:
            continue
        for pi in table.pods[row].values():
            key = member_key(pi)
            pg = handle.cache.groups.group(key) if key is not None else None
            mode = pg.spec.disruption_mode if pg is not None else None
            if pg is not None and mode is not None and mode.all is not None:
                unit = whole.setdefault(key or "", Unit([], pg.spec.priority or 0, True))
                unit.pods.append((row, pi))
            elif pi.priority < priority:
                singles.append(Unit([(row, pi)], pi.priority, False))
    return singles + [u for u in whole.values() if u.priority < priority]


def ongoing(handle: Handle, members: Sequence[PodInfo], deleting: Callable[[PodInfo], bool]) -> dict[str, str]:
    """Members nominated to a node where a lower-priority pod is being preempted: their nominations."""
    table = handle.table
    out: dict[str, str] = {}
    found = False
    for pi in members:
        node = pi.pod.status.nominated_node_name
        if not node:
            continue
        out[pi.uid] = node
        row = table.index.get(node)
        if row is not None and any(o.priority < pi.priority and deleting(o) for o in table.pods[row].values()):
            found = True
    return out if found else {}


@dataclass(slots=True)
class Evaluation:
    status: Status
    victims: list[PodInfo] = field(default_factory=list)  # most important first
    proposed: list[tuple[PodInfo, str]] = field(default_factory=list)  # each member's proposed node
    pdb_violations: int = 0  # victims whose eviction violates a PodDisruptionBudget


def evaluate(handle: Handle, group: PodGroup, place: PlaceGroup, still_fits: StillFits) -> Evaluation:
    """Steps 3-5 (step 6 is the caller's)."""
    units = victim_units(handle, group)
    if not units:
        return Evaluation(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_GROUP_VICTIMS,)))
    cache = handle.cache
    # Victims are lifted off the table and the pod index both: the group's cycles compute their
    # PreFilter state (pod affinity, topology spread) afresh from the index.
    taken: dict[str, tuple[int, PodInfo]] = {}
    try:
        for unit in units:
            for row, pi in unit.pods:
                cache.lift(pi, row)
                taken[pi.uid] = (row, pi)
        status, proposed = place()
        if status is not None:
            return Evaluation(status)
        ordered = sorted(units, key=Unit.key)
        violating, others = split_by_budgets(ordered, lambda u: (pi for _, pi in u.pods), handle.cache.pdbs.all())
        given_up: list[Unit] = []
        violations = 0
        for unit, count in [*violating, *((u, 0) for u in others)]:
            for row, pi in unit.pods:
                cache.restore(pi, row)
            if still_fits(proposed, unit.pods):
                for _, pi in unit.pods:
                    del taken[pi.uid]
                continue
            for row, pi in unit.pods:
                cache.lift(pi, row)
            given_up.append(unit)
            violations += count
        victims = [pi for unit in sorted(given_up, key=Unit.key) for _, pi in unit.pods]
        message = f"found a placement for podgroup, preempting {len(victims)} victims"
        return Evaluation(Status(Code.SUCCESS, (message,)), victims, proposed, violations)
    finally:
        for row, pi in taken.values():
            cache.restore(pi, row)
