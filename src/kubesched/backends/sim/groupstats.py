"""What a run did to pod groups: partial-gang pod-seconds and how long groups waited.

- Partial-gang pod-seconds: for every gang, the pod-seconds its pods ran before minCount of them
  first ran together (a Flink job with half its TaskManagers holds them and does nothing); a
  gang that never got there, all of them. Members ending one by one after the job ran are not
  counted: that is the job finishing, not waiting.
- Group wait: from a group's first member's creation to the moment minCount of its members run
  together (for a basic group, one); a group that never gets there waits until the run ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.podgroups import PodGroup


@dataclass(slots=True)
class GroupStats:
    groups: int = 0
    started: int = 0  # reached minCount running at least once
    partial_gang_pod_seconds: float = 0.0
    group_wait_p50: float = 0.0
    group_wait_p99: float = 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"groups": self.groups, "started": self.started, "partial_gang_pod_seconds": self.partial_gang_pod_seconds,
                "group_wait_p50": self.group_wait_p50, "group_wait_p99": self.group_wait_p99}


def group_stats(
    pods: Iterable[Pod],
    groups: Mapping[str, PodGroup],
    created: Mapping[str, float],
    bound: Mapping[str, float],
    ended: Mapping[str, float],
    end: float,
) -> GroupStats:
    """`created`, `bound`, `ended`: virtual times by pod uid (a pod still running ends at `end`)."""
    members: dict[str, list[Pod]] = {}
    for pod in pods:
        sg = pod.spec.scheduling_group
        if sg is not None and sg.pod_group_name:
            members.setdefault(f"{pod.metadata.namespace}/{sg.pod_group_name}", []).append(pod)
    out = GroupStats()
    waits: list[float] = []
    for key, group_pods in members.items():
        pg = groups.get(key)
        if pg is None:
            continue
        out.groups += 1
        need = pg.min_count
        first = min(created.get(p.metadata.uid, end) for p in group_pods)
        # +1 at a bind, -1 at the end: the running count over time.
        steps = sorted([(bound[p.metadata.uid], 1) for p in group_pods if p.metadata.uid in bound]
                       + [(ended.get(p.metadata.uid, end), -1) for p in group_pods if p.metadata.uid in bound])
        running, last, started_at = 0, first, None
        for t, delta in steps:
            if started_at is None and 0 < running < need and pg.is_gang:
                out.partial_gang_pod_seconds += running * (t - last)
            running += delta
            last = t
            if started_at is None and running >= need:
                started_at = t
        if started_at is not None:
            out.started += 1
        waits.append((started_at if started_at is not None else end) - first)
    if waits:
        out.group_wait_p50 = round(float(np.percentile(waits, 50)), 3)
        out.group_wait_p99 = round(float(np.percentile(waits, 99)), 3)
    out.partial_gang_pod_seconds = round(out.partial_gang_pod_seconds, 1)
    return out
