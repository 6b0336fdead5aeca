"""kube-scheduler v1.37.2's default plugins (kube's apis/config/v1/default_plugins.go), as far as
kubesched has them, and the plugin names a configuration may not enable."""

from __future__ import annotations

from kubesched.infra import features

# kube-scheduler's v1 default MultiPoint set, in its order, with its score weights, before its
# feature gates add to it (below).
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
    """The default MultiPoint set under the process's feature gates, as kube v1.37.2 builds it:
    NodeDeclaredFeatures appended (its gate is locked on), DynamicResources just before
    DefaultPreemption with weight 2 (DynamicResourceAllocation is GA: deallocating an idle claim
    comes before evicting a pod), then GangScheduling with GenericWorkload, then
    TopologyPlacementGenerator and PodGroupPodsCount with TopologyAwareWorkloadScheduling."""
    gates = features.current()
    plugins = list(DEFAULT_PLUGINS)
    if gates.node_declared_features:
        plugins.append(("NodeDeclaredFeatures", None))
    preemption = next(i for i, (name, _) in enumerate(plugins) if name == "DefaultPreemption")
    plugins.insert(preemption, ("DynamicResources", 2))
    if gates.generic_workload:
        plugins.append(("GangScheduling", None))
    if gates.topology_aware_workload_scheduling:
        plugins += [("TopologyPlacementGenerator", None), ("PodGroupPodsCount", 1)]
    return tuple(plugins)


# kube-scheduler plugins kubesched does not have yet: named, they get a clear message instead of
# "unknown plugin". None today.
UNSUPPORTED_PLUGINS: frozenset[str] = frozenset()


# Plugins that kubescheduler.config.k8s.io/v1 itself refuses (removed cloud volume limits).
REMOVED_PLUGINS = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})
