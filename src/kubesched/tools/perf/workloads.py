"""scheduler_perf's test cases, read as data: a performance-config.yaml is a list of test cases, each
a template of operations and the workloads (named parameter sets) that fill it in.

As upstream reads it: an op's opcode picks its type, its other fields are checked strictly (field
names match case-insensitively, as Go's encoding/json matches them), `$name` parameters are
resolved per workload (`countParam: $initPods`; template parameters may add `|default`), and
createPodSets is unrolled into one createPods per namespace. An opcode kubesched cannot run (Go's
CPU profiles) is kept as an Unsupported op that names itself, never dropped. Paths are relative to
the file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.durations import GoDurationError, parse_go_duration
from kubesched.api.yamlio import InputFileError, YamlError, load_one, read_text

MAX_FILE_BYTES = 4 * 2**20  # a config or template larger than this is refused


class WorkloadError(ValueError):
    """A test case, workload or op that cannot be read; the message names it and its field."""


# --- ops -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    index: int  # the op's place in the unrolled template: upstream names default namespaces after it

    @property
    def opcode(self) -> str:
        return _OPCODES[type(self)]

    @property
    def collects_metrics(self) -> bool:
        return False


@dataclass(frozen=True)
class NodeStrategy:
    kind: str  # "allocatable", "label" or "uniqueLabel"
    allocatable: Mapping[str, str] = field(default_factory=dict)
    csi_allocatable: Mapping[str, int] = field(default_factory=dict)  # driver -> volume count
    migrated_plugins: tuple[str, ...] = ()
    label_key: str = ""
    label_values: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateNodes(Op):
    count: int
    template: Path | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    strategy: NodeStrategy | None = None


@dataclass(frozen=True)
class CreateNamespaces(Op):
    prefix: str
    count: int
    template: Path | None = None


@dataclass(frozen=True)
class CreatePods(Op):
    count: int
    namespace: str  # upstream's default: namespace-<op index>
    template: Path | None = None  # None: upstream's base pod
    params: Mapping[str, Any] = field(default_factory=dict)
    collect_metrics: bool = False
    skip_wait: bool = False
    steady_state: bool = False
    duration: float = 0.0  # seconds, steady state only
    pv_template: Path | None = None
    pvc_template: Path | None = None
    signature_batch: int = 1

    @property
    def collects_metrics(self) -> bool:
        return self.collect_metrics


@dataclass(frozen=True)
class DeletePods(Op):
    namespace: str
    selector: Mapping[str, str] = field(default_factory=dict)
    skip_wait: bool = False
    per_second: int = 0


@dataclass(frozen=True)
class Churn(Op):
    mode: str  # "recreate" or "create"
    number: int
    interval: float  # seconds
    namespace: str
    templates: tuple[Path, ...]


@dataclass(frozen=True)
class Barrier(Op):
    namespaces: tuple[str, ...] = ()
    selector: Mapping[str, str] = field(default_factory=dict)
    stage: str = "Scheduled"  # or "Attempted"


@dataclass(frozen=True)
class Sleep(Op):
    seconds: float


@dataclass(frozen=True)
class CreatePodGroups(Op):
    namespace: str
    template: Path
    count: int
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateAny(Op):
    template: Path
    count: int = 1
    namespace: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UpdateAny(Op):
    template: Path
    count: int = 1
    namespace: str = ""
    per_second: int = 0
    subresources: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateResourceClaims(Op):
    """upstream's createResourceClaims: `count` copies of one ResourceClaim file (plain YAML, not a
    template), in `namespace`."""

    template: Path
    count: int
    namespace: str


@dataclass(frozen=True)
class AllocResourceClaims(Op):
    """upstream's allocResourceClaims: every unallocated claim of `namespace` (all namespaces when
    empty) allocated by the structured allocator on a node picked at random, no pod involved."""

    namespace: str = ""


@dataclass(frozen=True)
class StartCollecting(Op):
    name: str
    namespaces: tuple[str, ...]
    selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StopCollecting(Op):
    @property
    def collects_metrics(self) -> bool:
        return True


@dataclass(frozen=True)
class Unsupported(Op):
    """An op kubesched does not run (Go CPU profiles): the run says so and skips it, or refuses the
    workload when the op matters to what is measured."""

    name: str
    reason: str
    essential: bool = True  # False: skipping it changes nothing that is measured (profiles)


_OPCODES: dict[type, str] = {
    CreateNodes: "createNodes", CreateNamespaces: "createNamespaces", CreatePods: "createPods",
    DeletePods: "deletePods", Churn: "churn", Barrier: "barrier", Sleep: "sleep",
    CreatePodGroups: "createPodGroups", CreateAny: "createAny", UpdateAny: "updateAny",
    CreateResourceClaims: "createResourceClaims", AllocResourceClaims: "allocResourceClaims",
    StartCollecting: "startCollectingMetrics", StopCollecting: "stopCollectingMetrics", Unsupported: "(unsupported)",
}
_PROFILE_OPS = {"startCollectingProfile", "stopCollectingProfile"}


# --- test cases and workloads ----------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    params: Mapping[str, Any]
    labels: tuple[str, ...]
    threshold: float  # pods/s, 0: none (a per-topic threshold map gives its default topic's value)
    feature_gates: Mapping[str, bool]


@dataclass(frozen=True)
class TestCase:
    name: str
    file: Path
    template: tuple[Mapping[str, Any], ...]  # the raw ops, read per workload
    workloads: tuple[Workload, ...]
    feature_gates: Mapping[str, bool]
    labels: tuple[str, ...]
    scheduler_config: Path | None
    default_pod_template: Path | None
    threshold_metric: str  # "SchedulingThroughput" unless the case compares another metric

    def workload(self, name: str) -> Workload:
        for w in self.workloads:
            if w.name == name:
                return w
        raise WorkloadError(f"{self.name}: no workload {name!r} (it has: {', '.join(w.name for w in self.workloads)})")

    def gates_for(self, w: Workload) -> dict[str, bool]:
        """The case's feature gates with the workload's on top, as upstream merges them."""
        return {**self.feature_gates, **w.feature_gates}

    def ops(self, w: Workload) -> list[Op]:
        """The template with the workload's parameters filled in, createPodSets unrolled."""
        out: list[Op] = []
        for i, raw in enumerate(self.template):
            where = f"{self.name}/{w.name}: op {i} ({raw.get('opcode', '?')})"
            try:
                out.extend(_build(raw, i, len(out), w, self, where))
            except WorkloadError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise WorkloadError(f"{where}: {exc}") from None
        return out


def load(path: Path) -> list[TestCase]:
    """The test cases of one performance-config.yaml."""
    try:
        data = load_one(read_text(path, MAX_FILE_BYTES, "scheduler_perf file"))
    except (InputFileError, YamlError) as exc:
        raise WorkloadError(f"{path}: {exc}") from None
    if not isinstance(data, list):
        raise WorkloadError(f"{path}: a list of test cases expected, got {type(data).__name__}")
    cases = []
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise WorkloadError(f"{path}: test case {i}: a mapping expected")
        cases.append(_test_case(raw, path, i))
    names = [c.name for c in cases]
    if dup := next((n for n in names if names.count(n) > 1), None):
        raise WorkloadError(f"{path}: test case {dup!r} is defined twice")
    return cases


def find(cases: list[TestCase], spec: str) -> tuple[TestCase, Workload]:
    """`NAME/CASE` (test case / workload; a workload name may itself hold a slash, as
    'Unschedulable/5kNodes/100Init/10kPods' does)."""
    name, sep, workload = spec.partition("/")
    if not sep or not workload:
        raise WorkloadError(f"--workload {spec!r}: NAME/CASE expected, e.g. SchedulingBasic/5000Nodes_10000Pods")
    for case in cases:
        if case.name == name:
            return case, case.workload(workload)
    raise WorkloadError(f"--workload {spec!r}: no test case {name!r} (the file has: {', '.join(c.name for c in cases)})")


# --- reading ----------------------------------------------------------------------------------------

_CASE_FIELDS = {"name", "featuregates", "metricscollectorconfig", "workloadtemplate", "workloads", "schedulerconfigpath",
                "defaultpodtemplatepath", "labels", "defaultthresholdmetricselector"}
_WORKLOAD_FIELDS = {"name", "params", "labels", "threshold", "thresholdmetricselector", "featuregates"}


def _fields(raw: Mapping[str, Any], allowed: set[str], where: str) -> dict[str, Any]:
    """The mapping keyed by lower-cased field name; an unknown field is refused, as Go's strict decoder does."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        low = str(key).lower()
        if low not in allowed:
            raise WorkloadError(f"{where}: unknown field {key!r}")
        out[low] = value
    return out


def _test_case(raw: Mapping[str, Any], path: Path, i: int) -> TestCase:
    f = _fields(raw, _CASE_FIELDS, f"{path}: test case {i}")
    name = f.get("name")
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"{path}: test case {i}: name must be a non-empty string")
    where = f"{path}: {name}"
    template = f.get("workloadtemplate") or []
    if not isinstance(template, list) or not all(isinstance(o, dict) for o in template):
        raise WorkloadError(f"{where}: workloadTemplate must be a list of ops")
    for j, op in enumerate(template):
        _check_opcode(op, f"{where}: op {j}")
    workloads = []
    for j, w in enumerate(f.get("workloads") or []):
        if not isinstance(w, dict):
            raise WorkloadError(f"{where}: workload {j}: a mapping expected")
        workloads.append(_workload(w, f"{where}: workload {j}"))
    selector = f.get("defaultthresholdmetricselector") or {}
    return TestCase(
        name=name, file=path, template=tuple(template), workloads=tuple(workloads),
        feature_gates=_gates(f.get("featuregates"), where), labels=tuple(f.get("labels") or ()),
        scheduler_config=_path(path, f.get("schedulerconfigpath")),
        default_pod_template=_path(path, f.get("defaultpodtemplatepath")),
        threshold_metric=str(selector.get("name", "SchedulingThroughput")) if isinstance(selector, dict) else "SchedulingThroughput",
    )


def _workload(raw: Mapping[str, Any], where: str) -> Workload:
    f = _fields(raw, _WORKLOAD_FIELDS, where)
    name = f.get("name")
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"{where}: name must be a non-empty string")
    threshold = f.get("threshold", 0)
    if isinstance(threshold, dict):
        # Per topic (upstream passes a topic per benchmark binary); kubesched reports the largest.
        values = [v for v in threshold.values() if isinstance(v, int | float) and not isinstance(v, bool)]
        threshold = max(values, default=0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or threshold < 0:
        raise WorkloadError(f"{where} ({name}): threshold must be a non-negative number")
    params = f.get("params") or {}
    if not isinstance(params, dict):
        raise WorkloadError(f"{where} ({name}): params must be a mapping")
    return Workload(name=name, params=params, labels=tuple(f.get("labels") or ()), threshold=float(threshold),
                    feature_gates=_gates(f.get("featuregates"), f"{where} ({name})"))


def _gates(raw: object, where: str) -> dict[str, bool]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, bool) for v in raw.values()):
        raise WorkloadError(f"{where}: featureGates must map gate names to true or false")
    return {str(k): v for k, v in raw.items()}


def _path(base: Path, value: object) -> Path | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise WorkloadError(f"{base}: a path must be a string, got {value!r}")
    return (base.parent / value).resolve()


_KNOWN_OPCODES = {
    "createNodes", "createNamespaces", "createPods", "createPodSets", "deletePods", "churn", "barrier", "sleep",
    "createPodGroups", "createAny", "updateAny", "startCollectingMetrics", "stopCollectingMetrics",
    "createResourceClaims", "allocResourceClaims",
} | _PROFILE_OPS


def _check_opcode(op: Mapping[str, Any], where: str) -> None:
    code = op.get("opcode")
    if code not in _KNOWN_OPCODES:
        raise WorkloadError(f"{where}: unknown opcode {code!r}")


class _Params:
    def __init__(self, w: Workload, where: str) -> None:
        self.w, self.where = w, where

    def raw(self, ref: str) -> Any:
        if not isinstance(ref, str) or not ref.startswith("$"):
            raise WorkloadError(f"{self.where}: a parameter reference must start with '$', got {ref!r}")
        key = ref[1:]
        if key not in self.w.params:
            raise WorkloadError(f"{self.where}: parameter {key} is undefined in workload {self.w.name}")
        return self.w.params[key]

    def int(self, ref: str) -> int:
        value = self.raw(ref)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise WorkloadError(f"{self.where}: parameter {ref[1:]} has the wrong type {type(value).__name__} (a number expected)")
        return int(value)

    def template(self, params: object) -> dict[str, Any]:
        """Template parameters: `$name` from the workload, `$name|default` with a YAML default."""
        if params is None:
            return {}
        if not isinstance(params, dict):
            raise WorkloadError(f"{self.where}: templateParams must be a mapping")
        out = dict(params)
        for key, value in params.items():
            if isinstance(value, str) and value.startswith("$"):
                name, sep, default = value[1:].partition("|")
                if name in self.w.params:
                    out[key] = self.w.params[name]
                elif sep:
                    try:
                        out[key] = yaml.safe_load(default)
                    except yaml.YAMLError as exc:
                        raise WorkloadError(f"{self.where}: parameter {name!r} default {default!r}: {exc}") from None
                else:
                    raise WorkloadError(f"{self.where}: parameter {name!r} not found")
        return out


def parse_workload_duration(text: str) -> float:
    """Seconds of an op's duration, a metav1.Duration read as Go reads it ('1.5s', '2m30s', '0');
    empty means none."""
    if not text.strip():
        return 0.0
    try:
        return parse_go_duration(text.strip())
    except GoDurationError:
        raise ValueError(f"invalid duration {text!r}") from None


def _count(f: dict[str, Any], p: _Params, where: str, *, default: int | None = None) -> int:
    if f.get("countparam"):
        return p.int(f["countparam"])
    value = f.get("count", default)
    if value is None:
        raise WorkloadError(f"{where}: count or countParam is required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise WorkloadError(f"{where}: count must be a non-negative integer, got {value!r}")
    return value


def _selector(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: labelSelector must map label keys to values")
    return {str(k): str(v) for k, v in value.items()}


def _build(raw: Mapping[str, Any], template_index: int, index: int, w: Workload, case: TestCase, where: str) -> list[Op]:
    code = raw["opcode"]
    p = _Params(w, where)
    base = case.file

    def fields(*names: str) -> dict[str, Any]:
        return _fields(raw, {"opcode", *(n.lower() for n in names)}, where)

    if code in _PROFILE_OPS:
        return [Unsupported(index, code, "Go CPU profiles do not apply (profile kubesched with py-spy)", essential=False)]
    if code == "createNodes":
        f = fields("count", "countParam", "nodeTemplatePath", "nodeAllocatableStrategy", "labelNodePrepareStrategy",
                   "uniqueNodeLabelStrategy", "templateParams")
        strategies = [k for k in ("nodeallocatablestrategy", "labelnodepreparestrategy", "uniquenodelabelstrategy") if f.get(k)]
        if len(strategies) > 1:
            raise WorkloadError(f"{where}: at most one node prepare strategy may be set")
        return [CreateNodes(index, _count(f, p, where), _path(base, f.get("nodetemplatepath")), p.template(f.get("templateparams")),
                            _strategy(f, strategies[0], where) if strategies else None)]
    if code == "createNamespaces":
        f = fields("prefix", "count", "countParam", "namespaceTemplatePath")
        return [CreateNamespaces(index, str(f.get("prefix", "")), _count(f, p, where), _path(base, f.get("namespacetemplatepath")))]
    if code == "createPods":
        return [_create_pods(raw, index, p, case, where, None)]
    if code == "createPodSets":
        f = fields("count", "countParam", "namespacePrefix", "createPodsOp")
        inner = f.get("createpodsop")
        if not isinstance(inner, dict):
            raise WorkloadError(f"{where}: createPodsOp must be a createPods op")
        prefix = str(f.get("namespaceprefix", ""))
        return [_create_pods(inner, index + i, p, case, f"{where}: createPodsOp", f"{prefix}-{i}") for i in range(_count(f, p, where))]
    if code == "deletePods":
        f = fields("namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond")
        rate = int(f.get("deletepodspersecond", 0) or 0)
        if rate < 0:
            raise WorkloadError(f"{where}: invalid DeletePodsPerSecond={rate}; should be non-negative")
        return [DeletePods(index, str(f.get("namespace", "")), _selector(f.get("labelselector"), where),
                           bool(f.get("skipwaittocompletion", False)), rate)]
    if code == "churn":
        f = fields("mode", "number", "intervalMilliseconds", "namespace", "templatePaths")
        mode, number = f.get("mode"), int(f.get("number", 0) or 0)
        if mode not in ("recreate", "create"):
            raise WorkloadError(f"{where}: invalid mode: {mode}. must be one of [recreate create]")
        if number < 0 or (mode == "recreate" and number == 0):
            raise WorkloadError(f"{where}: number must be positive in recreate mode, non-negative in create mode")
        paths = f.get("templatepaths") or []
        if not paths:
            raise WorkloadError(f"{where}: at least one template spec file needs to be specified")
        interval = int(f.get("intervalmilliseconds", 0) or 0) or 500
        ns = str(f["namespace"]) if f.get("namespace") else f"namespace-{index}"
        return [Churn(index, mode, number, interval / 1000.0, ns, tuple(_path(base, x) or Path() for x in paths))]
    if code == "barrier":
        f = fields("namespaces", "labelSelector", "stageRequirement")
        stage = f.get("stagerequirement") or "Scheduled"
        if stage not in ("Scheduled", "Attempted"):
            raise WorkloadError(f"{where}: invalid StageRequirement {stage}")
        return [Barrier(index, tuple(f.get("namespaces") or ()), _selector(f.get("labelselector"), where), stage)]
    if code == "sleep":
        f = fields("duration", "durationParam")
        text = p.raw(f["durationparam"]) if f.get("durationparam") else f.get("duration", "0s")
        return [Sleep(index, parse_workload_duration(str(text)))]
    if code == "createPodGroups":
        f = fields("namespace", "templatePath", "templateParams", "count", "countParam")
        if not f.get("templatepath") or not f.get("namespace"):
            raise WorkloadError(f"{where}: templatePath and namespace must be set")
        count = _count(f, p, where)
        if count < 1:
            raise WorkloadError(f"{where}: count must be greater than 0, got {count}")
        return [CreatePodGroups(index, str(f["namespace"]), _path(base, f["templatepath"]) or Path(), count,
                                p.template(f.get("templateparams")))]
    if code == "createAny":
        f = fields("namespace", "templatePath", "count", "countParam", "templateParams")
        if not f.get("templatepath"):
            raise WorkloadError(f"{where}: TemplatePath must be set")
        return [CreateAny(index, _path(base, f["templatepath"]) or Path(), _count(f, p, where, default=1), str(f.get("namespace") or ""),
                          p.template(f.get("templateparams")))]
    if code == "updateAny":
        f = fields("namespace", "templatePath", "count", "countParam", "updatePerSecond", "subresources")
        if not f.get("templatepath"):
            raise WorkloadError(f"{where}: TemplatePath must be set")
        rate = int(f.get("updatepersecond", 0) or 0)
        if rate < 0:
            raise WorkloadError(f"{where}: invalid UpdatePerSecond={rate}; should be non-negative")
        return [UpdateAny(index, _path(base, f["templatepath"]) or Path(), _count(f, p, where, default=1), str(f.get("namespace") or ""),
                          rate, tuple(f.get("subresources") or ()))]
    if code == "createResourceClaims":
        f = fields("count", "countParam", "namespace", "templatePath")
        if not f.get("namespace"):
            raise WorkloadError(f"{where}: Namespace must be set")
        if not f.get("templatepath"):
            raise WorkloadError(f"{where}: TemplatePath must be set")
        return [CreateResourceClaims(index, _path(base, f["templatepath"]) or Path(), _count(f, p, where), str(f["namespace"]))]
    if code == "allocResourceClaims":
        f = fields("namespace")
        return [AllocResourceClaims(index, str(f.get("namespace") or ""))]
    if code == "startCollectingMetrics":
        f = fields("name", "namespaces", "labelSelector")
        namespaces = tuple(f.get("namespaces") or ())
        if not namespaces:
            raise WorkloadError(f"{where}: namespaces cannot be empty")
        return [StartCollecting(index, str(f.get("name", "")), namespaces, _selector(f.get("labelselector"), where))]
    if code == "stopCollectingMetrics":
        fields()
        return [StopCollecting(index)]
    raise WorkloadError(f"{where}: unknown opcode {code!r}")


def _create_pods(raw: Mapping[str, Any], index: int, p: _Params, case: TestCase, where: str, namespace: str | None) -> CreatePods:
    f = _fields(raw, {n.lower() for n in (
        "opcode", "count", "countParam", "countMultiplierParam", "steadyState", "steadyStateParam", "duration", "durationParam",
        "collectMetrics", "namespace", "podTemplatePath", "skipWaitToCompletion", "persistentVolumeTemplatePath",
        "persistentVolumeClaimTemplatePath", "templateParams", "signatureBatchSize", "signatureBatchSizeParam")}, where)
    count = _count(f, p, where)
    if f.get("countmultiplierparam"):
        count *= p.int(f["countmultiplierparam"])
    batch = p.int(f["signaturebatchsizeparam"]) if f.get("signaturebatchsizeparam") else int(f.get("signaturebatchsize", 0) or 0)
    steady = bool(p.raw(f["steadystateparam"])) if f.get("steadystateparam") else bool(f.get("steadystate", False))
    duration_text = p.raw(f["durationparam"]) if f.get("durationparam") else f.get("duration", "0s")
    duration = parse_workload_duration(str(duration_text))
    collect, skip = bool(f.get("collectmetrics", False)), bool(f.get("skipwaittocompletion", False))
    if collect and skip:
        raise WorkloadError(f"{where}: collectMetrics and skipWaitToCompletion cannot be true at the same time")
    if skip and steady:
        raise WorkloadError(f"{where}: skipWaitToCompletion and steadyState cannot be true at the same time")
    if steady and duration <= 0:
        raise WorkloadError(f"{where}: when creating pods in a steady state, the test duration must be > 0")
    template = _path(case.file, f.get("podtemplatepath")) or case.default_pod_template
    ns = namespace or (str(f["namespace"]) if f.get("namespace") else f"namespace-{index}")
    return CreatePods(
        index, count, ns, template, p.template(f.get("templateparams")), collect, skip, steady, duration,
        _path(case.file, f.get("persistentvolumetemplatepath")), _path(case.file, f.get("persistentvolumeclaimtemplatepath")),
        batch or 1,
    )


def _strategy(f: dict[str, Any], key: str, where: str) -> NodeStrategy:
    raw = f[key]
    if not isinstance(raw, dict):
        raise WorkloadError(f"{where}: {key} must be a mapping")
    if key == "nodeallocatablestrategy":
        s = _fields(raw, {"nodeallocatable", "csinodeallocatable", "migratedplugins"}, f"{where}: nodeAllocatableStrategy")
        csi = {}
        for driver, res in (s.get("csinodeallocatable") or {}).items():
            count = res.get("count") if isinstance(res, dict) else None
            if isinstance(count, bool) or not isinstance(count, int):
                raise WorkloadError(f"{where}: csiNodeAllocatable.{driver}.count must be an integer")
            csi[str(driver)] = count
        return NodeStrategy("allocatable", allocatable={str(k): str(v) for k, v in (s.get("nodeallocatable") or {}).items()},
                            csi_allocatable=csi, migrated_plugins=tuple(s.get("migratedplugins") or ()))
    if key == "labelnodepreparestrategy":
        s = _fields(raw, {"labelkey", "labelvalues"}, f"{where}: labelNodePrepareStrategy")
        values = tuple(str(v) for v in s.get("labelvalues") or ())
        if not s.get("labelkey") or not values:
            raise WorkloadError(f"{where}: labelNodePrepareStrategy needs labelKey and labelValues")
        return NodeStrategy("label", label_key=str(s["labelkey"]), label_values=values)
    s = _fields(raw, {"labelkey"}, f"{where}: uniqueNodeLabelStrategy")
    if not s.get("labelkey"):
        raise WorkloadError(f"{where}: uniqueNodeLabelStrategy needs labelKey")
    return NodeStrategy("uniqueLabel", label_key=str(s["labelkey"]))
