"""The declared features of component-helpers v0.37.2 (its nodedeclaredfeatures/features registry),
each with the rule that says whether scheduling a pod needs it, read from the pod's spec alone.

A node declares a feature when its kubelet has it on (and, for some, its container runtime can do
it); a pod whose spec uses the feature may only run on such a node. Most features only matter to a
pod's updates (an in-place resize of this or that), never to where it is placed: their rule for
scheduling says no. Nothing here is copied: each rule is kubesched's own reading of upstream's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kubesched.api.objects import Container, PodSpec

Version = tuple[int, int, int]  # major, minor, patch


@dataclass(frozen=True, slots=True)
class Feature:
    """A declared feature: its name (the name nodes declare), whether scheduling a pod needs it,
    and the last version of the scheduler for which it still matters to scheduling (None: every
    version; past it, every node is assumed to have it)."""

    name: str
    needed_for_scheduling: Callable[[PodSpec], bool]
    max_version: Version | None = None


def _all_containers(spec: PodSpec) -> Iterator[Container]:
    yield from spec.containers
    yield from spec.init_containers
    yield from spec.ephemeral_containers


def never(spec: PodSpec) -> bool:
    """A feature of a pod's updates only (resizes, DRA node operations, the kubelet's websockets)."""
    return False


def restarts_all_containers(spec: PodSpec) -> bool:
    """RestartAllContainersOnContainerExits: a container or init container with a restart rule
    whose action restarts every container of the pod."""
    return any(
        rule.action == "RestartAllContainers"
        for containers in (spec.containers, spec.init_containers)
        for c in containers
        for rule in c.restart_policy_rules
    )


def user_namespace_with_host_network(spec: PodSpec) -> bool:
    """UserNamespacesHostNetworkSupport: the host's network for a pod in a user namespace."""
    return spec.host_network and spec.host_users is False


def bind_mount_options(spec: PodSpec) -> bool:
    """VolumeBindMountOptions: a volume mount of any container with bind mount options."""
    return any(mount.bind_mount_options for c in _all_containers(spec) for mount in c.volume_mounts)


ALL_FEATURES: tuple[Feature, ...] = (
    Feature("RestartAllContainersOnContainerExits", restarts_all_containers),
    Feature("InPlacePodLevelResourcesVerticalScaling", never),
    Feature("ExtendWebSocketsToKubelet", never),
    Feature("InPlacePodVerticalScalingInitContainers", never),
    Feature("InPlacePodVerticalScalingMemoryBackedVolumes", never),
    Feature("UserNamespacesHostNetworkSupport", user_namespace_with_host_network),
    Feature("DRANodeAllocatableResources", never),
    Feature("VolumeBindMountOptions", bind_mount_options),
    Feature("DRAOptionalNodeOperations", never),
)
