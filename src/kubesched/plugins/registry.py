"""The in-tree registry: every plugin kubesched ships, by name (kube's NewInTreeRegistry).

It lives with the plugins, not in framework/, so the framework does not import every plugin;
config parsing and the scheduler use it only when the caller passes no registry of its own.
"""

from __future__ import annotations

from kubesched.framework.interface import Plugin
from kubesched.framework.registry import Registry
from kubesched.plugins.capacityscheduling import CapacityScheduling
from kubesched.plugins.celfilter import CELFilter
from kubesched.plugins.celscore import CELScore
from kubesched.plugins.coscheduling import Coscheduling
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.gangscheduling import GangScheduling
from kubesched.plugins.hotvalue import HotValue
from kubesched.plugins.imagelocality import ImageLocality
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.jointplacement import JointPlacement
from kubesched.plugins.loadaware import LoadAware
from kubesched.plugins.loadvariationriskbalancing import LoadVariationRiskBalancing
from kubesched.plugins.multidimensionalscore import MultiDimensionalScore
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.noderesourcesbalancedallocation import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesourcesfit import NodeResourcesFit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.plugins.podgrouppodscount import PodGroupPodsCount
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.plugins.resultannotations import SimulatorResultAnnotations
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.slaqueuesort import SLAQueueSort
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.plugins.targetloadpacking import TargetLoadPacking
from kubesched.plugins.tenantovercommit import TenantOvercommit
from kubesched.plugins.topologyplacementgenerator import TopologyPlacementGenerator
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumerestrictions import VolumeRestrictions
from kubesched.plugins.volumezone import VolumeZone

IN_TREE: list[type[Plugin]] = [
    PrioritySort,
    SchedulingGates,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    VolumeRestrictions,
    NodeVolumeLimits,
    VolumeBinding,
    VolumeZone,
    PodTopologySpread,
    InterPodAffinity,
    DynamicResources,
    DefaultPreemption,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
    NodeDeclaredFeatures,
    GangScheduling,
    TopologyPlacementGenerator,
    PodGroupPodsCount,
    JointPlacement,
    LoadAware,
    TargetLoadPacking,
    LoadVariationRiskBalancing,
    MultiDimensionalScore,
    HotValue,
    SLAQueueSort,
    SimulatorResultAnnotations,
    CELFilter,
    CELScore,
    # scheduler-plugins' gangs and quotas (scheduling.x-k8s.io), and kubesched's per-tenant overcommit.
    Coscheduling,
    CapacityScheduling,
    TenantOvercommit,
]


def in_tree_registry() -> Registry:
    """A new registry of every in-tree plugin (a new one each time: resolving `module:Class` adds to it)."""
    return Registry(IN_TREE)
