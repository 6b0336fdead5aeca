"""KubeSchedulerConfiguration loading: kube's v1 defaults, the MultiPoint merge, and every refusal."""

from __future__ import annotations

import copy
import math
import textwrap
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kubesched.config.defaults import DEFAULT_PLUGINS
from kubesched.config.errors import ConfigError
from kubesched.config.parse import default_config, parse_config
from kubesched.config.types import API_VERSION, KIND, ClientConnection, LeaderElection, SchedulerConfig
from kubesched.framework import interface as fw
from kubesched.framework.registry import Registry
from kubesched.plugins.dynamicresources.args import DynamicResourcesArgs
from kubesched.scheduler.configload import load_config

# --- a registry of stand-ins with kube's interfaces for each default plugin ------------------------


class ResourceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    weight: int = 1

    @field_validator("weight")
    @classmethod
    def _range(cls, value: int) -> int:
        if not 1 <= value <= 100:
            raise ValueError("resource weight must be in the range [1, 100]")
        return value


class ScoringStrategy(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ResourceSpec] = Field(
        default_factory=lambda: [ResourceSpec(name="cpu"), ResourceSpec(name="memory")]
    )


class FitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ignored_resources: list[str] = Field(default_factory=list, alias="ignoredResources")
    scoring_strategy: ScoringStrategy = Field(default_factory=ScoringStrategy, alias="scoringStrategy")


class AffinityArgs(BaseModel):
    """Validators in kube's field.Error style, as the in-tree plugins write them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    hard_pod_affinity_weight: int = Field(1, alias="hardPodAffinityWeight")
    ignore_preferred: bool = Field(False, alias="ignorePreferredTermsOfExistingPods")

    @field_validator("hard_pod_affinity_weight")
    @classmethod
    def _range(cls, value: int) -> int:
        if not 0 <= value <= 100:
            raise ValueError(f"hardPodAffinityWeight: Invalid value: {value}: not in valid range [0-100]")
        return value

    @model_validator(mode="after")
    def _whole(self) -> AffinityArgs:
        if self.ignore_preferred and self.hard_pod_affinity_weight == 0:
            raise ValueError("ignorePreferredTermsOfExistingPods: Forbidden: example cross-field rule")
        return self


class BindingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    bind_timeout_seconds: int = Field(600, alias="bindTimeoutSeconds")


class OtherSortArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    reverse: bool = False


def _plugin(name: str, *interfaces: type, args: type[BaseModel] | None = None) -> type[fw.Plugin]:
    cls = type(name, (fw.Plugin, *interfaces), {"name": name, "Args": args})
    return cls


PRE_FILTER_FILTER_SCORE = (fw.PreFilterPlugin, fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin)
STANDINS = [
    _plugin("SchedulingGates", fw.PreEnqueuePlugin, fw.EnqueueExtensions),
    _plugin("PrioritySort", fw.QueueSortPlugin),
    _plugin("NodeUnschedulable", fw.FilterPlugin),
    _plugin("NodeName", fw.FilterPlugin),
    _plugin("TaintToleration", fw.FilterPlugin, fw.PreScorePlugin, fw.ScorePlugin),
    _plugin("NodeAffinity", *PRE_FILTER_FILTER_SCORE),
    _plugin("NodePorts", fw.PreFilterPlugin, fw.FilterPlugin),
    _plugin("NodeResourcesFit", *PRE_FILTER_FILTER_SCORE, args=FitArgs),
    _plugin("VolumeRestrictions", fw.PreFilterPlugin, fw.FilterPlugin),
    _plugin("NodeVolumeLimits", fw.PreFilterPlugin, fw.FilterPlugin),
    _plugin("VolumeBinding", *PRE_FILTER_FILTER_SCORE, fw.ReservePlugin, fw.PreBindPlugin, args=BindingArgs),
    _plugin("VolumeZone", fw.PreFilterPlugin, fw.FilterPlugin),
    _plugin("PodTopologySpread", *PRE_FILTER_FILTER_SCORE),
    _plugin("InterPodAffinity", *PRE_FILTER_FILTER_SCORE, args=AffinityArgs),
    _plugin("DynamicResources", fw.PreEnqueuePlugin, fw.PreFilterPlugin, fw.FilterPlugin, fw.PostFilterPlugin,
            fw.ScorePlugin, fw.ReservePlugin, fw.PreBindPlugin, fw.EnqueueExtensions, args=DynamicResourcesArgs),
    _plugin("DefaultPreemption", fw.PostFilterPlugin),
    _plugin("NodeResourcesBalancedAllocation", fw.PreScorePlugin, fw.ScorePlugin),
    _plugin("ImageLocality", fw.ScorePlugin),
    _plugin("DefaultBinder", fw.BindPlugin),
    _plugin("NodeDeclaredFeatures", fw.PreFilterPlugin, fw.FilterPlugin, fw.EnqueueExtensions),
    # Not defaults: for custom configurations.
    _plugin("OtherSort", fw.QueueSortPlugin, args=OtherSortArgs),
    _plugin("OtherBinder", fw.BindPlugin),
    _plugin("PerNode", fw.NodeFilterPlugin, fw.NodeScorePlugin, fw.ReservePlugin, fw.PermitPlugin),
]

SAMPLE = "tests.unit.cfg_sample_plugin:Spread"


def registry() -> Registry:
    return Registry(STANDINS)


def cfg(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def parse(**fields: Any) -> SchedulerConfig:
    return parse_config(cfg(**fields), registry())


def one(plugins: dict[str, Any] | None = None, **profile: Any) -> SchedulerConfig:
    """A configuration with a single profile."""
    if plugins is not None:
        profile["plugins"] = plugins
    return parse(profiles=[profile])


def names(config: SchedulerConfig, point: str, profile: int = 0) -> list[str]:
    return config.profiles[profile].names(point)


def scores(config: SchedulerConfig, profile: int = 0) -> list[tuple[str, int]]:
    return [(ref.name, ref.weight) for ref in config.profiles[profile].plugins["score"]]


def refused(data: dict[str, Any], reg: Registry | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data, reg or registry())
    return str(info.value)


def refused_profile(plugins: dict[str, Any] | None = None, **profile: Any) -> str:
    if plugins is not None:
        profile["plugins"] = plugins
    return refused(cfg(profiles=[profile]))


KUBE_DEFAULT_SCORE = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("VolumeBinding", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]
KUBE_DEFAULT_FILTER = [
    "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
    "DynamicResources", "NodeDeclaredFeatures",
]


# --- defaults -----------------------------------------------------------------------------------


def test_default_config_is_kubes_default_profile_expanded() -> None:
    config = default_config(registry())
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    prof = config.profiles[0]
    assert set(prof.plugins) == set(fw.EXTENSION_POINTS)
    assert prof.names("preEnqueue") == ["SchedulingGates", "DynamicResources"]
    assert prof.names("queueSort") == ["PrioritySort"]
    assert prof.names("preFilter") == [
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources", "NodeDeclaredFeatures",
    ]
    assert prof.names("filter") == KUBE_DEFAULT_FILTER
    assert prof.names("postFilter") == ["DynamicResources", "DefaultPreemption"]
    assert prof.names("preScore") == [
        "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread", "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ]
    assert scores(config) == KUBE_DEFAULT_SCORE
    assert prof.names("reserve") == ["VolumeBinding", "DynamicResources"]
    assert prof.names("preBind") == ["VolumeBinding", "DynamicResources"]
    for point in ("permit", "postBind"):
        assert prof.plugins[point] == []
    assert prof.names("bind") == ["DefaultBinder"]
    # Weights mean nothing outside score.
    assert {ref.weight for ref in prof.plugins["filter"]} == {0}
    assert prof.percentage_of_nodes_to_score is None
    assert prof.plugin_classes["NodeResourcesFit"].name == "NodeResourcesFit"


def test_default_globals_match_kube() -> None:
    config = default_config(registry())
    assert config.parallelism == 16
    assert config.percentage_of_nodes_to_score == 0
    assert config.pod_initial_backoff_seconds == 1.0
    assert config.pod_max_backoff_seconds == 10.0
    assert config.leader_election == LeaderElection(
        leader_elect=True, lease_duration=15.0, renew_deadline=10.0, retry_period=2.0,
        resource_lock="leases", resource_name="kubesched", resource_namespace="kube-system",
    )
    assert config.client_connection == ClientConnection(
        kubeconfig="", qps=50.0, burst=100, content_type="application/vnd.kubernetes.protobuf"
    )
    assert config.extenders == []
    assert config.enable_profiling and config.enable_contention_profiling
    assert not config.delay_cache_until_active


def test_default_args_for_every_plugin_that_has_args() -> None:
    prof = default_config(registry()).profiles[0]
    assert set(prof.plugin_args) == {"NodeResourcesFit", "InterPodAffinity", "VolumeBinding", "DynamicResources"}
    assert isinstance(prof.plugin_args["InterPodAffinity"], AffinityArgs)
    fit = prof.plugin_args["NodeResourcesFit"]
    assert isinstance(fit, FitArgs)
    assert fit.scoring_strategy.type == "LeastAllocated"


def test_no_file_means_default_config() -> None:
    assert load_config(None, registry()) == default_config(registry())


def test_empty_profile_list_and_empty_profile_get_the_default_profile() -> None:
    assert parse(profiles=[]) == default_config(registry())
    assert parse(profiles=[{}]) == default_config(registry())
    assert parse(profiles=[{"plugins": {}}]) == default_config(registry())


# --- multiPoint merge ---------------------------------------------------------------------------


def test_multipoint_plugin_goes_to_every_point_it_implements_after_the_defaults() -> None:
    config = one({"multiPoint": {"enabled": [{"name": "PerNode", "weight": 5}]}})
    assert names(config, "filter") == [*KUBE_DEFAULT_FILTER, "PerNode"]
    assert scores(config) == [*KUBE_DEFAULT_SCORE, ("PerNode", 5)]
    assert names(config, "reserve") == ["VolumeBinding", "DynamicResources", "PerNode"]
    assert names(config, "permit") == ["PerNode"]
    assert "PerNode" not in names(config, "preFilter")


def test_multipoint_reenabling_a_default_keeps_its_place_and_takes_the_new_weight() -> None:
    config = one({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 9}]}})
    assert scores(config)[0] == ("TaintToleration", 9)
    assert names(config, "filter") == KUBE_DEFAULT_FILTER


def test_multipoint_disabling_one_default_removes_it_everywhere() -> None:
    config = one({"multiPoint": {"disabled": [{"name": "NodeAffinity"}]}})
    for point in fw.EXTENSION_POINTS:
        assert "NodeAffinity" not in names(config, point)
    assert "NodeAffinity" not in config.profiles[0].plugin_classes


def test_multipoint_disabling_star_keeps_only_what_is_enabled() -> None:
    config = one({"multiPoint": {
        "disabled": [{"name": "*"}],
        "enabled": [{"name": "ImageLocality", "weight": 4}, {"name": "PrioritySort"}, {"name": "DefaultBinder"}],
    }})
    assert scores(config) == [("ImageLocality", 4)]
    assert names(config, "queueSort") == ["PrioritySort"]
    assert names(config, "bind") == ["DefaultBinder"]
    assert names(config, "filter") == []


def test_enabled_wins_over_disabled_in_multipoint() -> None:
    # kube's documented precedence: a plugin both enabled and disabled in multiPoint is enabled.
    config = one({"multiPoint": {"enabled": [{"name": "NodePorts"}], "disabled": [{"name": "NodePorts"}]}})
    assert "NodePorts" in names(config, "filter")
    assert names(config, "filter")[-1] == "NodePorts"


# --- per extension point ------------------------------------------------------------------------


def test_disabling_star_at_a_point_drops_every_multipoint_plugin_there_only() -> None:
    config = one({"score": {
        "disabled": [{"name": "*"}],
        "enabled": [{"name": "ImageLocality", "weight": 4}, {"name": "NodeAffinity"}],
    }})
    assert scores(config) == [("ImageLocality", 4), ("NodeAffinity", 1)]
    assert names(config, "filter") == KUBE_DEFAULT_FILTER
    assert "NodeResourcesBalancedAllocation" in names(config, "preScore")


def test_disabling_one_plugin_at_a_point_keeps_it_at_the_others() -> None:
    config = one({"filter": {"disabled": [{"name": "NodePorts"}]}})
    assert "NodePorts" not in names(config, "filter")
    assert "NodePorts" in names(config, "preFilter")


def test_explicit_score_entry_overrides_the_multipoint_weight_and_runs_first() -> None:
    config = one({"score": {"enabled": [{"name": "NodeAffinity", "weight": 10}]}})
    assert scores(config) == [
        ("NodeAffinity", 10),
        ("TaintToleration", 3),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]


def test_explicit_entry_without_weight_overrides_to_one() -> None:
    # kube takes the explicit score entry's weight, and an unset weight is 1.
    config = one({"score": {"enabled": [{"name": "TaintToleration"}]}})
    assert scores(config)[0] == ("TaintToleration", 1)


def test_weight_zero_means_the_default_weight_one() -> None:
    config = one({"multiPoint": {"enabled": [{"name": "PerNode", "weight": 0}]}})
    assert scores(config)[-1] == ("PerNode", 1)


def test_order_overrides_then_multipoint_then_other_explicit_plugins() -> None:
    config = one({"filter": {"enabled": [{"name": "PerNode"}, {"name": "NodeName"}]}})
    assert names(config, "filter") == [
        "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
        "DynamicResources", "NodeDeclaredFeatures", "PerNode",
    ]


def test_replacing_the_binder_and_queue_sort() -> None:
    config = one({
        "queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]},
        "bind": {"disabled": [{"name": "DefaultBinder"}], "enabled": [{"name": "OtherBinder"}]},
    })
    assert names(config, "queueSort") == ["OtherSort"]
    assert names(config, "bind") == ["OtherBinder"]
    assert set(config.profiles[0].plugin_args) == {
        "NodeResourcesFit", "InterPodAffinity", "VolumeBinding", "DynamicResources", "OtherSort"}


def test_disabling_a_default_or_unknown_plugin_is_harmless() -> None:
    # Configurations written for kube-scheduler often disable volume plugins (or DRA's).
    config = one({
        "multiPoint": {"disabled": [{"name": "VolumeBinding"}, {"name": "NoSuchPlugin"}, {"name": "DynamicResources"}]},
        "filter": {"disabled": [{"name": "VolumeZone"}]},
    })
    assert names(config, "filter") == [
        n for n in KUBE_DEFAULT_FILTER if n not in ("VolumeBinding", "VolumeZone", "DynamicResources")]
    assert "VolumeBinding" not in names(config, "reserve")
    assert "DynamicResources" not in names(config, "preEnqueue")


# --- plugin args and the user's own plugins -----------------------------------------------------


def test_user_plugin_by_module_and_class_with_args() -> None:
    config = one(
        {"multiPoint": {"enabled": [{"name": SAMPLE, "weight": 3}]}},
        pluginConfig=[{"name": SAMPLE, "args": {"maxSkew": 4}}],
    )
    assert names(config, "filter")[-1] == SAMPLE
    assert scores(config)[-1] == (SAMPLE, 3)
    prof = config.profiles[0]
    assert prof.plugin_classes[SAMPLE].__name__ == "Spread"
    args: Any = prof.plugin_args[SAMPLE]
    assert (args.max_skew, args.zone_label) == (4, "topology.kubernetes.io/zone")


def test_user_plugin_without_plugin_config_gets_default_args() -> None:
    config = one({"filter": {"enabled": [{"name": SAMPLE}]}})
    assert names(config, "filter")[-1] == SAMPLE
    assert names(config, "score") == [name for name, _ in KUBE_DEFAULT_SCORE]
    args: Any = config.profiles[0].plugin_args[SAMPLE]
    assert args.max_skew == 1


def test_plugin_config_args_are_validated_with_the_plugin_model() -> None:
    config = one(pluginConfig=[{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}]},
    }}])
    fit: Any = config.profiles[0].plugin_args["NodeResourcesFit"]
    assert fit.scoring_strategy.type == "MostAllocated"
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [("cpu", 3)]


def test_args_may_carry_their_kind_and_api_version() -> None:
    config = one(pluginConfig=[{"name": "NodeResourcesFit", "args": {
        "apiVersion": API_VERSION, "kind": "NodeResourcesFitArgs", "ignoredResources": ["example.com/foo"],
    }}])
    fit: Any = config.profiles[0].plugin_args["NodeResourcesFit"]
    assert fit.ignored_resources == ["example.com/foo"]


def test_plugin_without_args_accepts_empty_args() -> None:
    config = one(pluginConfig=[{"name": "ImageLocality"}, {"name": "NodePorts", "args": {}}])
    assert "ImageLocality" not in config.profiles[0].plugin_args


def test_plugin_config_for_a_plugin_not_in_the_profile_is_validated_but_unused() -> None:
    config = one(pluginConfig=[{"name": "OtherSort", "args": {"reverse": True}}])
    assert "OtherSort" not in config.profiles[0].plugin_args


# --- globals --------------------------------------------------------------------------------------


def test_global_fields_are_read() -> None:
    config = parse(
        parallelism=8,
        percentageOfNodesToScore=30,
        podInitialBackoffSeconds=2,
        podMaxBackoffSeconds=20,
        enableProfiling=False,
        delayCacheUntilActive=True,
        leaderElection={
            "leaderElect": False, "leaseDuration": "1m", "renewDeadline": "45s", "retryPeriod": 5,
            "resourceName": "kubesched", "resourceNamespace": "sched",
        },
        clientConnection={"kubeconfig": "/etc/kube.conf", "qps": 0, "burst": 300, "contentType": "application/json"},
    )
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (8, 30)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2.0, 20.0)
    assert not config.enable_profiling
    assert not config.enable_contention_profiling  # follows enableProfiling when unset, as in kube
    assert config.delay_cache_until_active
    assert config.leader_election == LeaderElection(
        leader_elect=False, lease_duration=60.0, renew_deadline=45.0, retry_period=5.0,
        resource_lock="leases", resource_name="kubesched", resource_namespace="sched",
    )
    # qps 0 is "unset" in kube and takes the scheduler's default.
    assert config.client_connection == ClientConnection(
        kubeconfig="/etc/kube.conf", qps=50.0, burst=300, content_type="application/json"
    )


def test_extenders_are_refused_as_not_supported() -> None:
    ext = {"urlPrefix": "http://ext", "filterVerb": "filter", "prioritizeVerb": "prio", "weight": 2}
    assert refused(cfg(extenders=[ext])) == (
        "extenders[0]: scheduler extenders are not supported by kubesched yet (1 configured); remove the extenders section"
    )
    assert parse(extenders=[]).extenders == []


def test_profile_percentage_and_several_profiles() -> None:
    config = parse(profiles=[
        {"schedulerName": "a", "percentageOfNodesToScore": 0},
        {"schedulerName": "b", "percentageOfNodesToScore": 50,
         "plugins": {"score": {"disabled": [{"name": "*"}]}}},
    ])
    assert [p.scheduler_name for p in config.profiles] == ["a", "b"]
    assert config.profiles[0].percentage_of_nodes_to_score == 0
    assert config.profiles[1].percentage_of_nodes_to_score == 50
    assert scores(config, 1) == []
    assert config.profile("b") is config.profiles[1]
    assert config.profile("c") is None


def test_same_queue_sort_args_in_every_profile_is_fine() -> None:
    sort = {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]}}
    args = [{"name": "OtherSort", "args": {"reverse": True}}]
    config = parse(profiles=[
        {"schedulerName": "a", "plugins": sort, "pluginConfig": args},
        {"schedulerName": "b", "plugins": sort, "pluginConfig": args},
    ])
    assert names(config, "queueSort", 1) == ["OtherSort"]


# --- files ----------------------------------------------------------------------------------------


def test_load_from_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(f"""\
        apiVersion: {API_VERSION}
        kind: {KIND}
        leaderElection:
          leaderElect: false
        profiles:
          - schedulerName: kubesched
            plugins:
              multiPoint:
                enabled:
                  - name: {SAMPLE}
                    weight: 2
              score:
                disabled:
                  - name: ImageLocality
            pluginConfig:
              - name: NodeResourcesFit
                args:
                  scoringStrategy:
                    type: MostAllocated
        """))
    # Files load with the real plugins: load_config builds the scheduler, which stand-ins cannot run.
    config = load_config(path)
    assert config.profiles[0].scheduler_name == "kubesched"
    assert not config.leader_election.leader_elect
    assert ("ImageLocality", 1) not in scores(config)
    assert scores(config)[-1] == (SAMPLE, 2)
    assert load_config(str(path)) == config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def file_refused(path: Path | str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    assert file_refused(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: no such file"


def test_every_error_names_its_file_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With two -c files a user must see which one is wrong: the path as given comes first."""
    path = write(tmp_path, f"apiVersion: {API_VERSION}\nkind: {KIND}\nparallelism: 0\n")
    assert file_refused(path) == f"{path}: parallelism: Invalid value: 0: should be an integer value greater than zero"
    monkeypatch.chdir(tmp_path)
    assert file_refused("config.yaml").startswith("config.yaml: parallelism: ")


MANIFEST_IS_NOT_A_CONFIG = (f"this is a Kubernetes manifest (kind {{kind}}, apiVersion {{version}}), not a {KIND}: a configuration "
                            f"has apiVersion: {API_VERSION} and kind: {KIND}")


def test_a_manifest_given_as_a_configuration_is_called_one(tmp_path: Path) -> None:
    deployment = write(tmp_path, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2}\n")
    assert file_refused(deployment) == f"{deployment}: " + MANIFEST_IS_NOT_A_CONFIG.format(kind='"Deployment"',
                                                                                           version='"apps/v1"')
    # Several documents: the first says it (not "a second KubeSchedulerConfiguration").
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
    several = write(tmp_path, service + "---\n" + service.replace("Service", "Pod"))
    assert file_refused(several) == f"{several}: " + MANIFEST_IS_NOT_A_CONFIG.format(kind='"Service"', version='"v1"')
    config = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"
    second = write(tmp_path, config + "---\n" + service)
    assert file_refused(second) == f"{second}: document 2: " + MANIFEST_IS_NOT_A_CONFIG.format(kind='"Service"', version='"v1"')
    # kube-scheduler's configuration as a cluster holds it: the ConfigMap is named, and where it is.
    configmap = write(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sched}\ndata:\n  config.yaml: |\n"
                                f"    apiVersion: {API_VERSION}\n    kind: {KIND}\n")
    assert file_refused(configmap).endswith('(this ConfigMap holds one under data["config.yaml"]: give that text as its own file)')
    # An older KubeSchedulerConfiguration, or another kind of the scheduler's group, keeps its own message.
    assert refused({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND}).startswith("apiVersion: must be ")
    assert refused({"apiVersion": API_VERSION, "kind": "Policy"}) == f'kind: must be {KIND}, got "Policy"'
    assert refused({"apiVersion": "v1", "kind": "Pod"}) == MANIFEST_IS_NOT_A_CONFIG.format(kind='"Pod"', version='"v1"')
    # A configuration of a version that never was one is not called older.
    assert refused({"apiVersion": "v1", "kind": KIND}) == f'apiVersion: must be {API_VERSION}, got "v1"'


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert "is a directory" in file_refused(tmp_path)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, f"""\
        apiVersion: {API_VERSION}
        kind: {KIND}
        profiles:
          - schedulerName: [unclosed
        """)
    message = file_refused(path)
    assert message.startswith(f"{path}:5:")
    assert "invalid YAML" in message


def test_duplicate_yaml_key_is_refused_like_strict_decoding(tmp_path: Path) -> None:
    path = write(tmp_path, f"""\
        apiVersion: {API_VERSION}
        kind: {KIND}
        parallelism: 4
        parallelism: 8
        """)
    assert file_refused(path) == f"{path}: line 4, column 1: duplicate key 'parallelism'"


def test_several_yaml_documents_are_refused(tmp_path: Path) -> None:
    # One KubeSchedulerConfiguration, and at most one KubeschedConfiguration beside it.
    path = write(tmp_path, f"apiVersion: {API_VERSION}\n---\nkind: {KIND}\n")
    assert "document 2: a second KubeSchedulerConfiguration" in file_refused(path)


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "# nothing\n")
    assert file_refused(path) == f"{path}: the file is empty; expected a {KIND}"


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- a\n- b\n")
    assert file_refused(path) == f"{path}: configuration: must be a mapping, got a list"


# --- refusals: type meta and top level ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": KIND}, f"apiVersion: required, must be {API_VERSION}"),
        ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
         f'apiVersion: must be {API_VERSION}, got "kubescheduler.config.k8s.io/v1beta3"'),
        ({"apiVersion": "kubescheduler.config.k8s.io/v1beta2", "kind": KIND, "healthzBindAddress": ":10251"},
         f'apiVersion: must be {API_VERSION}, got "kubescheduler.config.k8s.io/v1beta2"'),
        ({"apiVersion": API_VERSION}, f"kind: required, must be {KIND}"),
        ({"apiVersion": API_VERSION, "kind": "KubeProxyConfiguration"},
         f'kind: must be {KIND}, got "KubeProxyConfiguration"'),
    ],
)
def test_type_meta(data: dict[str, Any], message: str) -> None:
    assert refused(data).startswith(message)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"parallelizm": 4}, "parallelizm: unknown field (known fields: apiVersion, kind, parallelism,"),
        ({"healthzBindAddress": "0.0.0.0:10251"}, "healthzBindAddress: unknown field (removed in"),
        ({"parallelism": 0}, "parallelism: Invalid value: 0: should be an integer value greater than zero"),
        ({"parallelism": -3}, "parallelism: Invalid value: -3: should be an integer value greater than zero"),
        ({"parallelism": "8"}, 'parallelism: must be an integer, got "8"'),
        ({"parallelism": 2.5}, "parallelism: must be an integer, got 2.5"),
        ({"parallelism": True}, "parallelism: must be an integer, got true"),
        ({"parallelism": 2**31}, "parallelism: out of range for a 32-bit integer, got 2147483648"),
        ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"),
        ({"percentageOfNodesToScore": -1}, "percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"),
        ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"),
        ({"podInitialBackoffSeconds": 1.5}, "podInitialBackoffSeconds: must be an integer, got 1.5"),
        ({"podMaxBackoffSeconds": 0},
         "podMaxBackoffSeconds: Invalid value: 0: must be greater than or equal to PodInitialBackoffSeconds"),
        ({"podInitialBackoffSeconds": 30},
         "podMaxBackoffSeconds: Invalid value: 10: must be greater than or equal to PodInitialBackoffSeconds"),
        ({"enableProfiling": "yes please"}, 'enableProfiling: must be true or false, got "yes please"'),
        ({"profiles": {"schedulerName": "x"}}, "profiles: must be a list, got a mapping"),
        ({"leaderElection": []}, "leaderElection: must be a mapping, got a list"),
        ({"leaderElection": {"leaseDuration": "5s"}},
         "leaderElection.leaseDuration: Invalid value: 10s: must be greater than `RenewDeadline`"),
        ({"leaderElection": {"retryPeriod": "0s"}}, "leaderElection.retryPeriod: Invalid value: 0s: must be greater than zero"),
        ({"leaderElection": {"renewDeadline": "soon"}}, "leaderElection.renewDeadline: invalid duration 'soon'"),
        ({"leaderElection": {"leaseDuration": {}}}, 'leaderElection.leaseDuration: must be a duration such as "15s"'),
        ({"leaderElection": {"resourceLock": "endpointsleases"}},
         'leaderElection.resourceLock: Invalid value: "endpointsleases": resourceLock value must be "leases"'),
        ({"leaderElection": {"leaderElect": "true"}}, 'leaderElection.leaderElect: must be true or false, got "true"'),
        ({"leaderElection": {"lockName": "x"}}, "leaderElection.lockName: unknown field"),
        ({"clientConnection": {"burst": -1}}, "clientConnection.burst: Invalid value: -1: must be non-negative"),
        ({"clientConnection": {"qps": "fast"}}, 'clientConnection.qps: must be a number, got "fast"'),
        ({"clientConnection": {"kubeconfig": 3}}, "clientConnection.kubeconfig: must be a string, got 3"),
        ({"clientConnection": {"timeout": 3}}, "clientConnection.timeout: unknown field"),
        ({"extenders": [{"urlPrefix": "http://e", "prioritizeVerb": "p"}]},
         "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"),
        ({"extenders": [{"bindVerb": "b"}, {"bindVerb": "b"}]},
         'extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind'),
        ({"extenders": ["http://e"]}, 'extenders[0]: must be a mapping, got "http://e"'),
    ],
)
def test_top_level_refusals(fields: dict[str, Any], message: str) -> None:
    assert refused(cfg(**fields)).startswith(message)


def test_leader_election_is_not_validated_when_disabled() -> None:
    config = parse(leaderElection={"leaderElect": False, "resourceLock": "endpoints", "leaseDuration": "1s"})
    assert config.leader_election.resource_lock == "endpoints"


# --- refusals: profiles ---------------------------------------------------------------------------


def test_profiles_need_names_when_there_are_several() -> None:
    assert refused(cfg(profiles=[{"schedulerName": "a"}, {}])).startswith("profiles[1].schedulerName: required")
    assert refused(cfg(profiles=[{"schedulerName": ""}])).startswith("profiles[0].schedulerName: required")


def test_duplicate_scheduler_names() -> None:
    message = refused(cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]))
    assert message == 'profiles[2].schedulerName: duplicate of profiles[0].schedulerName, got "a"'


def test_queue_sort_must_agree_across_profiles() -> None:
    other = {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]}}
    message = refused(cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "b", "plugins": other}]))
    assert message == (
        "profiles[1].plugins.queueSort: must be the same for all profiles, got OtherSort but profiles[0] has PrioritySort"
    )


def test_queue_sort_args_must_agree_across_profiles() -> None:
    other = {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]}}
    message = refused(cfg(profiles=[
        {"schedulerName": "a", "plugins": other},
        {"schedulerName": "b", "plugins": other, "pluginConfig": [{"name": "OtherSort", "args": {"reverse": True}}]},
    ]))
    assert message == (
        "profiles[1].pluginConfig: args of queue sort plugin 'OtherSort' must be the same for all profiles"
    )


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"name": "x"}, "profiles[0].name: unknown field (known fields: schedulerName, percentageOfNodesToScore,"),
        ({"schedulerName": 7}, "profiles[0].schedulerName: must be a string, got 7"),
        ({"percentageOfNodesToScore": 120}, "profiles[0].percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]"),
        ({"plugins": {"filters": {}}}, "profiles[0].plugins.filters: unknown field (known fields: multiPoint, preEnqueue,"),
        ({"plugins": {"filter": {"enable": []}}}, "profiles[0].plugins.filter.enable: unknown field"),
        ({"plugins": {"filter": {"enabled": {"name": "NodeName"}}}},
         "profiles[0].plugins.filter.enabled: must be a list, got a mapping"),
        ({"plugins": {"filter": {"enabled": ["NodeName"]}}},
         'profiles[0].plugins.filter.enabled[0]: must be a mapping, got "NodeName"'),
        ({"plugins": {"filter": {"enabled": [{"weight": 2}]}}}, "profiles[0].plugins.filter.enabled[0].name: required"),
        ({"plugins": {"filter": {"disabled": [{"nam": "x"}]}}}, "profiles[0].plugins.filter.disabled[0].nam: unknown field"),
    ],
)
def test_profile_structure_refusals(profile: dict[str, Any], message: str) -> None:
    assert refused(cfg(profiles=[profile])).startswith(message)


def test_negative_weight() -> None:
    message = refused_profile({"score": {"enabled": [{"name": "ImageLocality", "weight": 1},
                                                     {"name": "NodeAffinity", "weight": -2}]}})
    assert message == (
        "profiles[0].plugins.score.enabled[1].weight: must not be negative (0 means the default, 1), got -2"
    )


def test_weight_must_be_an_int32() -> None:
    assert refused_profile({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": "high"}]}}) == (
        'profiles[0].plugins.multiPoint.enabled[0].weight: must be an integer, got "high"'
    )
    assert refused_profile({"score": {"enabled": [{"name": "ImageLocality", "weight": 2**31}]}}).startswith(
        "profiles[0].plugins.score.enabled[0].weight: out of range for a 32-bit integer"
    )


def test_unknown_plugin() -> None:
    message = refused_profile({"filter": {"enabled": [{"name": "NodeName"}, {"name": "NodeNam"}]}})
    assert message.startswith("profiles[0].plugins.filter.enabled[1]: unknown plugin 'NodeNam' (registered: ")


def test_dynamic_resources_args_default_and_refusals_as_kubes() -> None:
    from kubesched.plugins.registry import in_tree_registry

    reg = in_tree_registry()
    args: Any = default_config(reg).profiles[0].plugin_args["DynamicResources"]
    assert (args.filter_timeout, args.binding_timeout) == ("10s", "10m0s")
    assert (args.filter_timeout_seconds, args.binding_timeout_seconds) == (10.0, 600.0)
    config = parse_config(cfg(profiles=[{"pluginConfig": [
        {"name": "DynamicResources", "args": {"filterTimeout": "0s", "bindingTimeout": "90s"}}]}]), reg)
    args = config.profiles[0].plugin_args["DynamicResources"]
    assert (args.filter_timeout, args.binding_timeout) == ("0s", "1m30s")
    for given, message in (
        ({"filterTimeout": "-1s"}, 'filterTimeout: Invalid value: "-1s": must be zero or positive'),
        ({"bindingTimeout": "500ms"}, 'bindingTimeout: Invalid value: "500ms": must be at least 1 second'),
        ({"bindingTimeout": "0s"}, 'bindingTimeout: Invalid value: "0s": must be at least 1 second'),
        ({"filterTimeout": "ten"}, "filterTimeout: "),
    ):
        text = refused(cfg(profiles=[{"pluginConfig": [{"name": "DynamicResources", "args": given}]}]), reg)
        assert text.startswith("profiles[0].pluginConfig[0].args") and message in text, text


def test_volume_binding_args_in_the_in_tree_registry() -> None:
    from kubesched.plugins.registry import in_tree_registry

    reg = in_tree_registry()
    config = parse_config(cfg(profiles=[{"pluginConfig": [
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 30, "shape": [{"utilization": 0, "score": 0},
                                                                               {"utilization": 100, "score": 10}]}},
    ]}]), reg)
    args: Any = config.profiles[0].plugin_args["VolumeBinding"]
    assert args.bind_timeout_seconds == 30
    assert [(p.utilization, p.score) for p in args.shape] == [(0, 0), (100, 10)]
    default: Any = default_config(reg).profiles[0].plugin_args["VolumeBinding"]
    assert default.bind_timeout_seconds == 600
    assert [(p.utilization, p.score) for p in default.shape] == [(0, 10), (100, 0)]
    message = refused(cfg(profiles=[{"pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": -1}}]}]), reg)
    assert message == ("profiles[0].pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, "
                       "should not be a negative value")
    message = refused(cfg(profiles=[{"pluginConfig": [{"name": "VolumeBinding", "args": {"shape": [
        {"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]}}]}]), reg)
    assert message == ("profiles[0].pluginConfig[0].args.shape[1].utilization: Invalid value: 10: values must be sorted "
                       "in increasing order")


def test_plugins_removed_from_v1() -> None:
    message = refused_profile({"filter": {"enabled": [{"name": "EBSLimits"}]}})
    assert message == f"profiles[0].plugins.filter.enabled[0]: plugin 'EBSLimits' was removed in {API_VERSION} " \
        "and cannot be used"


def test_plugin_at_a_point_it_does_not_implement() -> None:
    message = refused_profile({"filter": {"enabled": [{"name": "ImageLocality"}]}})
    assert message == (
        "profiles[0].plugins.filter.enabled[0]: plugin 'ImageLocality' does not implement the filter extension point"
    )


def test_plugin_enabled_twice_at_a_point() -> None:
    message = refused_profile({"score": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}})
    assert message == "profiles[0].plugins.score.enabled[1]: plugin 'ImageLocality' is enabled twice at score"


def test_plugin_enabled_twice_in_multipoint() -> None:
    message = refused_profile({"multiPoint": {"enabled": [{"name": "PerNode"}, {"name": "PerNode"}]}})
    assert message == "profiles[0].plugins.multiPoint.enabled[1]: plugin 'PerNode' is enabled twice in multiPoint"


def test_exactly_one_queue_sort() -> None:
    message = refused_profile({"queueSort": {"enabled": [{"name": "OtherSort"}]}})
    assert message == (
        "profiles[0].plugins.queueSort: exactly one queue sort plugin is required for profile "
        "'default-scheduler', got 2 (PrioritySort, OtherSort)"
    )
    message = refused_profile({"queueSort": {"disabled": [{"name": "*"}]}})
    assert message == (
        "profiles[0].plugins.queueSort: exactly one queue sort plugin is required for profile "
        "'default-scheduler', got 0"
    )


def test_at_least_one_binder() -> None:
    message = refused_profile({"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}})
    assert message == "profiles[0].plugins.bind: at least one bind plugin is needed for profile 'default-scheduler'"


def test_default_plugin_missing_from_the_registry() -> None:
    small = Registry([c for c in STANDINS if c.name != "ImageLocality"])
    message = refused(cfg(), small)
    assert message.startswith("profiles[0].plugins (default plugin ImageLocality): unknown plugin 'ImageLocality'")
    # Disabling it is the way out.
    config = parse_config(cfg(profiles=[{"plugins": {"multiPoint": {"disabled": [{"name": "ImageLocality"}]}}}]),
                          small)
    assert "ImageLocality" not in names(config, "score")


# --- refusals: user plugins -----------------------------------------------------------------------


def test_user_plugin_module_missing() -> None:
    message = refused_profile({"filter": {"enabled": [{"name": "no_such_module_xyz:Thing"}]}})
    assert message.startswith(
        "profiles[0].plugins.filter.enabled[0]: plugin 'no_such_module_xyz:Thing': cannot import module"
    )


def test_user_plugin_that_is_not_a_plugin_class() -> None:
    message = refused_profile({"filter": {"enabled": [{"name": "tests.unit.cfg_sample_plugin:NotAPlugin"}]}})
    assert message == (
        "profiles[0].plugins.filter.enabled[0]: plugin 'tests.unit.cfg_sample_plugin:NotAPlugin': "
        "'NotAPlugin' in tests.unit.cfg_sample_plugin is not a kubesched Plugin class"
    )


def test_user_plugin_module_that_fails_at_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_cfg_plugin_mod.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    message = refused_profile({"multiPoint": {"enabled": [{"name": "broken_cfg_plugin_mod:P"}]}})
    assert message == (
        "profiles[0].plugins.multiPoint.enabled[0]: plugin 'broken_cfg_plugin_mod:P' failed to load: "
        "RuntimeError: boom"
    )


# --- refusals: pluginConfig -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plugin_config", "message"),
    [
        ([{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}],
         "profiles[0].pluginConfig[1].name: duplicate args for plugin 'NodeResourcesFit' "
         "(already given at profiles[0].pluginConfig[0])"),
        ([{"args": {}}], "profiles[0].pluginConfig[0].name: required"),
        ([{"name": "NodeResourcesFit", "arguments": {}}], "profiles[0].pluginConfig[0].arguments: unknown field"),
        ([{"name": "ImageLocality", "args": {"scale": 2}}],
         "profiles[0].pluginConfig[0].args: plugin 'ImageLocality' takes no args, got scale"),
        ([{"name": "NodeResourcesFit", "args": "MostAllocated"}],
         'profiles[0].pluginConfig[0].args: must be a mapping, got "MostAllocated"'),
        ([{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Random"}}}],
         "profiles[0].pluginConfig[0].args.scoringStrategy.type: Invalid value: \"Random\": Input should be 'LeastAllocated', "
         "'MostAllocated' or 'RequestedToCapacityRatio'"),
        ([{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 0}]}}}],
         "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 0: "
         "resource weight must be in the range [1, 100]"),
        ([{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"resources": [{"weight": 2}]}}}],
         "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].name: required"),
        ([{"name": "NodeResourcesFit", "args": {"ignoredResources": ["a"], "scoringstrategy": {}}}],
         "profiles[0].pluginConfig[0].args.scoringstrategy: unknown field"),
        ([{"name": "NodeResourcesFit", "args": {"ignoredResources": 3, "scoringStrategy": {"type": "x"}}}],
         "profiles[0].pluginConfig[0].args.ignoredResources: Invalid value: 3: Input should be a valid list "
         "(and 1 more problem in these args)"),
        ([{"name": "NodeResourcesFit", "args": {"kind": "InterPodAffinityArgs"}}],
         'profiles[0].pluginConfig[0].args.kind: must be NodeResourcesFitArgs, got "InterPodAffinityArgs"'),
        ([{"name": "NodeResourcesFit", "args": {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}}],
         f'profiles[0].pluginConfig[0].args.apiVersion: must be {API_VERSION}, got '
         '"kubescheduler.config.k8s.io/v1beta3"'),
        ([{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}],
         "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0-100]"),
        ([{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True}}],
         "profiles[0].pluginConfig[0].args.ignorePreferredTermsOfExistingPods: Forbidden: example cross-field rule"),
        ([{"name": SAMPLE, "args": {"maxSkew": 0}}],
         "profiles[0].pluginConfig[0].args.maxSkew: Invalid value: 0: must be greater than zero"),
        ([{"name": "NoSuchPlugin", "args": {}}], "profiles[0].pluginConfig[0].name: unknown plugin 'NoSuchPlugin'"),
        ([{"name": "EBSLimits"}], "profiles[0].pluginConfig[0].name: plugin 'EBSLimits' was removed"),
        ({"name": "NodeResourcesFit"}, "profiles[0].pluginConfig: must be a list, got a mapping"),
    ],
)
def test_plugin_config_refusals(plugin_config: Any, message: str) -> None:
    assert refused_profile(pluginConfig=plugin_config).startswith(message)


def test_errors_are_value_errors_with_one_line() -> None:
    message = refused_profile(pluginConfig=[
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Random", "resources": [{"weight": 0}]}}},
    ])
    assert "\n" not in message
    assert "pydantic" not in message
    assert issubclass(ConfigError, ValueError)


def test_parse_config_does_not_modify_its_input() -> None:
    data = cfg(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "PerNode"}]}},
                          "pluginConfig": [{"name": "NodeResourcesFit", "args": {"kind": "NodeResourcesFitArgs"}}]}])
    before = copy.deepcopy(data)
    parse_config(data, registry())
    assert data == before


def test_with_the_in_tree_plugins() -> None:
    """The real default registry has every default plugin, and builds kube's default profile."""
    from kubesched.plugins.registry import in_tree_registry

    reg = in_tree_registry()
    missing = [name for name, _ in DEFAULT_PLUGINS if name not in reg.names()]
    assert not missing, f"in-tree plugins not registered: {', '.join(missing)}"
    config = default_config(reg)
    assert scores(config) == KUBE_DEFAULT_SCORE
    assert names(config, "filter") == KUBE_DEFAULT_FILTER
    assert names(config, "bind") == ["DefaultBinder"]
    for name, cls in config.profiles[0].plugin_classes.items():
        if cls.Args is not None:
            assert isinstance(config.profiles[0].plugin_args[name], cls.Args)
    tuned = parse_config(cfg(profiles=[{"pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
    ]}]), reg)
    fit: Any = tuned.profiles[0].plugin_args["NodeResourcesFit"]
    assert fit.scoring_strategy.type == "MostAllocated"


# --- numbers out of range, and configurations that would fail only once the scheduler runs ---------


def load_refused(tmp_path: Path, data: dict[str, Any], reg: Registry | None = None) -> str:
    """The message load_config gives for `data` written as YAML (.inf and .nan as YAML spells them),
    read with the real plugins unless `reg` is given."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_config(path, reg)
    return str(info.value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"clientConnection": {"qps": math.inf}},
         "clientConnection.qps: Invalid value: .inf: must be a finite number within the range of a 32-bit float"),
        ({"clientConnection": {"qps": math.nan}},
         "clientConnection.qps: Invalid value: .nan: must be a finite number within the range of a 32-bit float"),
        ({"clientConnection": {"qps": 1e308}},
         "clientConnection.qps: Invalid value: 1e+308: must be a finite number within the range of a 32-bit float"),
        ({"clientConnection": {"burst": 2**31}}, "clientConnection.burst: out of range for a 32-bit integer, got 2147483648"),
        ({"leaderElection": {"leaseDuration": math.inf}},
         "leaderElection.leaseDuration: invalid duration .inf: must be no longer than 2562047h47m16.854775807s"),
        ({"leaderElection": {"retryPeriod": math.nan}},
         "leaderElection.retryPeriod: invalid duration .nan: must be no longer than 2562047h47m16.854775807s"),
        ({"leaderElection": {"leaseDuration": "3000000h"}},
         'leaderElection.leaseDuration: invalid duration "3000000h": must be no longer than 2562047h47m16.854775807s'),
        ({"leaderElection": {"leaseDuration": 10**400}},
         "leaderElection.leaseDuration: invalid duration an integer of about 401 digits: must be no longer than"),
        ({"leaderElection": {"leaseDuration": "10s"}},
         "leaderElection.leaseDuration: Invalid value: 10s: must be greater than `RenewDeadline`"),
        ({"leaderElection": {"renewDeadline": -3}}, "leaderElection.renewDeadline: Invalid value: -3s: must be greater than zero"),
        ({"leaderElection": {"retryPeriod": "9s"}},
         "leaderElection.renewDeadline: Invalid value: 10s: must be greater than retryPeriod*JitterFactor"),
        ({"leaderElection": {"leaseDuration": "600000h"}},
         "leaderElection.leaseDuration: Invalid value: 600000h0m0s: must be at most 2147483647s (the Lease's "
         "leaseDurationSeconds is a 32-bit integer)"),
        ({"leaderElection": {"resourceName": "Kube Sched"}},
         'leaderElection.resourceName: Invalid value: "Kube Sched": a lowercase RFC 1123 subdomain must consist of'),
        ({"leaderElection": {"resourceNamespace": "kube.system"}},
         'leaderElection.resourceNamespace: Invalid value: "kube.system": must not contain dots'),
        ({"leaderElection": {"resourceNamespace": "Kube"}},
         'leaderElection.resourceNamespace: Invalid value: "Kube": a lowercase RFC 1123 label must consist of'),
        ({"podInitialBackoffSeconds": 2**40, "podMaxBackoffSeconds": 2**41},
         "podInitialBackoffSeconds: Invalid value: 1099511627776: must be at most 9223372036 (the longest duration"),
        ({"podMaxBackoffSeconds": 2**63 - 1},
         "podMaxBackoffSeconds: Invalid value: 9223372036854775807: must be at most 9223372036"),
        ({"podMaxBackoffSeconds": 2**63}, "podMaxBackoffSeconds: out of range for a 64-bit integer, got 9223372036854775808"),
    ],
)
def test_numbers_out_of_range_at_top_level(fields: dict[str, Any], message: str) -> None:
    assert refused(cfg(**fields)).startswith(message)


def test_lease_timing_at_kubes_limits_is_accepted() -> None:
    # Just above JitterFactor * retryPeriod, and the longest lease a Lease can hold.
    config = parse(leaderElection={"leaseDuration": f"{2**31 - 1}s", "renewDeadline": "2401ms", "retryPeriod": "2s"})
    assert config.leader_election.renew_deadline == pytest.approx(2.401)
    assert config.leader_election.lease_duration == 2**31 - 1


def test_huge_values_are_cut_in_messages() -> None:
    message = refused(cfg(leaderElection={"resourceLock": "x" * 10_000}))
    assert len(message) < 200


def test_total_score_must_fit_int64() -> None:
    from kubesched.config.merge import Entry, PluginSet, expand_profile

    classes = {p.name: p for p in STANDINS}
    points = {point: PluginSet() for point in fw.EXTENSION_POINTS}
    points["score"] = PluginSet([Entry("ImageLocality", 2**62), Entry("TaintToleration", 2**62)])
    with pytest.raises(ConfigError) as info:
        expand_profile(points, PluginSet(), classes, "profiles[0].plugins")
    assert str(info.value) == "profiles[0].plugins.score: total score of Score plugins could overflow"


class NumbersArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    factors: dict[str, float] = Field(default_factory=dict)
    counts: list[int] = Field(default_factory=list)


def test_every_number_in_args_is_finite_and_fits_int64() -> None:
    reg = Registry([*STANDINS, _plugin("Numbers", fw.ScorePlugin, args=NumbersArgs)])

    def args_refused(args: dict[str, Any]) -> str:
        return refused(cfg(profiles=[{
            "plugins": {"multiPoint": {"enabled": [{"name": "Numbers"}]}},
            "pluginConfig": [{"name": "NodeResourcesFit"}, {"name": "Numbers", "args": args}],
        }]), reg)

    assert args_refused({"factors": {"a": 1.0, "b": math.inf}}) == (
        "profiles[0].pluginConfig[1].args.factors.b: Invalid value: .inf: must be a finite number"
    )
    assert args_refused({"factors": {"a": -math.inf}}).endswith("factors.a: Invalid value: -.inf: must be a finite number")
    assert args_refused({"factors": {"a": math.nan}}).endswith("factors.a: Invalid value: .nan: must be a finite number")
    assert args_refused({"counts": [1, 2**63]}) == (
        "profiles[0].pluginConfig[1].args.counts[1]: Invalid value: 9223372036854775808: must fit in a 64-bit integer"
    )
    assert args_refused({"counts": list(range(1001))}) == (
        "profiles[0].pluginConfig[1].args.counts: Too many: 1001: must have at most 1000 items"
    )
    assert args_refused({"factors": {f"f{i}": 1.0 for i in range(1001)}}).endswith(
        "args.factors: Too many: 1001: must have at most 1000 items"
    )


@pytest.mark.parametrize(
    ("plugin", "args", "message"),
    [
        ("LoadAware", {"window": math.inf},
         "args.window: Invalid value: .inf: must be a duration no longer than 2562047h47m16.854775807s"),
        ("LoadAware", {"window": math.nan}, "args.window: Invalid value: .nan: must be a duration, not NaN"),
        ("LoadAware", {"staleAfter": "3000000h"}, 'args.staleAfter: Invalid value: "3000000h": must be a duration no longer than'),
        ("LoadAware", {"staleAfter": 10**400},
         "args.staleAfter: Invalid value: an integer of about 401 digits: must be a duration no longer than"),
        ("LoadAware", {"window": "25h"}, "args.window: Invalid value: 25h0m0s: must be at most 24h0m0s"),
        ("LoadAware", {"window": "200ms"}, "args.window: Invalid value: 200ms: must be at least 1s with aggregation avg"),
        ("LoadAware", {"prometheus": {"refreshInterval": "100ms"}},
         'args.prometheus.refreshInterval: Invalid value: "100ms": must be at least 1s'),
        ("LoadAware", {"prometheus": {"address": "http://:9090"}},
         'args.prometheus.address: Invalid value: "http://:9090": must name a host'),
        ("LoadAware", {"prometheus": {"address": "http://prom:99999"}},
         'args.prometheus.address: Invalid value: "http://prom:99999": must be a valid URL: Port out of range 0-65535'),
        ("LoadAware", {"prometheus": {"timeout": math.inf}},
         "args.prometheus.timeout: Invalid value: .inf: must be a duration no longer than"),
        ("LoadAware", {"estimation": {"settleTime": "25h"}},
         'args.estimation.settleTime: Invalid value: "25h": must be at most 24h0m0s'),
        ("LoadAware", {"estimation": {"defaultCPU": "1e10000000"}}, "args.estimation.defaultCPU: "),
        ("LoadAware", {"estimation": {"defaultMemory": "99999999999999999999"}}, "args.estimation.defaultMemory: "),
        ("LoadAware", {"estimation": {"cpuFactor": math.inf}}, "args.estimation.cpuFactor: "),
        ("LoadAware", {"thresholds": {"cpu": math.nan}}, "args.thresholds.cpu: nan is not a percentage between 0 and 100"),
        ("LoadAware", {"resourceWeights": {"cpu": 2**70}},
         "args.resourceWeights.cpu: Invalid value: 1180591620717411303424: must fit in a 64-bit integer"),
        ("SLAQueueSort", {"tiers": {"gold": 2**64}}, "args.tiers.gold: Invalid value: 18446744073709551616: must fit"),
        ("HotValue", {"penaltyPerUnit": math.inf}, "args.penaltyPerUnit: "),
        ("TargetLoadPacking", {"defaultRequestsMultiplier": math.nan}, "args.defaultRequestsMultiplier: "),
    ],
)
def test_plugin_args_out_of_range(tmp_path: Path, plugin: str, args: dict[str, Any], message: str) -> None:
    point = "queueSort" if plugin == "SLAQueueSort" else "multiPoint"
    plugins: dict[str, Any] = {point: {"enabled": [{"name": plugin}]}}
    if point == "queueSort":
        plugins[point]["disabled"] = [{"name": "*"}]
    data = cfg(profiles=[{"plugins": plugins, "pluginConfig": [{"name": plugin, "args": args}]}])
    assert load_refused(tmp_path, data).startswith(f"{tmp_path / 'config.yaml'}: profiles[0].pluginConfig[0].{message}")


class Exploding(fw.Plugin, fw.ScorePlugin):
    """Valid args, and a constructor that fails: only building the scheduler finds it."""

    name = "Exploding"
    Args = OtherSortArgs

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        raise RuntimeError("cannot reach the thing I need")


def test_load_config_builds_every_plugin(tmp_path: Path) -> None:
    from kubesched.plugins.registry import in_tree_registry

    reg = in_tree_registry()
    reg.register(Exploding)
    data = cfg(profiles=[{
        "plugins": {"multiPoint": {"enabled": [{"name": "Exploding"}]}},
        "pluginConfig": [{"name": "Exploding", "args": {"reverse": True}}],
    }])
    assert parse_config(data, reg).profiles[0].names("score")[-1] == "Exploding"  # decoding alone is fine
    # Named after its file, as every configuration error is (two -c files: which one).
    assert load_refused(tmp_path, data, reg) == (
        f"{tmp_path / 'config.yaml'}: profiles[0].pluginConfig[0].args: plugin 'Exploding' cannot be built from this "
        "configuration: cannot reach the thing I need"
    )
    del data["profiles"][0]["pluginConfig"]
    assert load_refused(tmp_path, data, reg).startswith(
        f"{tmp_path / 'config.yaml'}: profiles[0].plugins: plugin 'Exploding' cannot be built")


def test_example_profiles_load_and_build() -> None:
    found = sorted(p.stem for p in (Path(__file__).parents[3] / "examples" / "profiles").glob("*.yaml"))
    assert {"default", "load-aware", "trimaran", "trimaran-risk", "shadow-binpack", "guarded-reload"} <= set(found)
    for name in found:
        config = load_config(Path(__file__).parents[3] / "examples" / "profiles" / f"{name}.yaml")
        assert config.profiles[0].scheduler_name == "default-scheduler", name


QUALIFIED_NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _preferred(weight: Any) -> dict[str, Any]:
    term = {"weight": weight, "preference": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}}
    return {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}


def _spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"defaultingType": "List", "defaultConstraints": list(constraints)}


@pytest.mark.parametrize(
    ("plugin", "args", "message"),
    [
        # validation_pluginargs.go, word for word
        ("DefaultPreemption", {"minCandidateNodesPercentage": 101},
         "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"),
        ("DefaultPreemption", {"minCandidateNodesAbsolute": -1},
         "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"),
        ("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
         "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"),
        ("InterPodAffinity", {"hardPodAffinityWeight": 101}, "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"),
        ("InterPodAffinity", {"hardPodAffinityWeight": 2**62},
         "hardPodAffinityWeight: Invalid value: 4611686018427387904: not in valid range [0, 100]"),
        ("PodTopologySpread", {"defaultingType": "Sometimes"},
         'defaultingType: Unsupported value: "Sometimes": supported values: "System", "List"'),
        ("PodTopologySpread", {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
         'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
        ("PodTopologySpread", _spread({"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}),
         "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"),
        ("PodTopologySpread", _spread({"maxSkew": 2**31, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}),
         "defaultConstraints[0].maxSkew: Invalid value: 2147483648: out of range for a 32-bit integer"),
        ("PodTopologySpread", _spread({"maxSkew": 1, "topologyKey": "a b", "whenUnsatisfiable": "DoNotSchedule"}),
         f'defaultConstraints[0].topologyKey: Invalid value: "a b": {QUALIFIED_NAME_PART}'),
        ("PodTopologySpread", _spread({"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}),
         "defaultConstraints[0].topologyKey: Required value: can not be empty"),
        ("PodTopologySpread", _spread({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}),
         'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"'),
        ("PodTopologySpread", _spread({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                                      {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}),
         'defaultConstraints[1]: Duplicate value: "{zone, DoNotSchedule}"'),
        ("NodeResourcesFit", {"ignoredResources": ["a b"]}, f'ignoredResources[0]: Invalid value: "a b": {QUALIFIED_NAME_PART}'),
        ("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/x"]},
         "ignoredResourceGroups[0]: Invalid value: \"example.com/x\": resource group name can't contain '/'"),
        ("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
         "scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
        ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                  "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]}}},
         "scoringStrategy.requestedToCapacityRatio.shape[0].utilization: Invalid value: 101: not in valid range [0, 100]"),
        ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                                  "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]}}},
         "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]"),
        ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]},
         "resources[0].weight: Invalid value: 2: must be 1"),
        # NodeAffinity's addedAffinity is checked as the API server checks a pod's node affinity.
        ("NodeAffinity", _preferred(0),
         "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"),
        ("NodeAffinity", _preferred(101),
         "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100"),
        ("NodeAffinity", _preferred(2**62), "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
         "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: "
         "must have at least one node selector term"),
        ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerm": []}}},
         "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerm: unknown field"),
    ],
)
def test_in_tree_plugin_args_in_kubes_words(plugin: str, args: dict[str, Any], message: str) -> None:
    from kubesched.plugins.registry import in_tree_registry

    data = cfg(profiles=[{"pluginConfig": [{"name": plugin, "args": args}]}])
    assert refused(data, in_tree_registry()).startswith(f"profiles[0].pluginConfig[0].args.{message}")


def test_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    lines = [f"apiVersion: {API_VERSION}", f"kind: {KIND}", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [*a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}, *a{k - 1}]"
              for k in range(1, 9)]
    path = write(tmp_path, "\n".join(lines) + "\n")
    message = file_refused(path)
    assert message.startswith(f"{path}: aliases expand this document by ")
    assert "more than the limit of 1000000" in message


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, f"apiVersion: {API_VERSION}\nkind: {KIND}\nprofiles: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nesting deeper than 100 levels" in file_refused(path)


def test_huge_or_endless_files_are_not_read_whole(tmp_path: Path) -> None:
    from kubesched.config.parse import MAX_CONFIG_BYTES

    big = tmp_path / "big.yaml"
    big.write_text(f"apiVersion: {API_VERSION}\nkind: {KIND}\n" + "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    assert file_refused(big) == f"{big}: larger than 4 MiB, the limit for a configuration file"
    if Path("/dev/zero").exists():
        assert file_refused("/dev/zero") == "/dev/zero: larger than 4 MiB, the limit for a configuration file"
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"apiVersion: \xff\xfe\n")
    assert file_refused(binary) == f"{binary}: not UTF-8 text (invalid start byte at byte 12)"


def test_profile_count_is_bounded() -> None:
    from kubesched.config.parse import MAX_PROFILES

    many = [{"schedulerName": f"p{i}"} for i in range(MAX_PROFILES + 1)]
    assert refused(cfg(profiles=many)) == "profiles: Too many: 101: must have at most 100 items"
    assert len(parse(profiles=many[:MAX_PROFILES]).profiles) == MAX_PROFILES
