"""Pods whose extended resources DRA would serve are never bound while kubesched cannot allocate
those: they stay pending, with a message naming the missing part, until DynamicResources serves
extended resources (kube's extendeddynamicresources.go; nodechoice.find_feasible is this module's
one caller). Pods' own ResourceClaims are DynamicResources' (plugins/dynamicresources/).

A pod needs DRA for an extended resource when it requests one that a DeviceClass maps
(api.dra.mapped_resource_names) on the nodes that have none of it allocatable (kube v1.37.2's
shouldDelegateResourceToDRA, DRAExtendedResource GA and locked on). A node whose allocatable has it
(a device plugin's) serves it as before, so the pod is held to those nodes, as a PreFilter that
narrows the nodes does it (the others read `node(s) didn't satisfy plugin(s) [DynamicResources]`),
and refused outright when there are none.

Why here, as a PreFilter of the one node-choice path, and not as a plugin of the profiles: the
guard is a limit of kubesched, not a choice of a profile, so no configuration may leave it out;
and every caller of that path sees the same refusal (the pod's cycle and its FitError, event and
condition, a pod group's member, shadows, explanations' dry run, joint planning). It runs after
the profile's PreFilter plugins, where v1.37.2's default profile runs DynamicResources' PreFilter.

Queueing: the refusal names DynamicResources, so the events that plugin registers for (classes,
slices, claims, nodes) may move the pod when its profile has it; otherwise it waits in the
unschedulable pool until the periodic flush (5 minutes) or an update of the pod itself.

Cost: callers read PodInfo.dra_resources first, so a pod without extended resources pays one read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kubesched.api.validation.field import shown
from kubesched.framework.status import Code, Status

if TYPE_CHECKING:
    from kubesched.api.podinfo import PodInfo
    from kubesched.cache.deviceclasses import DeviceClassIndex
    from kubesched.cache.nodetable import NodeTable

PLUGIN = "DynamicResources"
NAMED_AT_MOST = 5  # claims or resources named in the message; the rest are counted


def check(pi: PodInfo, classes: DeviceClassIndex, table: NodeTable, present: np.ndarray) -> tuple[Status | None, np.ndarray | None]:
    """For a pod with `dra_resources`, among the rows `present`: a refusal (the pod needs DRA on
    every row), or the rows it may go to without DRA when that is fewer than all (else None)."""
    mapped = [(resource, dc) for resource in pi.dra_resources if (dc := classes.class_for(resource)) is not None]
    if not mapped:
        return None, None
    served = present.copy()  # rows whose allocatable has every mapped resource the pod requests
    for resource, _ in mapped:
        column = table.resource_index.get(resource)
        if column is None:
            served[:] = False
            break
        served &= table.allocatable[: table.size, column] > 0
    if not served.any():
        named = [f"extended resource {shown(resource)} of DeviceClass {shown(dc)}" for resource, dc in mapped]
        return _refusal(_listed(named)), None
    if np.array_equal(served, present):
        return None, None
    return None, served


def _refusal(what: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                  (f"pod uses dynamic resource allocation ({what}), which needs the {PLUGIN} plugin: "
                   "kubesched does not implement it yet",), PLUGIN)


def _listed(items: list[str]) -> str:
    if len(items) <= NAMED_AT_MOST:
        return ", ".join(items)
    return ", ".join(items[:NAMED_AT_MOST]) + f" and {len(items) - NAMED_AT_MOST} more"
