"""A workload's feature gates, for kubesched: the gates kubesched knows are set, the ones that change
nothing kubesched decides are accepted as they are, DRA's gates are accepted at kube's default (the
only value kubesched runs), and anything else refuses the workload with the gate's name."""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.infra import features
from kubesched.tools.perf.source import KUBE_VERSION

# Gates of kube-scheduler v1.37.2 whose setting leaves kubesched's placements unchanged: kubesched's
# API calls are always asynchronous to the cycle (binding cycles, preemption's deletions), and the
# others only change what pods or nodes can carry, or who may write a claim's status, not how
# kubesched reads what they carry.
NO_EFFECT = frozenset({
    "SchedulerAsyncAPICalls", "SchedulerAsyncPreemption", "InPlacePodVerticalScaling",
    "NodeInclusionPolicyInPodTopologySpread", "SchedulerPopFromBackoffQ", "SchedulerQueueingHints",
    "DRAResourceClaimGranularStatusAuthorization",
})

# DRA's gates with their defaults in kube v1.37.2 (pkg/features/kube_features.go; for
# DRAFractionalCapacityRange the default of a binary without a raised minimum compatibility version).
# kubesched has no switch for any of them: it always does what kube does with each at its default, so
# a workload may set one to that value, and a workload that sets another is refused.
DRA_DEFAULTS: Mapping[str, bool] = {
    "DynamicResourceAllocation": True, "DRAAdminAccess": True, "DRAConsumableCapacity": True,
    "DRADerivedAttributes": False, "DRADeviceBindingConditions": True, "DRADeviceCompatibilityGroups": False,
    "DRADeviceTaintRules": True, "DRADeviceTaints": True, "DRAExtendedResource": True,
    "DRAFractionalCapacityRange": False, "DRAListTypeAttributes": False, "DRANodeAllocatableResources": False,
    "DRAOptionalNodeOperations": False, "DRAPartitionableDevices": True, "DRAPartitionableDevicesType": False,
    "DRAPrioritizedList": True, "DRAResourceClaimDeviceStatus": True, "DRAResourcePoolStatus": False,
    "DRASchedulerFilterTimeout": True, "DRAWorkloadResourceClaims": False,
}


# Gates kube-apiserver of the pinned release (v1.37.2) has locked on (GA with LockToDefault): it refuses to start with one of
# them set to false, so a workload that turns one off cannot run on the pinned release's control plane.
LOCKED_ON = frozenset({"NodeDeclaredFeatures", "InPlacePodVerticalScaling", "NodeInclusionPolicyInPodTopologySpread",
                       "DynamicResourceAllocation", "DRAAdminAccess", "DRAExtendedResource", "DRAPrioritizedList",
                       "DRAResourceClaimDeviceStatus"})


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
        elif name in DRA_DEFAULTS:
            default = DRA_DEFAULTS[name]
            if on != default:
                return "", (f"feature gate {name}={str(on).lower()}: kubesched has no switch for it and always runs as "
                            f"kube-scheduler {KUBE_VERSION} does with its default ({str(default).lower()})")
        elif name not in NO_EFFECT:
            return "", f"feature gate {name} is not known to kubesched"
    return ",".join(known), None
