"""The simulation annotations (`sim.kubesched.io/...`): when objects arrive, how long pods run,
how many copies a Pod or Node document stands for, and what pods and nodes really use; on a
Pod, on a workload, or on a workload's pod template (the template's win). Durations are a
number of seconds ("90", "2.5") or Go-style ("30s", "5m", "1h30m"):

- `sim.kubesched.io/arrival`: when the pod is created, in virtual time (default 0); on a
  storage object (a PersistentVolume, claim, StorageClass...), when that is created.
- `sim.kubesched.io/duration`: how long the pod runs once bound; it then Succeeds and frees
  its resources. Without it a pod runs forever. Meant for Jobs' pods (batch work that
  finishes); on other workloads the finished pod is not replaced.
- `sim.kubesched.io/arrival-interval`: stagger a workload's pods: replica i arrives at
  arrival + i * interval (default 0: all at once).
- `sim.kubesched.io/count`: on a Pod or a Node only: that many copies. Copies are named
  `<generateName><5 chars>` or, with a fixed name, `<name>-<i>`. This is how a scenario
  declares "100 nodes like this" or "500 pods like this" (scheduler_perf's createNodes /
  createPods) without 100 documents.
- `sim.kubesched.io/usage-cpu`, `sim.kubesched.io/usage-memory`: what the pod really uses
  once running, e.g. `steady:800m`, `steady:60%` (of its request), `diurnal:500m,amplitude=0.5,
  period=1h`, `bursty:300m,peak=1500m,duty=0.2,mean=5m`, `steady:uniform(300m,3)` (drawn per
  pod from the seed). Default: its requests. The grammar is in backends.sim.usagemodel.
- `sim.kubesched.io/background-cpu`, `sim.kubesched.io/background-memory`: on a Node only: load
  that kubesched does not schedule (system daemons, other tenants), same grammar, percents of
  the node's allocatable; `steady:uniform(5%,60%)` with `count` gives uneven copies. Default: none.
- `sim.kubesched.io/nodes`, `sim.kubesched.io/device-count`: on a ResourceSlice only: the slice
  stamped onto every Node the label selector matches, each device standing for `device-count`
  devices (a device inventory stated briefly: backends.sim.deviceinventory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kubesched.api.durations import parse_duration_or_seconds
from kubesched.backends.sim.clusterinput import quoted
from kubesched.backends.sim.usagemodel import UsageError, UsageSpec, parse_usage
from kubesched.backends.sim.workloads import SIM_PREFIX, FieldError

SIM_ARRIVAL = "sim.kubesched.io/arrival"
SIM_DURATION = "sim.kubesched.io/duration"
SIM_ARRIVAL_INTERVAL = "sim.kubesched.io/arrival-interval"
SIM_COUNT = "sim.kubesched.io/count"
SIM_USAGE_CPU = "sim.kubesched.io/usage-cpu"
SIM_USAGE_MEMORY = "sim.kubesched.io/usage-memory"
SIM_BACKGROUND_CPU = "sim.kubesched.io/background-cpu"
SIM_BACKGROUND_MEMORY = "sim.kubesched.io/background-memory"
SIM_NODES = "sim.kubesched.io/nodes"
SIM_DEVICE_COUNT = "sim.kubesched.io/device-count"
SIM_USAGE = (SIM_USAGE_CPU, SIM_USAGE_MEMORY)
SIM_BACKGROUND = (SIM_BACKGROUND_CPU, SIM_BACKGROUND_MEMORY)
SIM_INVENTORY = (SIM_NODES, SIM_DEVICE_COUNT)
SIM_ANNOTATIONS = frozenset({SIM_ARRIVAL, SIM_DURATION, SIM_ARRIVAL_INTERVAL, SIM_COUNT, *SIM_USAGE, *SIM_BACKGROUND,
                             *SIM_INVENTORY})


def seconds(value: str, where: str) -> float:
    """A duration: a number of seconds ("90", "2.5") or Go-style ("30s", "5m", "1h30m")."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration_or_seconds(text)
        except ValueError as exc:
            raise FieldError(where, f"invalid duration {quoted(value)}: {exc}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise FieldError(where, f"invalid duration {quoted(value)}: must be a non-negative number of seconds or a "
                                "duration like 30s, 5m, 1h30m")
    return seconds


@dataclass(slots=True)
class Timing:
    """When an object's pods (or copies) arrive and how long they run."""

    arrival: float = 0.0
    duration: float | None = None
    interval: float = 0.0
    count: int | None = None

    def arrival_of(self, ordinal: int) -> float:
        return self.arrival + ordinal * self.interval


def timing(sim: dict[str, tuple[str, str]]) -> Timing:
    """The timing the simulation annotations (value, where) ask for."""
    out = Timing()
    if SIM_ARRIVAL in sim:
        out.arrival = seconds(*sim[SIM_ARRIVAL])
    if SIM_DURATION in sim:
        out.duration = seconds(*sim[SIM_DURATION])
    if SIM_ARRIVAL_INTERVAL in sim:
        out.interval = seconds(*sim[SIM_ARRIVAL_INTERVAL])
    if SIM_COUNT in sim:
        out.count = count(*sim[SIM_COUNT])
    return out


def count(value: str, where: str) -> int:
    """A `sim.kubesched.io/count` annotation's value."""
    try:
        count = int(value.strip())
    except ValueError:
        raise FieldError(where, f"invalid count {quoted(value)}: must be a whole number") from None
    if count < 0:
        raise FieldError(where, f"invalid count {quoted(value)}: must be greater than or equal to 0")
    return count


def usage_specs(sim: dict[str, tuple[str, str]], keys: tuple[str, str]) -> tuple[UsageSpec | None, UsageSpec | None]:
    """The (cpu, memory) usage models named by `keys` among the simulation annotations."""
    out: list[UsageSpec | None] = []
    for key, resource in zip(keys, ("cpu", "memory"), strict=True):
        if key not in sim:
            out.append(None)
            continue
        value, where = sim[key]
        try:
            out.append(parse_usage(value, resource))
        except UsageError as exc:
            raise FieldError(where, f"invalid value {quoted(value)}: {exc}") from None
    return out[0], out[1]


def misplaced(annotations: Any, where: str, *, node: bool = False) -> list[str]:
    """Warnings for the simulation annotations among `annotations` (at `where`) that the simulator
    does not know, or that do not apply to the kind (`node`: a Node's)."""
    out: list[str] = []
    if not isinstance(annotations, dict):
        return out
    for key in annotations:
        if not isinstance(key, str) or not key.startswith(SIM_PREFIX):
            continue
        prefix = f"{where}.annotations[{key}]"
        if key not in SIM_ANNOTATIONS:
            known = ", ".join(sorted(SIM_ANNOTATIONS))
            out.append(f"{prefix}: unknown simulation annotation (known: {known})")
        elif key in SIM_INVENTORY:
            out.append(f"{prefix}: ignored: applies to ResourceSlices (a device inventory stamped onto nodes)")
        elif node and key in SIM_USAGE:
            alt = SIM_BACKGROUND[SIM_USAGE.index(key)]
            out.append(f"{prefix}: ignored: usage applies to pods; a Node's load not from its pods is {alt}")
        elif not node and key in SIM_BACKGROUND:
            alt = SIM_USAGE[SIM_BACKGROUND.index(key)]
            out.append(f"{prefix}: ignored: background load applies to Nodes; a pod's usage is {alt}")
    return out
