"""kube-scheduler v1.37.2's default plugins (kube's apis/config/v1/default_plugins.go), as far as
kubesched has them, and the plugin names a configuration may not enable."""

from __future__ import annotations

from kubesched.infra import features

# kube-scheduler's v1 default MultiPoint set, in its order, with its score weights, minus the
# plugins kubesched does not implement (DynamicResources, NodeDeclaredFeatures).
DEFAULT_PLUGINS: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)


def default_plugins() -> tuple[tuple[str, int | None], ...]:
    """The default MultiPoint set under the process's feature gates: kube v1.37.2 appends
    GangScheduling when GenericWorkload is on."""
    gates = features.current()
    if gates.topology_aware_workload_scheduling:
        return (*DEFAULT_PLUGINS, ("GangScheduling", None), ("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1))
    if gates.generic_workload:
        return (*DEFAULT_PLUGINS, ("GangScheduling", None))
    return DEFAULT_PLUGINS


# kube-scheduler plugins kubesched does not have yet: named, they get a clear message instead of
# "unknown plugin".
UNSUPPORTED_PLUGINS = frozenset({"DynamicResources", "NodeDeclaredFeatures"})


# Plugins that kubescheduler.config.k8s.io/v1 itself refuses (removed cloud volume limits).
REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
