"""The objects a workload's ops create, built as scheduler_perf builds them: from its templates
(Go text/template, then YAML) or its base node and pod, with its node prepare strategies, its
`signature` label, and its PV/PVC pairs. Objects are plain dicts as the API server takes them;
each target (simulator, real apiserver) turns them into what it needs.

Names: where upstream leaves a generateName to the API server, a name is made here from it and a
per-prefix counter, so both targets create the same objects and nothing is ever retried."""

from __future__ import annotations

import copy
import re
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubesched.api.knownfields import go_field_names
from kubesched.api.yamlio import InputFileError, YamlError, load_one, read_text
from kubesched.tools.perf.gotemplate import SCHEDULER_PERF_FUNCS, Template, TemplateError, parse
from kubesched.tools.perf.workloads import MAX_FILE_BYTES, CreateAny, CreateNodes, CreatePods, NodeStrategy, Op, WorkloadError

Obj = dict[str, Any]

BASE_POD: Obj = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
    "spec": {"containers": [{
        "name": "pause", "image": "registry.k8s.io/pause:3.10.2", "ports": [{"containerPort": 80}],
        "resources": {"limits": {"cpu": "100m", "memory": "500Mi"}, "requests": {"cpu": "100m", "memory": "500Mi"}},
    }]},
}


def base_node(prefix: str) -> Obj:
    """upstream's makeBaseNode: 4 CPU, 32Gi, 110 pods, Ready."""
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": prefix},
            "status": {"capacity": dict(resources), "allocatable": dict(resources), "phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True"}]}}


# Kinds a workload may create that kubesched does not model, with what is lost: a workload creating
# one is refused for kubesched rather than run without it (kube-scheduler still runs it).
UNMODELLED_KINDS = {
    "DeviceTaintRule": "DeviceTaintRules (DRADeviceTaintRules) are not implemented in kubesched: "
                       "its allocator would see the rule's devices untainted",
}
_TOP_LEVEL_KIND = re.compile(r"^kind:\s*([A-Za-z0-9]+)\s*$", re.M)


def unmodelled_kind(ops: Sequence[Op]) -> str | None:
    """Why a createAny op's template is of a kind kubesched does not model, or None. The kind is read
    from the template's top-level `kind:` line (every upstream template names its kind literally)."""
    for op in ops:
        if isinstance(op, CreateAny):
            try:
                text = read_text(op.template, MAX_FILE_BYTES, "template")
            except InputFileError:
                continue  # the run says so, with the op
            for kind in _TOP_LEVEL_KIND.findall(text):
                if kind in UNMODELLED_KINDS:
                    return f"op {op.index} createAny {op.template.name}: {UNMODELLED_KINDS[kind]}"
    return None


class Templates:
    """Template files parsed once; rendered per object."""

    def __init__(self) -> None:
        self._parsed: dict[Path, tuple[Template, bool]] = {}
        self._static: dict[Path, Obj] = {}

    def render(self, path: Path, env: Mapping[str, Any]) -> Obj:
        template, dynamic = self._template(path)
        if not dynamic:
            if path not in self._static:
                self._static[path] = self._load(path, template.execute(dict(env)))
            return copy.deepcopy(self._static[path])
        return self._load(path, template.execute(dict(env)))

    def _template(self, path: Path) -> tuple[Template, bool]:
        if path not in self._parsed:
            try:
                text = read_text(path, MAX_FILE_BYTES, "template")
            except InputFileError as exc:
                raise WorkloadError(f"{path}: {exc}") from None
            try:
                self._parsed[path] = (parse(text, path.name, SCHEDULER_PERF_FUNCS), "{{" in text)
            except TemplateError as exc:
                raise WorkloadError(f"{path}: {exc}") from None
        return self._parsed[path]

    @staticmethod
    def _load(path: Path, text: str) -> Obj:
        return _one_object(path, text, "the rendered template")


def _one_object(path: Path, text: str, what: str) -> Obj:
    try:
        data = load_one(text)
    except YamlError as exc:
        raise WorkloadError(f"{path}: {what} is not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise WorkloadError(f"{path}: {what} is not an object")
    return data


def plain_object(path: Path) -> Obj:
    """An object file read as YAML, with no template processing (upstream's getSpecFromFile)."""
    try:
        text = read_text(path, MAX_FILE_BYTES, "object file")
    except InputFileError as exc:
        raise WorkloadError(f"{path}: {exc}") from None
    return _one_object(path, text, "the file")


def typed(kind: str, obj: Obj) -> Obj:
    """An object of a kind upstream decodes into its Go type (nodes, pods, volumes, pod groups):
    field names in another letter case are spelt as the API spells them, as Go's decoder reads them."""
    return go_field_names(kind, obj)


class Namer:
    """Names for generateName: `<prefix><n>`, n counting per prefix (and namespace)."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, str], int] = defaultdict(int)

    def name(self, obj: Obj, namespace: str = "") -> str:
        meta = obj.setdefault("metadata", {})
        if meta.get("name"):
            return str(meta["name"])
        prefix = str(meta.pop("generateName", "") or "")
        if not prefix:
            raise WorkloadError(f"a {obj.get('kind', 'object')} template has neither metadata.name nor metadata.generateName")
        key = (namespace, prefix)
        n = self._next[key]
        self._next[key] = n + 1
        meta["name"] = f"{prefix}{n:05d}"
        return str(meta["name"])


def _render(templates: Templates, path: Path, env: Mapping[str, Any]) -> Obj:
    try:
        return templates.render(path, env)
    except TemplateError as exc:
        raise WorkloadError(f"{path}: {exc}") from None


def nodes(op: CreateNodes, templates: Templates, namer: Namer) -> Iterator[tuple[Obj, list[Obj]]]:
    """Each node of the op with what its strategy adds beside it (CSINode objects)."""
    label_turn = 0
    for i in range(op.count):
        if op.template is not None:
            node = _render(templates, op.template, {**op.params, "Index": i, "Count": op.count})
        else:
            node = base_node(f"node-{op.index}-")
        if node.get("kind", "Node") != "Node":
            raise WorkloadError(f"{op.template}: a Node template renders a {node.get('kind')}")
        node = typed("Node", node)
        node.setdefault("apiVersion", "v1")
        node["kind"] = "Node"
        name = namer.name(node)
        # upstream's PrepareNodes labels every node it creates so (a kubelet would).
        meta = node["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/hostname": name}
        extra: list[Obj] = []
        if op.strategy is not None:
            label_turn = _prepare(node, name, op.strategy, label_turn, extra)
        yield node, extra


def _prepare(node: Obj, name: str, s: NodeStrategy, turn: int, extra: list[Obj]) -> int:
    """upstream's PrepareNodeStrategy patches, applied before the node is created (upstream patches it
    right after; nothing schedules in between)."""
    labels = node.setdefault("metadata", {}).setdefault("labels", {})
    if s.kind == "label":
        labels[s.label_key] = s.label_values[turn % len(s.label_values)]
        return turn + 1
    if s.kind == "uniqueLabel":
        labels[s.label_key] = str(uuid.uuid4())
        return turn
    status = node.setdefault("status", {})
    allocatable = status.setdefault("allocatable", dict(status.get("capacity") or {}))
    allocatable.update(s.allocatable)
    extra.append({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
        "metadata": {"name": name, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(s.migrated_plugins)}},
        "spec": {"drivers": [{"name": d, "nodeID": name, "allocatable": {"count": c}} for d, c in sorted(s.csi_allocatable.items())]},
    })
    return turn


def pods(op: CreatePods, templates: Templates, namer: Namer) -> Iterator[tuple[Obj, list[Obj]]]:
    """Each pod of the op, with the PV and PVC created before it when the op has volume templates."""
    volumes = op.pvc_template is not None
    pv_base = _render(templates, op.pv_template, {}) if op.pv_template is not None else None
    pvc_base = _render(templates, op.pvc_template, {}) if op.pvc_template is not None else None
    for i in range(op.count):
        if op.template is not None:
            pod = _render(templates, op.template, {**op.params, "Index": i, "Count": op.count})
            pod.setdefault("metadata", {}).setdefault("labels", {})["signature"] = f"signature-label-{i // op.signature_batch}"
        else:
            pod = copy.deepcopy(BASE_POD)
        pod = typed("Pod", pod)
        pod.setdefault("apiVersion", "v1")
        pod["kind"] = "Pod"
        pod.setdefault("metadata", {})["namespace"] = op.namespace
        namer.name(pod, op.namespace)
        before: list[Obj] = []
        if volumes:
            assert pvc_base is not None
            before = _volume_pair(op.namespace, i, pvc_base, pv_base)
            pod.setdefault("spec", {})["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{i}"}}]
        yield pod, before


def _volume_pair(namespace: str, i: int, pvc_base: Obj, pv_base: Obj | None) -> list[Obj]:
    """upstream's CreatePodWithPersistentVolume with bindVolume: a claim and its volume, bound to each other."""
    if pv_base is None:
        raise WorkloadError("persistentVolumeClaimTemplatePath needs persistentVolumeTemplatePath")
    pvc, pv = typed("PersistentVolumeClaim", copy.deepcopy(pvc_base)), typed("PersistentVolume", copy.deepcopy(pv_base))
    pvc_name, pv_name = f"pvc-{i}", f"{namespace}-vol-{i}"
    pvc.setdefault("apiVersion", "v1")
    pvc["kind"] = "PersistentVolumeClaim"
    pvc.setdefault("metadata", {}).update({"name": pvc_name, "namespace": namespace})
    pvc.setdefault("spec", {})["volumeName"] = pv_name
    pvc["status"] = {"phase": "Bound"}
    pv.setdefault("apiVersion", "v1")
    pv["kind"] = "PersistentVolume"
    pv.setdefault("metadata", {})["name"] = pv_name
    spec = pv.setdefault("spec", {})
    if "csi" in spec:
        spec["csi"]["volumeHandle"] = pv_name
    elif "awsElasticBlockStore" in spec:
        spec["awsElasticBlockStore"]["volumeID"] = f"vol-{i}"
    spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": pvc_name, "apiVersion": "v1"}
    pv["status"] = {"phase": "Bound"}
    return [pvc, pv]


def namespace(name: str, template: Obj | None = None) -> Obj:
    ns = copy.deepcopy(template) if template else {}
    ns.update({"apiVersion": "v1", "kind": "Namespace"})
    ns.setdefault("metadata", {})["name"] = name
    return ns


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())
