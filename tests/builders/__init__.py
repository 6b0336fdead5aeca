"""What tests build: Kubernetes objects through fluent builders (make_pod, make_node, ...), typed
or as the manifests the simulator reads, and the small fakes unit tests run plugins against
(a cache holding objects, a handle, recorded cluster writes)."""

from builders.cluster import make_namespace, make_pod_group, make_priority_class, make_xk8s_pod_group
from builders.nodes import NodeBuilder, make_node
from builders.pods import PodBuilder, make_pod
from builders.storage import ClaimBuilder, StorageClassBuilder, VolumeBuilder, make_pv, make_pvc, make_storage_class
from builders.units import RecordedWrites, UnitHandle, cache_with, unit_services

__all__ = [
    "ClaimBuilder",
    "StorageClassBuilder",
    "VolumeBuilder",
    "make_pv",
    "make_pvc",
    "make_storage_class",
    "NodeBuilder",
    "PodBuilder",
    "RecordedWrites",
    "UnitHandle",
    "cache_with",
    "make_namespace",
    "make_node",
    "make_pod",
    "make_pod_group",
    "make_priority_class",
    "make_xk8s_pod_group",
    "unit_services",
]
