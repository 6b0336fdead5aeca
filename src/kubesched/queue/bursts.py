"""Bursts: pending pods of one owner that ask for the same placement (kubesched's, not kube's).

A Flink job's TaskManagers, a Job's parallel pods, a Deployment scaled from 2 to 200: the pods
arrive within seconds, identical in everything scheduling reads. With a profile whose GroupAssign
plugin places bursts (JointPlacement's `bursts`), the queue hands the scheduler such a burst at
once and burstcycle chooses all of its nodes together. Two pods are of one burst when they have
the same controlling owner and the same *shape*: requests, priority, node selector, affinity,
tolerations, topology spread, volumes, host ports and runtime class, everything a Filter or
Score plugin reads of the pod itself. Labels are not in it: other pods' affinity to them is
checked when each pod is placed, with every Filter run.

Gathering: with a window, a new pod of an owner that has no burst gathering waits up to that
long for its siblings; the burst is released to activeQ when the window ends or the burst is
full. Retries are never held back: only pods on their first attempt gather.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import msgspec

from kubesched.api.podinfo import PodInfo
from kubesched.infra.clock import Timer


@dataclass(frozen=True, slots=True)
class BurstPolicy:
    """A pod's burst: its key (owner and shape), how long a new pod waits for its siblings and
    how many pods one burst holds at most."""

    key: Hashable
    window: float
    limit: int


# The burst a pod belongs to under the current configuration, or None (placed alone).
BurstOf = Callable[[PodInfo], "BurstPolicy | None"]

_encode = msgspec.json.Encoder().encode


def burst_key(pi: PodInfo) -> Hashable | None:
    """The owner and shape two pods must share to be of one burst; None for a pod without a
    controlling owner (a bare pod is its own burst)."""
    pod = pi.pod
    owner = next((ref for ref in pod.metadata.owner_references if ref.controller), None)
    if owner is None:
        return None
    spec = pod.spec
    shape = _encode((
        sorted(pi.requests.items()), pi.priority, spec.preemption_policy, spec.node_selector, spec.affinity,
        spec.tolerations, spec.topology_spread_constraints, spec.volumes, pi.host_ports, spec.runtime_class_name,
        spec.overhead, spec.node_name,
    ))
    return (pi.scheduler_name, pi.namespace, owner.kind, owner.name, owner.uid, shape)


@dataclass(slots=True)
class Gathering:
    """New pods of one burst waiting for their siblings until `timer` fires."""

    timer: Timer | None = None
    pods: dict[str, object] = field(default_factory=dict)  # uid -> QueuedPodInfo
