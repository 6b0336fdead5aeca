"""What tests build: Kubernetes objects through fluent builders, typed (`.obj()`) or as the
manifests the simulator and the API server read (`.manifest()`): make_pod, make_node, make_pvc,
make_pv, make_storage_class, make_priority_class, make_namespace, make_pod_group, make_pdb, the DRA
objects (make_device_class, make_resource_claim, make_claim_template); and the small
fakes unit tests run plugins against (fakes.py: a cache holding objects, a handle, recorded
cluster writes, a Framework's collaborators)."""

from builders.cluster import make_namespace, make_pdb, make_pod_group, make_priority_class, make_xk8s_pod_group
from builders.dra import make_claim_template, make_device_class, make_resource_claim, make_resource_slice
from builders.fakes import RecordedWrites, UnitHandle, cache_with, unit_services
from builders.nodes import NodeBuilder, make_node
from builders.pods import PodBuilder, make_pod
from builders.storage import ClaimBuilder, StorageClassBuilder, VolumeBuilder, make_pv, make_pvc, make_storage_class

__all__ = [
    "ClaimBuilder",
    "NodeBuilder",
    "PodBuilder",
    "RecordedWrites",
    "StorageClassBuilder",
    "UnitHandle",
    "VolumeBuilder",
    "cache_with",
    "make_claim_template",
    "make_device_class",
    "make_namespace",
    "make_node",
    "make_pdb",
    "make_pod",
    "make_pod_group",
    "make_priority_class",
    "make_pv",
    "make_pvc",
    "make_resource_claim",
    "make_resource_slice",
    "make_storage_class",
    "make_xk8s_pod_group",
    "unit_services",
]
