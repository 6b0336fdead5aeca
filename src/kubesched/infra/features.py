"""Feature gates, as kube components take them (`--feature-gates=GenericWorkload=true,...`).

kube-scheduler's gates are process-wide and set once at start from the command line; so are
kubesched's (`kubesched run|simulate|bench|config validate --feature-gates`, and a simulated
scenario's `kubesched-simulation` ConfigMap). Only the gates that change what kubesched does are
known; their defaults are kube v1.37.2's:

- GenericWorkload (beta, off): the Workload/PodGroup API of scheduling.k8s.io/v1beta1. Pods
  with `spec.schedulingGroup` are scheduled as groups (one PodGroup scheduling cycle, all or
  nothing), PodGroups are watched, and the default profile gains GangScheduling.
- TopologyAwareWorkloadScheduling (alpha, off; needs GenericWorkload): every group is placed
  through candidate placements (a PodGroup's schedulingConstraints.topology key: one per value of
  the label), the successful ones scored; the default profile gains TopologyPlacementGenerator
  and PodGroupPodsCount.
- OpportunisticBatching (beta, on): a pod with the same scheduling signature as the pod placed in
  the cycle before it takes the next best node of that cycle's scoring, re-checked there, instead
  of a whole cycle (framework.batching).
- NodeDeclaredFeatures (GA, locked on): the features a pod needs, inferred from its spec, must be
  among a node's status.declaredFeatures (the NodeDeclaredFeatures plugin, in the default
  profile); a node's declared features changing is a node update event of its own. Turning it off
  is refused as kube refuses it, unless kube's behaviour is emulated at v1.36, where the gate was
  beta and could be turned off (scheduler_perf does so for a workload that turns it off).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace

from kubesched.infra.gostrconv import quote

GENERIC_WORKLOAD = "GenericWorkload"
TOPOLOGY_AWARE = "TopologyAwareWorkloadScheduling"
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"
NOMINATED_FOR_EXPECTATION = "NominatedNodeNameForExpectation"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"

_KNOWN = {GENERIC_WORKLOAD: "generic_workload", TOPOLOGY_AWARE: "topology_aware_workload_scheduling",
          OPPORTUNISTIC_BATCHING: "opportunistic_batching", NODE_DECLARED_FEATURES: "node_declared_features",
          NOMINATED_FOR_EXPECTATION: "nominated_node_name_for_expectation"}
KNOWN_GATES = frozenset(_KNOWN)
# Gates locked to their default (GA with LockToDefault), each with the minor release of kube v1 that
# locked it: below it (an emulated older version), the gate may still be set either way.
LOCKED_SINCE = {NODE_DECLARED_FEATURES: 37}
CURRENT_MINOR = 37  # kube v1.37.2


class FeatureGateError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class FeatureGates:
    generic_workload: bool = False
    topology_aware_workload_scheduling: bool = False
    opportunistic_batching: bool = True
    node_declared_features: bool = True
    # Beta, on: the binding cycle nominates the node when PreBind has work or Permit makes the pod wait.
    nominated_node_name_for_expectation: bool = True

    def describe(self) -> str:
        return ",".join(f"{name}={str(getattr(self, attr)).lower()}" for name, attr in sorted(_KNOWN.items()))


_current = FeatureGates()


def current() -> FeatureGates:
    return _current


# Go's strconv.ParseBool, which kube's --feature-gates uses: these spellings and no others.
_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
             "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def parse(spec: str, base: FeatureGates | None = None, *, emulated_minor: int = CURRENT_MINOR) -> FeatureGates:
    """`A=true,B=false` over `base` (the defaults), in kube's words when it is wrong. A locked gate
    set against its default is refused, as kube refuses it, unless `emulated_minor` (kube's
    emulated version v1.<minor>) is older than the release that locked it."""
    gates = base or FeatureGates()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise FeatureGateError(f"missing bool value for {part}")
        if name not in _KNOWN:
            raise FeatureGateError(f"unrecognized feature gate: {name} (kubesched knows {', '.join(sorted(_KNOWN))})")
        if value not in _GO_BOOLS:
            raise FeatureGateError(
                f"invalid value of {name}={value}, err: strconv.ParseBool: parsing {quote(value)}: "
                "invalid syntax")
        on = _GO_BOOLS[value]
        locked_default = getattr(FeatureGates(), _KNOWN[name])
        if on != locked_default and emulated_minor >= LOCKED_SINCE.get(name, CURRENT_MINOR + 1):
            raise FeatureGateError(
                f"cannot set feature gate {name} to {str(on).lower()}, feature is locked to {str(locked_default).lower()}")
        gates = replace(gates, **{_KNOWN[name]: on})
    if gates.topology_aware_workload_scheduling and not gates.generic_workload:
        raise FeatureGateError(f"{TOPOLOGY_AWARE} is enabled, but depends on features that are disabled: [{GENERIC_WORKLOAD}]")
    return gates


def set_gates(gates: FeatureGates) -> None:
    """Sets the process's gates (the CLI does, once, before loading the configuration)."""
    global _current
    _current = gates


@contextlib.contextmanager
def gates(**values: bool) -> Iterator[FeatureGates]:
    """The gates changed for the block (tests, a simulated scenario's settings)."""
    before = _current
    set_gates(replace(before, **values))
    try:
        yield _current
    finally:
        set_gates(before)
