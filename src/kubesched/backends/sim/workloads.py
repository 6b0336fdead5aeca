"""Workload expansion: what the controllers would create from a Deployment, ReplicaSet,
ReplicationController, StatefulSet or Job, done once at load time.

The simulator has no controllers, so a workload turns into its pods here, named and
labelled as kube's controllers name and label them:

- Deployment -> ReplicaSet `<deployment>-<pod-template-hash>` (selector and template labels
  gain `pod-template-hash`) -> its pods.
- ReplicaSet / ReplicationController -> `replicas` pods `<owner>-<5 chars>`.
- StatefulSet -> pods `<name>-<ordinal>` from `spec.ordinals.start`, labelled with
  `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
  `controller-revision-hash`; each volumeClaimTemplate gives every replica a claim
  `<template>-<name>-<ordinal>` (unless the input has it) and the pod a volume using it.
- Job -> min(parallelism, completions) pods `<job>-<5 chars>` (`<job>-<index>-<5 chars>` when
  Indexed), labelled with the controller uid and job name; a suspended Job makes none.

The random parts of names are derived from the owner's namespace/name so a scenario gives
the same pod names every run. Pods already present in the input with a controller
ownerReference to a workload count towards its replicas (and a ReplicaSet owned by a
Deployment stands in for the one the Deployment would create), so a `kubectl get all -o yaml`
dump is not doubled.

This module knows nothing about files: it raises FieldError(field, message) and the
manifest loader adds the file, document and object to the message.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.objects import LabelSelector, ObjectError, ObjectMeta, PodTemplateSpec, convert
from kubesched.api.selectors import Selector, SelectorError, compile_label_selector
from kubesched.backends.sim.limits import LimitError, check_replicas

# kube's rand.String / SafeEncodeString alphabet: no vowels (no words), no look-alikes.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
# Fixed namespace for deterministic uids: the same object gets the same uid every run.
_UID_NAMESPACE = uuid.UUID("6f1d7c1e-9a8b-4f43-a2a5-5b1e0c6d2f10")

POD_TEMPLATE_HASH = "pod-template-hash"
SS_POD_NAME = "statefulset.kubernetes.io/pod-name"
SS_POD_INDEX = "apps.kubernetes.io/pod-index"
CONTROLLER_REVISION_HASH = "controller-revision-hash"
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_JOB_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
SIM_PREFIX = "sim.kubesched.io/"

# Kinds whose selector PodTopologySpread's system defaults (and SelectorSpread) consult.
SELECTOR_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")

_MSGSPEC_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


class FieldError(ValueError):
    """A problem with one field of an object; the loader adds where the object came from."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message

    def under(self, prefix: str) -> FieldError:
        """The same error with its field path moved under `prefix` (e.g. spec.template)."""
        path = f"{prefix}.{self.field}" if self.field else prefix
        return FieldError(path, self.message)


def decode(data: Any, kind: type[Any], what: str = "object") -> Any:
    """Decode with objects.convert, turning its message into a FieldError on the exact field."""
    try:
        return convert(data, kind, what)
    except ObjectError as exc:
        text = str(exc)
        text = text[len(what) + 2 :] if text.startswith(f"{what}: ") else text
        m = _MSGSPEC_PATH.match(text)
        msg = m.group("msg") if m else text
        path = (m.group("path") or "") if m else ""
        raise FieldError(path.lstrip("."), _lower_first(msg)) from None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def stable_uid(*parts: str) -> str:
    return str(uuid.uuid5(_UID_NAMESPACE, "/".join(parts)))


def random_suffix(seed: str, length: int = 5) -> str:
    """Five characters that look like kube's random name suffix but depend only on `seed`."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:length])


def template_hash(template: Any) -> str:
    """A pod-template-hash: fnv-1a 32 of the template, its decimal digits safe-encoded as
    kube does, so the value looks like the real thing (e.g. 7b9f5c6d48)."""
    text = json.dumps(template, sort_keys=True, default=str).encode()
    h = 0x811C9DC5
    for b in text:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in str(h))


class Namer:
    """Hands out unique object names per (scope, namespace); explicit names are reserved first
    so a generated name never shadows one the user wrote."""

    def __init__(self) -> None:
        self._used: dict[tuple[str, str], set[str]] = {}

    def taken(self, scope: str, namespace: str, name: str) -> bool:
        return name in self._used.get((scope, namespace), ())

    def reserve(self, scope: str, namespace: str, name: str) -> bool:
        """Claim `name`; False if it was already taken."""
        used = self._used.setdefault((scope, namespace), set())
        if name in used:
            return False
        used.add(name)
        return True

    def generate(self, scope: str, namespace: str, prefix: str, seed: str) -> str:
        """`prefix` + a deterministic 5-character suffix, retried on the rare collision."""
        attempt = 0
        while True:
            name = prefix + random_suffix(f"{seed}#{attempt}" if attempt else seed)
            if self.reserve(scope, namespace, name):
                return name
            attempt += 1


@dataclass(slots=True)
class Adoption:
    """Objects already in the input that a workload's controller would have adopted."""

    # (namespace, controller kind, controller name) -> names of active pods it controls
    pods: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    # (namespace, deployment name) for Deployments whose ReplicaSet is in the input
    deployments_with_replicaset: set[tuple[str, str]] = field(default_factory=set)

    def owned(self, namespace: str, kind: str, name: str) -> list[str]:
        return self.pods.get((namespace, kind, name), [])


def controller_of(meta: ObjectMeta) -> tuple[str, str] | None:
    """(kind, name) of the controlling ownerReference, if any."""
    for ref in meta.owner_references:
        if ref.controller:
            return ref.kind, ref.name
    return None


# --- typed views of the workload kinds (only what expansion reads) ---------------------------


class _Obj(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    pass


class _ReplicatedSpec(_Obj):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None


class StatefulSetOrdinals(_Obj):
    start: int = 0


class ClaimTemplate(_Obj):
    """A StatefulSet's volumeClaimTemplate: read for its name and labels; the raw template
    becomes each replica's claim."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class StatefulSetSpec(_ReplicatedSpec):
    ordinals: StatefulSetOrdinals | None = None
    service_name: str = ""
    volume_claim_templates: list[ClaimTemplate] = msgspec.field(default_factory=list)


class JobSpec(_Obj):
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str = ""
    suspend: bool = False
    manual_selector: bool = False
    selector: LabelSelector | None = None
    template: PodTemplateSpec | None = None


class ReplicationControllerSpec(_Obj):
    replicas: int | None = None
    selector: dict[str, str] | None = None
    template: PodTemplateSpec | None = None


class ServiceSpec(_Obj):
    selector: dict[str, str] = msgspec.field(default_factory=dict)
    type: str = ""


class _Workload(_Obj):
    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class Deployment(_Workload):
    spec: _ReplicatedSpec = msgspec.field(default_factory=_ReplicatedSpec)


class ReplicaSet(_Workload):
    spec: _ReplicatedSpec = msgspec.field(default_factory=_ReplicatedSpec)


class StatefulSet(_Workload):
    spec: StatefulSetSpec = msgspec.field(default_factory=StatefulSetSpec)


class Job(_Workload):
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


class ReplicationController(_Workload):
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


class Service(_Workload):
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


WORKLOAD_TYPES: dict[str, type[_Workload]] = {
    "Deployment": Deployment,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
    "Job": Job,
    "ReplicationController": ReplicationController,
}
OWNER_API_VERSIONS = {
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "Job": "batch/v1",
    "ReplicationController": "v1",
}


# --- expansion results ---------------------------------------------------------------------


@dataclass(slots=True)
class Replica:
    """One pod a controller would create: its manifest and its position among the replicas
    (for staggered arrival)."""

    manifest: dict[str, Any]
    ordinal: int


@dataclass(slots=True)
class Expansion:
    pods: list[Replica] = field(default_factory=list)
    # PersistentVolumeClaim manifests the controller creates (a StatefulSet's volumeClaimTemplates).
    claims: list[dict[str, Any]] = field(default_factory=list)
    selectors: list[tuple[str, str, str, Selector]] = field(default_factory=list)
    # The template as a pod manifest, to validate once even when no replica is created.
    probe: dict[str, Any] | None = None
    # sim.kubesched.io/* annotations of the workload and its template (the template's win):
    # key -> (value, field path it came from, for error messages).
    sim: dict[str, tuple[str, str]] = field(default_factory=dict)


# --- selectors -----------------------------------------------------------------------------


def _compile(selector: LabelSelector, where: str) -> Selector:
    try:
        return compile_label_selector(selector)
    except SelectorError as exc:
        raise FieldError(f"{where}.matchExpressions", str(exc)) from None


def _required_selector(selector: LabelSelector | None, kind: str) -> Selector:
    if selector is None:
        raise FieldError("spec.selector", "Required value")
    if not selector.match_labels and not selector.match_expressions:
        raise FieldError("spec.selector", f"Invalid value: {{}}: empty selector is invalid for {kind.lower()}")
    return _compile(selector, "spec.selector")


def _check_template_matches(selector: Selector, labels: dict[str, str]) -> None:
    if not selector.matches(labels):
        raise FieldError(
            "spec.template.metadata.labels",
            f"Invalid value: {_fmt_labels(labels)}: `selector` does not match template `labels`",
        )


def _fmt_labels(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}" if labels else "{}"


def _replicas(value: int | None, where: str = "spec.replicas", *, limit: bool = True) -> int:
    if value is None:
        return 1
    if value < 0:
        raise FieldError(where, f"Invalid value: {value}: must be greater than or equal to 0")
    if limit:
        _check_limit(value, where)
    return value


def _check_limit(pods: int, where: str) -> None:
    """The simulator's limit on one workload's pods, before any is made (backends.sim.limits)."""
    try:
        check_replicas(pods, where)
    except LimitError as exc:
        raise FieldError(exc.field, exc.detail) from None


def _raw_template(raw: dict[str, Any]) -> dict[str, Any]:
    spec = raw.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    return template if isinstance(template, dict) else {}


def _template(spec_template: PodTemplateSpec | None) -> PodTemplateSpec:
    if spec_template is None:
        raise FieldError("spec.template", "Required value")
    return spec_template


def _owner_ref(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": OWNER_API_VERSIONS[kind],
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod_manifest(
    raw_template: dict[str, Any],
    template: PodTemplateSpec,
    *,
    name: str,
    namespace: str,
    labels: dict[str, str],
    owner: dict[str, Any],
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": stable_uid("Pod", namespace, name),
        "labels": labels,
        "annotations": {**template.metadata.annotations, **(annotations or {})},
        "ownerReferences": [owner],
    }
    # The raw spec is shared read-only: every pod decodes it into fresh objects.
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": raw_template.get("spec") or {}}


def _uid(meta: ObjectMeta, kind: str, namespace: str) -> str:
    return meta.uid or stable_uid(kind, namespace, meta.name)


# --- the controllers -------------------------------------------------------------------------


def expand(kind: str, raw: dict[str, Any], namespace: str, namer: Namer, adoption: Adoption) -> Expansion:
    """The pods (and selectors) the controller of `kind` would create for `raw`."""
    obj = decode(raw, WORKLOAD_TYPES[kind], kind)
    if kind == "Deployment":
        out = _deployment(obj, raw, namespace, namer, adoption)
    elif kind == "ReplicaSet":
        out = _replica_set(obj, raw, namespace, namer, adoption)
    elif kind == "ReplicationController":
        out = _replication_controller(obj, raw, namespace, namer, adoption)
    elif kind == "StatefulSet":
        out = _stateful_set(obj, raw, namespace, namer, adoption)
    else:
        out = _job(obj, raw, namespace, namer, adoption)
    out.sim = sim_annotations(obj.metadata, "metadata")
    template = obj.spec.template
    if template is not None:
        out.sim.update(sim_annotations(template.metadata, "spec.template.metadata"))
    return out


def sim_annotations(meta: ObjectMeta, where: str) -> dict[str, tuple[str, str]]:
    return {
        k: (v, f"{where}.annotations[{k}]") for k, v in meta.annotations.items() if k.startswith(SIM_PREFIX)
    }


def _deployment(obj: Deployment, raw: dict[str, Any], ns: str, namer: Namer, adoption: Adoption) -> Expansion:
    name = obj.metadata.name
    template = _template(obj.spec.template)
    selector = _required_selector(obj.spec.selector, "Deployment")
    _check_template_matches(selector, template.metadata.labels)
    replicas = _replicas(obj.spec.replicas)
    raw_template = _raw_template(raw)
    if (ns, name) in adoption.deployments_with_replicaset:
        # Its ReplicaSet(s) came with the input and expand themselves; still validate the template.
        return Expansion(probe=_probe(raw_template, template, name, ns))
    pth = template_hash(raw_template)
    rs_name = f"{name}-{pth}"
    namer.reserve("ReplicaSet", ns, rs_name)
    assert obj.spec.selector is not None  # checked by _required_selector
    rs_selector = LabelSelector(
        match_labels={**obj.spec.selector.match_labels, POD_TEMPLATE_HASH: pth},
        match_expressions=list(obj.spec.selector.match_expressions),
    )
    labels = {**template.metadata.labels, POD_TEMPLATE_HASH: pth}
    rs_uid = stable_uid("ReplicaSet", ns, rs_name)
    rs = ReplicaSet(
        api_version="apps/v1",
        kind="ReplicaSet",
        metadata=ObjectMeta(
            name=rs_name,
            namespace=ns,
            uid=rs_uid,
            labels=labels,
            owner_references=[],
        ),
        spec=_ReplicatedSpec(
            replicas=replicas,
            selector=rs_selector,
            template=PodTemplateSpec(metadata=ObjectMeta(labels=labels, annotations=template.metadata.annotations),
                                     spec=template.spec),
        ),
    )
    rs_raw_template = {**raw_template, "metadata": {**(raw_template.get("metadata") or {}), "labels": labels}}
    return _replica_set(rs, {"spec": {"template": rs_raw_template}}, ns, namer, adoption)


def _probe(raw_template: dict[str, Any], template: PodTemplateSpec, owner: str, ns: str) -> dict[str, Any]:
    return _pod_manifest(
        raw_template,
        template,
        name=f"{owner}-probe",
        namespace=ns,
        labels=dict(template.metadata.labels),
        owner={},
    )


def _replica_set(obj: ReplicaSet, raw: dict[str, Any], ns: str, namer: Namer, adoption: Adoption) -> Expansion:
    name = obj.metadata.name
    template = _template(obj.spec.template)
    selector = _required_selector(obj.spec.selector, "ReplicaSet")
    _check_template_matches(selector, template.metadata.labels)
    replicas = _replicas(obj.spec.replicas)
    raw_template = _raw_template(raw)
    owner = _owner_ref("ReplicaSet", name, _uid(obj.metadata, "ReplicaSet", ns))
    out = Expansion(selectors=[("ReplicaSet", ns, name, selector)], probe=_probe(raw_template, template, name, ns))
    missing = max(0, replicas - len(adoption.owned(ns, "ReplicaSet", name)))
    for i in range(missing):
        pod_name = namer.generate("Pod", ns, f"{name}-", f"{ns}/ReplicaSet/{name}/{i}")
        labels = dict(template.metadata.labels)
        out.pods.append(Replica(_pod_manifest(raw_template, template, name=pod_name, namespace=ns, labels=labels,
                                              owner=owner), i))
    return out


def _replication_controller(
    obj: ReplicationController, raw: dict[str, Any], ns: str, namer: Namer, adoption: Adoption
) -> Expansion:
    name = obj.metadata.name
    template = _template(obj.spec.template)
    # core/v1 defaults an RC's selector to its template's labels.
    labels_selector = obj.spec.selector if obj.spec.selector else dict(template.metadata.labels)
    if not labels_selector:
        raise FieldError("spec.selector", "Required value")
    selector = _compile(LabelSelector(match_labels=labels_selector), "spec.selector")
    _check_template_matches(selector, template.metadata.labels)
    replicas = _replicas(obj.spec.replicas)
    raw_template = _raw_template(raw)
    owner = _owner_ref("ReplicationController", name, _uid(obj.metadata, "ReplicationController", ns))
    out = Expansion(
        selectors=[("ReplicationController", ns, name, selector)], probe=_probe(raw_template, template, name, ns)
    )
    missing = max(0, replicas - len(adoption.owned(ns, "ReplicationController", name)))
    for i in range(missing):
        pod_name = namer.generate("Pod", ns, f"{name}-", f"{ns}/ReplicationController/{name}/{i}")
        out.pods.append(Replica(_pod_manifest(raw_template, template, name=pod_name, namespace=ns,
                                              labels=dict(template.metadata.labels), owner=owner), i))
    return out


def _stateful_set(obj: StatefulSet, raw: dict[str, Any], ns: str, namer: Namer, adoption: Adoption) -> Expansion:
    name = obj.metadata.name
    template = _template(obj.spec.template)
    selector = _required_selector(obj.spec.selector, "StatefulSet")
    _check_template_matches(selector, template.metadata.labels)
    replicas = _replicas(obj.spec.replicas)
    start = obj.spec.ordinals.start if obj.spec.ordinals else 0
    if start < 0:
        raise FieldError("spec.ordinals.start", f"Invalid value: {start}: must be greater than or equal to 0")
    raw_template = _raw_template(raw)
    owner = _owner_ref("StatefulSet", name, _uid(obj.metadata, "StatefulSet", ns))
    revision = f"{name}-{template_hash(raw_template)}"
    existing = set(adoption.owned(ns, "StatefulSet", name))
    out = Expansion(selectors=[("StatefulSet", ns, name, selector)], probe=_probe(raw_template, template, name, ns))
    claim_templates = _claim_templates(raw)
    for i, ordinal in enumerate(range(start, start + replicas)):
        pod_name = f"{name}-{ordinal}"
        # The controller creates each replica's claims (unless they exist) before its pod.
        for claim in claim_templates:
            claim_name = f"{claim['metadata']['name']}-{pod_name}"
            if namer.reserve("PersistentVolumeClaim", ns, claim_name):
                out.claims.append(_claim_manifest(claim, claim_name, ns, obj.spec.selector))
        if pod_name in existing:
            continue
        if not namer.reserve("Pod", ns, pod_name):
            raise FieldError(
                "metadata.name",
                f"StatefulSet pod name {pod_name!r} is already used by another pod in namespace {ns!r}",
            )
        labels = {
            **template.metadata.labels,
            CONTROLLER_REVISION_HASH: revision,
            SS_POD_NAME: pod_name,
            SS_POD_INDEX: str(ordinal),
        }
        manifest = _pod_manifest(raw_template, template, name=pod_name, namespace=ns, labels=labels, owner=owner)
        if claim_templates:
            manifest["spec"] = {**manifest["spec"], "volumes": _claim_volumes(manifest["spec"], claim_templates, pod_name)}
        out.pods.append(Replica(manifest, i))
    return out


def _claim_templates(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The StatefulSet's volumeClaimTemplates that have a name (validation refused the others)."""
    spec = raw.get("spec")
    templates = spec.get("volumeClaimTemplates") if isinstance(spec, dict) else None
    if not isinstance(templates, list):
        return []
    return [t for t in templates if isinstance(t, dict) and isinstance(t.get("metadata"), dict)
            and isinstance(t["metadata"].get("name"), str) and t["metadata"]["name"]]


def _claim_manifest(template: dict[str, Any], name: str, ns: str, selector: LabelSelector | None) -> dict[str, Any]:
    """A replica's claim as the StatefulSet controller makes it: the template, named
    `<template>-<pod>`, labelled with the set's matchLabels too."""
    meta = template.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), **(selector.match_labels if selector is not None else {})}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": dict(meta.get("annotations") or {}),
                     "uid": stable_uid("PersistentVolumeClaim", ns, name)},
        "spec": template.get("spec") or {},
    }


def _claim_volumes(spec: dict[str, Any], templates: list[dict[str, Any]], pod_name: str) -> list[Any]:
    """The pod's volumes with one per claim template (replacing a volume of the same name)."""
    names = [t["metadata"]["name"] for t in templates]
    kept = [v for v in spec.get("volumes") or [] if not (isinstance(v, dict) and v.get("name") in names)]
    return [*kept, *({"name": n, "persistentVolumeClaim": {"claimName": f"{n}-{pod_name}"}} for n in names)]


def _job(obj: Job, raw: dict[str, Any], ns: str, namer: Namer, adoption: Adoption) -> Expansion:
    name = obj.metadata.name
    spec = obj.spec
    template = _template(spec.template)  # its restartPolicy was checked with the Job (api.validation)
    # A huge parallelism with few completions makes few pods: the limit applies to those made.
    parallelism = _replicas(spec.parallelism, "spec.parallelism", limit=False)
    if spec.completions is not None and spec.completions < 0:
        raise FieldError("spec.completions", f"Invalid value: {spec.completions}: must be greater than or equal to 0")
    mode = spec.completion_mode or "NonIndexed"
    if mode not in ("NonIndexed", "Indexed"):
        raise FieldError("spec.completionMode", f'Unsupported value: "{mode}": supported values: "NonIndexed", "Indexed"')
    if mode == "Indexed" and spec.completions is None:
        raise FieldError("spec.completions", "Required value: when completion mode is Indexed")
    uid = _uid(obj.metadata, "Job", ns)
    labels = dict(template.metadata.labels)
    if spec.manual_selector:
        selector = _required_selector(spec.selector, "Job")
        _check_template_matches(selector, labels)
    else:
        # A given selector was checked by api.validation (it must select the generated labels).
        labels.update({JOB_CONTROLLER_UID: uid, JOB_NAME: name, LEGACY_JOB_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name})
    raw_template = _raw_template(raw)
    out = Expansion(probe=_probe(raw_template, template, name, ns))
    if spec.suspend:
        return out
    want = parallelism if spec.completions is None else min(parallelism, spec.completions)
    _check_limit(want, "spec.parallelism" if want == parallelism else "spec.completions")
    active = len(adoption.owned(ns, "Job", name))
    owner = _owner_ref("Job", name, uid)
    for i in range(max(0, want - active)):
        pod_labels = dict(labels)
        annotations: dict[str, str] = {}
        if mode == "Indexed":
            prefix = f"{name}-{i}-"
            pod_labels[JOB_COMPLETION_INDEX] = str(i)
            annotations[JOB_COMPLETION_INDEX] = str(i)
        else:
            prefix = f"{name}-"
        pod_name = namer.generate("Pod", ns, prefix, f"{ns}/Job/{name}/{i}")
        out.pods.append(Replica(_pod_manifest(raw_template, template, name=pod_name, namespace=ns, labels=pod_labels,
                                              owner=owner, annotations=annotations), i))
    return out


def service_selector(raw: dict[str, Any], namespace: str) -> tuple[str, str, str, Selector] | None:
    """A Service's selector as a workload selector; None for services that select no pods."""
    svc: Service = decode(raw, Service, "Service")
    if not svc.spec.selector or svc.spec.type == "ExternalName":
        return None
    sel = compile_label_selector(LabelSelector(match_labels=dict(svc.spec.selector)))
    return ("Service", namespace, svc.metadata.name, sel)
