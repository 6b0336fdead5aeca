"""NodeDeclaredFeatures: a pod that uses a feature only some nodes have goes only to nodes that
declare it (kube's plugins/nodedeclaredfeatures, GA and locked on in v1.37).

PreFilter reads from the pod's spec the declared features it needs (featureset.FeatureRegistry);
a pod that needs none is left alone (Skip). Filter rejects, as UnschedulableAndUnresolvable, every
node whose status.declaredFeatures lacks one of them, the whole table at once from its
declared-features column (cache.declaredfeatures).

Queueing hints, as kube's: a node added, or a node whose declared features changed; the pod itself
updated so that it needs other features. With the NodeDeclaredFeatures gate off (only when kube's
v1.36 is emulated) the plugin does nothing and registers no event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from kubesched.api.objects import Node
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, TARGET_POD, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import EnqueueExtensions, FilterMisses, FilterPlugin, Plugin, PreFilterPlugin, SignPlugin
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult, PreFilterResult, SignFragment
from kubesched.infra import features
from kubesched.plugins.helper.args import refuse_args
from kubesched.plugins.helper.hints import checked_new
from kubesched.plugins.nodedeclaredfeatures.features import Version
from kubesched.plugins.nodedeclaredfeatures.featureset import DEFAULT_REGISTRY, KUBE_VERSION, FeatureRegistry, FeatureSet

NAME = "NodeDeclaredFeatures"
STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't match Pod's required features"
SIGNER = "v1.Pod.Spec.RequiredFeatures()"  # kube's FeaturesSignerName


class NodeDeclaredFeatures(Plugin, PreFilterPlugin, FilterPlugin, FilterMisses, EnqueueExtensions, SignPlugin):
    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None, *,
                 registry: FeatureRegistry = DEFAULT_REGISTRY, version: Version | None = KUBE_VERSION) -> None:
        """`registry` and `version`: the features known and the scheduler's version (tests change them)."""
        refuse_args(NAME, args)
        super().__init__(None, handle)
        self.enabled = features.current().node_declared_features
        self.registry = registry
        self.version = version

    def required(self, pi: PodInfo) -> FeatureSet:
        """The features the pod needs of its node (worked out once per pod object)."""
        cached = pi.extra.get(NAME)
        if isinstance(cached, tuple) and cached[0] is self.registry and cached[1] == self.version:
            wanted: FeatureSet = cached[2]
            return wanted
        wanted = self.registry.required_for_scheduling(pi.pod.spec, self.version)
        pi.extra[NAME] = (self.registry, self.version, wanted)
        return wanted

    # --- PreFilter and Filter -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pi: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        if not self.enabled:
            return None, Status(Code.SKIP, plugin=NAME)
        try:
            wanted = self.required(pi)
        except ValueError as exc:
            return None, Status.error(str(exc), plugin=NAME)
        if not wanted:
            return None, Status(Code.SKIP, plugin=NAME)
        state.write(STATE_KEY, wanted)
        return None, None

    def filter(self, state: CycleState, pi: PodInfo, table: NodeTable) -> FilterResult | None:
        if not self.enabled:
            return None
        wanted = state.read(STATE_KEY)
        if not isinstance(wanted, FeatureSet):
            # kube reads its PreFilter's state or fails the cycle; no PreFilter ran for this pod.
            failure = (Code.ERROR, (f'error reading "{STATE_KEY}" from cycle-state: not found',))
            return FilterResult(np.ones(table.size, dtype=np.uint8), lambda _code: failure)
        declaring = table.declared_features.declaring(wanted.names, table.size)
        if declaring.all():
            return None
        return FilterResult.reject(~declaring, ERR_REASON, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    # --- explanations ---------------------------------------------------------------------------

    def miss_distance(self, state: CycleState, pi: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        """The share of the pod's required features each node does not declare."""
        wanted = self.required(pi).names
        column = table.declared_features
        return np.array([len(column.missing(int(row), wanted)) / max(1, len(wanted)) for row in rows], dtype=float)

    def miss_detail(self, state: CycleState, pi: PodInfo, table: NodeTable, row: int) -> str:
        missing = table.declared_features.missing(row, self.required(pi).names)
        return f"does not declare {', '.join(missing)}" if missing else ""

    # --- OpportunisticBatching ------------------------------------------------------------------

    def sign_pod(self, pi: PodInfo) -> Sequence[SignFragment] | None:
        return [(SIGNER, self.required(pi).flags)]

    # --- events and queueing hints --------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.Add | ActionType.UpdateNodeDeclaredFeature),
                                 self.is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(TARGET_POD, ActionType.Update), self.is_schedulable_after_target_pod_update),
        ]

    def is_schedulable_after_node_change(self, pi: PodInfo, old: Node | None, new: Node | None) -> QueueingHint:
        """Queue for any node added, and for a node whose declared features changed."""
        new = checked_new(NAME, Node, old, new)
        if old is not None and old.status.declared_features == new.status.declared_features:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def is_schedulable_after_target_pod_update(self, pi: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """Queue when the update changed the features the pod needs. A requirement that cannot be
        worked out raises, which the queue takes as Queue (as kube takes a hint's error)."""
        new = checked_new(NAME, PodInfo, old, new)
        if old is None:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip if self.required(old) == self.required(new) else QueueingHint.Queue
