"""A workload's feature gates, for kubesched: the gates kubesched knows are set, the ones that change
nothing kubesched decides are accepted as they are, and a gate that asks for what kubesched lacks
(dynamic resource allocation) refuses the workload with its name."""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.infra import features
from kubesched.tools.perf.source import KUBE_VERSION

# Gates of kube-scheduler v1.37.2 whose setting leaves kubesched's placements unchanged: kubesched's
# API calls are always asynchronous to the cycle (binding cycles, preemption's deletions), and the
# others only change what pods or nodes can carry, not how kubesched reads what they carry.
NO_EFFECT = frozenset({
    "SchedulerAsyncAPICalls", "SchedulerAsyncPreemption", "InPlacePodVerticalScaling",
    "NodeInclusionPolicyInPodTopologySpread", "SchedulerPopFromBackoffQ", "SchedulerQueueingHints",
})
# Gates that, on, need what kubesched does not implement; off, they change nothing here.
NEEDS_MISSING = {
    "DynamicResourceAllocation": "dynamic resource allocation is not implemented in kubesched",
}


# Gates kube-apiserver of the pinned release (v1.37.2) has locked on (GA with LockToDefault): it refuses to start with one of
# them set to false, so a workload that turns one off cannot run on the pinned release's control plane.
LOCKED_ON = frozenset({"NodeDeclaredFeatures", "InPlacePodVerticalScaling", "NodeInclusionPolicyInPodTopologySpread",
                       "DRAExtendedResource"})


def apiserver_refusal(gates: Mapping[str, bool]) -> str | None:
    """Why the pinned release's kube-apiserver refuses the workload's gates, or None."""
    off = sorted(name for name, on in gates.items() if name in LOCKED_ON and not on)
    if off:
        return f"feature gate {off[0]}=false: kube-apiserver {KUBE_VERSION} has it locked to true and refuses to start"
    return None


def parse_for_kubesched(spec: str) -> features.FeatureGates:
    """kubesched_gates' spec as the process's gates. As upstream's scheduler_perf does, a workload
    that turns NodeDeclaredFeatures off is run with kube's v1.36 emulated, where that gate was not
    locked yet; FeatureGateError for anything else wrong."""
    off = f"{features.NODE_DECLARED_FEATURES}=false" in (part.strip() for part in spec.split(","))
    return features.parse(spec, emulated_minor=36 if off else features.CURRENT_MINOR)


def kubesched_gates(gates: Mapping[str, bool]) -> tuple[str, str | None]:
    """(--feature-gates for kubesched, why the workload cannot run or None)."""
    known: list[str] = []
    for name, on in sorted(gates.items()):
        if name in features.KNOWN_GATES:
            known.append(f"{name}={str(on).lower()}")
        elif name in NEEDS_MISSING or name.startswith("DRA"):
            if on:
                return "", f"feature gate {name}: {NEEDS_MISSING.get(name, NEEDS_MISSING['DynamicResourceAllocation'])}"
        elif name not in NO_EFFECT:
            return "", f"feature gate {name} is not known to kubesched"
    return ",".join(known), None
