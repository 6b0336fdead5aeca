"""TenantOvercommit: NodeResourcesFit's fit check with a per-tenant overcommit policy ("tenant A may
oversell 5%, tenant B never"). kubesched's own plugin.

A tenant is a namespace with an ElasticQuota (api.xk8s; the first one seen, as CapacityScheduling
reads them). Its policy is the quota's annotation `kubesched.io/overcommit`:

- absent, "0%" or "never": never more than the node's allocatable (NodeResourcesFit's check);
- "5%": the pod fits if the node's requests with it stay within allocatable + 5% for cpu, memory
  and ephemeral-storage;
- "cpu=10%,memory=5%": per resource (cpu, memory, ephemeral-storage; the others are never
  overcommitted). Percentages are 0 to 100, with at most two decimals.

Extended resources (devices) and the pod count are never overcommitted. Pods of namespaces
without a quota get NodeResourcesFit's check. Rejections read as NodeResourcesFit's ("Insufficient
cpu", "Too many pods"), counted against the allocatable as the tenant may stretch it; a pod larger
than that on an empty node is unresolvable (preemption cannot help).

It replaces NodeResourcesFit at Filter, and NodeResourcesFit keeps scoring:

    plugins:
      multiPoint: {enabled: [{name: TenantOvercommit}]}
      filter: {disabled: [{name: NodeResourcesFit}]}

Args: `ignoredResources` and `ignoredResourceGroups`, as NodeResourcesFit takes them. A policy that
does not parse is logged with the quota and annotation named, and that tenant never overcommits.
Note that a stock kubelet admits a pod only within its node's allocatable (OutOfcpu otherwise):
overcommitting requests needs nodes whose kubelets accept it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kubesched.api.objects import Node
from kubesched.api.podinfo import CPU, EPHEMERAL_STORAGE, MEMORY, PodInfo
from kubesched.api.xk8s import ELASTICQUOTAS, ElasticQuota
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterPlugin, Plugin
from kubesched.framework.types import FilterResult
from kubesched.plugins.helper.hints import checked_new
from kubesched.plugins.noderesourcesfit import (
    UNRESOLVABLE_BIT,
    NodeResourcesFit,
    NodeResourcesFitArgs,
    _describer,
    accounted_requests,
    node_allocatable,
    requested_resources_increased,
)

NAME = "TenantOvercommit"
ANNOTATION = "kubesched.io/overcommit"
OVERCOMMITTABLE = (CPU, MEMORY, EPHEMERAL_STORAGE)
BASIS = 10_000  # percentages are kept in hundredths of a percent
_PERCENT = re.compile(r"^(100(?:\.0{1,2})?|[0-9]{1,2}(?:\.[0-9]{1,2})?)%$")

log = logging.getLogger(__name__)


class PolicyError(ValueError):
    pass


def parse_policy(text: str) -> dict[str, int]:
    """An annotation's value as hundredths of a percent per resource; PolicyError if it is none."""
    value = text.strip()
    if value in ("", "never"):
        return {}
    if "=" not in value:
        return dict.fromkeys(OVERCOMMITTABLE, _percent(value))
    out: dict[str, int] = {}
    for part in value.split(","):
        name, _, pct = part.strip().partition("=")
        name = name.strip()
        if name not in OVERCOMMITTABLE:
            raise PolicyError(f"{name!r} cannot be overcommitted (only {', '.join(OVERCOMMITTABLE)})")
        if name in out:
            raise PolicyError(f"{name} is given twice")
        out[name] = _percent(pct.strip())
    return out


def _percent(text: str) -> int:
    m = _PERCENT.match(text)
    if m is None:
        raise PolicyError(f"{text!r} is not a percentage from 0% to 100% (at most two decimals)")
    whole, _, frac = m.group(1).partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def policy_problem(eq: ElasticQuota) -> str | None:
    """Why the quota's overcommit annotation cannot be used (None if it can, or is absent): the
    message names the quota and the field."""
    raw = eq.metadata.annotations.get(ANNOTATION)
    if raw is None:
        return None
    try:
        parse_policy(raw)
    except PolicyError as exc:
        return f"ElasticQuota {eq.key}: metadata.annotations[{ANNOTATION}]: invalid value {raw!r}: {exc}"
    return None


def stretched(allocatable: np.ndarray, basis_points: np.ndarray) -> np.ndarray:
    """allocatable + allocatable * pct, rounded down, without overflowing int64 on large values."""
    extra: np.ndarray = (allocatable // BASIS) * basis_points + (allocatable % BASIS) * basis_points // BASIS
    out: np.ndarray = allocatable + extra
    return out


class TenantOvercommitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    ignored_resources: list[str] = Field(default_factory=list, alias="ignoredResources")
    ignored_resource_groups: list[str] = Field(default_factory=list, alias="ignoredResourceGroups")


class TenantOvercommit(Plugin, FilterPlugin, EnqueueExtensions):
    name: ClassVar[str] = NAME
    Args: ClassVar[type[BaseModel]] = TenantOvercommitArgs
    watches = (ELASTICQUOTAS,)

    def __init__(self, args: Any, handle: Handle) -> None:
        if isinstance(args, Mapping):
            args = TenantOvercommitArgs.model_validate(args)
        super().__init__(args or TenantOvercommitArgs(), handle)
        if not handle.cache.custom.watching(ELASTICQUOTAS.resource):
            raise ValueError(f"{NAME} reads {ELASTICQUOTAS.name}, which this kubesched does not watch (the watches "
                             "are chosen when it starts, from the profiles' plugins): restart kubesched to enable it")
        self.handle: Handle = handle
        a: TenantOvercommitArgs = self.args
        # NodeResourcesFit's own checks (which resources, in which order, with which reasons).
        self.fit = NodeResourcesFit(NodeResourcesFitArgs(ignoredResources=a.ignored_resources,
                                                         ignoredResourceGroups=a.ignored_resource_groups), handle)
        self._generation = -1
        self._policies: dict[str, dict[str, int]] = {}
        self._reported: set[str] = set()

    # --- the tenants' policies ----------------------------------------------------------------------------

    def policies(self) -> dict[str, dict[str, int]]:
        """Namespace -> hundredths of a percent per resource, rebuilt when the quotas change."""
        custom = self.handle.cache.custom
        generation = custom.generation(ELASTICQUOTAS.resource)
        if generation == self._generation:
            return self._policies
        self._generation = generation
        out: dict[str, dict[str, int]] = {}
        seen: set[str] = set()
        for eq in custom.objects(ELASTICQUOTAS.resource):
            if not isinstance(eq, ElasticQuota) or eq.metadata.namespace in seen:
                continue
            seen.add(eq.metadata.namespace)
            problem = policy_problem(eq)
            if problem is not None:
                if problem not in self._reported:
                    self._reported.add(problem)
                    log.error("%s; the tenant is never overcommitted", problem)
                continue
            policy = parse_policy(eq.metadata.annotations.get(ANNOTATION, ""))
            if any(policy.values()):
                out[eq.metadata.namespace] = policy
        self._policies = out
        return out

    # --- Filter --------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        checks = self.fit.checks(pi)
        n = table.size
        table.request_vector(pi)  # every requested resource gets a column
        cols = np.fromiter((table.resource_index[name] for name in checks.names), dtype=np.intp, count=len(checks.names))
        allocatable = table.allocatable[:n, cols]
        policy = self.policies().get(pi.namespace)
        if policy:
            allocatable = stretched(allocatable, np.array([policy.get(name, 0) for name in checks.names], dtype=np.int64))
        short = checks.amounts > allocatable - table.requested[:n, cols]
        failing = short.any(axis=1) & table.present[:n]
        if not failing.any():
            return None
        bits = np.left_shift(np.int64(1), np.arange(len(cols), dtype=np.int64))
        codes = short.astype(np.int64) @ bits
        too_big = (checks.amounts[1:] > allocatable[:, 1:]).any(axis=1)  # the pod count never is
        codes |= np.where(too_big, UNRESOLVABLE_BIT, 0)
        codes[~failing] = 0
        return FilterResult(codes, _describer(checks.reasons))

    # --- events -------------------------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        fit = self.fit
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.Delete), fit.is_schedulable_after_assigned_pod_delete),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeAllocatable), self._node_changed),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.UpdatePodScaleDown),
                                 fit.is_schedulable_after_assigned_pod_scale_down),
            ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.UpdatePodScaleDown),
                                 fit.is_schedulable_after_target_pod_scale_down),
            ClusterEventWithHint(ClusterEvent(ELASTICQUOTAS.resource, ActionType.All), self._quota_changed),
        ]

    def _node_changed(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """NodeResourcesFit's hint, on the allocatable as the pod's tenant may stretch it."""
        new = checked_new(NAME, Node, old, new)
        requests = accounted_requests(pi)
        allocatable = self._stretched(pi, node_allocatable(new))
        if allocatable.get("pods", 0) < 1 or any(v > allocatable.get(k, 0) for k, v in requests.items()):
            return QueueingHint.QueueSkip
        if old is None or requested_resources_increased(requests, self._stretched(pi, node_allocatable(old)), allocatable):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def _stretched(self, pi: PodInfo, allocatable: dict[str, int]) -> dict[str, int]:
        policy = self.policies().get(pi.namespace) or {}
        out = dict(allocatable)
        for name, bp in policy.items():
            if name in out:
                out[name] = int(stretched(np.array([out[name]], dtype=np.int64), np.array([bp], dtype=np.int64))[0])
        return out

    @staticmethod
    def _quota_changed(pi: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A quota of the pod's namespace added, changed or deleted may change its policy."""
        obj = new if new is not None else old
        if isinstance(obj, ElasticQuota) and obj.metadata.namespace == pi.namespace:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip
