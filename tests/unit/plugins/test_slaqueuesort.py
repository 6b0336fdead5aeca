"""SLAQueueSort: tier, then priority, then queue time; args; one queue sort for all profiles; and
the order on the simulated scheduler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError

from builders import make_node, make_pod
from kubesched.api.podinfo import PodInfo
from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config
from kubesched.plugins.slaqueuesort import SLAQueueSort, SLAQueueSortArgs

from ..simkit import profile_config, run


@dataclass
class Queued:
    pi: PodInfo
    timestamp: float


def queued(name: str, sla: str | None, priority: int | None, timestamp: float, key: str = "sla") -> Queued:
    labels = {key: sla} if sla is not None else {}
    return Queued(make_pod(name).label(labels).priority(priority).info(), timestamp)


def order(items: list[Queued], args: dict[str, Any] | None = None) -> list[str]:
    plugin = SLAQueueSort(SLAQueueSortArgs.model_validate(args or {}))
    return [q.pi.pod.metadata.name for q in sorted(items, key=plugin.sort_key)]


def test_defaults_are_the_articles_tiers() -> None:
    a = SLAQueueSortArgs()
    assert (a.label_key, a.tiers, a.default_tier_value) == ("sla", {"gold": 100, "silver": 50, "bronze": 10}, 0)


def test_tier_then_priority_then_timestamp() -> None:
    items = [
        queued("bronze", "bronze", 1000, 0.0),
        queued("none-high", None, 2000, 0.0),
        queued("silver-late", "silver", 0, 5.0),
        queued("silver-early", "silver", 0, 1.0),
        queued("silver-urgent", "silver", 10, 9.0),
        queued("gold", "Gold", None, 9.0),  # tiers ignore case
        queued("unknown", "platinum", 5000, 0.0),  # not a tier: the default, 0
    ]
    assert order(items) == ["gold", "silver-urgent", "silver-early", "silver-late", "bronze", "unknown", "none-high"]


def test_full_ties_keep_creation_order() -> None:
    first = queued("first", "gold", 1, 1.0)
    second = queued("second", "gold", 1, 1.0)
    assert order([second, first]) == ["first", "second"]


def test_custom_label_tiers_and_default() -> None:
    args = {"labelKey": "example.com/tier", "tiers": {"critical": 10, "batch": -10}, "defaultTierValue": 1}
    items = [
        queued("batch", "batch", 0, 0.0, key="example.com/tier"),
        queued("plain", None, 0, 1.0),
        queued("critical", "critical", 0, 2.0, key="example.com/tier"),
        queued("wrong-key", "critical", 0, 0.5),  # labelled `sla`, not the configured key
    ]
    assert order(items, args) == ["critical", "wrong-key", "plain", "batch"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"labelKey": "bad key"}, "not a valid label key"),
        ({"tiers": {"": 1}}, "not a label value"),
        ({"tiers": {"-gold": 1}}, "not a label value"),
        ({"tiers": {"gold": 1, "GOLD": 2}}, "same tier"),
        ({"tiers": {"gold": "high"}}, "valid integer"),
        ({"defaultTierValue": 1.5}, "integer"),
        ({"tier": {}}, "Extra inputs"),
    ],
)
def test_invalid_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SLAQueueSortArgs.model_validate(args)


SLA_SORT = {"queueSort": {"enabled": [{"name": "SLAQueueSort"}], "disabled": [{"name": "*"}]}}


def test_replaces_priority_sort_in_a_profile() -> None:
    cfg = parse_config(profile_config({"schedulerName": "default-scheduler", "plugins": SLA_SORT}))
    assert cfg.profiles[0].names("queueSort") == ["SLAQueueSort"]


def test_alongside_priority_sort_is_refused() -> None:
    config = profile_config({"schedulerName": "s", "plugins": {"multiPoint": {"enabled": [{"name": "SLAQueueSort"}]}}})
    with pytest.raises(ConfigError, match="exactly one queue sort plugin"):
        parse_config(config)


def test_every_profile_must_sort_alike() -> None:
    first = {"schedulerName": "a", "plugins": SLA_SORT}
    with pytest.raises(ConfigError, match="queueSort: must be the same for all profiles"):
        parse_config(profile_config(first, {"schedulerName": "b"}))
    other_args = {"schedulerName": "b", "plugins": SLA_SORT,
                  "pluginConfig": [{"name": "SLAQueueSort", "args": {"labelKey": "tier"}}]}
    with pytest.raises(ConfigError, match="args of queue sort plugin 'SLAQueueSort' must be the same"):
        parse_config(profile_config(first, other_args))
    parse_config(profile_config(first, {"schedulerName": "b", "plugins": SLA_SORT}))


def test_gold_gets_the_last_slot_on_the_scheduler() -> None:
    objects = [make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest()] + [
        make_pod(tier).req(cpu="1", memory="100Mi").label(sla=tier).manifest() for tier in ("bronze", "silver", "gold")
    ]
    by_sla, _ = run(objects, profile_config({"schedulerName": "default-scheduler", "plugins": SLA_SORT}))
    assert by_sla.placements["default/gold"] == "n1"
    by_priority, _ = run(objects)  # PrioritySort: equal priority, first queued first
    assert by_priority.placements["default/bronze"] == "n1"
