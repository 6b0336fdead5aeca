"""Feature gates as kube components take them, with kube v1.37.2's defaults and locks."""

from __future__ import annotations

import pytest

from kubesched.config.defaults import default_plugins
from kubesched.framework.events import NODE, ActionType, ClusterEvent, node_changes
from kubesched.infra import features
from kubesched.infra.features import FeatureGateError, FeatureGates, parse


def test_node_declared_features_is_on_and_locked() -> None:
    assert FeatureGates().node_declared_features is True
    assert parse("NodeDeclaredFeatures=true").node_declared_features is True
    with pytest.raises(FeatureGateError) as info:
        parse("GenericWorkload=true,NodeDeclaredFeatures=false")
    assert str(info.value) == "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"


def test_kube_1_36_emulated_could_still_turn_it_off() -> None:
    assert parse("NodeDeclaredFeatures=false", emulated_minor=36).node_declared_features is False


def test_the_default_profile_follows_the_gates() -> None:
    """kube v1.37.2's order: NodeDeclaredFeatures after DefaultBinder, then the pod-group plugins."""
    names = [name for name, _ in default_plugins()]
    assert names[-2:] == ["DefaultBinder", "NodeDeclaredFeatures"]
    with features.gates(generic_workload=True, topology_aware_workload_scheduling=True):
        names = [name for name, _ in default_plugins()]
    assert names[-5:] == ["DefaultBinder", "NodeDeclaredFeatures", "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount"]
    with features.gates(node_declared_features=False):
        assert "NodeDeclaredFeatures" not in [name for name, _ in default_plugins()]


def test_a_node_update_declaring_features_is_an_event_of_its_own() -> None:
    from builders import make_node

    old, new = make_node("n").obj(), make_node("n").declared("FeatureA").label({"x": "y"}).obj()
    assert node_changes(new, old) == [ClusterEvent(NODE, ActionType.UpdateNodeLabel),
                                      ClusterEvent(NODE, ActionType.UpdateNodeDeclaredFeature)]
    assert node_changes(make_node("n").declared("FeatureA").obj(), make_node("n").declared("FeatureA").obj()) == []
    with features.gates(node_declared_features=False):
        assert node_changes(new, old) == [ClusterEvent(NODE, ActionType.UpdateNodeLabel)]


@pytest.mark.parametrize(("value", "on"), [("1", True), ("t", True), ("T", True), ("TRUE", True), ("True", True),
                                           ("0", False), ("f", False), ("F", False), ("FALSE", False), ("False", False)])
def test_values_are_read_as_gos_parsebool_reads_them(value: str, on: bool) -> None:
    assert parse(f"GenericWorkload={value}").generic_workload is on


@pytest.mark.parametrize("value", ["TrUe", "yes", "on", ""])
def test_other_spellings_are_refused_in_kubes_words(value: str) -> None:
    with pytest.raises(FeatureGateError) as info:
        parse(f"GenericWorkload={value}")
    assert str(info.value) == (f'invalid value of GenericWorkload={value}, err: strconv.ParseBool: parsing "{value}": '
                               "invalid syntax")


def test_a_refused_value_is_quoted_as_gos_strconv_quote_does() -> None:
    # json.dumps would write \u0001 and leave the non-printable U+00A0 bare; Go writes \x01 and \u00a0.
    with pytest.raises(FeatureGateError) as info:
        parse("GenericWorkload=tr\x01u\u00a0e")
    assert str(info.value) == ('invalid value of GenericWorkload=tr\x01u\u00a0e, err: strconv.ParseBool: '
                               'parsing "tr\\x01u\\u00a0e": invalid syntax')


def test_a_gate_on_without_the_gate_it_depends_on_is_refused_in_kubes_words() -> None:
    with pytest.raises(FeatureGateError) as info:
        parse("TopologyAwareWorkloadScheduling=true")
    assert str(info.value) == ("TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: "
                               "[GenericWorkload]")
