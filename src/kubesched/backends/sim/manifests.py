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
(scheduling.k8s.io/v1beta1), DRA's DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice
(resource.k8s.io/v1; a ResourceSlice may be stamped onto many nodes: backends.sim.deviceinventory; claims
are made from templates by the simulated resourceclaim controller, backends.sim.resourceclaims),
scheduler-plugins' PodGroup and ElasticQuota (scheduling.x-k8s.io/v1alpha1,
checked against their CRDs' schema: backends.sim.customobjects), and the ConfigMap named
`kubesched-simulation` (backends.sim.settings). The simulated cluster runs a stand-in PV controller (see
backends.sim.cluster): it binds claims, provisions WaitForFirstConsumer claims on the node the
scheduler selected, and creates generic ephemeral volumes' claims. Workloads are expanded into the pods their
controllers would create (see backends.sim.workloads). Other kinds, and other ConfigMaps, are
skipped with a warning in ClusterInput.warnings.

What the API server would do on create is done too (backends.sim.admission: namespaces,
defaults, DefaultStorageClass, DefaultTolerationSeconds, Priority and RuntimeClass admission);
the simulation annotations (`sim.kubesched.io/arrival`, `duration`, `count`, `usage-*`...) are
read by backends.sim.simannotations, the `kubesched-simulation` ConfigMap by backends.sim.settings,
files by backends.sim.manifestfiles; what a load gives is backends.sim.clusterinput's.

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
not found`). A file that cannot be read or parsed (invalid YAML, say) is refused the same way,
named: what came before the error in it stays, and the other files load.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api.dra import API_VERSION as DRA_API_VERSION
from kubesched.api.dra import DRA_KINDS, DRA_TYPES, NAMESPACED_DRA_KINDS, RESOURCE_SLICE, ResourceSlice
from kubesched.api.knownfields import go_nulls, strict_decoding_error, unknown_fields, wrong_type
from kubesched.api.objects import Namespace, Node, ObjectMeta, Pod, PriorityClass
from kubesched.api.podgroups import DisruptionMode, PodGroup, PodGroupStatus
from kubesched.api.podinfo import pod_requests
from kubesched.api.policy import PodDisruptionBudget
from kubesched.api.quantity import INT64_MAX
from kubesched.api.selectors import Selector
from kubesched.api.storage import (
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    STORAGE_KINDS,
    STORAGE_TYPES,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.api.validation import FieldIssue, invalid_object, shown, validate_manifest
from kubesched.api.validation.dra import validate_resource_slice
from kubesched.api.validation.field import invalid
from kubesched.api.validation.meta import name_is_dns_subdomain
from kubesched.backends.sim import admission, deviceinventory, draadmission, limits, simannotations
from kubesched.backends.sim import workloads as wl
from kubesched.backends.sim.admission import ALWAYS_PRESENT_NAMESPACES, Admission
from kubesched.backends.sim.clusterinput import ClusterInput, ManifestError, Scale, SimPod, SimSettings, cut, quoted, type_name
from kubesched.backends.sim.configchanges import ConfigChange, is_config_change, read_change
from kubesched.backends.sim.customobjects import is_custom, read_custom
from kubesched.backends.sim.manifestfiles import Origin, document_objects, find_files, objects_in
from kubesched.backends.sim.settings import SIM_CONFIGMAP, read_settings
from kubesched.backends.sim.simannotations import SIM_ARRIVAL, SIM_BACKGROUND, SIM_COUNT, SIM_NODES, SIM_USAGE
from kubesched.backends.sim.usagemodel import UsageSpec
from kubesched.backends.sim.workloads import FieldError, decode, stable_uid

# kube's name generator keeps at most 58 characters of generateName before its 5.
MAX_GENERATE_NAME_PREFIX = 58

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
    "PodDisruptionBudget": frozenset({"policy"}),
    **{kind: frozenset({"resource.k8s.io"}) for kind in DRA_KINDS},
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
    "PodDisruptionBudget": frozenset({"policy/v1"}),
    **{kind: frozenset({DRA_API_VERSION}) for kind in DRA_KINDS},
}
_WORKLOADS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "Job", "ReplicationController"})
_NAMESPACED = frozenset({"Pod", "Service", "ReplicationController", "Deployment", "ReplicaSet", "StatefulSet", "Job",
                         "PersistentVolumeClaim", "CSIStorageCapacity", "PodGroup", "Workload", "PodDisruptionBudget",
                         *NAMESPACED_DRA_KINDS})
_SKIP_HINTS = {
    "DaemonSet": "its pods are not generated; include them as Pods (kubectl get pods -o yaml) to model them",
    "CronJob": "no Jobs are generated; write the Job with a sim.kubesched.io/arrival annotation instead",
}




# --- one object ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Doc:
    origin: Origin
    raw: dict[str, Any]
    kind: str
    namespace: str  # "" for cluster-scoped kinds
    name: str  # "" for Pods and Nodes copied (sim.kubesched.io/count) from a generateName
    meta: ObjectMeta

    def describe(self) -> str:
        # Names are user input of any length until validated: cut them like any echoed value.
        name = cut(self.name or f"{self.meta.generate_name}*")
        return f"{self.kind} {cut(self.namespace)}/{name}" if self.namespace else f"{self.kind} {name}"

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


# --- the loader ------------------------------------------------------------------------------


class _Loader:
    def __init__(self, keep_going: bool = False, disabled_admission: frozenset[str] = frozenset(), seed: int = 0) -> None:
        self.keep_going = keep_going
        self.seed = seed
        self.admission = Admission(disabled_admission)
        self.errors: list[str] = []
        self.docs: dict[str, list[_Doc]] = {kind: [] for kind in _GROUPS}
        self.order: list[_Doc] = []
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
        # Namespace name -> its labels, once the namespaces are read (DRA's admin access reads them).
        self.namespace_labels: dict[str, dict[str, str]] = {}
        # Node name -> summed requests (and non-zero requests) of the pods bound to it by nodeName.
        self.bound: dict[str, dict[str, int]] = {}
        self.storage: list[tuple[str, Any, float]] = []
        self.devices: list[tuple[str, Any, float]] = []
        self.config_changes: list[ConfigChange] = []
        self.pod_groups: list[tuple[PodGroup, float]] = []
        self.pdbs: list[tuple[PodDisruptionBudget, float]] = []
        self.scales: dict[str, Scale] = {}
        self.custom_docs: list[tuple[_Doc, str, Any]] = []  # read in pass 1, kept in pass 2 (their namespace)
        self.nodes: list[Node] = []  # the input's Nodes, once built (device inventories are stamped onto them)

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
            raise ManifestError(f"{origin}: {cut(kind)}: apiVersion: Required value (every object needs apiVersion and kind)")
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
            label = f"{cut(kind)} ({cut(api_version)})"
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
            raise probe.invalid([FieldIssue("metadata", f"expected a mapping, got {type_name(meta_raw)}", decode=True)])
        try:
            meta: ObjectMeta = decode(meta_raw or {}, ObjectMeta, kind)
        except FieldError as exc:
            path = f"metadata.{exc.field}" if exc.field and not exc.field.startswith("[") else f"metadata{exc.field}"
            raise probe.invalid([FieldIssue(path, exc.message, decode=True)]) from None
        namespace = (meta.namespace or "default") if kind in _NAMESPACED else ""
        if not meta.name and meta.generate_name and not (kind in ("Pod", "Node") and SIM_COUNT in meta.annotations):
            # The API server names the object before it validates it (copies are named one by one).
            meta.name = self._generate(kind, namespace, meta.generate_name)
            meta_raw = {**(meta_raw or {}), "name": meta.name}
            raw = {**raw, "metadata": meta_raw}
        doc = _Doc(origin, raw, kind, namespace, meta.name, meta)
        checked = doc
        if kind == "ResourceSlice" and deviceinventory.is_inventory(meta.annotations):
            # Checked as one stamped slice of it reads; each stamped slice is validated when made.
            try:
                deviceinventory.check_template(raw, meta.annotations)
            except FieldError as exc:
                raise doc.error(exc) from None
            checked = _Doc(origin, deviceinventory.as_written(raw), kind, namespace, meta.name, meta)
        # A value of the wrong type anywhere (read by kubesched or not) is the decoder's error.
        mistyped = wrong_type(kind, checked.raw)
        issues = [FieldIssue(*mistyped, decode=True)] if mistyped else self._validate(checked, meta_raw or {})
        if not any(issue.decode for issue in issues):
            # Strict field validation, as kubectl apply asks for: after decoding, before validation.
            unknown = unknown_fields(kind, checked.raw)
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
        return validate_manifest({**doc.raw, "metadata": meta}, check_selector=draadmission.check_selector)

    def _simulation_settings(self, origin: Origin, raw: dict[str, Any]) -> None:
        meta_raw = raw["metadata"]
        namespace = str(meta_raw.get("namespace") or "default")
        doc = _Doc(origin, raw, "ConfigMap", namespace, SIM_CONFIGMAP, ObjectMeta(name=SIM_CONFIGMAP))
        if self.settings_origin is not None:
            raise doc.error(f"only one {SIM_CONFIGMAP} ConfigMap may be given; the first is at {self.settings_origin}")
        self.settings_origin = origin
        try:
            warnings = read_settings(raw.get("data"), self.settings)
        except FieldError as exc:
            raise doc.error(exc) from None
        self.warnings.extend(f"{origin}: {doc.describe()}: {warning}" for warning in warnings)

    def _custom(self, origin: Origin, raw: dict[str, Any], kind: str) -> None:
        """scheduler-plugins' PodGroup or ElasticQuota (backends.sim.customobjects)."""
        meta = raw.get("metadata")
        meta_raw: dict[str, Any] = meta if isinstance(meta, dict) else {}
        namespace = str(meta_raw.get("namespace") or "default")
        scope = f"{kind}.{_api_group(raw.get('apiVersion'))}"
        prefix = meta_raw.get("generateName")
        if not meta_raw.get("name") and isinstance(prefix, str) and prefix:
            meta_raw = {**meta_raw, "name": self._generate(scope, namespace, prefix)}
            raw = {**raw, "metadata": meta_raw}
        doc = _Doc(origin, raw, kind, namespace, str(meta_raw.get("name") or ""), ObjectMeta())
        try:
            resource, obj = read_custom(raw, namespace)
        except ValueError as exc:
            raise doc.error(str(exc)) from None
        doc.meta = obj.metadata
        key = (scope, namespace, doc.name)
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
            at = simannotations.seconds(str(arrival), f"metadata.annotations[{SIM_ARRIVAL}]")
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
        namespaces: dict[str, Namespace] = {}
        for doc in self.docs["Namespace"]:
            ns = admission.namespace(self._decode(doc, Namespace))
            namespaces[ns.metadata.name] = ns
        # A namespace whose object was refused does not exist: the API server refuses what is
        # created in it (an undeclared namespace, by contrast, is created for the user).
        missing = self.refused_namespaces - namespaces.keys()
        self.namespace_labels = {name: ns.metadata.labels for name, ns in namespaces.items()}
        oversized = self._over_run_limits()
        nodes: list[Node] = []
        for doc in self.docs["Node"]:
            try:
                if id(doc) in oversized:
                    raise oversized[id(doc)]
                nodes.extend(self._nodes(doc))
            except ManifestError as exc:
                self.refuse(exc)
        self.nodes = nodes
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
            namespaces[name] = admission.implicit_namespace(name)
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
            devices=self.devices,
            config_changes=sorted(self.config_changes, key=lambda c: c.at),
            pod_groups=self.pod_groups,
            custom_objects=custom,
            pdbs=self.pdbs,
            scales=self.scales,
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
            self._scales(doc, made)
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
        elif doc.kind == "ResourceSlice" and deviceinventory.is_inventory(doc.meta.annotations):
            self._inventory(doc)
        elif doc.kind in DRA_KINDS:
            resource = DRA_KINDS[doc.kind]
            obj = self._decode(doc, DRA_TYPES[resource])
            obj.metadata.namespace = doc.namespace
            obj.metadata.uid = obj.metadata.uid or stable_uid(doc.kind, doc.namespace, doc.name)
            arrival = self._storage_arrival(doc)
            refused = draadmission.admit(obj, self.namespace_labels.get(doc.namespace, {}), arrival)
            if refused:
                raise doc.error(invalid_object(doc.kind, doc.name, refused, DRA_API_VERSION))
            self.devices.append((resource, obj, arrival))
        elif doc.kind == "PodGroup":
            pg: PodGroup = self._decode(doc, PodGroup)
            pg.metadata.namespace = doc.namespace
            pg.metadata.uid = pg.metadata.uid or stable_uid("PodGroup", doc.namespace, doc.name)
            if pg.spec.disruption_mode is None:
                pg.spec.disruption_mode = DisruptionMode(single={})
            pg.status = PodGroupStatus()  # a create resets it
            try:
                self.admission.pod_group_priority(pg)
            except FieldError as exc:
                raise doc.error(exc) from None
            self.pod_groups.append((pg, self._storage_arrival(doc)))
        elif doc.kind == "PodDisruptionBudget":
            pdb: PodDisruptionBudget = self._decode(doc, PodDisruptionBudget)
            pdb.metadata.namespace = doc.namespace
            pdb.metadata.uid = pdb.metadata.uid or stable_uid("PodDisruptionBudget", doc.namespace, doc.name)
            self.pdbs.append((pdb, self._storage_arrival(doc)))

    def _scales(self, doc: _Doc, made: list[SimPod]) -> None:
        """The workload's controller as the disruption controller finds it (its replicas), and
        the ReplicaSet a Deployment's pods point at when the input holds none of its own."""
        meta = doc.meta
        replicas = (doc.raw.get("spec") or {}).get("replicas")
        replicas = replicas if isinstance(replicas, int) else 1
        uid = meta.uid or stable_uid(doc.kind, doc.namespace, meta.name)
        owner = next((ref.uid for ref in meta.owner_references if ref.controller), "")
        self.scales[uid] = Scale(uid, doc.kind, meta.name, replicas, owner, scalable=doc.kind != "Job")
        if doc.kind == "Deployment":
            for sp in made[:1]:
                for ref in sp.pod.metadata.owner_references:
                    if ref.controller and ref.kind == "ReplicaSet":
                        self.scales[ref.uid] = Scale(ref.uid, "ReplicaSet", ref.name, replicas, uid)

    def _inventory(self, doc: _Doc) -> None:
        """A ResourceSlice stamped onto the Nodes its `sim.kubesched.io/nodes` selects
        (backends.sim.deviceinventory); each slice validated and admitted as any; all or nothing."""
        annotations = doc.meta.annotations
        devices = (doc.raw.get("spec") or {}).get("devices") or []
        try:
            selector = deviceinventory.node_selector(annotations[SIM_NODES], f"metadata.annotations[{SIM_NODES}]")
            count = deviceinventory.device_count(annotations, len(devices))
        except FieldError as exc:
            raise doc.error(exc) from None
        template: ResourceSlice = self._decode(doc, ResourceSlice)
        nodes = [node for node in self.nodes if selector.matches(node.metadata.labels)]
        if not nodes:
            self.warnings.append(f"{doc.origin}: {doc.describe()}: {SIM_NODES} {quoted(annotations[SIM_NODES])} "
                                 "matches no Node: no slice made")
        arrival = self._storage_arrival(doc)
        stamped = deviceinventory.Stamp(template, count).onto(nodes)
        # The slices differ only in the node's name, put into their name, pool name and `{node}`
        # attributes: a DNS name there can only make them too long, so the slice of the longest
        # node name stands for all (validating each would cost a millisecond a slice).
        longest = max(stamped, key=lambda pair: len(pair[0]), default=None)
        if longest is not None:
            node, rs = longest
            issues = validate_resource_slice(rs)
            if issues:
                raise ManifestError(f"{doc.origin}: {doc.describe()}, stamped onto node {cut(node)}: "
                                    f"{invalid_object('ResourceSlice', rs.metadata.name, issues, DRA_API_VERSION)}")
        made: list[tuple[str, Any, float]] = []
        for node, rs in stamped:
            name = rs.metadata.name
            if ("ResourceSlice", "", name) in self.seen:
                raise ManifestError(f"{doc.origin}: {doc.describe()}, stamped onto node {cut(node)}: slice {shown(name)} "
                                    f"is defined twice: first at {self.seen['ResourceSlice', '', name]}")
            rs.metadata.uid = stable_uid("ResourceSlice", "", name)
            draadmission.admit(rs, {}, arrival)
            made.append((RESOURCE_SLICE, rs, arrival))
        for _, rs, _ in made:
            self.seen["ResourceSlice", "", rs.metadata.name] = doc.origin
        self.devices.extend(made)

    # storage -------------------------------------------------------------------------------------

    def _storage_classes(self) -> None:
        """StorageClasses come first (claims are admitted against them, with the default class)."""
        accepted: list[StorageClass] = []
        for doc in self.docs["StorageClass"]:
            try:
                sc = self._finish_storage(doc, STORAGE_CLASS, self._decode(doc, StorageClass))
            except ManifestError as exc:
                self.refuse(exc)
                continue
            self.storage.append((STORAGE_CLASS, sc, self._storage_arrival(doc)))
            accepted.append(sc)
        self.admission.choose_default_storage_class(accepted)

    def _storage_arrival(self, doc: _Doc) -> float:
        """`sim.kubesched.io/arrival` on a storage object: when it is created (default 0)."""
        try:
            arrival = simannotations.timing(wl.sim_annotations(doc.meta, "metadata")).arrival
            limits.check_time(arrival, f"metadata.annotations[{SIM_ARRIVAL}]")
        except FieldError as exc:
            raise doc.error(exc) from None
        except limits.LimitError as exc:
            raise doc.error(FieldError(exc.field, exc.detail)) from None
        return arrival

    def _finish_storage(self, doc: _Doc, resource: str, obj: Any) -> Any:
        return self.admission.storage_object(resource, obj, doc.namespace)

    def _decode(self, doc: _Doc, kind: type[Any], raw: Any = None) -> Any:
        try:
            return decode(doc.raw if raw is None else raw, kind, doc.kind)
        except FieldError as exc:
            raise doc.error(exc) from None

    # priority classes ----------------------------------------------------------------------------

    def _priority_classes(self) -> list[PriorityClass]:
        """The classes that were accepted (validation ran in pass 1), admitted (a single
        globalDefault), and the two built-in classes."""
        for doc in self.docs["PriorityClass"]:
            try:
                pc: PriorityClass = self._decode(doc, PriorityClass)
                try:
                    self.admission.priority_class(pc)
                except ValueError as exc:
                    raise doc.error(str(exc)) from None
            except ManifestError as exc:
                self.refuse(exc)
        return self.admission.priority_classes()

    # nodes -------------------------------------------------------------------------------------

    def _nodes(self, doc: _Doc) -> list[Node]:
        try:
            sim = wl.sim_annotations(doc.meta, "metadata")
            timing = simannotations.timing(sim)
            background = simannotations.usage_specs(sim, SIM_BACKGROUND)
        except FieldError as exc:
            raise doc.error(exc) from None
        self._warn_unknown_sim(doc, doc.meta.annotations, "metadata", node=True)
        names = self._names(doc, "Node", timing.count)
        out = []
        for name in names:
            node: Node = self._decode(doc, Node)
            node.metadata.name = name
            node.metadata.namespace = ""
            self.admission.node(node)
            out.append(node)
            if background != (None, None):
                self.background[name] = background
        if out and not out[0].status.capacity and set(out[0].status.allocatable) == {"pods"}:
            self.warnings.append(
                f"{doc.origin}: {doc.describe()} declares neither status.allocatable nor status.capacity: "
                "no pod that requests cpu or memory fits on it"
            )
        return out

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
                    raise doc.error(f"copy {quoted(name)} ({SIM_COUNT}) clashes with another {scope} of that name")
            return names
        return [self._generate(scope, ns, meta.generate_name) for _ in range(count)]

    def _generate(self, scope: str, ns: str, prefix: str) -> str:
        """A name for generateName `prefix`, as the API server makes it (the prefix cut to 58
        characters, 5 of its random characters), drawn from the run's seed so runs repeat (seed
        0 gives the names it always gave)."""
        prefix = prefix[:MAX_GENERATE_NAME_PREFIX]
        key = (scope, ns, prefix)
        n = self.generate_counters.get(key, 0)
        self.generate_counters[key] = n + 1
        draw = f"{scope}/{ns}/{prefix}/{n}"
        return self.namer.generate(scope, ns, prefix, f"seed {self.seed}/{draw}" if self.seed else draw)

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
            timing = simannotations.timing(sim)
            cpu, memory = simannotations.usage_specs(sim, SIM_USAGE)
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
                self.admission.pod(pod)
            except FieldError as exc:
                raise doc.error(exc) from None
            out.append(SimPod(pod, timing.arrival_of(i), timing.duration, cpu, memory))
        return out

    # workloads -----------------------------------------------------------------------------------

    def _expand(self, doc: _Doc, adoption: wl.Adoption) -> wl.Expansion:
        try:
            return wl.expand(doc.kind, doc.raw, doc.namespace, self.namer, adoption)
        except FieldError as exc:
            raise doc.error(exc) from None

    def _workload_pods(self, doc: _Doc, expansion: wl.Expansion) -> list[SimPod]:
        try:
            timing = simannotations.timing(expansion.sim)
            cpu, memory = simannotations.usage_specs(expansion.sim, SIM_USAGE)
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
                self.admission.pod(decode(expansion.probe, Pod, "Pod"))
            except FieldError as exc:
                raise doc.error(exc, "spec.template") from None
        out = []
        for replica in expansion.pods:
            try:
                pod: Pod = decode(replica.manifest, Pod, "Pod")
                self.admission.pod(pod)
            except FieldError as exc:
                raise doc.error(f"pod {replica.manifest['metadata']['name']}: {exc}") from None
            out.append(SimPod(pod, timing.arrival_of(replica.ordinal), timing.duration, cpu, memory))
        return out

    def _warn_unknown_sim(self, doc: _Doc, found: Any, where: str, *, node: bool = False) -> None:
        self.warnings.extend(f"{doc.origin}: {doc.describe()}: {warning}"
                             for warning in simannotations.misplaced(found, where, node=node))


def _claimed(doc: _Doc) -> int:
    """How many pods (or nodes) a document asks for, read from the raw object without making
    any: a count annotation, a workload's replicas, a Job's parallelism; 1 when unreadable
    (the document's own checks then say what is wrong)."""
    if doc.kind in ("Pod", "Node"):
        raw_count = doc.meta.annotations.get(SIM_COUNT)
        if raw_count is None:
            return 1
        try:
            return simannotations.count(str(raw_count), SIM_COUNT)
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


# --- entry points ------------------------------------------------------------------------------


def load_objects(objects: Iterable[tuple[Origin, dict[str, Any]]] | Iterable[dict[str, Any]],
                 source: str = "<input>", *, keep_going: bool = False,
                 disabled_admission: frozenset[str] = frozenset(), seed: int = 0) -> ClusterInput:
    """Build a cluster from already-parsed objects (dicts, or (Origin, dict) pairs).

    An object the API server would refuse raises ManifestError; with keep_going it is left out
    and its message added to ClusterInput.errors instead, and the rest loads. Problems with the
    input's shape (a document that is not an object) stay fatal. `disabled_admission` names
    admission plugins the emulated API server runs without (only "Priority" changes anything);
    `seed` draws the names of objects given a generateName."""
    loader = _Loader(keep_going, disabled_admission, seed)
    for i, entry in enumerate(objects, 1):
        if isinstance(entry, tuple):
            origin, data = entry
            loader.add(origin, data)
        else:
            for origin, obj in document_objects(Origin(source, i), entry):
                loader.add(origin, obj)
    return loader.build()


def load_paths(paths: Sequence[str | Path] | str | Path, *, keep_going: bool = False, seed: int = 0) -> ClusterInput:
    """Read manifest files and directories into a ClusterInput; ManifestError on bad input.

    With keep_going, objects the API server would refuse are left out and listed in
    ClusterInput.errors (see load_objects), and so are files that cannot be read or parsed
    (invalid YAML or JSON, a document that is not an object, no objects at all), each named, the
    rest loading. `seed` draws the names of objects given a generateName."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = find_files(paths)
    if not files:
        raise ManifestError(f"no manifest files (*.yaml, *.yml, *.json) in {', '.join(str(p) for p in paths)}")

    loader = _Loader(keep_going, seed=seed)
    # A file that cannot be read or parsed is refused as an object is: fatal unless keep_going.
    for origin, obj in objects_in(files, loader.refuse):
        loader.add(origin, obj)
    cluster = loader.build()
    if len(paths) == 1:
        only = Path(paths[0])
        cluster.name = only.stem if only.is_file() else only.name
    else:
        cluster.name = "+".join(Path(p).stem for p in paths)
    cluster.description = f"manifests from {', '.join(str(p) for p in paths)}"
    return cluster

