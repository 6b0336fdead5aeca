"""Pods placed too recently for the usage metrics to show them: the answer to the herd effect.

Metrics trail reality by the scrape interval, the rate window and the refresh interval (30 to
60 s in practice). A burst scheduled inside that gap would all see the same cold node. So every
pod placed on a node is remembered with the time it was placed, and until the node's newest
sample is at least `settle_time` younger than that, the pod counts on the node with an estimate
of its usage: a factor of its request or limit, or what it is already seen using if that is
more (with `podQueries` configured). The per-node sums come from one `np.bincount` over the recent placements, never a
loop over nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from kubesched.api.podinfo import CPU, MEMORY, PodInfo
from kubesched.api.quantity import QuantityError, resource_value
from kubesched.usage.args import EstimationArgs


@dataclass(frozen=True, slots=True)
class PodFootprint:
    """What the estimators need of a pod: requests and limits of its running containers.
    A limit of 0 means some container has none (unbounded)."""

    cpu_request: int
    cpu_limit: int
    memory_request: int
    memory_limit: int


def _limit_sum(pi: PodInfo, resource: str) -> int:
    total = 0
    for c in pi.pod.spec.containers:
        raw = c.resources.limits.get(resource)
        if raw is None:
            return 0
        try:
            total += resource_value(resource, raw)
        except QuantityError:
            return 0  # the request path has already reported the pod's bad quantities
    return total


def footprint(pi: PodInfo) -> PodFootprint:
    cached = pi.extra.get("usage.footprint")
    if cached is None:
        cached = PodFootprint(
            pi.requests.get(CPU, 0), _limit_sum(pi, CPU), pi.requests.get(MEMORY, 0), _limit_sum(pi, MEMORY)
        )
        pi.extra["usage.footprint"] = cached
    return cached


def estimate(fp: PodFootprint, args: EstimationArgs) -> tuple[float, float]:
    """Koordinator's estimate: factor * max(request, limit), the default when the pod sets neither."""
    top_cpu = max(fp.cpu_request, fp.cpu_limit)
    top_mem = max(fp.memory_request, fp.memory_limit)
    cpu = top_cpu * args.cpu_factor if top_cpu else float(args.default_cpu_millis)
    mem = top_mem * args.memory_factor if top_mem else float(args.default_memory_bytes)
    return cpu, mem


def scheduled_at(pi: PodInfo, now: float, wall_now: float) -> float:
    """When a pod bound by someone else was placed, on the scheduler's clock: its PodScheduled
    condition's transition time, shifted from wall time. Without one: long ago (not fresh)."""
    for cond in pi.pod.status.conditions:
        if cond.type == "PodScheduled" and cond.status == "True" and cond.last_transition_time:
            try:
                stamp = datetime.fromisoformat(cond.last_transition_time.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return -np.inf
            return now - max(0.0, wall_now - stamp)
    return -np.inf


class FreshPods:
    """Recently placed pods as parallel arrays, one slot per pod; slots are reused."""

    def __init__(self, capacity: int = 256) -> None:
        self.slot: dict[str, int] = {}
        self._free: list[int] = []
        self.size = 0
        self.row = np.zeros(capacity, dtype=np.int64)
        self.placed_at = np.full(capacity, -np.inf)
        self.alive = np.zeros(capacity, dtype=bool)
        # cpu request, cpu limit (millicores), memory request, memory limit (bytes)
        self.amounts = np.zeros((capacity, 4), dtype=np.float64)
        # cpu (millicores) and memory (bytes) the pod was last seen using; 0 until known
        self.observed = np.zeros((capacity, 2), dtype=np.float64)
        self.keys: dict[str, str] = {}  # namespace/name -> uid
        self._key_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.slot)

    def placed(self, pi: PodInfo, row: int, when: float) -> None:
        if when == -np.inf:
            self.removed(pi.uid)
            return
        i = self.slot.get(pi.uid)
        if i is None:
            i = self._take()
            self.slot[pi.uid] = i
            self.keys[pi.key] = pi.uid
            self._key_of[pi.uid] = pi.key
            self.observed[i] = 0.0
        fp = footprint(pi)
        self.row[i] = row
        self.placed_at[i] = when
        self.alive[i] = True
        self.amounts[i] = (fp.cpu_request, fp.cpu_limit, fp.memory_request, fp.memory_limit)

    def removed(self, uid: str) -> None:
        i = self.slot.pop(uid, None)
        if i is not None:
            self.keys.pop(self._key_of.pop(uid, ""), None)
            self.alive[i] = False
            self._free.append(i)

    def forget_before(self, when: float) -> None:
        """Drops pods placed before `when`: every sample from now on includes them."""
        old = self.alive[: self.size] & (self.placed_at[: self.size] < when)
        if not old.any():
            return
        gone = set(np.flatnonzero(old).tolist())
        for uid in [u for u, i in self.slot.items() if i in gone]:
            self.removed(uid)

    def _take(self) -> int:
        if self._free:
            return self._free.pop()
        if self.size == len(self.alive):
            grow = len(self.alive)
            self.row = np.concatenate([self.row, np.zeros(grow, dtype=np.int64)])
            self.placed_at = np.concatenate([self.placed_at, np.full(grow, -np.inf)])
            self.alive = np.concatenate([self.alive, np.zeros(grow, dtype=bool)])
            self.amounts = np.concatenate([self.amounts, np.zeros((grow, 4))])
            self.observed = np.concatenate([self.observed, np.zeros((grow, 2))])
        self.size += 1
        return self.size - 1

    def observe(self, cpu: dict[str, float], memory: dict[str, float]) -> None:
        """What the tracked pods are seen using, by namespace/name (millicores, bytes)."""
        for key, uid in self.keys.items():
            i = self.slot[uid]
            self.observed[i] = (cpu.get(key, self.observed[i, 0]), memory.get(key, self.observed[i, 1]))

    def not_yet_sampled(self, sampled_at: np.ndarray, settle_time: float) -> np.ndarray:
        """Slots of pods the node's newest sample may not show: placed after it, or less than
        `settle_time` before it. `sampled_at` is per table row (-inf: no sample)."""
        n = self.size
        alive = self.alive[:n]
        rows = self.row[:n]
        in_table = rows < len(sampled_at)
        cutoff = np.full(n, np.inf)
        cutoff[in_table] = sampled_at[rows[in_table]] - settle_time
        return np.flatnonzero(alive & (self.placed_at[:n] >= cutoff))

    def estimated_per_row(self, slots: np.ndarray, args: EstimationArgs, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Estimated cpu (millicores) and memory (bytes) of the given slots, summed per row."""
        if slots.size == 0:
            zero = np.zeros(rows)
            return zero, zero.copy()
        a = self.amounts[slots]
        top_cpu = np.maximum(a[:, 0], a[:, 1])
        top_mem = np.maximum(a[:, 2], a[:, 3])
        cpu = np.where(top_cpu > 0, top_cpu * args.cpu_factor, float(args.default_cpu_millis))
        mem = np.where(top_mem > 0, top_mem * args.memory_factor, float(args.default_memory_bytes))
        # Koordinator's rule: never less than what the pod is seen using.
        seen = self.observed[slots]
        cpu = np.maximum(cpu, seen[:, 0])
        mem = np.maximum(mem, seen[:, 1])
        r = self.row[slots]
        return np.bincount(r, weights=cpu, minlength=rows)[:rows], np.bincount(r, weights=mem, minlength=rows)[:rows]
