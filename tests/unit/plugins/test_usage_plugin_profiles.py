"""A profile naming TargetLoadPacking, LoadVariationRiskBalancing, MultiDimensionalScore, HotValue
and SLAQueueSort with pluginConfig args loads from YAML, refuses bad args with the field's path,
and schedules on the simulator (whose Prometheus is the simulated one)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from builders import make_node, make_pod
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config
from kubesched.scheduler.configload import load_config

from ..simkit import run

PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled: [{name: SLAQueueSort}]
      disabled: [{name: "*"}]
    multiPoint:
      enabled:
      - {name: TargetLoadPacking, weight: 2}
      - {name: LoadVariationRiskBalancing}
      - {name: MultiDimensionalScore}
      - {name: HotValue}
  pluginConfig:
  - name: TargetLoadPacking
    args:
      targetUtilization: 60
      defaultRequests: {cpu: 500m}
      defaultRequestsMultiplier: "2"
      missingMetrics: FailClosed
      prometheus: {refreshInterval: 15s}
  - name: LoadVariationRiskBalancing
    args: {safeVarianceMargin: 2, safeVarianceSensitivity: 0.5, window: 5m}
  - name: MultiDimensionalScore
    args:
      weights: {cpu: 1, memory: 1, latency: 0.5, topology: 2}
      rackLabel: example.com/rack
      latencyLabel: example.com/rtt-ms
  - name: HotValue
    args:
      windows: [{timeRange: 2m, count: 3}]
      penaltyPerUnit: 5
  - name: SLAQueueSort
    args: {labelKey: tier, tiers: {platinum: 1000, gold: 100}, defaultTierValue: -1}
"""


def test_profile_loads_with_every_plugins_args(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(PROFILE)
    profile = load_config(path).profiles[0]
    assert profile.names("queueSort") == ["SLAQueueSort"]
    scores = dict((r.name, r.weight) for r in profile.plugins["score"])
    assert scores["TargetLoadPacking"] == 2
    assert {"LoadVariationRiskBalancing", "MultiDimensionalScore", "HotValue"} <= set(scores)
    args = profile.plugin_args
    tlp = args["TargetLoadPacking"]
    assert (tlp.target_utilization, tlp.default_requests.cpu, tlp.default_requests_multiplier) == (60, 500, 2.0)  # type: ignore[attr-defined]
    assert tlp.prometheus.refresh_interval == 15  # type: ignore[attr-defined]
    lvrb = args["LoadVariationRiskBalancing"]
    assert (lvrb.safe_variance_margin, lvrb.safe_variance_sensitivity, lvrb.window) == (2, 0.5, 300)  # type: ignore[attr-defined]
    mds = args["MultiDimensionalScore"]
    assert (mds.weights.topology, mds.rack_label, mds.latency_label) == (2, "example.com/rack", "example.com/rtt-ms")  # type: ignore[attr-defined]
    hot = args["HotValue"]
    assert [(w.time_range, w.divisor) for w in hot.windows] == [(120, 3)]  # type: ignore[attr-defined]
    sla = args["SLAQueueSort"]
    assert (sla.label_key, sla.tiers, sla.default_tier_value) == ("tier", {"platinum": 1000, "gold": 100}, -1)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("plugin", "args", "message"),
    [
        ("TargetLoadPacking", {"targetUtilization": 150},
         ".args.targetUtilization: Invalid value: 150: Input should be less than or equal to 99"),
        ("LoadVariationRiskBalancing", {"safeVarianceSensitivity": 0},
         ".args.safeVarianceSensitivity: Invalid value: 0: Input should be greater than 0"),
        ("MultiDimensionalScore", {"weights": {"gpu": 1}}, ".args.weights.gpu: unknown field"),
        ("HotValue", {"windows": [{"timeRange": "1h", "count": 1}]},
         '.args.windows[0].timeRange: Invalid value: "1h": must be at most 10m, how long placements are remembered'),
        ("SLAQueueSort", {"tiers": {"Gold": 1, "gold": 2}}, ".args.tiers: 'gold' and 'Gold' are the same tier"),
    ],
)
def test_bad_args_name_the_field(plugin: str, args: dict, message: str) -> None:
    data = yaml.safe_load(PROFILE)
    for entry in data["profiles"][0]["pluginConfig"]:
        if entry["name"] == plugin:
            entry["args"] = args
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert "profiles[0].pluginConfig[" in str(err.value) and message in str(err.value)


def test_the_profile_schedules_on_the_simulator() -> None:
    objects = [
        make_node(f"n{i}")
        .capacity(cpu="8")
        .without("ephemeral-storage")
        .label({"example.com/rack": f"r{i % 2}", "example.com/rtt-ms": str(10 * i)})
        .manifest()
        for i in range(4)
    ]
    objects += [make_pod(f"p{i}").req(cpu="500m", memory="100Mi").label({"tier": "gold" if i % 3 == 0 else "bronze",
                                                 "app.kubernetes.io/instance": "web"}).manifest() for i in range(12)]
    result, sim = run(objects, yaml.safe_load(PROFILE))
    assert result.pods_scheduled == 12
    # The usage-based plugins asked the simulated Prometheus for the mean and the deviation.
    queries = list(sim.prometheus.queries)
    assert any(q.startswith("stddev_over_time") for q in queries) and any(q.startswith("avg_over_time") for q in queries)
