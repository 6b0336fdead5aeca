"""Group preemption's reprieve check (kube v1.37's reprieveVictim): with a victim unit put back,
does the group's proposed placement still pass? Each member, in the order the group cycle placed
them, must pass every Filter on its proposed node with the members before it assumed and reserved
there; everything is undone afterwards.

kube runs that check once per victim unit, most important unit first, and stops at the first
member that fails. Most units that cannot be spared sit on a node a member was proposed for, so
this check asks those members first: a member that fails with the members before it assumed
means the placement fails, whichever order the members are checked in, because the ordered check
either stops earlier or reaches that member in exactly that state. The members before it are
then assumed and reserved without their Filters, with the CycleState of their last passing check
(kube reserves with the state its scheduling pass left, too). Only when those members all pass
does the full ordered check run. Those members need not all be assumed either: a member elsewhere
changes none of its node-local Filters, so it is asked first with only the members proposed for
its own node assumed, and a failure there stands when no PreFilter extension active for it says a
member elsewhere could make it pass (`_fails_alone`). For GangPreemptionBasic (100 members, 1,000
units, every one a victim) that is one Filter run per unit, and no assume, instead of fifty.

A unit on nodes no member is proposed for cannot fail a member whose Filters read only its own
node and its cycle state, unless a PreFilter extension plugin keeping state for the member says
the pod put back may matter (pod anti-affinity or spreading in a domain both nodes share, a
member losing pod affinity's first-pod exemption); when no plugin does, for any member (see
`_out_of_reach`), the unit is spared without a check (GangPreemptionBasic with ten 10-pod gangs:
900 of each gang's 1,000 units).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Status
from kubesched.observe.record import DecisionRecord

if TYPE_CHECKING:
    from kubesched.cache.cache import Cache
    from kubesched.framework.runtime import Framework
    from kubesched.infra.clock import Clock
    from kubesched.scheduler.nodechoice import NodeChoice


class CheckHost(Protocol):
    """What the check uses of the scheduler (the group cycle's host): a member's cycle on one
    node, assume and Reserve, and their undoing."""

    cache: Cache
    clock: Clock

    def schedule_member(
        self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, within: np.ndarray | None = None
    ) -> NodeChoice: ...

    def assume_and_reserve(self, fwk: Framework, state: CycleState, pi: PodInfo, record: DecisionRecord, node: str) -> Status | None: ...

    def unreserve_and_forget(self, fwk: Framework, state: CycleState, pi: PodInfo, node: str) -> None: ...


class ReprieveCheck:
    """The `still_fits` a group's PodGroupPostFilter is handed, for one post-filter run."""

    def __init__(self, sched: CheckHost, fwk: Framework) -> None:
        self.sched = sched
        self.fwk = fwk
        self.passed: dict[str, CycleState] = {}  # member uid: the state of its last passing check

    def __call__(self, proposed: Sequence[tuple[PodInfo, str]], added: Sequence[tuple[int, PodInfo]]) -> bool:
        table = self.sched.cache.table
        changed = {table.name_of(row) for row, _ in added}
        suspects = {i for i, (_, node) in enumerate(proposed) if node in changed}
        if suspects:
            undecided = set()
            for i in sorted(suspects):
                verdict = self._fails_alone(proposed, i)
                if verdict is None:
                    undecided.add(i)
                elif verdict:
                    return False
            if undecided and not self._run(proposed, undecided):
                return False
        if not suspects and self._out_of_reach(proposed, added):
            return True
        return self._run(proposed, None)

    def _out_of_reach(self, proposed: Sequence[tuple[PodInfo, str]], added: Sequence[tuple[int, PodInfo]]) -> bool:
        """Whether pods put back on nodes no member is proposed for cannot change any member's
        verdict. Every member passed before; its Filters read its own node and its cycle state
        (the invariant the pod dry run's batching rests on), and the cycle state changes with
        pods elsewhere only through the PreFilter plugins with AddPod/RemovePod extensions active
        for it: each of those must find every pod put back harmless where it is
        (`harmless_elsewhere`). A pod put back with required pod anti-affinity could bring a
        skipped InterPodAffinity back for a member: then the full check runs."""
        fwk, cache = self.fwk, self.sched.cache
        anti = cache.pods.with_required_anti_affinity
        if any(pi.uid in anti for _, pi in added):
            return False
        index = cache.table.index
        for pi, node in proposed:
            state = self.passed.get(pi.uid)
            if state is None:
                return False
            own = index[node]
            for plugin in fwk.active_prefilter_extensions(state):
                if not all(plugin.harmless_elsewhere(state, pi, q, row, own) for row, q in added):
                    return False
        return True

    def _fails_alone(self, proposed: Sequence[tuple[PodInfo, str]], i: int) -> bool | None:
        """Whether member `i` fails with the members before it assumed, asked with only those
        proposed for its own node assumed: True when it fails there and no active PreFilter
        extension says a member elsewhere could make it pass (`cannot_help_elsewhere`); False when
        it passes there (undecided: the full check follows); None when this cannot tell (a member
        on its node without a passing check yet, or one elsewhere that might help). A member
        elsewhere changes no node-local Filter, and a plugin skipped for the member passes every
        node whatever it would count. For GangPreemptionBasic (one 100-pod gang, every unit a
        victim sharing a member's node) that is one assume instead of fifty per unit."""
        sched, fwk = self.sched, self.fwk
        table = sched.cache.table
        pi, node = proposed[i]
        own = table.index.get(node)
        if own is None:
            return True
        before_here = [q for q, n in proposed[:i] if n == node]
        here = [(st, q) for q in before_here if (st := self.passed.get(q.uid)) is not None]
        elsewhere = [(q, row) for q, n in proposed[:i] if n != node and (row := table.index.get(n)) is not None]
        if len(here) < len(before_here) or len(elsewhere) + len(before_here) < i:
            return None
        now = sched.clock.now()
        made: list[tuple[CycleState, PodInfo]] = []
        try:
            for st, q in here:
                record = DecisionRecord(q.key, fwk.name, 0, now, len(table), q.uid)
                if sched.assume_and_reserve(fwk, st, q, record, node) is not None:
                    sched.unreserve_and_forget(fwk, st, q, node)
                    return None
                made.append((st, q))
            state = CycleState()
            record = DecisionRecord(pi.key, fwk.name, 0, now, len(table), pi.uid)
            if self._passes_on(state, pi, node, own, record):
                return False
            for plugin in fwk.active_prefilter_extensions(state):
                if not all(plugin.cannot_help_elsewhere(state, pi, q, row, own) for q, row in elsewhere):
                    return None
            return True
        finally:
            for st, q in reversed(made):
                sched.unreserve_and_forget(fwk, st, q, node)

    def _passes_on(self, state: CycleState, pi: PodInfo, node: str, row: int, record: DecisionRecord) -> bool:
        """Whether the member passes every Filter on its proposed node (row), asked of that node
        alone with a fresh PreFilter into `state`."""
        only = np.zeros(self.sched.cache.table.size, dtype=bool)
        only[row] = True
        return self.sched.schedule_member(self.fwk, state, pi, record, only).node == node

    def _run(self, proposed: Sequence[tuple[PodInfo, str]], checked: set[int] | None) -> bool:
        """The members in order up to the last one `checked` (every one, when None): each checked
        member must pass every Filter on its node; the others are assumed with the state of their
        last passing check (checked too, when they have none yet). False at the first failure."""
        sched, fwk = self.sched, self.fwk
        table = sched.cache.table
        upto = len(proposed) if checked is None else max(checked) + 1
        now, nodes = sched.clock.now(), len(table)
        made: list[tuple[CycleState, PodInfo, str]] = []
        try:
            for i, (pi, node) in enumerate(proposed[:upto]):
                row = table.index.get(node)
                if row is None:
                    return False
                state = self.passed.get(pi.uid) if checked is not None and i not in checked else None
                fresh = state is None
                record = DecisionRecord(pi.key, fwk.name, 0, now, nodes, pi.uid)
                if state is None:
                    state = CycleState()
                    if not self._passes_on(state, pi, node, row, record):
                        return False
                if sched.assume_and_reserve(fwk, state, pi, record, node) is not None:
                    sched.unreserve_and_forget(fwk, state, pi, node)
                    return False
                made.append((state, pi, node))
                if fresh:
                    self.passed[pi.uid] = state
            return True
        finally:
            for state, pi, node in reversed(made):
                sched.unreserve_and_forget(fwk, state, pi, node)
