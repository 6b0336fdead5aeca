"""Simulator input: ordinary Kubernetes manifests in, a typed cluster description out.

Point the simulator at files or directories of manifests, the kind `kubectl get -o yaml`
prints or `kubectl apply -f` takes: multi-document YAML, JSON, and `kind: List` (or
PodList, NodeList...) with `items`. Directories are read recursively (*.yaml, *.yml,
*.json, in sorted order; hidden files and directories skipped). Objects may come in any order: PriorityClasses and
Namespaces defined after the pods that use them still apply.

Kinds read: Node, Pod, Namespace, Service (v1), PriorityClass (scheduling.k8s.io),
Deployment, ReplicaSet, StatefulSet (apps), Job (batch), ReplicationController (v1), the storage
the volume plugins read: PersistentVolumeClaim, PersistentVolume (v1), StorageClass, CSINode,
CSIDriver, CSIStorageCapacity, VolumeAttachment (storage.k8s.io), PodGroup and Workload
(scheduling.k8s.io/v1beta1), scheduler-plugins' PodGroup and ElasticQuota (scheduling.x-k8s.io/v1alpha1,
checked against their CRDs' schema: backends.sim.customobjects), and the ConfigMap named
`kubesched-simulation` (below). The simulated cluster runs a stand-in PV controller (see
backends.sim.cluster): it binds claims, provisions WaitForFirstConsumer claims on the node the
scheduler selected, and creates generic ephemeral volumes' claims. Workloads are expanded into the pods their
controllers would create (see backends.sim.workloads). Other kinds, and other ConfigMaps, are
skipped with a warning in ClusterInput.warnings.

What the API server would do on create is done here too:
- namespaced objects without a namespace go to "default"; namespaces used but not
  declared are created (a real API server would refuse the object instead); every
  namespace carries the `kubernetes.io/metadata.name` label;
- StorageClasses default to volumeBindingMode Immediate and reclaimPolicy Delete; claims without
  a class get the default class (DefaultStorageClass admission: the newest class annotated
  `storageclass.kubernetes.io/is-default-class: "true"`);
- pods get a uid (derived from namespace/name, so runs are reproducible),
  schedulerName "default-scheduler", restartPolicy "Always", phase "Pending", and the
  DefaultTolerationSeconds tolerations (node.kubernetes.io/not-ready and /unreachable,
  NoExecute, 300s);
- Priority admission: a pod's priorityClassName resolves to the class's value and
  preemptionPolicy; no class name means the globalDefault class (its name is written into
  the pod) or priority 0; an unknown class, or a spec.priority / preemptionPolicy that
  disagrees with the class, is an error. system-cluster-critical (2000000000) and
  system-node-critical (2000001000) always exist. A pod exported from a cluster (it carries
  metadata.resourceVersion or creationTimestamp) with spec.priority set keeps that priority,
  as it would in the cluster;
- nodes without status.allocatable use status.capacity (as the kubelet reports), get
  `pods: 110` if neither says, the kubelet's kubernetes.io/hostname, kubernetes.io/os=linux
  and kubernetes.io/arch=amd64 labels if absent, and the node.kubernetes.io/unschedulable
  NoSchedule taint when cordoned (spec.unschedulable).

Simulation annotations, on a Pod, on a workload, or on a workload's pod template (the
template's win). Durations are a number of seconds ("90", "2.5") or Go-style ("30s",
"5m", "1h30m"):

- `sim.kubesched.io/arrival`: when the pod is created, in virtual time (default 0); on a
  storage object (a PersistentVolume, claim, StorageClass...), when that is created.
- `sim.kubesched.io/duration`: how long the pod runs once bound; it then Succeeds and frees
  its resources. Without it a pod runs forever. Meant for Jobs' pods (batch work that
  finishes); on other workloads the finished pod is not replaced.
- `sim.kubesched.io/arrival-interval`: stagger a workload's pods: replica i arrives at
  arrival + i * interval (default 0: all at once).
- `sim.kubesched.io/count`: on a Pod or a Node only: that many copies. Copies are named
  `<generateName><5 chars>` or, with a fixed name, `<name>-<i>`. This is how a scenario
  declares "100 nodes like this" or "500 pods like this" (scheduler_perf's createNodes /
  createPods) without 100 documents.
- `sim.kubesched.io/usage-cpu`, `sim.kubesched.io/usage-memory`: what the pod really uses
  once running, e.g. `steady:800m`, `steady:60%` (of its request), `diurnal:500m,amplitude=0.5,
  period=1h`, `bursty:300m,peak=1500m,duty=0.2,mean=5m`, `steady:uniform(300m,3)` (drawn per
  pod from the seed). Default: its requests. The grammar is in backends.sim.usage.
- `sim.kubesched.io/background-cpu`, `sim.kubesched.io/background-memory`: on a Node only: load
  that kubesched does not schedule (system daemons, other tenants), same grammar, percents of
  the node's allocatable; `steady:uniform(5%,60%)` with `count` gives uneven copies. Default: none.

Scenario settings come from a ConfigMap named `kubesched-simulation` (any namespace, at most
one), its `data` keys:

- `scrapeInterval`: how often the simulated node-exporter is scraped (default 15s);
- `featureGates`: kube's feature gates the scenario needs, as `--feature-gates` takes them
  (`GenericWorkload=true` for PodGroups); the command line's come first, these over them;
- `prometheusOutages`: comma-separated virtual-time spans `START-END` (e.g. `10m-12m, 1h-1h5m`)
  during which the simulated Prometheus refuses connections.

Every object is validated as the API server validates it on create (kubesched.api.validation:
names, labels, selectors, affinity, tolerations, spreading, ports, resources, workload specs;
apiVersion required and served), and refused with kubectl's text after the file, document and
object: `pods.yaml: document 3: Pod default/web: The Pod "web" is invalid: spec.containers[0].name:
Invalid value: "Web": ...`. Quantities the scheduler's int64 cannot hold (cpu: 1e30) are refused too.

Errors are ManifestError, one line naming the file, the document (1-based; `item n` inside a
List), the object (kind, namespace/name) and the field. By default the first refused object stops
the load; with keep_going=True it is left out, its line goes to ClusterInput.errors, and the rest
loads (what needs it fails as on the API server: a pod naming a refused PriorityClass is refused
with "no PriorityClass with name ... was found", one in a refused Namespace with `namespaces "x"
not found`). Unreadable files and invalid YAML stay fatal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api import yamlio
from kubesched.api.knownfields import go_nulls, strict_decoding_error, unknown_fields, wrong_type
from kubesched.api.objects import Namespace, Node, ObjectMeta, Pod, PriorityClass, Taint, Toleration
from kubesched.api.podgroups import DisruptionMode, PodGroup, PodGroupStatus
from kubesched.api.podinfo import PodError, make_pod_info, pod_requests
from kubesched.api.quantity import INT64_MAX, parse_duration
from kubesched.api.selectors import Selector
from kubesched.api.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    CLAIM_PENDING,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    STORAGE_KINDS,
    STORAGE_TYPES,
    VOLUME_BINDING_IMMEDIATE,
    VOLUME_PENDING,
    PersistentVolumeClaim,
    StorageClass,
    is_default_class,
)
from kubesched.api.validation import FieldIssue, invalid_object, shown, validate_manifest
from kubesched.api.validation.cluster import SYSTEM_PRIORITY_CLASSES
from kubesched.api.validation.field import invalid
from kubesched.api.validation.meta import name_is_dns_subdomain
from kubesched.backends.sim import limits
from kubesched.backends.sim import workloads as wl
from kubesched.backends.sim.configchanges import ConfigChange, is_config_change, read_change
from kubesched.backends.sim.customobjects import is_custom, read_custom
from kubesched.backends.sim.usage import DEFAULT_SCRAPE_INTERVAL, UsageError, UsageSpec, parse_usage
from kubesched.backends.sim.workloads import FieldError, decode, stable_uid
from kubesched.infra import features

SIM_ARRIVAL = "sim.kubesched.io/arrival"
SIM_DURATION = "sim.kubesched.io/duration"
SIM_ARRIVAL_INTERVAL = "sim.kubesched.io/arrival-interval"
SIM_COUNT = "sim.kubesched.io/count"
SIM_USAGE_CPU = "sim.kubesched.io/usage-cpu"
SIM_USAGE_MEMORY = "sim.kubesched.io/usage-memory"
SIM_BACKGROUND_CPU = "sim.kubesched.io/background-cpu"
SIM_BACKGROUND_MEMORY = "sim.kubesched.io/background-memory"
SIM_USAGE = (SIM_USAGE_CPU, SIM_USAGE_MEMORY)
SIM_BACKGROUND = (SIM_BACKGROUND_CPU, SIM_BACKGROUND_MEMORY)
SIM_ANNOTATIONS = frozenset({SIM_ARRIVAL, SIM_DURATION, SIM_ARRIVAL_INTERVAL, SIM_COUNT, *SIM_USAGE, *SIM_BACKGROUND})
SIM_CONFIGMAP = "kubesched-simulation"
# One manifest file: `kubectl get pods -A -o yaml` of a 10,000-pod cluster is about 60 MiB, and
# reading YAML takes some twenty times the file's size in memory.
MAX_MANIFEST_BYTES = 256 * 2**20
SIM_SETTINGS_KEYS = ("scrapeInterval", "prometheusOutages", "featureGates")

DEFAULT_SCHEDULER = "default-scheduler"
RUNTIME_CLASS_OVERHEAD = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
DEFAULT_MAX_PODS = "110"
DEFAULT_TOLERATION_SECONDS = 300
MAX_GENERATE_NAME_PREFIX = 58
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
ALWAYS_PRESENT_NAMESPACES = ("default", "kube-system")

# kind -> API groups it may come from ("" is core). Anything else is a different kind that
# merely shares the name (a CRD), skipped like unknown kinds.
_GROUPS: dict[str, frozenset[str]] = {
    "Node": frozenset({""}),
    "Pod": frozenset({""}),
    "Namespace": frozenset({""}),
    "Service": frozenset({""}),
    "ReplicationController": frozenset({""}),
    "PriorityClass": frozenset({"scheduling.k8s.io"}),
    "Deployment": frozenset({"apps", "extensions"}),
    "ReplicaSet": frozenset({"apps", "extensions"}),
    "StatefulSet": frozenset({"apps"}),
    "Job": frozenset({"batch"}),
    "PersistentVolumeClaim": frozenset({""}),
    "PersistentVolume": frozenset({""}),
    "StorageClass": frozenset({"storage.k8s.io"}),
    "CSINode": frozenset({"storage.k8s.io"}),
    "CSIDriver": frozenset({"storage.k8s.io"}),
    "CSIStorageCapacity": frozenset({"storage.k8s.io"}),
    "VolumeAttachment": frozenset({"storage.k8s.io"}),
    "PodGroup": frozenset({"scheduling.k8s.io"}),
    "Workload": frozenset({"scheduling.k8s.io"}),
}
# kind -> the API versions a current API server serves it in (others: "no matches for kind").
_SERVED: dict[str, frozenset[str]] = {
    "Node": frozenset({"v1"}),
    "Pod": frozenset({"v1"}),
    "Namespace": frozenset({"v1"}),
    "Service": frozenset({"v1"}),
    "ReplicationController": frozenset({"v1"}),
    "ConfigMap": frozenset({"v1"}),
    "PriorityClass": frozenset({"scheduling.k8s.io/v1"}),
    "Deployment": frozenset({"apps/v1"}),
    "ReplicaSet": frozenset({"apps/v1"}),
    "StatefulSet": frozenset({"apps/v1"}),
    "Job": frozenset({"batch/v1"}),
    "PersistentVolumeClaim": frozenset({"v1"}),
    "PersistentVolume": frozenset({"v1"}),
    "StorageClass": frozenset({"storage.k8s.io/v1"}),
    "CSINode": frozenset({"storage.k8s.io/v1"}),
    "CSIDriver": frozenset({"storage.k8s.io/v1"}),
    "CSIStorageCapacity": frozenset({"storage.k8s.io/v1"}),
    "VolumeAttachment": frozenset({"storage.k8s.io/v1"}),
    # GenericWorkload's API (served when the gate and the beta API are on).
    "PodGroup": frozenset({"scheduling.k8s.io/v1beta1"}),
    "Workload": frozenset({"scheduling.k8s.io/v1beta1"}),
}
_WORKLOADS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "Job", "ReplicationController"})
_NAMESPACED = frozenset({"Pod", "Service", "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "Job",
                         "PersistentVolumeClaim", "CSIStorageCapacity", "PodGroup", "Workload"})
_GENERATE_NAME_KINDS = frozenset({"Pod", "Node"})
_SKIP_HINTS = {
    "DaemonSet": "its pods are not generated; include them as Pods (kubectl get pods -o yaml) to model them",
    "CronJob": "no Jobs are generated; write the Job with a sim.kubesched.io/arrival annotation instead",
}



class ManifestError(ValueError):
    """Input the simulator cannot use; the message names file, document, object and field."""


@dataclass(slots=True)
class SimPod:
    pod: Pod
    # Seconds of virtual time at which the pod is created.
    arrival: float = 0.0
    # Runs this long after binding, then Succeeds and frees its resources; None = forever.
    duration: float | None = None
    # Real usage once running (sim.kubesched.io/usage-*); None = its requests.
    usage_cpu: UsageSpec | None = None
    usage_memory: UsageSpec | None = None


@dataclass
class SimSettings:
    """Scenario-wide settings, from the `kubesched-simulation` ConfigMap."""

    scrape_interval: float = DEFAULT_SCRAPE_INTERVAL
    # Virtual-time spans [start, end) during which the simulated Prometheus refuses queries.
    prometheus_outages: list[tuple[float, float]] = field(default_factory=list)
    feature_gates: str = ""  # as --feature-gates takes them


@dataclass
class ClusterInput:
    nodes: list[Node]
    pods: list[SimPod]
    namespaces: list[Namespace]
    priority_classes: list[PriorityClass]
    # (kind, namespace, name, selector) of Services, ReplicaSets, StatefulSets and
    # ReplicationControllers, for PodTopologySpread's system default constraints.
    workload_selectors: list[tuple[str, str, str, Selector]]
    name: str = ""
    description: str = ""
    warnings: list[str] = field(default_factory=list)
    # With keep_going: one complete line per object refused (file, document, object, field,
    # reason); those objects are left out and everything else loaded.
    errors: list[str] = field(default_factory=list)
    # Node name -> (cpu, memory) background load (sim.kubesched.io/background-*), if any.
    background: dict[str, tuple[UsageSpec | None, UsageSpec | None]] = field(default_factory=dict)
    settings: SimSettings = field(default_factory=SimSettings)
    # Storage objects (event resource, api.storage object, arrival in virtual seconds):
    # StorageClasses first, then the rest in document order, a StatefulSet's claims after its
    # other objects (arriving with its first pod).
    storage: list[tuple[str, Any, float]] = field(default_factory=list)
    # Scheduler configuration changes in virtual time (backends.sim.configchanges), in time order.
    config_changes: list[ConfigChange] = field(default_factory=list)
    # PodGroups (scheduling.k8s.io/v1beta1) and when they are created (sim.kubesched.io/arrival).
    pod_groups: list[tuple[PodGroup, float]] = field(default_factory=list)
    # Custom objects (scheduler-plugins' PodGroups and ElasticQuotas): (event resource, object, arrival).
    custom_objects: list[tuple[str, Any, float]] = field(default_factory=list)


# --- reading files -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Origin:
    file: str
    document: int
    item: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}: document {self.document}"
        return where if self.item is None else f"{where}, item {self.item}"


def _files(paths: Sequence[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(
                f
                for f in path.rglob("*")
                if f.is_file()
                and f.suffix.lower() in (".yaml", ".yml", ".json")
                # Hidden files and directories (.git, .github, editor backups) are not manifests.
                and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise ManifestError(f"{path}: no such file or directory")
    return out


def _documents(path: Path) -> Iterator[tuple[Origin, Any]]:
    name = str(path)
    try:
        text = yamlio.read_text(path, MAX_MANIFEST_BYTES, "manifest file")
    except yamlio.InputFileError as exc:
        raise ManifestError(f"{name}: {exc}") from None
    try:
        if path.suffix.lower() == ".json":
            yield Origin(name, 1), yamlio.load_json(text)
            return
        for index, data in yamlio.load_all(text):
            yield Origin(name, index), data
    except yamlio.YamlError as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        problem = exc.problem if exc.problem.startswith("invalid ") else f"invalid {kind}: {exc.problem}"
        where = f"line {exc.line} column {exc.column}: " if exc.line is not None else ""
        document = f"document {exc.document}: " if exc.document is not None else ""
        raise ManifestError(f"{name}: {document}{where}{problem}") from None


def _objects(origin: Origin, data: Any) -> Iterator[tuple[Origin, dict[str, Any]]]:
    """The objects of one document: the document itself or the items of a List."""
    if data is None:
        return
    if not isinstance(data, dict):
        raise ManifestError(f"{origin}: expected a Kubernetes object (a mapping with apiVersion and kind), "
                            f"got {_type_name(data)}")
    kind = data.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in data:
        items = data["items"]
        if items is None:
            return
        if not isinstance(items, list):
            raise ManifestError(f"{origin}: {_cut(kind)}: items: expected a list, got {_type_name(items)}")
        for i, item in enumerate(items, 1):
            sub = Origin(origin.file, origin.document, i)
            if not isinstance(item, dict):
                raise ManifestError(f"{sub}: expected a Kubernetes object, got {_type_name(item)}")
            yield sub, item
        return
    yield origin, data


def _type_name(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {_quoted(value)}"
    return type(value).__name__


def _cut(text: str) -> str:
    """Unquoted user text (a name, a kind) in a message, cut like validation.shown."""
    return text if len(text) <= 100 else f"{text[:100]}...({len(text) - 100} more)"


def _quoted(value: Any) -> str:
    """A user value in a simulator message (Python quoting), cut like validation.shown."""
    text = repr(value)
    return text if len(text) <= 100 else f"{text[:100]}...({len(text) - 100} more)"


# --- one object ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Doc:
    origin: Origin
    raw: dict[str, Any]
    kind: str
    namespace: str  # "" for cluster-scoped kinds
    name: str  # may be "" for Pods/Nodes with generateName
    meta: ObjectMeta

    def describe(self) -> str:
        # Names are user input of any length until validated: cut them like any echoed value.
        name = _cut(self.name or f"{self.meta.generate_name}*")
        return f"{self.kind} {_cut(self.namespace)}/{name}" if self.namespace else f"{self.kind} {name}"

    def invalid(self, issues: Sequence[FieldIssue]) -> ManifestError:
        """What the API server's validation refused, in kubectl's words."""
        api_version = str(self.raw.get("apiVersion") or "v1")
        return ManifestError(f"{self.origin}: {self.describe()}: {invalid_object(self.kind, self.name, issues, api_version)}")

    def error(self, exc: FieldError | str, prefix: str = "") -> ManifestError:
        if isinstance(exc, str):
            return ManifestError(f"{self.origin}: {self.describe()}: {exc}")
        if prefix:
            exc = exc.under(prefix)
        return ManifestError(f"{self.origin}: {self.describe()}: {exc}")


def _api_group(api_version: Any) -> str | None:
    if not isinstance(api_version, str) or not api_version:
        return None
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _seconds(value: str, where: str) -> float:
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            raise FieldError(where, f"invalid duration {_quoted(value)}: {exc}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise FieldError(where, f"invalid duration {_quoted(value)}: must be a non-negative number of seconds or a "
                                "duration like 30s, 5m, 1h30m")
    return seconds


@dataclass(slots=True)
class _Timing:
    arrival: float = 0.0
    duration: float | None = None
    interval: float = 0.0
    count: int | None = None

    def arrival_of(self, ordinal: int) -> float:
        return self.arrival + ordinal * self.interval


def _timing(sim: dict[str, tuple[str, str]]) -> _Timing:
    out = _Timing()
    if SIM_ARRIVAL in sim:
        out.arrival = _seconds(*sim[SIM_ARRIVAL])
    if SIM_DURATION in sim:
        out.duration = _seconds(*sim[SIM_DURATION])
    if SIM_ARRIVAL_INTERVAL in sim:
        out.interval = _seconds(*sim[SIM_ARRIVAL_INTERVAL])
    if SIM_COUNT in sim:
        out.count = _count(*sim[SIM_COUNT])
    return out


def _count(value: str, where: str) -> int:
    """A `sim.kubesched.io/count` annotation's value."""
    try:
        count = int(value.strip())
    except ValueError:
        raise FieldError(where, f"invalid count {_quoted(value)}: must be a whole number") from None
    if count < 0:
        raise FieldError(where, f"invalid count {_quoted(value)}: must be greater than or equal to 0")
    return count


def _usage_specs(sim: dict[str, tuple[str, str]], keys: tuple[str, str]) -> tuple[UsageSpec | None, UsageSpec | None]:
    """The (cpu, memory) usage models named by `keys` among the simulation annotations."""
    out: list[UsageSpec | None] = []
    for key, resource in zip(keys, ("cpu", "memory"), strict=True):
        if key not in sim:
            out.append(None)
            continue
        value, where = sim[key]
        try:
            out.append(parse_usage(value, resource))
        except UsageError as exc:
            raise FieldError(where, f"invalid value {_quoted(value)}: {exc}") from None
    return out[0], out[1]


def _outages(value: str, where: str) -> list[tuple[float, float]]:
    out = []
    for part in value.split(","):
        text = part.strip()
        if not text:
            continue
        start_text, sep, end_text = text.partition("-")
        if not sep:
            raise FieldError(where, f"invalid outage {_quoted(text)}: write START-END, e.g. 10m-12m")
        start, end = _seconds(start_text, where), _seconds(end_text, where)
        if end <= start:
            raise FieldError(where, f"invalid outage {_quoted(text)}: the end must be after the start")
        out.append((start, end))
    return out


# --- the loader ------------------------------------------------------------------------------


class _Loader:
    def __init__(self, keep_going: bool = False, disabled_admission: frozenset[str] = frozenset()) -> None:
        self.keep_going = keep_going
        self.disabled_admission = disabled_admission
        self.errors: list[str] = []
        self.docs: dict[str, list[_Doc]] = {kind: [] for kind in _GROUPS}
        self.order: list[_Doc] = []
        self.classes: dict[str, PriorityClass] = {}
        self.default_class: PriorityClass | None = None
        self.seen: dict[tuple[str, str, str], Origin] = {}
        self.skipped: dict[str, tuple[int, Origin]] = {}
        self.warnings: list[str] = []
        self.namer = wl.Namer()
        self.generate_counters: dict[tuple[str, str, str], int] = {}
        self.background: dict[str, tuple[UsageSpec | None, UsageSpec | None]] = {}
        self.settings = SimSettings()
        self.settings_origin: Origin | None = None
        # Names of Namespace objects that were refused: what is created in them is refused too.
        self.refused_namespaces: set[str] = set()
        # Node name -> summed requests (and non-zero requests) of the pods bound to it by nodeName.
        self.bound: dict[str, dict[str, int]] = {}
        self.storage: list[tuple[str, Any, float]] = []
        self.default_storage_class: str | None = None
        self.config_changes: list[ConfigChange] = []
        self.pod_groups: list[tuple[PodGroup, float]] = []
        self.custom_docs: list[tuple[_Doc, str, Any]] = []  # read in pass 1, kept in pass 2 (their namespace)

    def refuse(self, exc: ManifestError) -> None:
        """One object is refused: raise, or with keep_going note it and carry on without it."""
        if not self.keep_going:
            raise exc
        self.errors.append(str(exc))

    # pass 1: sort objects by kind, check what every object needs ------------------------------

    def add(self, origin: Origin, raw: dict[str, Any]) -> None:
        try:
            self._add(origin, raw)
        except ManifestError as exc:
            self.refuse(exc)
            meta = raw.get("metadata")
            if raw.get("kind") == "Namespace" and isinstance(meta, dict) and isinstance(meta.get("name"), str):
                self.refused_namespaces.add(meta["name"])

    def _add(self, origin: Origin, raw: dict[str, Any]) -> None:
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ManifestError(f"{origin}: kind: Required value (every object needs apiVersion and kind)")
        api_version = raw.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            # kubectl refuses it before sending: "error validating data: apiVersion not set".
            raise ManifestError(f"{origin}: {_cut(kind)}: apiVersion: Required value (every object needs apiVersion and kind)")
        group = _api_group(api_version)
        meta_raw = raw.get("metadata")
        if (kind == "ConfigMap" and group == "" and isinstance(meta_raw, dict)
                and meta_raw.get("name") == SIM_CONFIGMAP):
            self._simulation_settings(origin, raw)
            return
        if group == "" and is_config_change(raw):
            self._config_change(origin, raw)
            return
        if is_custom(raw):
            self._custom(origin, raw, kind)
            return
        if kind not in _GROUPS or group not in _GROUPS[kind]:
            label = f"{_cut(kind)} ({_cut(api_version)})"
            count, first = self.skipped.get(label, (0, origin))
            self.skipped[label] = (count + 1, first)
            return
        # Best-effort identity for errors found while decoding the metadata itself.
        guess: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}
        guess_ns = str(guess.get("namespace") or "")
        guess_name = str(guess.get("name") or "")
        probe = _Doc(origin, raw, kind, (guess_ns or "default") if kind in _NAMESPACED else "", guess_name,
                     ObjectMeta())
        if api_version not in _SERVED[kind]:
            raise probe.error(f"no matches for kind {shown(kind)} in version {shown(api_version)}")
        # Nulls read as the API server's Go decoder reads them, before anything looks at the object.
        raw = go_nulls(kind, raw)
        meta_raw = raw.get("metadata")
        if meta_raw is not None and not isinstance(meta_raw, dict):
            raise probe.invalid([FieldIssue("metadata", f"expected a mapping, got {_type_name(meta_raw)}", decode=True)])
        try:
            meta: ObjectMeta = decode(meta_raw or {}, ObjectMeta, kind)
        except FieldError as exc:
            path = f"metadata.{exc.field}" if exc.field and not exc.field.startswith("[") else f"metadata{exc.field}"
            raise probe.invalid([FieldIssue(path, exc.message, decode=True)]) from None
        namespace = (meta.namespace or "default") if kind in _NAMESPACED else ""
        doc = _Doc(origin, raw, kind, namespace, meta.name, meta)
        if not meta.name and kind not in _GENERATE_NAME_KINDS:
            raise doc.invalid([FieldIssue("metadata.name", "Required value: name is required")])
        # A value of the wrong type anywhere (read by kubesched or not) is the decoder's error.
        mistyped = wrong_type(kind, raw)
        issues = [FieldIssue(*mistyped, decode=True)] if mistyped else self._validate(doc, meta_raw or {})
        if not any(issue.decode for issue in issues):
            # Strict field validation, as kubectl apply asks for: after decoding, before validation.
            unknown = unknown_fields(kind, raw)
            if unknown:
                issues = [FieldIssue("", strict_decoding_error(unknown), decode=True)]
        if issues:
            raise doc.invalid(issues)
        if meta.name:
            key = (kind, namespace, meta.name)
            if key in self.seen:
                raise doc.error(f"defined twice: first at {self.seen[key]}")
            self.seen[key] = origin
        self.docs[kind].append(doc)
        self.order.append(doc)

    @staticmethod
    def _validate(doc: _Doc, meta_raw: dict[str, Any]) -> list[FieldIssue]:
        """The API server's validation of the object, after its defaulting of the namespace."""
        # The namespace and uid the API server would have set (the uid shows in a Job's selector).
        meta = {**meta_raw, "uid": doc.meta.uid or stable_uid(doc.kind, doc.namespace, doc.name)}
        if doc.namespace:
            meta["namespace"] = doc.namespace
        return validate_manifest({**doc.raw, "metadata": meta})

    def _simulation_settings(self, origin: Origin, raw: dict[str, Any]) -> None:
        meta_raw = raw["metadata"]
        namespace = str(meta_raw.get("namespace") or "default")
        doc = _Doc(origin, raw, "ConfigMap", namespace, SIM_CONFIGMAP, ObjectMeta(name=SIM_CONFIGMAP))
        if self.settings_origin is not None:
            raise doc.error(f"only one {SIM_CONFIGMAP} ConfigMap may be given; the first is at {self.settings_origin}")
        self.settings_origin = origin
        data = raw.get("data")
        if data is None:
            return
        if not isinstance(data, dict):
            raise doc.error(FieldError("data", f"expected a mapping, got {_type_name(data)}"))
        for key, value in data.items():
            where = f"data[{key}]"
            if key not in SIM_SETTINGS_KEYS:
                self.warnings.append(
                    f"{origin}: {doc.describe()}: {where}: unknown setting (known: {', '.join(SIM_SETTINGS_KEYS)})"
                )
                continue
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise doc.error(FieldError(where, f"expected a string, got {_type_name(value)}"))
            try:
                if key == "featureGates":
                    try:
                        features.parse(str(value))
                    except features.FeatureGateError as exc:
                        raise FieldError(where, str(exc)) from None
                    self.settings.feature_gates = str(value)
                elif key == "scrapeInterval":
                    seconds = _seconds(str(value), where)
                    if seconds <= 0:
                        raise FieldError(where, f"invalid duration {_quoted(value)}: must be above 0")
                    self.settings.scrape_interval = seconds
                else:
                    self.settings.prometheus_outages = _outages(str(value), where)
            except FieldError as exc:
                raise doc.error(exc) from None

    def _custom(self, origin: Origin, raw: dict[str, Any], kind: str) -> None:
        """scheduler-plugins' PodGroup or ElasticQuota (backends.sim.customobjects)."""
        meta = raw.get("metadata")
        meta_raw: dict[str, Any] = meta if isinstance(meta, dict) else {}
        namespace = str(meta_raw.get("namespace") or "default")
        doc = _Doc(origin, raw, kind, namespace, str(meta_raw.get("name") or ""), ObjectMeta())
        try:
            resource, obj = read_custom(raw, namespace)
        except ValueError as exc:
            raise doc.error(str(exc)) from None
        doc.meta = obj.metadata
        key = (f"{kind}.{_api_group(raw.get('apiVersion'))}", namespace, doc.name)
        if key in self.seen:
            raise doc.error(f"defined twice: first at {self.seen[key]}")
        self.seen[key] = origin
        obj.metadata.uid = obj.metadata.uid or stable_uid(kind, namespace, doc.name)
        self.custom_docs.append((doc, resource.resource, obj))

    def _config_change(self, origin: Origin, raw: dict[str, Any]) -> None:
        meta = raw["metadata"]
        doc = _Doc(origin, raw, "ConfigMap", str(meta.get("namespace") or "default"), str(meta.get("name") or ""),
                   ObjectMeta(name=str(meta.get("name") or "")))
        arrival = meta["annotations"].get(SIM_ARRIVAL, "0")
        try:
            at = _seconds(str(arrival), f"metadata.annotations[{SIM_ARRIVAL}]")
            self.config_changes.append(read_change(raw, str(origin), at))
        except FieldError as exc:
            raise doc.error(exc) from None
        except ValueError as exc:
            raise doc.error(str(exc)) from None

    # pass 2: build the cluster ----------------------------------------------------------------

    def build(self) -> ClusterInput:
        for label, (count, first) in self.skipped.items():
            kind = label.split(" ", 1)[0]
            hint = _SKIP_HINTS.get(kind, "the simulator does not model this kind")
            noun = "object" if count == 1 else "objects"
            self.warnings.append(f"skipped {count} {noun} of kind {label} (first at {first}): {hint}")
        classes = self._priority_classes()
        self.classes = {pc.metadata.name: pc for pc in classes}
        # At most one: _priority_classes refuses a second globalDefault, as admission does.
        self.default_class = next((pc for pc in classes if pc.global_default), None)
        namespaces: dict[str, Namespace] = {}
        for doc in self.docs["Namespace"]:
            ns: Namespace = self._decode(doc, Namespace)
            ns.metadata.labels[NAMESPACE_NAME_LABEL] = ns.metadata.name
            ns.metadata.uid = ns.metadata.uid or stable_uid("Namespace", ns.metadata.name)
            namespaces[ns.metadata.name] = ns
        # A namespace whose object was refused does not exist: the API server refuses what is
        # created in it (an undeclared namespace, by contrast, is created for the user).
        missing = self.refused_namespaces - namespaces.keys()
        oversized = self._over_run_limits()
        nodes: list[Node] = []
        for doc in self.docs["Node"]:
            try:
                if id(doc) in oversized:
                    raise oversized[id(doc)]
                nodes.extend(self._nodes(doc))
            except ManifestError as exc:
                self.refuse(exc)
        adoption = self._adoption()
        self._storage_classes()
        pods: list[SimPod] = []
        selectors: list[tuple[str, str, str, Selector]] = []
        kept: list[_Doc] = []
        # Document order, so pods arriving at the same time are created in the order written.
        for doc in self.order:
            try:
                if doc.namespace in missing:
                    raise doc.error(f"namespaces {shown(doc.namespace)} not found")
                if id(doc) in oversized:
                    raise oversized[id(doc)]
                self._build_one(doc, adoption, pods, selectors)
            except ManifestError as exc:
                self.refuse(exc)
                continue
            kept.append(doc)
        custom: list[tuple[str, Any, float]] = []
        for doc, resource, obj in self.custom_docs:
            try:
                if doc.namespace in missing:
                    raise doc.error(f"namespaces {shown(doc.namespace)} not found")
                custom.append((resource, obj, self._storage_arrival(doc)))
            except ManifestError as exc:
                self.refuse(exc)
                continue
            kept.append(doc)
        used = {d.namespace for d in kept if d.namespace}
        for name in sorted(used.union(ALWAYS_PRESENT_NAMESPACES) - namespaces.keys()):
            namespaces[name] = Namespace(
                metadata=ObjectMeta(name=name, uid=stable_uid("Namespace", name), labels={NAMESPACE_NAME_LABEL: name})
            )
        return ClusterInput(
            nodes=nodes,
            pods=pods,
            namespaces=list(namespaces.values()),
            priority_classes=classes,
            workload_selectors=selectors,
            warnings=self.warnings,
            errors=self.errors,
            background=self.background,
            settings=self.settings,
            storage=self.storage,
            config_changes=sorted(self.config_changes, key=lambda c: c.at),
            pod_groups=self.pod_groups,
            custom_objects=custom,
        )

    def _over_run_limits(self) -> dict[int, ManifestError]:
        """The documents that would take the run past the simulator's limits on nodes and pods,
        found from what each asks for (count annotations, replicas) before anything is made, so
        that no input expands until memory runs out. Refused documents leave room for the rest."""
        over: dict[int, ManifestError] = {}
        nodes = pods = 0
        for doc in self.order:
            claim = _claimed(doc)
            counts_nodes = doc.kind == "Node"
            if doc.kind in _WORKLOADS and claim > limits.MAX_REPLICAS:
                continue  # the workload's own check refuses it, naming its field, before expansion
            try:
                if doc.kind in ("Pod", "Node") and SIM_COUNT in doc.meta.annotations:
                    limits.check_count(doc.kind, claim)
                limits.check_totals(nodes + claim if counts_nodes else nodes, pods if counts_nodes else pods + claim)
            except limits.LimitError as exc:
                over[id(doc)] = doc.error(FieldError(exc.field, exc.detail) if exc.field else exc.detail)
                continue
            nodes, pods = (nodes + claim, pods) if counts_nodes else (nodes, pods + claim)
        return over

    def _check_bound(self, doc: _Doc, made: list[SimPod]) -> None:
        """Pods bound by spec.nodeName skip the fit check, so their sums on a node are not bounded
        by its allocatable: refuse the object whose pods would take a node's summed requests
        beyond the scheduler's int64 columns (a limit of the simulator's, not the API server's)."""
        staged: dict[str, dict[str, int]] = {}
        for sp in made:
            node = sp.pod.spec.node_name
            if not node or sp.pod.status.phase in ("Succeeded", "Failed"):
                continue
            if node not in staged:
                staged[node] = dict(self.bound.get(node, {}))
            totals = staged[node]
            plain = pod_requests(sp.pod)
            non_zero = pod_requests(sp.pod, non_zero=True)
            for key, value in [*plain.items(), *((f"{k} (non-zero)", v) for k, v in non_zero.items())]:
                totals[key] = totals.get(key, 0) + value
                if totals[key] > INT64_MAX:
                    resource = key.split(" ", 1)[0]
                    raise doc.error(FieldError("spec.nodeName", f"the {resource} requests of the pods bound to node "
                                                                f"{shown(node)} add up beyond {INT64_MAX}"))
        self.bound.update(staged)

    def _build_one(self, doc: _Doc, adoption: wl.Adoption, pods: list[SimPod],
                   selectors: list[tuple[str, str, str, Selector]]) -> None:
        """Pods and selectors of one Pod, Service or workload document; all or nothing."""
        if doc.kind == "Pod":
            made = self._pods(doc)
            self._check_bound(doc, made)
            pods.extend(made)
        elif doc.kind == "Service":
            try:
                sel = wl.service_selector(doc.raw, doc.namespace)
            except FieldError as exc:
                raise doc.error(exc) from None
            if sel is not None:
                selectors.append(sel)
        elif doc.kind in wl.WORKLOAD_TYPES:
            expansion = self._expand(doc, adoption)
            made = self._workload_pods(doc, expansion)
            self._check_bound(doc, made)
            claims = [self._finish_storage(doc, PERSISTENT_VOLUME_CLAIM, self._decode(doc, PersistentVolumeClaim, raw))
                      for raw in expansion.claims]
            selectors.extend(expansion.selectors)
            pods.extend(made)
            first = min((sp.arrival for sp in made), default=0.0)
            self.storage.extend((PERSISTENT_VOLUME_CLAIM, c, first) for c in claims)
        elif doc.kind in STORAGE_KINDS and doc.kind != "StorageClass":
            resource = STORAGE_KINDS[doc.kind]
            obj = self._finish_storage(doc, resource, self._decode(doc, STORAGE_TYPES[resource]))
            self.storage.append((resource, obj, self._storage_arrival(doc)))
        elif doc.kind == "PodGroup":
            pg: PodGroup = self._decode(doc, PodGroup)
            pg.metadata.namespace = doc.namespace
            pg.metadata.uid = pg.metadata.uid or stable_uid("PodGroup", doc.namespace, doc.name)
            if pg.spec.disruption_mode is None:
                pg.spec.disruption_mode = DisruptionMode(single={})
            pg.status = PodGroupStatus()  # a create resets it
            try:
                self._group_priority(pg)
            except FieldError as exc:
                raise doc.error(exc) from None
            self.pod_groups.append((pg, self._storage_arrival(doc)))

    # storage -------------------------------------------------------------------------------------

    def _storage_classes(self) -> None:
        """StorageClasses come first (claims are admitted against them), with the API server's
        defaults; the DefaultStorageClass admission plugin's default is the newest class marked
        `storageclass.kubernetes.io/is-default-class: "true"` (by name when times tie)."""
        defaults: list[tuple[str, str]] = []
        for doc in self.docs["StorageClass"]:
            try:
                sc = self._finish_storage(doc, STORAGE_CLASS, self._decode(doc, StorageClass))
            except ManifestError as exc:
                self.refuse(exc)
                continue
            self.storage.append((STORAGE_CLASS, sc, self._storage_arrival(doc)))
            if is_default_class(sc):
                defaults.append((sc.metadata.creation_timestamp or "", sc.metadata.name))
        if defaults:
            newest = max(ts for ts, _ in defaults)
            self.default_storage_class = min(name for ts, name in defaults if ts == newest)

    def _storage_arrival(self, doc: _Doc) -> float:
        """`sim.kubesched.io/arrival` on a storage object: when it is created (default 0)."""
        try:
            arrival = _timing(wl.sim_annotations(doc.meta, "metadata")).arrival
            limits.check_time(arrival, f"metadata.annotations[{SIM_ARRIVAL}]")
        except FieldError as exc:
            raise doc.error(exc) from None
        except limits.LimitError as exc:
            raise doc.error(FieldError(exc.field, exc.detail)) from None
        return arrival

    def _finish_storage(self, doc: _Doc, resource: str, obj: Any) -> Any:
        """What the API server sets on create: a uid, a resourceVersion, the kind's defaults."""
        meta = obj.metadata
        meta.namespace = doc.namespace if resource in (PERSISTENT_VOLUME_CLAIM, CSI_STORAGE_CAPACITY) else ""
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

    def _decode(self, doc: _Doc, kind: type[Any], raw: Any = None) -> Any:
        try:
            return decode(doc.raw if raw is None else raw, kind, doc.kind)
        except FieldError as exc:
            raise doc.error(exc) from None

    # priority classes ----------------------------------------------------------------------------

    def _group_priority(self, pg: PodGroup) -> None:
        """The Priority admission plugin on a PodGroup's create: spec.priority from its class (or
        the global default), and an explicit value that disagrees refused, as the API server does."""
        spec = pg.spec
        if "Priority" in self.disabled_admission:
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

    def _priority_classes(self) -> list[PriorityClass]:
        """The classes that were accepted (validation ran in pass 1), with the admission rule of
        a single globalDefault, and the two built-in classes."""
        out: dict[str, PriorityClass] = {}
        default: PriorityClass | None = None
        for doc in self.docs["PriorityClass"]:
            try:
                pc: PriorityClass = self._decode(doc, PriorityClass)
                if pc.global_default and default is not None:
                    raise doc.error(
                        f"PriorityClass {default.metadata.name} is already marked as default. Only one default can "
                        "exist"
                    )
            except ManifestError as exc:
                self.refuse(exc)
                continue
            if pc.global_default:
                default = pc
            pc.preemption_policy = pc.preemption_policy or "PreemptLowerPriority"
            pc.metadata.uid = pc.metadata.uid or stable_uid("PriorityClass", pc.metadata.name)
            out[pc.metadata.name] = pc
        for name, value in SYSTEM_PRIORITY_CLASSES.items():
            if name not in out:
                out[name] = PriorityClass(
                    metadata=ObjectMeta(name=name, uid=stable_uid("PriorityClass", name)),
                    value=value,
                    preemption_policy="PreemptLowerPriority",
                )
        return list(out.values())

    def _resolve_priority(self, pod: Pod) -> None:
        """The Priority admission plugin, on create."""
        spec = pod.spec
        meta = pod.metadata
        if "Priority" in self.disabled_admission:
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

    # nodes -------------------------------------------------------------------------------------

    def _nodes(self, doc: _Doc) -> list[Node]:
        try:
            sim = wl.sim_annotations(doc.meta, "metadata")
            timing = _timing(sim)
            background = _usage_specs(sim, SIM_BACKGROUND)
        except FieldError as exc:
            raise doc.error(exc) from None
        self._warn_unknown_sim(doc, doc.meta.annotations, "metadata", node=True)
        names = self._names(doc, "Node", timing.count)
        out = []
        for name in names:
            node: Node = self._decode(doc, Node)
            node.metadata.name = name
            node.metadata.namespace = ""
            self._finish_node(node)
            out.append(node)
            if background != (None, None):
                self.background[name] = background
        if out and not out[0].status.capacity and set(out[0].status.allocatable) == {"pods"}:
            self.warnings.append(
                f"{doc.origin}: {doc.describe()} declares neither status.allocatable nor status.capacity: "
                "no pod that requests cpu or memory fits on it"
            )
        return out

    def _finish_node(self, node: Node) -> None:
        # Quantities were validated in pass 1 (validation.validate_node).
        status = node.status
        if not status.allocatable and status.capacity:
            status.allocatable = dict(status.capacity)
        if "pods" not in status.allocatable:
            status.allocatable["pods"] = DEFAULT_MAX_PODS
        labels = node.metadata.labels
        labels.setdefault("kubernetes.io/hostname", node.metadata.name)
        labels.setdefault("kubernetes.io/os", "linux")
        labels.setdefault("kubernetes.io/arch", "amd64")
        if node.spec.unschedulable and not any(
            t.key == UNSCHEDULABLE_TAINT and t.effect == "NoSchedule" for t in node.spec.taints
        ):
            node.spec.taints.append(Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule"))
        node.metadata.uid = node.metadata.uid or stable_uid("Node", node.metadata.name)

    def _names(self, doc: _Doc, scope: str, count: int | None) -> list[str]:
        """Names for a Pod/Node document: its own, or `count` copies of it."""
        ns = doc.namespace
        meta = doc.meta
        if count is None:
            if meta.name:
                self.namer.reserve(scope, ns, meta.name)
                return [meta.name]
            return [self._generate(scope, ns, meta.generate_name)]
        if meta.name:
            names = [f"{meta.name}-{i}" for i in range(count)]
            longest = names[-1] if names else meta.name
            problems = name_is_dns_subdomain(longest)
            if problems:
                raise doc.invalid([invalid("metadata.name", longest, msg) for msg in problems])
            for name in names:
                if not self.namer.reserve(scope, ns, name):
                    raise doc.error(f"copy {_quoted(name)} ({SIM_COUNT}) clashes with another {scope} of that name")
            return names
        return [self._generate(scope, ns, meta.generate_name) for _ in range(count)]

    def _generate(self, scope: str, ns: str, prefix: str) -> str:
        # kube's name generator keeps at most 58 characters of generateName before its 5.
        prefix = prefix[:MAX_GENERATE_NAME_PREFIX]
        key = (scope, ns, prefix)
        n = self.generate_counters.get(key, 0)
        self.generate_counters[key] = n + 1
        return self.namer.generate(scope, ns, prefix, f"{scope}/{ns}/{prefix}/{n}")

    # pods ------------------------------------------------------------------------------------

    def _adoption(self) -> wl.Adoption:
        """Reserve explicit pod names (so generated ones never clash) and note which workloads
        already have pods or ReplicaSets in the input."""
        adoption = wl.Adoption()
        for doc in self.docs["PersistentVolumeClaim"]:
            # Claims the input has are the ones a StatefulSet's replicas use (the controller does
            # not make them again).
            self.namer.reserve("PersistentVolumeClaim", doc.namespace, doc.name)
        for doc in self.docs["Pod"]:
            if doc.name and SIM_COUNT not in doc.meta.annotations:
                self.namer.reserve("Pod", doc.namespace, doc.name)
            owner = wl.controller_of(doc.meta)
            status = doc.raw.get("status")
            phase = status.get("phase") if isinstance(status, dict) else None
            if owner is not None and doc.name and phase not in ("Succeeded", "Failed"):
                adoption.pods.setdefault((doc.namespace, owner[0], owner[1]), []).append(doc.name)
        for doc in self.docs["ReplicaSet"]:
            owner = wl.controller_of(doc.meta)
            if owner is not None and owner[0] == "Deployment":
                adoption.deployments_with_replicaset.add((doc.namespace, owner[1]))
        return adoption

    def _pods(self, doc: _Doc) -> list[SimPod]:
        try:
            sim = wl.sim_annotations(doc.meta, "metadata")
            timing = _timing(sim)
            cpu, memory = _usage_specs(sim, SIM_USAGE)
        except FieldError as exc:
            raise doc.error(exc) from None
        self._warn_unknown_sim(doc, doc.meta.annotations, "metadata")
        out = []
        explicit = bool(doc.name) and timing.count is None
        names = [doc.name] if explicit else self._names(doc, "Pod", timing.count)
        for i, name in enumerate(names):
            try:
                pod: Pod = decode(doc.raw, Pod, "Pod")
                pod.metadata.name = name
                pod.metadata.namespace = doc.namespace
                self._finish_pod(pod)
            except FieldError as exc:
                raise doc.error(exc) from None
            out.append(SimPod(pod, timing.arrival_of(i), timing.duration, cpu, memory))
        return out

    def _finish_pod(self, pod: Pod) -> None:
        meta, spec = pod.metadata, pod.spec
        meta.uid = meta.uid or stable_uid("Pod", meta.namespace, meta.name)
        spec.scheduler_name = spec.scheduler_name or DEFAULT_SCHEDULER
        spec.restart_policy = spec.restart_policy or "Always"
        pod.status.phase = pod.status.phase or "Pending"
        if spec.scheduling_gates and spec.node_name:
            raise FieldError("spec.schedulingGates", "Forbidden: cannot be set when spec.nodeName is set")
        _add_default_tolerations(spec.tolerations)
        self._resolve_priority(pod)
        if spec.overhead and not spec.runtime_class_name:
            # The RuntimeClass admission plugin: overhead comes from a RuntimeClass, never from the
            # user alone. The simulator reads no RuntimeClass objects, so a pod naming one (as pods
            # exported from a cluster do) keeps the overhead it carries.
            raise FieldError("spec.overhead", RUNTIME_CLASS_OVERHEAD)
        try:
            make_pod_info(pod)
        except PodError as exc:
            raise _pod_field_error(pod, exc) from None

    # workloads -----------------------------------------------------------------------------------

    def _expand(self, doc: _Doc, adoption: wl.Adoption) -> wl.Expansion:
        try:
            return wl.expand(doc.kind, doc.raw, doc.namespace, self.namer, adoption)
        except FieldError as exc:
            raise doc.error(exc) from None

    def _workload_pods(self, doc: _Doc, expansion: wl.Expansion) -> list[SimPod]:
        try:
            timing = _timing(expansion.sim)
            cpu, memory = _usage_specs(expansion.sim, SIM_USAGE)
        except FieldError as exc:
            raise doc.error(exc) from None
        if timing.count is not None:
            where = expansion.sim[SIM_COUNT][1]
            raise doc.error(FieldError(where, f"{SIM_COUNT} applies to Pods and Nodes; use the workload's "
                                              "spec.replicas (or a Job's parallelism)"))
        self._warn_unknown_sim(doc, doc.meta.annotations, "metadata")
        template = (doc.raw.get("spec") or {}).get("template") or {}
        self._warn_unknown_sim(doc, (template.get("metadata") or {}).get("annotations") or {},
                               "spec.template.metadata")
        # The template is checked once with the error pointing into it; its replicas differ only
        # in names and controller labels.
        if expansion.probe is not None:
            try:
                self._finish_pod(decode(expansion.probe, Pod, "Pod"))
            except FieldError as exc:
                raise doc.error(exc, "spec.template") from None
        out = []
        for replica in expansion.pods:
            try:
                pod: Pod = decode(replica.manifest, Pod, "Pod")
                self._finish_pod(pod)
            except FieldError as exc:
                raise doc.error(f"pod {replica.manifest['metadata']['name']}: {exc}") from None
            out.append(SimPod(pod, timing.arrival_of(replica.ordinal), timing.duration, cpu, memory))
        return out

    def _warn_unknown_sim(self, doc: _Doc, annotations: Any, where: str, *, node: bool = False) -> None:
        if not isinstance(annotations, dict):
            return
        for key in annotations:
            if not isinstance(key, str) or not key.startswith(wl.SIM_PREFIX):
                continue
            prefix = f"{doc.origin}: {doc.describe()}: {where}.annotations[{key}]"
            if key not in SIM_ANNOTATIONS:
                known = ", ".join(sorted(SIM_ANNOTATIONS))
                self.warnings.append(f"{prefix}: unknown simulation annotation (known: {known})")
            elif node and key in SIM_USAGE:
                alt = SIM_BACKGROUND[SIM_USAGE.index(key)]
                self.warnings.append(f"{prefix}: ignored: usage applies to pods; a Node's load not from its pods is {alt}")
            elif not node and key in SIM_BACKGROUND:
                alt = SIM_USAGE[SIM_BACKGROUND.index(key)]
                self.warnings.append(f"{prefix}: ignored: background load applies to Nodes; a pod's usage is {alt}")


def _claimed(doc: _Doc) -> int:
    """How many pods (or nodes) a document asks for, read from the raw object without making
    any: a count annotation, a workload's replicas, a Job's parallelism; 1 when unreadable
    (the document's own checks then say what is wrong)."""
    if doc.kind in ("Pod", "Node"):
        raw_count = doc.meta.annotations.get(SIM_COUNT)
        if raw_count is None:
            return 1
        try:
            return _count(str(raw_count), SIM_COUNT)
        except FieldError:
            return 1
    spec = doc.raw.get("spec")
    if not isinstance(spec, dict):
        return 1 if doc.kind in _WORKLOADS else 0
    if doc.kind == "Job":
        value = spec.get("parallelism", 1)
    elif doc.kind in _WORKLOADS:
        value = spec.get("replicas", 1)
    else:
        return 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1


def _add_default_tolerations(tolerations: list[Toleration]) -> None:
    """DefaultTolerationSeconds admission: tolerate a not-ready or unreachable node for 300s
    unless the pod already tolerates that taint's NoExecute effect."""
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        if any(t.key in ("", key) and t.effect in ("", "NoExecute") for t in tolerations):
            continue
        tolerations.append(
            Toleration(key=key, operator="Exists", effect="NoExecute", toleration_seconds=DEFAULT_TOLERATION_SECONDS)
        )


def _pod_field_error(pod: Pod, exc: PodError) -> FieldError:
    text = str(exc)
    prefix = f"pod {pod.key}: "
    if text.startswith(prefix):
        text = text[len(prefix) :]
    path, sep, message = text.partition(": ")
    if sep and " " not in path:
        return FieldError(path, message)
    return FieldError("", text)


# --- entry points ------------------------------------------------------------------------------


def load_objects(objects: Iterable[tuple[Origin, dict[str, Any]]] | Iterable[dict[str, Any]],
                 source: str = "<input>", *, keep_going: bool = False,
                 disabled_admission: frozenset[str] = frozenset()) -> ClusterInput:
    """Build a cluster from already-parsed objects (dicts, or (Origin, dict) pairs).

    An object the API server would refuse raises ManifestError; with keep_going it is left out
    and its message added to ClusterInput.errors instead, and the rest loads. Problems with the
    input's shape (a document that is not an object) stay fatal. `disabled_admission` names
    admission plugins the emulated API server runs without (only "Priority" changes anything)."""
    loader = _Loader(keep_going, disabled_admission)
    for i, entry in enumerate(objects, 1):
        if isinstance(entry, tuple):
            origin, data = entry
            loader.add(origin, data)
        else:
            for origin, obj in _objects(Origin(source, i), entry):
                loader.add(origin, obj)
    return loader.build()


def load_paths(paths: Sequence[str | Path] | str | Path, *, keep_going: bool = False) -> ClusterInput:
    """Read manifest files and directories into a ClusterInput; ManifestError on bad input.

    With keep_going, objects the API server would refuse are left out and listed in
    ClusterInput.errors (see load_objects); unreadable files and invalid YAML stay fatal."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = _files(paths)
    if not files:
        raise ManifestError(f"no manifest files (*.yaml, *.yml, *.json) in {', '.join(str(p) for p in paths)}")

    def objects() -> Iterator[tuple[Origin, dict[str, Any]]]:
        for f in files:
            found = 0
            for origin, data in _documents(f):
                for entry in _objects(origin, data):
                    found += 1
                    yield entry
            if not found:
                # kubectl apply says "no objects passed to apply"; an empty file is a mistake here too.
                raise ManifestError(f"{f}: no Kubernetes objects in this file (it is empty, or holds only comments or empty documents)")

    cluster = load_objects(objects(), keep_going=keep_going)
    if len(paths) == 1:
        only = Path(paths[0])
        cluster.name = only.stem if only.is_file() else only.name
    else:
        cluster.name = "+".join(Path(p).stem for p in paths)
    cluster.description = f"manifests from {', '.join(str(p) for p in paths)}"
    return cluster

