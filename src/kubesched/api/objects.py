"""Typed views of the Kubernetes objects the scheduler reads.

msgspec Structs decode API JSON and manifest dicts several times faster than
the official client's models and name the exact field that is wrong. Only the
fields the scheduler needs are declared; unknown fields are ignored, so these
types read any real object. Every field has a default, Go's zero value: the API server's decoder
requires none (a missing weight is 0, for validation to refuse, not a decode error).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

Quantity = str | int | float
# Go's int32 / int64 fields: a number outside them cannot be decoded by the API server, so it is a
# decode error here too, naming the field (and never reaches int64 numpy columns or scoring).
Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
# intstr.IntOrString: an int32 or a string (a percentage, "50%").
IntOrString = Int32 | str
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class OwnerReference(_Obj):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(_Obj):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    annotations: dict[str, str] = msgspec.field(default_factory=dict)
    owner_references: list[OwnerReference] = msgspec.field(default_factory=list)
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    # Read for ResourceClaims (DynamicResources adds the delete-protection finalizer before it
    # writes an allocation); kept whole so a write of the object does not drop them.
    finalizers: list[str] = msgspec.field(default_factory=list)


# --- selectors and affinity -------------------------------------------------


class LabelSelectorRequirement(_Obj):
    key: str = ""
    operator: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class LabelSelector(_Obj):
    match_labels: dict[str, str] = msgspec.field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = msgspec.field(default_factory=list)


class NodeSelectorRequirement(_Obj):
    key: str = ""
    operator: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class NodeSelectorTerm(_Obj):
    match_expressions: list[NodeSelectorRequirement] = msgspec.field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = msgspec.field(default_factory=list)


class NodeSelector(_Obj):
    node_selector_terms: list[NodeSelectorTerm] = msgspec.field(default_factory=list)


class PreferredSchedulingTerm(_Obj):
    weight: Int32 = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_Obj):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = msgspec.field(
        default_factory=list
    )


class PodAffinityTerm(_Obj):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = msgspec.field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = msgspec.field(default_factory=list)
    mismatch_label_keys: list[str] = msgspec.field(default_factory=list)


class WeightedPodAffinityTerm(_Obj):
    weight: Int32 = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_Obj):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = msgspec.field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = msgspec.field(
        default_factory=list
    )


class Affinity(_Obj):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(_Obj):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: Int64 | None = None


class TopologySpreadConstraint(_Obj):
    max_skew: Int32 = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = msgspec.field(default_factory=list)


# --- pods ---------------------------------------------------------------------


class ContainerClaim(_Obj):
    """core/v1 ResourceClaim: a container's (or the pod's) use of one of the pod's resource claims,
    all of it or one request's result."""

    name: str = ""
    request: str = ""


class ResourceRequirements(_Obj):
    requests: dict[str, Quantity] = msgspec.field(default_factory=dict)
    limits: dict[str, Quantity] = msgspec.field(default_factory=dict)
    # None when absent: at the pod level even an empty list is refused (kube checks for non-nil).
    claims: list[ContainerClaim] | None = None


class ContainerPort(_Obj):
    container_port: Int32 = 0
    host_port: Int32 = 0
    host_ip: str = msgspec.field(default="", name="hostIP")
    protocol: str = "TCP"
    name: str = ""


class EnvVar(_Obj):
    name: str = ""


class VolumeMount(_Obj):
    name: str = ""
    mount_path: str = ""
    # Read by NodeDeclaredFeatures (VolumeBindMountOptions; the API server drops it while that gate is off).
    bind_mount_options: list[str] = msgspec.field(default_factory=list)


class PersistentVolumeClaimVolumeSource(_Obj):
    claim_name: str = ""
    read_only: bool = False


class EphemeralVolumeSource(_Obj):
    # A PersistentVolumeClaimTemplate (metadata and spec), read as api.storage types where needed.
    volume_claim_template: dict[str, Any] | None = None


class GCEPersistentDiskVolumeSource(_Obj):
    pd_name: str = ""
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(_Obj):
    volume_id: str = msgspec.field(default="", name="volumeID")
    read_only: bool = False


class ISCSIVolumeSource(_Obj):
    iqn: str = ""
    target_portal: str = ""
    read_only: bool = False


class RBDVolumeSource(_Obj):
    monitors: list[str] = msgspec.field(default_factory=list)
    image: str = ""
    pool: str = ""
    read_only: bool = False


class CSIVolumeSource(_Obj):
    driver: str = ""
    read_only: bool | None = None


class Volume(_Obj):
    """A pod volume: its name, and the sources the volume plugins read (PVCs, generic ephemeral
    volumes, and the inline disks VolumeRestrictions checks for conflicts)."""

    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    csi: CSIVolumeSource | None = None


class ContainerRestartRuleOnExitCodes(_Obj):
    operator: str = ""
    values: list[Int32] = msgspec.field(default_factory=list)


class ContainerRestartRule(_Obj):
    """A container's restart rule (ContainerRestartRules); NodeDeclaredFeatures reads its action."""

    action: str = ""
    exit_codes: ContainerRestartRuleOnExitCodes | None = None


class Container(_Obj):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = msgspec.field(default_factory=list)
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = msgspec.field(default_factory=list)
    # Read for validation only (the API server refuses bad values; the scheduler ignores them).
    image_pull_policy: str = ""
    termination_message_policy: str = ""
    env: list[EnvVar] = msgspec.field(default_factory=list)
    volume_mounts: list[VolumeMount] = msgspec.field(default_factory=list)


class PodSchedulingGate(_Obj):
    name: str = ""


class PodResourceClaim(_Obj):
    """An entry of spec.resourceClaims: a name inside the pod for a ResourceClaim of its namespace,
    or for the claim to be made from a ResourceClaimTemplate (exactly one of the two is set)."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSchedulingGroup(_Obj):
    """spec.schedulingGroup (GenericWorkload): the PodGroup of the pod's namespace it belongs to."""

    pod_group_name: str | None = None


class PodOS(_Obj):
    name: str = ""


class PodSpec(_Obj):
    containers: list[Container] = msgspec.field(default_factory=list)
    init_containers: list[Container] = msgspec.field(default_factory=list)
    node_name: str = ""
    scheduler_name: str = ""
    priority: Int32 | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = msgspec.field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = msgspec.field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = msgspec.field(default_factory=list)
    overhead: dict[str, Quantity] = msgspec.field(default_factory=dict)
    runtime_class_name: str | None = None
    scheduling_gates: list[PodSchedulingGate] = msgspec.field(default_factory=list)
    scheduling_group: PodSchedulingGroup | None = None
    host_network: bool = False
    host_users: bool | None = None  # read by NodeDeclaredFeatures (user namespaces with host network)
    restart_policy: str = ""
    active_deadline_seconds: Int64 | None = None
    # Only their volume mounts are read (NodeDeclaredFeatures); the API server refuses them on create.
    ephemeral_containers: list[Container] = msgspec.field(default_factory=list)
    # Pod-level resources (PodLevelResources): the pod's requests in place of its containers' for
    # cpu, memory and hugepages-* (api.podinfo), defaulted on create (api.validation.podlevel).
    resources: ResourceRequirements | None = None
    # Read for validation only (pod-level resources may not be set for a windows pod).
    os: PodOS | None = None
    # Read by the volume plugins (PVCs, ephemeral volumes, inline disks) and validation.
    volumes: list[Volume] = msgspec.field(default_factory=list)
    # Dynamic resource allocation: devices the pod claims (scheduler/draguard.py keeps such pods pending).
    resource_claims: list[PodResourceClaim] = msgspec.field(default_factory=list)
    # Read for validation only.
    dns_policy: str = ""
    dns_config: dict[str, Any] | None = None
    hostname: str = ""
    subdomain: str = ""


class PodCondition(_Obj):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class PodResourceClaimStatus(_Obj):
    """An entry of status.resourceClaimStatuses: the claim the resourceclaim controller made from
    the template of spec.resourceClaims[name]; no resourceClaimName when none was needed."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(_Obj):
    """Which request of the extended-resource claim serves a container's extended resource."""

    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(_Obj):
    """status.extendedResourceClaimStatus: the claim the scheduler made for the pod's extended
    resources served by DRA (DynamicResources' PreBind writes it; devices/extendedclaim.py)."""

    request_mappings: list[ContainerExtendedResourceRequest] = msgspec.field(default_factory=list)
    resource_claim_name: str = ""


class PodStatus(_Obj):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = msgspec.field(default_factory=list)
    start_time: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = msgspec.field(default_factory=list)
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class PodTemplateSpec(_Obj):
    """A workload's pod template: the metadata and spec its pods are made from."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class Pod(_Obj):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# --- nodes --------------------------------------------------------------------


class Taint(_Obj):
    key: str = ""
    effect: str = ""
    value: str = ""


class NodeSpec(_Obj):
    unschedulable: bool = False
    taints: list[Taint] = msgspec.field(default_factory=list)


class ContainerImage(_Obj):
    names: list[str] = msgspec.field(default_factory=list)
    size_bytes: Int64 = 0


class NodeCondition(_Obj):
    type: str = ""
    status: str = ""


class NodeAddress(_Obj):
    type: str = ""
    address: str = ""


class NodeStatus(_Obj):
    addresses: list[NodeAddress] = msgspec.field(default_factory=list)
    capacity: dict[str, Quantity] = msgspec.field(default_factory=dict)
    allocatable: dict[str, Quantity] = msgspec.field(default_factory=dict)
    images: list[ContainerImage] = msgspec.field(default_factory=list)
    conditions: list[NodeCondition] = msgspec.field(default_factory=list)
    # The features the node declares (NodeDeclaredFeatures), sorted, as the kubelet reports them.
    declared_features: list[str] = msgspec.field(default_factory=list)


class Node(_Obj):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


# --- cluster-scoped helpers ---------------------------------------------------


class Namespace(_Obj):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class PriorityClass(_Obj):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: Int32 = 0
    global_default: bool = False
    preemption_policy: str | None = None


# --- what selects pods: PodTopologySpread's system defaults spread by these -----------------


class MapSelectorSpec(_Obj):
    selector: dict[str, str] = msgspec.field(default_factory=dict)
    type: str = ""


class SelectsByMap(_Obj):
    """A Service or ReplicationController, read only for its equality-based selector."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: MapSelectorSpec = msgspec.field(default_factory=MapSelectorSpec)


class LabelSelectorSpec(_Obj):
    selector: LabelSelector | None = None


class SelectsByLabelSelector(_Obj):
    """A ReplicaSet or StatefulSet, read only for its label selector."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: LabelSelectorSpec = msgspec.field(default_factory=LabelSelectorSpec)


class ObjectError(ValueError):
    """An object that does not decode; the message names the object and the field."""


def convert(data: Any, kind: type[msgspec.Struct], what: str) -> Any:
    """Decode a manifest dict into a typed object, naming `what` and the field on failure."""
    try:
        return msgspec.convert(data, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise ObjectError(f"{what}: {exc}") from None
