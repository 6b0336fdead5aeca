"""NodeDeclaredFeatures: the cases of kube's nodedeclaredfeatures_test.go (PreFilter, Filter, the
node and target-pod hints, the events), each feature's rule of component-helpers, the registry's
bitmap and the node table's column."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import cache_with, make_node, make_pod
from kubesched.api.objects import Node, PodSpec
from kubesched.api.podinfo import PodInfo
from kubesched.cache.nodetable import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, TARGET_POD, QueueingHint
from kubesched.framework.events import ActionType as A
from kubesched.framework.status import Code
from kubesched.infra import features
from kubesched.plugins.nodedeclaredfeatures import ERR_REASON, NodeDeclaredFeatures
from kubesched.plugins.nodedeclaredfeatures.features import Feature
from kubesched.plugins.nodedeclaredfeatures.featureset import (
    DEFAULT_REGISTRY,
    KUBE_VERSION,
    FeatureRegistry,
    FeatureSet,
    parse_version,
)
from kubesched.plugins.nodedeclaredfeatures.plugin import SIGNER, STATE_KEY
from unit.plugins.pluginkit import check_coverage

Q, SKIP = QueueingHint.Queue, QueueingHint.QueueSkip
RESTART_ALL = "RestartAllContainersOnContainerExits"
HOST_NETWORK = "UserNamespacesHostNetworkSupport"
BIND_MOUNTS = "VolumeBindMountOptions"


def mock(name: str, needed: bool, max_version: str = "") -> Feature:
    """A stand-in feature every pod needs (or none), relevant up to `max_version` ("": always)."""
    return Feature(name, lambda _spec: needed, parse_version(max_version) if max_version else None)


def plugin(*mocks: Feature, version: str = "1.35.0", enabled: bool = True) -> NodeDeclaredFeatures:
    with features.gates(node_declared_features=enabled):
        return NodeDeclaredFeatures(registry=FeatureRegistry(mocks) if mocks else DEFAULT_REGISTRY,
                                    version=parse_version(version))


def pod(**spec: Any) -> PodInfo:
    return make_pod("p").spec(**spec).info()


def restart_rule(action: str) -> dict[str, Any]:
    return {"action": action, "exitCodes": {"operator": "In", "values": [42]}}


# --- PreFilter -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mocks", "version", "enabled", "want"), [
    pytest.param([mock("TestFeature1", True), mock("TestFeature2", False)], "1.35.0", False, None, id="plugin-disabled"),
    pytest.param([mock("TestFeature1", True), mock("TestFeature2", False)], "1.35.0", True, ("TestFeature1",),
                 id="pod-with-feature-requirements"),
    pytest.param([mock("TestFeature1", True, "1.38.0"), mock("TestFeature2", True, "1.38.0")], "1.35.0", True,
                 ("TestFeature1", "TestFeature2"), id="pod-with-multiple-feature-requirements"),
    pytest.param([mock("TestFeature1", False), mock("TestFeature2", False)], "1.35.0", True, None, id="pod-with-no-requirements"),
    pytest.param([mock("TestFeature1", True, "1.33.0"), mock("TestFeature2", False)], "1.34.0", True, None,
                 id="feature-not-required-past-its-max-version"),
])
def test_pre_filter(mocks: list[Feature], version: str, enabled: bool, want: tuple[str, ...] | None) -> None:
    state = CycleState()
    result, status = plugin(*mocks, version=version, enabled=enabled).pre_filter(state, pod())
    assert result is None  # never narrows the nodes
    if want is None:
        assert status is not None and status.code == Code.SKIP
        assert state.read(STATE_KEY) is None
    else:
        assert status is None
        assert state.read(STATE_KEY).names == want


def test_pre_filter_without_a_version_is_an_error() -> None:
    pl = NodeDeclaredFeatures(registry=FeatureRegistry([mock("TestFeature", True)]), version=None)
    _, status = pl.pre_filter(CycleState(), pod())
    assert status is not None and status.code == Code.ERROR and status.reasons == ("target version cannot be nil",)


# --- Filter ----------------------------------------------------------------------------------------

ABC = FeatureRegistry([mock("FeatureA", False), mock("FeatureB", False), mock("FeatureC", False)])


def filtered(node: Node, wanted: list[str] | None, enabled: bool = True) -> tuple[Code, tuple[str, ...]] | None:
    """The plugin's verdict on the one node with `wanted` written at PreFilter (None: nothing written)."""
    with features.gates(node_declared_features=enabled):
        pl = NodeDeclaredFeatures(registry=ABC, version=parse_version("1.35.0"))
    table = cache_with([node]).table
    state = CycleState()
    if wanted is not None:
        state.write(STATE_KEY, ABC.set_of(wanted))
    result = pl.filter(state, pod(), table)
    if result is None or not result.codes[0]:
        return None
    return result.describe(int(result.codes[0]))


def declaring(name: str, *names: str) -> Node:
    return make_node(name).declared(*names).obj()


UNRESOLVABLE = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's required features",))


@pytest.mark.parametrize(("node", "wanted", "enabled", "want"), [
    pytest.param(declaring("node-1", "FeatureA", "FeatureB"), None, False, None, id="plugin-disabled"),
    pytest.param(declaring("node-1", "FeatureA", "FeatureB"), ["FeatureA"], True, None, id="node-matches-requirements"),
    pytest.param(declaring("node-1", "FeatureB"), ["FeatureA"], True, UNRESOLVABLE, id="node-does-not-match-requirements"),
    pytest.param(declaring("node-multi", "FeatureA", "FeatureB", "FeatureC"), ["FeatureA", "FeatureC"], True, None,
                 id="pod-requires-a-subset"),
    pytest.param(declaring("node-1"), ["FeatureA"], True, UNRESOLVABLE, id="node-has-no-declared-features"),
    pytest.param(declaring("node-1", "FeatureA"), ["FeatureA", "FeatureB"], True, UNRESOLVABLE, id="node-with-some-but-not-all"),
    pytest.param(declaring("node-1"), None, True,
                 (Code.ERROR, ('error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found',)),
                 id="error-getting-pre-filter-state"),
])
def test_filter(node: Node, wanted: list[str] | None, enabled: bool, want: tuple[Code, tuple[str, ...]] | None) -> None:
    assert filtered(node, wanted, enabled) == want


def test_the_reason_is_kubes() -> None:
    assert ERR_REASON == "node(s) didn't match Pod's required features"


def test_filter_answers_the_whole_table() -> None:
    nodes = [declaring("a", RESTART_ALL), declaring("b"), declaring("c", RESTART_ALL, HOST_NETWORK), declaring("d", "Other")]
    table = cache_with(nodes).table
    pl = NodeDeclaredFeatures()
    pi = pod(containers=[{"name": "c", "image": "x", "restartPolicy": "Never",
                          "restartPolicyRules": [restart_rule("RestartAllContainers")]}])
    state = CycleState()
    assert pl.pre_filter(state, pi) == (None, None)
    result = pl.filter(state, pi, table)
    assert result is not None
    rejected = {table.name_of(int(r)) for r in table.rows() if result.codes[r]}
    assert rejected == {"b", "d"}
    assert pl.miss_detail(state, pi, table, table.row_of("b")) == f"does not declare {RESTART_ALL}"
    assert pl.miss_distance(state, pi, table, np.array([table.row_of("b"), table.row_of("a")])).tolist() == [1.0, 0.0]


def test_a_pod_needing_nothing_is_skipped() -> None:
    status = NodeDeclaredFeatures().pre_filter(CycleState(), pod())[1]
    assert status is not None and status.code == Code.SKIP


# --- each feature's rule, with kube's registry ---------------------------------------------------------


@pytest.mark.parametrize(("spec", "want"), [
    pytest.param({}, (), id="nothing"),
    pytest.param({"containers": [{"name": "c", "image": "x", "restartPolicy": "Never",
                                  "restartPolicyRules": [restart_rule("RestartAllContainers")]}]}, (RESTART_ALL,),
                 id="a-container-restarting-all"),
    pytest.param({"initContainers": [{"name": "i", "image": "x", "restartPolicy": "Never",
                                      "restartPolicyRules": [restart_rule("Restart"), restart_rule("RestartAllContainers")]}]},
                 (RESTART_ALL,), id="an-init-container-restarting-all"),
    pytest.param({"containers": [{"name": "c", "image": "x", "restartPolicy": "Never",
                                  "restartPolicyRules": [restart_rule("Restart")]}]}, (), id="restarting-itself-only"),
    pytest.param({"hostNetwork": True, "hostUsers": False}, (HOST_NETWORK,), id="host-network-in-a-user-namespace"),
    pytest.param({"hostNetwork": True, "hostUsers": True}, (), id="host-network-host-users"),
    pytest.param({"hostNetwork": True}, (), id="host-network-hostusers-unset"),
    pytest.param({"hostNetwork": False, "hostUsers": False}, (), id="user-namespace-without-host-network"),
    pytest.param({"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": "v", "mountPath": "/v",
                                                                               "bindMountOptions": ["nosuid"]}]}]},
                 (BIND_MOUNTS,), id="bind-mount-options"),
    pytest.param({"ephemeralContainers": [{"name": "e", "image": "x", "volumeMounts": [{"name": "v", "mountPath": "/v",
                                                                                        "bindMountOptions": ["nodev"]}]}]},
                 (BIND_MOUNTS,), id="bind-mount-options-of-an-ephemeral-container"),
    pytest.param({"hostNetwork": True, "hostUsers": False,
                  "initContainers": [{"name": "i", "image": "x", "restartPolicy": "Always",
                                      "restartPolicyRules": [restart_rule("RestartAllContainers")]}]},
                 (RESTART_ALL, HOST_NETWORK), id="two-features"),
])
def test_kubes_features_needed_for_scheduling(spec: dict[str, Any], want: tuple[str, ...]) -> None:
    assert NodeDeclaredFeatures().required(pod(**spec)).names == want


def test_kubes_registry_is_sorted_by_name() -> None:
    assert DEFAULT_REGISTRY.names == (
        "DRANodeAllocatableResources", "DRAOptionalNodeOperations", "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers",
        "InPlacePodVerticalScalingMemoryBackedVolumes", RESTART_ALL, HOST_NETWORK, BIND_MOUNTS,
    )
    assert KUBE_VERSION == (1, 37, 2)


def test_a_set_is_written_as_kubes_bitmap() -> None:
    assert DEFAULT_REGISTRY.set_of([HOST_NETWORK, RESTART_ALL]) == FeatureSet((RESTART_ALL, HOST_NETWORK), "000000110")
    assert DEFAULT_REGISTRY.set_of([]).flags == "000000000"
    with pytest.raises(ValueError, match="unknown feature Nope"):
        DEFAULT_REGISTRY.set_of(["Nope"])


def test_a_versions_text() -> None:
    assert parse_version("v1.38.0") == (1, 38, 0)
    with pytest.raises(ValueError, match=r"'1\.38'"):
        parse_version("1.38")


def test_signature_is_the_required_features() -> None:
    pl = NodeDeclaredFeatures()
    assert pl.sign_pod(pod()) == [(SIGNER, "000000000")]
    assert pl.sign_pod(pod(hostNetwork=True, hostUsers=False)) == [("v1.Pod.Spec.RequiredFeatures()", "000000010")]


# --- events and queueing hints ------------------------------------------------------------------------


def test_events_are_kubes() -> None:
    pl = NodeDeclaredFeatures()
    events = pl.events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (NODE, A.Add | A.UpdateNodeDeclaredFeature, pl.is_schedulable_after_node_change),
        (TARGET_POD, A.Update, pl.is_schedulable_after_target_pod_update),
    ]
    check_coverage(events, covered=[(TARGET_POD, A.UpdatePodLabel), (TARGET_POD, A.Update)],
                   not_covered=[(NODE, A.UpdateNodeLabel), (NODE, A.UpdateNodeTaint), (NODE, A.Delete)])


def test_no_events_when_disabled() -> None:
    assert plugin(enabled=False).events_to_register() == []


@pytest.mark.parametrize(("old", "new", "want"), [
    pytest.param(None, declaring("node-1", "FeatureA"), Q, id="node-add-with-feature"),
    pytest.param(None, declaring("node-1"), Q, id="node-add-without-features"),
    pytest.param(declaring("node-1"), declaring("node-1", "FeatureA"), Q, id="node-update-features-added"),
    pytest.param(declaring("node-1", "FeatureA", "FeatureB"), declaring("node-1", "FeatureA"), Q, id="node-update-features-removed"),
    pytest.param(declaring("node-1", "FeatureA"), declaring("node-1", "FeatureA"), SKIP, id="node-update-features-unchanged"),
])
def test_hint_after_node_change(old: Node | None, new: Node, want: QueueingHint) -> None:
    assert plugin().is_schedulable_after_node_change(pod(), old, new) == want


def needs_host_network(spec: PodSpec) -> bool:
    return spec.host_network


@pytest.mark.parametrize(("old", "new", "want"), [
    pytest.param({}, {"hostNetwork": True}, Q, id="update-adds-a-requirement"),
    pytest.param({"hostNetwork": True}, {}, Q, id="update-removes-a-requirement"),
    pytest.param({}, {"tolerations": [{"operator": "Exists"}]}, SKIP, id="update-with-no-change-in-requirements"),
])
def test_hint_after_target_pod_update(old: dict[str, Any], new: dict[str, Any], want: QueueingHint) -> None:
    pl = NodeDeclaredFeatures(registry=FeatureRegistry([Feature("TestFeature", needs_host_network)]), version=(1, 35, 0))
    assert pl.is_schedulable_after_target_pod_update(pod(), pod(**old), pod(**new)) == want


def test_a_hint_that_cannot_infer_raises_which_the_queue_takes_as_queue() -> None:
    pl = NodeDeclaredFeatures(registry=FeatureRegistry([mock("TestFeature", True)]), version=None)
    with pytest.raises(ValueError, match="target version cannot be nil"):
        pl.is_schedulable_after_target_pod_update(pod(), pod(), pod(hostNetwork=True))


def test_hints_refuse_objects_of_the_wrong_kind() -> None:
    pl = NodeDeclaredFeatures()
    with pytest.raises(TypeError):
        pl.is_schedulable_after_node_change(pod(), None, "not-a-node")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pl.is_schedulable_after_target_pod_update(pod(), "not-a-pod", pod())  # type: ignore[arg-type]


def test_args_are_refused() -> None:
    with pytest.raises(ValueError, match="takes no args"):
        NodeDeclaredFeatures({"x": 1})


# --- the node table's column ---------------------------------------------------------------------------


def test_the_column_follows_node_updates_and_removal() -> None:
    table = NodeTable(capacity=2)
    for i in range(3):  # past the first capacity: the column grows with the table
        table.upsert_node(declaring(f"n{i}", "FeatureA"))
    column = table.declared_features
    assert column.declaring(["FeatureA"], table.size).tolist() == [True, True, True]
    table.upsert_node(declaring("n1", "FeatureB"))
    assert column.declaring(["FeatureA"], table.size).tolist() == [True, False, True]
    assert column.declaring(["FeatureA", "FeatureB"], table.size).tolist() == [False, False, False]
    table.remove_node("n0")
    assert column.declaring(["FeatureA"], table.size).tolist() == [False, False, True]
    assert column.declaring(["Unknown"], table.size).tolist() == [False, False, False]
    assert column.declaring([], table.size).tolist() == [True, True, True]


def test_the_column_holds_more_than_a_word_of_names_and_drops_dead_ones() -> None:
    table = NodeTable()
    many = sorted(f"Feature{i}" for i in range(1, 101))
    table.upsert_node(declaring("all", *many))
    table.upsert_node(declaring("half", *many[::2]))
    column = table.declared_features
    assert column.bits.shape[1] == 2
    assert column.declaring(many, table.size).tolist() == [True, False]
    assert column.declaring(many[::2], table.size).tolist() == [True, True]
    for generation in range(3):  # names renamed again and again: the vocabulary stays bounded
        renamed = [f"{name}v{generation}" for name in many]
        table.upsert_node(declaring("all", *renamed))
        table.upsert_node(declaring("half", *renamed[::2]))
    assert len(column.names) <= 2 * 100 + 64
    assert column.declaring([f"{many[1]}v2"], table.size).tolist() == [True, False]
    assert column.declaring([many[0]], table.size).tolist() == [False, False]
