"""NodeResourcesBalancedAllocation: favour nodes whose resources would be used evenly.

A node's balance is (1 - standard deviation of requested/allocatable over the configured
resources) * 100, 50..100. Since kube 1.37 the score is the change the pod brings to it:
50 + (50 + balance with the pod - balance without it) / 2, so a pod that evens a node out
scores towards 100 and one that skews it towards 50. Unlike NodeResourcesFit's scoring it uses
plain requests (no defaults for best-effort containers), and a pod that requests none of
the resources is not scored at all: otherwise every best-effort pod would look "balanced"
on the same emptiest node and pile up there.

A configured extended resource a DeviceClass maps to DRA counts, on a node with none of it
allocatable, the class's devices on the node and those allocated (kube's DRAExtendedResource,
GA in v1.37.2: plugins/helper/draresources.py); a pod requesting such a resource is not signed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.cache.rowmemo import RowMemo
from kubesched.framework import signers
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, PreScorePlugin, ScorePlugin, SignPlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import MAX_NODE_SCORE, SignFragment
from kubesched.plugins.helper import resourcescoring as rs
from kubesched.plugins.helper.draresources import DeviceTotals, dra_totals, mapped_resources


class NodeResourcesBalancedAllocationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    resources: rs.ScoredResources = Field(default_factory=rs.default_resources)

    @field_validator("resources")
    @classmethod
    def _check_resources(cls, resources: list[rs.ResourceSpec]) -> list[rs.ResourceSpec]:
        seen: set[str] = set()
        for i, r in enumerate(resources):
            if r.name in seen:
                raise ValueError(f"resources[{i}].name: Duplicate value: {r.name!r}")
            seen.add(r.name)
            if r.weight != 1:
                raise ValueError(f"resources[{i}].weight: Invalid value: {r.weight}: must be 1")
        return resources


@dataclass(frozen=True, slots=True)
class _ScoreState:
    requests: np.ndarray
    dra: rs.DraTotals | None = None  # devices standing for the DRA-served scored resources


class NodeResourcesBalancedAllocation(Plugin, PreScorePlugin, ScorePlugin, SignPlugin):
    name = "NodeResourcesBalancedAllocation"
    Args = NodeResourcesBalancedAllocationArgs

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        if pi.dra_resources and mapped_resources(self.handle, pi.dra_resources):
            return None  # kube: "signature disabled when dra extended resources are used in the cluster"
        return [signers.resources(pi)]

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None) -> None:
        super().__init__(args or self.Args(), handle)
        a: NodeResourcesBalancedAllocationArgs = self.args
        self.resource_names = tuple(r.name for r in a.resources)
        self._key = "PreScore" + self.name
        self._scores = RowMemo()
        self._device_totals = DeviceTotals()

    def pre_score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        requests = rs.pod_scoring_requests(pi, self.resource_names, True)
        if not np.count_nonzero(requests):
            return Status(Code.SKIP, plugin=self.name)
        state.write(self._key, _ScoreState(requests, dra_totals(self.handle, self._device_totals, table, self.resource_names)))
        return None

    def score(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        s: _ScoreState | None = state.read(self._key)
        if s is None:
            requests = rs.pod_scoring_requests(pi, self.resource_names, True)
            if not requests.any():
                return np.zeros(len(rows), dtype=np.int64)
            s = _ScoreState(requests, dra_totals(self.handle, self._device_totals, table, self.resource_names))
        requests = s.requests
        if s.dra is not None:
            # Devices and their allocations are no row's state: scored afresh.
            return self._balance_change(table, rows, requests, s.dra)
        # A node's score depends on its row and the pod's requests alone: kept across cycles.
        return self._scores.at(table, requests.tobytes(), lambda where: self._balance_change(table, where, requests), rows)

    def _balance_change(self, table: NodeTable, where: np.ndarray | slice, requests: np.ndarray,
                        dra: rs.DraTotals | None = None) -> np.ndarray:
        weights = (1,) * len(self.resource_names)
        with_pod, without = rs.score_rows_with_and_without(table, where, self.resource_names, weights, requests, True,
                                                           rs.balanced, dra=dra)
        # kube 1.37 scores the change in balance the pod brings: both balances lie in 50..100, so
        # 50 + (50 + with - without) / 2 stays in 50..100; about 75 when the pod changes little.
        half = MAX_NODE_SCORE // 2
        out: np.ndarray = half + (half + with_pod - without) // 2
        return out
