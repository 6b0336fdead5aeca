"""Reading scheduler_perf's performance-config.yaml: test cases, workloads, ops, parameters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ci import missing_outcome
from kubesched.tools.perf import source, workloads
from kubesched.tools.perf.gates import DRA_DEFAULTS, LOCKED_ON, NO_EFFECT, apiserver_refusal, kubesched_gates
from kubesched.tools.perf.run import plan
from kubesched.tools.perf.workloads import (
    AllocResourceClaims,
    Barrier,
    Churn,
    CreateNodes,
    CreatePods,
    DeletePods,
    Sleep,
    StartCollecting,
    StopCollecting,
    WorkloadError,
    parse_workload_duration,
)

CONFIG = """
- name: Basic
  defaultPodTemplatePath: pod.yaml
  featureGates: {GenericWorkload: true}
  workloadTemplate:
  - opcode: createNodes
    countParam: $initNodes
    labelNodePrepareStrategy: {labelKey: zone, labelValues: [a, b]}
  - opcode: createPodSets
    countParam: $sets
    namespacePrefix: ns
    createPodsOp: {opcode: createPods, countParam: $perSet}
  - opcode: createPods
    countParam: $measurePods
    collectMetrics: true
    templateParams: {cpu: "$cpu|250m", prio: $prio}
  - opcode: deletePods
    namespace: namespace-4
    deletePodsPerSecond: 10
    skipWaitToCompletion: true
  - opcode: churn
    mode: recreate
    number: 2
    templatePaths: [svc.yaml]
  - opcode: barrier
    stageRequirement: Attempted
  - opcode: sleep
    duration: 1.5s
  - opcode: startCollectingMetrics
    namespaces: [x]
  - opcode: stopCollectingMetrics
  - opcode: allocResourceClaims
    namespace: x
  workloads:
  - name: small
    labels: [integration-test]
    threshold: 100
    params: {initNodes: 3, sets: 2, perSet: 4, measurePods: 10, prio: 7}
    featureGates: {OpportunisticBatching: false}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "performance-config.yaml"
    path.write_text(CONFIG)
    return path


def test_ops_are_read_with_parameters_filled_in_and_pod_sets_unrolled(config: Path) -> None:
    (case,) = workloads.load(config)
    w = case.workload("small")
    assert w.threshold == 100 and w.labels == ("integration-test",)
    assert case.gates_for(w) == {"GenericWorkload": True, "OpportunisticBatching": False}
    ops = case.ops(w)
    kinds = [type(o) for o in ops]
    assert kinds == [CreateNodes, CreatePods, CreatePods, CreatePods, DeletePods, Churn, Barrier, Sleep, StartCollecting,
                     StopCollecting, AllocResourceClaims]
    nodes = ops[0]
    assert isinstance(nodes, CreateNodes) and nodes.count == 3
    assert nodes.strategy is not None and nodes.strategy.label_values == ("a", "b")
    # createPodSets: one createPods per namespace, numbered in the unrolled template as upstream numbers them.
    assert [(o.namespace, o.count, o.index) for o in ops[1:3] if isinstance(o, CreatePods)] == [("ns-0", 4, 1), ("ns-1", 4, 2)]
    measured = ops[3]
    assert isinstance(measured, CreatePods)
    assert measured.namespace == "namespace-3" and measured.collect_metrics
    assert measured.template == config.parent / "pod.yaml"
    assert dict(measured.params) == {"cpu": "250m", "prio": 7}  # a `|default`, and a plain reference
    churn = ops[5]
    assert isinstance(churn, Churn) and churn.interval == 0.5 and churn.namespace == "namespace-5"
    assert isinstance(ops[7], Sleep) and ops[7].seconds == 1.5
    alloc = ops[-1]
    assert isinstance(alloc, AllocResourceClaims) and alloc.namespace == "x"


@pytest.mark.parametrize(("change", "message"), [
    ("params: {initNodes: 3, sets: 2, perSet: 4, prio: 7}", "parameter measurePods is undefined in workload small"),
    ("params: {initNodes: x, sets: 2, perSet: 4, measurePods: 1, prio: 7}", "parameter initNodes has the wrong type str"),
])
def test_a_parameter_missing_or_of_the_wrong_type_names_the_op(config: Path, change: str, message: str) -> None:
    config.write_text(CONFIG.replace("params: {initNodes: 3, sets: 2, perSet: 4, measurePods: 10, prio: 7}", change))
    (case,) = workloads.load(config)
    with pytest.raises(WorkloadError, match=message) as exc:
        case.ops(case.workload("small"))
    assert str(exc.value).startswith("Basic/small: op ")


@pytest.mark.parametrize(("text", "message"), [
    ("- name: A\n  workloadTemplate:\n  - opcode: createNode\n  workloads: []\n", "unknown opcode 'createNode'"),
    ("- name: A\n  workloadTemplate:\n  - {opcode: createNodes, count: 1, colour: red}\n  workloads: [{name: w}]\n",
     "unknown field 'colour'"),
    ("- name: A\n  bogus: 1\n", "unknown field 'bogus'"),
    ("- name: A\n- name: A\n", "test case 'A' is defined twice"),
    ("{}", "a list of test cases expected"),
    ("- name: A\n  workloads: [{name: w, threshold: -1}]\n", "threshold must be a non-negative number"),
])
def test_bad_files_are_refused_with_the_place_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "performance-config.yaml"
    path.write_text(text)
    with pytest.raises(WorkloadError, match=message):
        cases = workloads.load(path)
        for case in cases:
            for w in case.workloads:
                case.ops(w)


@pytest.mark.parametrize(("raw", "message"), [
    ({"opcode": "createPods", "count": 1, "collectMetrics": True, "skipWaitToCompletion": True}, "cannot be true at the same time"),
    ({"opcode": "churn", "mode": "sideways", "templatePaths": ["a"]}, "invalid mode"),
    ({"opcode": "churn", "mode": "recreate", "templatePaths": ["a"]}, "number must be positive"),
    ({"opcode": "barrier", "stageRequirement": "Bound"}, "invalid StageRequirement Bound"),
    ({"opcode": "deletePods", "namespace": "x", "deletePodsPerSecond": -1}, "should be non-negative"),
    ({"opcode": "startCollectingMetrics"}, "namespaces cannot be empty"),
    ({"opcode": "createNodes"}, "count or countParam is required"),
    ({"opcode": "createPods", "count": 1, "steadyState": True}, "test duration must be > 0"),
])
def test_invalid_ops_are_refused_as_upstream_refuses_them(tmp_path: Path, raw: dict[str, object], message: str) -> None:
    import yaml

    path = tmp_path / "performance-config.yaml"
    path.write_text(yaml.safe_dump([{"name": "A", "workloadTemplate": [raw], "workloads": [{"name": "w"}]}]))
    (case,) = workloads.load(path)
    with pytest.raises(WorkloadError, match=message):
        case.ops(case.workloads[0])


def test_find_takes_a_workload_name_with_slashes(tmp_path: Path) -> None:
    path = tmp_path / "performance-config.yaml"
    path.write_text("- name: Unschedulable\n  workloadTemplate: []\n  workloads: [{name: 5kNodes/100Init/10kPods}]\n")
    case, w = workloads.find(workloads.load(path), "Unschedulable/5kNodes/100Init/10kPods")
    assert (case.name, w.name) == ("Unschedulable", "5kNodes/100Init/10kPods")
    with pytest.raises(WorkloadError, match="NAME/CASE expected"):
        workloads.find(workloads.load(path), "Unschedulable")
    with pytest.raises(WorkloadError, match="no workload 'x'"):
        workloads.find(workloads.load(path), "Unschedulable/x")


@pytest.mark.parametrize(("text", "seconds"), [("1.5s", 1.5), ("2m30s", 150.0), ("0", 0.0), ("100ms", 0.1), ("1h", 3600.0)])
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_workload_duration(text) == pytest.approx(seconds)


def test_a_bad_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_workload_duration("5 seconds")


@pytest.mark.parametrize(("gates", "spec", "why"), [
    ({"GenericWorkload": True, "SchedulerAsyncAPICalls": False}, "GenericWorkload=true", None),
    ({"NodeDeclaredFeatures": False}, "NodeDeclaredFeatures=false", None),
    ({"NodeDeclaredFeatures": True}, "NodeDeclaredFeatures=true", None),
    ({"DRAExtendedResource": True, "DynamicResourceAllocation": True, "DRADeviceTaints": True}, "", None),
    ({"DRAWorkloadResourceClaims": False, "DRAListTypeAttributes": False}, "", None),
    ({"DRAListTypeAttributes": True}, "",
     "feature gate DRAListTypeAttributes=true: kubesched has no switch for it and always runs as kube-scheduler v1.37.2 "
     "does with its default (false)"),
    ({"DRAConsumableCapacity": False}, "", "feature gate DRAConsumableCapacity=false: kubesched has no switch"),
    ({"DRAResourceClaimGranularStatusAuthorization": False}, "", None),
    ({"SomethingNew": True}, "", "feature gate SomethingNew is not known to kubesched"),
])
def test_workload_gates_for_kubesched(gates: dict[str, bool], spec: str, why: str | None) -> None:
    got_spec, got_why = kubesched_gates(gates)
    assert got_spec == spec
    assert (got_why is None) if why is None else (got_why is not None and why in got_why)


@pytest.mark.parametrize(("gates", "why"), [
    ({"NodeDeclaredFeatures": False}, "feature gate NodeDeclaredFeatures=false: kube-apiserver v1.37.2 has it locked to true"),
    ({"NodeDeclaredFeatures": True, "GenericWorkload": False}, None),
    ({"SchedulerAsyncAPICalls": False}, None),
])
def test_gates_the_pinned_apiserver_refuses(gates: dict[str, bool], why: str | None) -> None:
    got = apiserver_refusal(gates)
    assert (got is None) if why is None else (got is not None and got.startswith(why))


def test_locked_gates_are_the_pinned_releases() -> None:
    """Every gate named locked on is GA, on and LockToDefault at its last version in the pinned
    release's kube_features.go (read from the module cache)."""
    features_go = _upstream_root().parents[2] / "pkg" / "features" / "kube_features.go"
    text = features_go.read_text()
    for name in sorted(LOCKED_ON):
        last = _gate_versions(text, name)[-1]
        assert "Default: true" in last and "LockToDefault: true" in last, (name, last)


def test_dra_gate_defaults_are_the_pinned_releases() -> None:
    """Every DRA gate of the pinned release is in DRA_DEFAULTS with its default: the last version's,
    leaving out a version that only applies with a raised minimum compatibility version."""
    text = (_upstream_root().parents[2] / "pkg" / "features" / "kube_features.go").read_text()
    upstream = set(re.findall(r"\n\t(DRA[A-Za-z]+|DynamicResourceAllocation): {\n\t\t{Version", text))
    assert upstream - NO_EFFECT == set(DRA_DEFAULTS)  # a gate of no effect here is accepted either way
    for name, default in DRA_DEFAULTS.items():
        last = [v for v in _gate_versions(text, name) if "MinCompatibilityVersion" not in v][-1]
        assert f"Default: {str(default).lower()}," in last, (name, last)


def _gate_versions(features_go: str, name: str) -> list[str]:
    """The `{Version: ...}` lines of a gate in kube_features.go, in order."""
    block = re.search(rf"\n\t{name}: {{\n(.*?)\n\t}},", features_go, re.S)
    assert block is not None, name
    return [line for line in block.group(1).splitlines() if "Version:" in line]


def test_a_workload_that_turns_a_locked_gate_off_is_not_run_on_the_apiserver() -> None:
    root = _upstream_root()
    case, w = workloads.find(workloads.load(root / "misc" / "performance-config.yaml"),
                             "SchedulingBasic/5000Nodes_50000Pods_NodeDeclaredFeaturesDisabled")
    p = plan(case, w)
    assert p.refused is None  # the simulator runs it
    assert p.kube_refused is not None and "NodeDeclaredFeatures=false" in p.kube_refused


def test_the_pinned_version_is_the_one_tools_k8s_builds() -> None:
    go_mod = Path(__file__).parents[4] / "tools" / "k8s" / "kube" / "go.mod"
    assert f"k8s.io/kubernetes {source.KUBE_VERSION}" in go_mod.read_text()


def _upstream_root() -> Path:
    try:
        return source.perf_root()
    except source.SourceError as exc:
        missing_outcome(str(exc))


def test_every_upstream_workload_reads() -> None:
    """Every workload of the pinned release's scheduler_perf reads; the only ones that cannot are
    upstream's own two with an undefined parameter."""
    root = _upstream_root()
    broken = []
    count = 0
    for path in source.config_files(root):
        for case in workloads.load(path):
            for w in case.workloads:
                count += 1
                try:
                    case.ops(w)
                except WorkloadError as exc:
                    broken.append(str(exc))
    assert count > 200
    assert all("parameter measurePods is undefined" in b and "SchedulingWithResourceClaimTemplate" in b for b in broken), broken


def test_resolve_config_names_a_directory_of_the_release() -> None:
    root = _upstream_root()
    assert source.resolve_config("misc") == root / "misc" / "performance-config.yaml"
    with pytest.raises(source.SourceError, match="no such file, nor a config"):
        source.resolve_config("nothing-here")
