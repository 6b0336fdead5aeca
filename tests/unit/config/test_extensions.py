"""The KubeschedConfiguration document beside the KubeSchedulerConfiguration (config.extensions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.config.errors import ConfigError
from kubesched.config.parse import parse_config_text
from unit.simkit import config_text


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, "config.yaml")
    return str(info.value)


def test_defaults_without_the_document() -> None:
    cfg = parse_config_text(config_text({}), "config.yaml")
    assert cfg.kubesched.reload.poll_interval == 2.0
    assert cfg.kubesched.slo_guard.enabled and cfg.kubesched.slo_guard.window == 300.0
    assert cfg.kubesched.shadow_profiles == []
    assert [p.scheduler_name for p in cfg.live_profiles] == ["default-scheduler"]


def test_the_document_may_come_first() -> None:
    text = "apiVersion: kubesched.io/v1alpha1\nkind: KubeschedConfiguration\nreload: {pollInterval: 5s}\n---\n" + config_text({})
    assert parse_config_text(text, "config.yaml").kubesched.reload.poll_interval == 5.0


def test_shadow_profiles_name_profiles_of_the_configuration() -> None:
    two = ({"schedulerName": "live"}, {"schedulerName": "candidate"})
    cfg = parse_config_text(config_text(*two, kubesched={"shadowProfiles": [{"schedulerName": "candidate", "shadowOf": "live"}]}),
                            "config.yaml")
    assert [p.scheduler_name for p in cfg.live_profiles] == ["live"]
    assert cfg.kubesched.shadow("candidate").sampling_percentage == 10.0
    assert refused(config_text(*two, kubesched={"shadowProfiles": [{"schedulerName": "nope", "shadowOf": "live"}]})) == (
        'config.yaml: KubeschedConfiguration.shadowProfiles[0].schedulerName: Not found: "nope": no such profile '
        '(profiles: live, candidate)'
    )
    assert "is itself a shadow profile" in refused(config_text(*two, {"schedulerName": "third"}, kubesched={"shadowProfiles": [
        {"schedulerName": "candidate", "shadowOf": "live"}, {"schedulerName": "third", "shadowOf": "candidate"}]}))
    # So one profile at least is live.
    assert "is itself a shadow profile" in refused(config_text(*two, kubesched={"shadowProfiles": [
        {"schedulerName": "candidate", "shadowOf": "live"}, {"schedulerName": "live", "shadowOf": "candidate"}]}))


@pytest.mark.parametrize(
    ("ext", "message"),
    [
        ({"reloads": {}}, "KubeschedConfiguration.reloads: unknown field"),
        ({"reload": {"pollInterval": "0.1s"}}, "KubeschedConfiguration.reload.pollInterval: must be 0 (off) or at least 0.5s"),
        ({"sloGuard": {"window": "1m", "interval": "2m"}}, "KubeschedConfiguration.sloGuard.window: must be at least one interval long"),
        ({"sloGuard": {"objectives": {"maxUnschedulableRatioIncrease": 2}}},
         "KubeschedConfiguration.sloGuard.objectives.maxUnschedulableRatioIncrease: Invalid value: 2: "
         "Input should be less than or equal to 1"),
        ({"shadowProfiles": [{"schedulerName": "default-scheduler"}]},
         "KubeschedConfiguration.shadowProfiles[0].shadowOf: required"),
    ],
)
def test_mistakes_are_refused_naming_the_field(ext: dict, message: str) -> None:
    assert refused(config_text({}, kubesched=ext)) == f"config.yaml: {message}"


def test_a_wrong_api_version_or_a_second_document_of_a_kind() -> None:
    text = config_text({}) + "---\napiVersion: kubesched.io/v1\nkind: KubeschedConfiguration\n"
    assert refused(text) == 'config.yaml: KubeschedConfiguration.apiVersion: must be kubesched.io/v1alpha1, got "kubesched.io/v1"'
    twice = config_text({}, kubesched={}) + "---\napiVersion: kubesched.io/v1alpha1\nkind: KubeschedConfiguration\n"
    assert refused(twice) == "config.yaml: document 3: a second KubeschedConfiguration; give one at most"
    only = "apiVersion: kubesched.io/v1alpha1\nkind: KubeschedConfiguration\n"
    assert refused(only) == "config.yaml: no KubeSchedulerConfiguration document (only a KubeschedConfiguration)"


def test_config_validate_says_which_profiles_are_shadows(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kubesched.cli import app

    path = tmp_path / "c.yaml"
    path.write_text(config_text({"schedulerName": "live"}, {"schedulerName": "candidate"},
                                kubesched={"shadowProfiles": [{"schedulerName": "candidate", "shadowOf": "live",
                                                               "samplingPercentage": 25}]}))
    result = CliRunner().invoke(app, ["config", "validate", str(path)])
    assert result.exit_code == 0
    assert "ok profile candidate (shadow of live, 25% of its cycles)" in result.output
