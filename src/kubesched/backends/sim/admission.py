"""What the API server does to an object on create, after validating it: its defaults, and the
admission plugins the scheduler's input depends on.

- namespaced objects without a namespace go to "default"; namespaces used but not
  declared are created (a real API server would refuse the object instead); every
  namespace carries the `kubernetes.io/metadata.name` label;
- StorageClasses default to volumeBindingMode Immediate and reclaimPolicy Delete; claims without
  a class get the default class (DefaultStorageClass admission: the newest class annotated
  `storageclass.kubernetes.io/is-default-class: "true"`);
- pods get a uid (derived from namespace/name, so runs are reproducible),
  schedulerName "default-scheduler", restartPolicy "Always", phase "Pending", and the
  DefaultTolerationSeconds tolerations (node.kubernetes.io/not-ready and /unreachable,
  NoExecute, 300s); volume mounts lose their bindMountOptions, a field of the
  VolumeBindMountOptions gate (alpha, off in kube-apiserver v1.37.2), which the API server drops;
- pod-level resources (spec.resources) defaulted from the containers and the pod-level limits
  (api.validation.podlevel), and a workload's pod refused if its defaulted pod level contradicts
  its containers (the API server takes the template and refuses the pods made from it);
- Priority admission: a pod's priorityClassName resolves to the class's value and
  preemptionPolicy; no class name means the globalDefault class (its name is written into
  the pod) or priority 0; an unknown class, or a spec.priority / preemptionPolicy that
  disagrees with the class, is an error. system-cluster-critical (2000000000) and
  system-node-critical (2000001000) always exist. A pod exported from a cluster (it carries
  metadata.resourceVersion or creationTimestamp) with spec.priority set keeps that priority,
  as it would in the cluster;
- nodes without status.allocatable use status.capacity (as the kubelet reports), get
  `pods: 110` if neither says, the labels a kubelet registers with if absent
  (kubernetes.io/hostname, kubernetes.io/os=linux and kubernetes.io/arch=amd64, and the same
  under the deprecated beta.kubernetes.io/os and beta.kubernetes.io/arch keys), and the
  node.kubernetes.io/unschedulable NoSchedule taint when cordoned (spec.unschedulable).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesched.api.objects import Container, Namespace, Node, ObjectMeta, Pod, PodSpec, PriorityClass, Taint, Toleration
from kubesched.api.podgroups import PodGroup
from kubesched.api.podinfo import PodError, make_pod_info
from kubesched.api.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    CLAIM_PENDING,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_BINDING_IMMEDIATE,
    VOLUME_PENDING,
    StorageClass,
    is_default_class,
)
from kubesched.api.validation.cluster import SYSTEM_PRIORITY_CLASSES
from kubesched.api.validation.field import aggregate
from kubesched.api.validation.podclaims import pod_claim_names
from kubesched.api.validation.podlevel import default_pod_level, validate_pod_resources
from kubesched.backends.sim.workloads import FieldError, stable_uid

DEFAULT_SCHEDULER = "default-scheduler"
RUNTIME_CLASS_OVERHEAD = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
DEFAULT_MAX_PODS = "110"
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HOSTNAME_LABEL = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
# Deprecated since v1.14, and still set by v1.37's kubelet: old manifests (the sock-shop demo's
# nodeSelector among them) select on these.
BETA_OS_LABEL = "beta.kubernetes.io/os"
BETA_ARCH_LABEL = "beta.kubernetes.io/arch"
ALWAYS_PRESENT_NAMESPACES = ("default", "kube-system")


class Admission:
    """The admission of one input: the PriorityClasses admitted so far (and the global default),
    the default StorageClass; `disabled` names admission plugins the emulated API server runs
    without (only "Priority" changes anything)."""

    def __init__(self, disabled: frozenset[str] = frozenset()) -> None:
        self.disabled = disabled
        self.classes: dict[str, PriorityClass] = {}
        self.default_class: PriorityClass | None = None
        self.default_storage_class: str | None = None

    # --- priority ------------------------------------------------------------------------------------

    def priority_class(self, pc: PriorityClass) -> None:
        """A PriorityClass created: at most one globalDefault (ValueError naming the first), and its
        defaults."""
        if pc.global_default and self.default_class is not None:
            raise ValueError(
                f"PriorityClass {self.default_class.metadata.name} is already marked as default. Only one default can "
                "exist"
            )
        if pc.global_default:
            self.default_class = pc
        pc.preemption_policy = pc.preemption_policy or "PreemptLowerPriority"
        pc.metadata.uid = pc.metadata.uid or stable_uid("PriorityClass", pc.metadata.name)
        self.classes[pc.metadata.name] = pc

    def priority_classes(self) -> list[PriorityClass]:
        """The classes admitted, and the two built-in ones unless the input defines them."""
        for name, value in SYSTEM_PRIORITY_CLASSES.items():
            if name not in self.classes:
                self.classes[name] = PriorityClass(
                    metadata=ObjectMeta(name=name, uid=stable_uid("PriorityClass", name)),
                    value=value,
                    preemption_policy="PreemptLowerPriority",
                )
        return list(self.classes.values())

    def pod_group_priority(self, pg: PodGroup) -> None:
        """The Priority admission plugin on a PodGroup's create: spec.priority from its class (or
        the global default), and an explicit value that disagrees refused, as the API server does."""
        spec = pg.spec
        if "Priority" in self.disabled:
            return  # the group keeps the priority it was given, as the pods do
        if spec.priority_class_name:
            pc = self.classes.get(spec.priority_class_name)
            if pc is None:
                raise FieldError("spec.priorityClassName", f"no PriorityClass with name {spec.priority_class_name} was found")
            value = pc.value
        elif self.default_class is not None:
            spec.priority_class_name = self.default_class.metadata.name
            value = self.default_class.value
        else:
            value = 0
        if spec.priority is not None and spec.priority != value:
            raise FieldError("spec.priority", f"priority set in the pod group ({spec.priority}) must match the priority computed "
                                              f"({value}) based on the priority class set in the spec")
        spec.priority = value

    def _pod_priority(self, pod: Pod) -> None:
        """The Priority admission plugin, on create."""
        spec = pod.spec
        meta = pod.metadata
        if "Priority" in self.disabled:
            # As an apiserver run with --disable-admission-plugins=Priority (scheduler_perf's): the
            # pod keeps the priority it was given, none if none.
            spec.preemption_policy = spec.preemption_policy or "PreemptLowerPriority"
            return
        if spec.priority is not None and (meta.resource_version or meta.creation_timestamp):
            # An object exported from a cluster was admitted long ago: it keeps its priority even
            # if its class has since changed or gone (as it does in the cluster).
            spec.preemption_policy = spec.preemption_policy or "PreemptLowerPriority"
            return
        if spec.priority_class_name:
            pc = self.classes.get(spec.priority_class_name)
            if pc is None:
                raise FieldError(
                    "spec.priorityClassName", f"no PriorityClass with name {spec.priority_class_name} was found"
                )
            value, policy = pc.value, pc.preemption_policy
        elif self.default_class is not None:
            spec.priority_class_name = self.default_class.metadata.name
            value, policy = self.default_class.value, self.default_class.preemption_policy
        else:
            value, policy = 0, "PreemptLowerPriority"
        if spec.priority is not None and spec.priority != value:
            raise FieldError(
                "spec.priority",
                f"the integer value of priority ({spec.priority}) must not be provided in pod spec; priority "
                f"admission controller computed {value} from the given PriorityClass name",
            )
        if spec.preemption_policy is not None and policy is not None and spec.preemption_policy != policy:
            raise FieldError(
                "spec.preemptionPolicy",
                f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not be provided in pod spec; "
                f"priority admission controller computed {policy} from the given PriorityClass name",
            )
        spec.priority = value
        spec.preemption_policy = policy

    # --- pods and nodes -------------------------------------------------------------------------------

    def pod(self, pod: Pod) -> None:
        """A pod created: its defaults and admission; FieldError naming the field it refuses."""
        meta, spec = pod.metadata, pod.spec
        meta.uid = meta.uid or stable_uid("Pod", meta.namespace, meta.name)
        spec.scheduler_name = spec.scheduler_name or DEFAULT_SCHEDULER
        spec.restart_policy = spec.restart_policy or "Always"
        pod.status.phase = pod.status.phase or "Pending"
        if spec.scheduling_gates and spec.node_name:
            raise FieldError("spec.schedulingGates", "Forbidden: cannot be set when spec.nodeName is set")
        _add_default_tolerations(spec.tolerations)
        _drop_bind_mount_options(spec.containers, spec.init_containers, spec.ephemeral_containers)
        self._pod_priority(pod)
        self._pod_level_resources(spec)
        if spec.overhead and not spec.runtime_class_name:
            # The RuntimeClass admission plugin: overhead comes from a RuntimeClass, never from the
            # user alone. The simulator reads no RuntimeClass objects, so a pod naming one (as pods
            # exported from a cluster do) keeps the overhead it carries.
            raise FieldError("spec.overhead", RUNTIME_CLASS_OVERHEAD)
        try:
            make_pod_info(pod)
        except PodError as exc:
            raise _pod_field_error(pod, exc) from None

    @staticmethod
    def _pod_level_resources(spec: PodSpec) -> None:
        """spec.resources defaulted as the API server defaults it on create, then checked against
        the containers: a workload's template was validated as given, and its pods would be
        refused when the controller creates them."""
        defaulted = default_pod_level(spec)
        if defaulted is None:
            return
        spec.resources = defaulted
        issues = validate_pod_resources(spec, "spec", template=False, claim_names=pod_claim_names(spec.resource_claims))
        if len(issues) == 1:
            raise FieldError(issues[0].path, issues[0].body)
        if issues:
            raise FieldError("", aggregate(issues))

    @staticmethod
    def node(node: Node) -> None:
        """A node registered: what the kubelet reports and the node lifecycle controller taints."""
        # Quantities were validated with the object (validation.validate_node).
        status = node.status
        if not status.allocatable and status.capacity:
            status.allocatable = dict(status.capacity)
        if "pods" not in status.allocatable:
            status.allocatable["pods"] = DEFAULT_MAX_PODS
        _kubelet_labels(node)
        if node.spec.unschedulable and not any(
            t.key == UNSCHEDULABLE_TAINT and t.effect == "NoSchedule" for t in node.spec.taints
        ):
            node.spec.taints.append(Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule"))
        node.metadata.uid = node.metadata.uid or stable_uid("Node", node.metadata.name)

    # --- storage ---------------------------------------------------------------------------------------

    def choose_default_storage_class(self, classes: Iterable[StorageClass]) -> None:
        """The DefaultStorageClass admission plugin's default: the newest class marked
        `storageclass.kubernetes.io/is-default-class: "true"` (by name when times tie)."""
        defaults = [(sc.metadata.creation_timestamp or "", sc.metadata.name) for sc in classes if is_default_class(sc)]
        if defaults:
            newest = max(ts for ts, _ in defaults)
            self.default_storage_class = min(name for ts, name in defaults if ts == newest)

    def storage_object(self, resource: str, obj: Any, namespace: str) -> Any:
        """What the API server sets on create: a uid, a resourceVersion, the kind's defaults."""
        meta = obj.metadata
        meta.namespace = namespace if resource in (PERSISTENT_VOLUME_CLAIM, CSI_STORAGE_CAPACITY) else ""
        meta.uid = meta.uid or stable_uid(obj.kind, meta.namespace, meta.name)
        meta.resource_version = meta.resource_version or "1"
        if resource == STORAGE_CLASS:
            obj.volume_binding_mode = obj.volume_binding_mode or VOLUME_BINDING_IMMEDIATE
            obj.reclaim_policy = obj.reclaim_policy or "Delete"
        elif resource == PERSISTENT_VOLUME_CLAIM:
            obj.spec.volume_mode = obj.spec.volume_mode or "Filesystem"
            if obj.spec.storage_class_name is None and BETA_STORAGE_CLASS_ANNOTATION not in meta.annotations \
                    and self.default_storage_class is not None:
                obj.spec.storage_class_name = self.default_storage_class  # DefaultStorageClass admission
            obj.status.phase = obj.status.phase or CLAIM_PENDING
        elif resource == PERSISTENT_VOLUME:
            obj.spec.volume_mode = obj.spec.volume_mode or "Filesystem"
            obj.spec.persistent_volume_reclaim_policy = obj.spec.persistent_volume_reclaim_policy or "Retain"
            obj.status.phase = obj.status.phase or VOLUME_PENDING
        return obj


# --- namespaces ------------------------------------------------------------------------------------------


def namespace(ns: Namespace) -> Namespace:
    """A Namespace created: its name label and uid."""
    ns.metadata.labels[NAMESPACE_NAME_LABEL] = ns.metadata.name
    ns.metadata.uid = ns.metadata.uid or stable_uid("Namespace", ns.metadata.name)
    return ns


def implicit_namespace(name: str) -> Namespace:
    """A namespace the input uses without declaring it, as if it had been created first."""
    return Namespace(metadata=ObjectMeta(name=name, uid=stable_uid("Namespace", name), labels={NAMESPACE_NAME_LABEL: name}))


def _kubelet_labels(node: Node) -> None:
    """The labels a kubelet registers its node with (pkg/kubelet's initialNode), where the
    manifest lacks them: its hostname, and its OS and architecture under both the stable and
    the deprecated beta keys (it sets both from one value, so a manifest giving either key
    gets the other with the same value; linux/amd64 when it gives neither)."""
    labels = node.metadata.labels
    labels.setdefault(HOSTNAME_LABEL, node.metadata.name)
    for stable, beta, default in ((OS_LABEL, BETA_OS_LABEL, "linux"), (ARCH_LABEL, BETA_ARCH_LABEL, "amd64")):
        value = labels.get(stable, labels.get(beta, default))
        labels.setdefault(stable, value)
        labels.setdefault(beta, value)


def _add_default_tolerations(tolerations: list[Toleration]) -> None:
    """DefaultTolerationSeconds admission: tolerate a not-ready or unreachable node for 300s
    unless the pod already tolerates that taint's NoExecute effect."""
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if any(t.key in ("", key) and t.effect in ("", "NoExecute") for t in tolerations):
            continue
        tolerations.append(
            Toleration(key=key, operator="Exists", effect="NoExecute", toleration_seconds=DEFAULT_TOLERATION_SECONDS)
        )


def _drop_bind_mount_options(*groups: list[Container]) -> None:
    for containers in groups:
        for c in containers:
            for mount in c.volume_mounts:
                mount.bind_mount_options = []


def _pod_field_error(pod: Pod, exc: PodError) -> FieldError:
    text = str(exc)
    prefix = f"pod {pod.key}: "
    if text.startswith(prefix):
        text = text[len(prefix) :]
    path, sep, message = text.partition(": ")
    if sep and " " not in path:
        return FieldError(path, message)
    return FieldError("", text)
