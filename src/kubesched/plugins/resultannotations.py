"""SimulatorResultAnnotations: publish each attempt's results on the pod, in the annotations
kube-scheduler-simulator's debuggable scheduler writes, so that its users' tools (and its web
front end) read kubesched's decisions.

Off unless a profile enables it (at postBind, where it does nothing itself):

    profiles:
    - schedulerName: kubesched
      plugins:
        postBind:
          enabled: [{name: SimulatorResultAnnotations}]

Its presence makes the framework keep every plugin's verdict per node for that profile's cycles
(framework.detail) and the scheduler write them when an attempt ends: a failed attempt at once,
a placed pod when its binding cycle ends. Written under kube-scheduler-simulator.sigs.k8s.io/:
prefilter-result-status, prefilter-result, filter-result ({node: {plugin: "passed" | reason}},
only for the nodes each plugin ran on), postfilter-result, prescore-result, score-result
({node: {plugin: raw score}}), finalscore-result ({node: {plugin: normalized x weight}}),
reserve-result, permit-result, permit-result-timeout, prebind-result, bind-result, selected-node.

Cost: a copy of the alive mask and codes per Filter plugin and a pod write per attempt, for that
profile only. The kube backend writes with `patch` on pods, which deploy/rbac.yaml does not grant:
apply deploy/examples/result-annotations-rbac.yaml with it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kubesched.api.podinfo import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import Plugin, PostBindPlugin
from kubesched.plugins.helper.args import refuse_args

NAME = "SimulatorResultAnnotations"


class SimulatorResultAnnotations(Plugin, PostBindPlugin):
    name: ClassVar[str] = NAME
    wants_cycle_detail: ClassVar[bool] = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        refuse_args(NAME, args)
        super().__init__(None, handle)

    def post_bind(self, state: CycleState, pi: PodInfo, node: str) -> None:
        return None  # the scheduler writes the results when the binding cycle ends
