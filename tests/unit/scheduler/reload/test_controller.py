"""The reload controller on a configuration file, as `kubesched run` drives it: the file served the
way a ConfigMap volume serves it (a symlink swap), SIGHUP, plugin modules edited in place."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kubesched.scheduler.reload.controller import APPLIED, REFUSED, UNCHANGED, ReloadController
from unit.scheduler.test_generation import scheduler
from unit.simkit import config_text


class Projected:
    """A ConfigMap's data projected as the kubelet's AtomicWriter does: `config.yaml` links to
    `..data/config.yaml`, and `..data` to a timestamped directory replaced by a rename."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.n = 0
        (root / "config.yaml").symlink_to("..data/config.yaml")

    def write(self, text: str) -> None:
        self.n += 1
        stamp = self.root / f"..2026_11_25_{self.n:06d}"
        stamp.mkdir()
        (stamp / "config.yaml").write_text(text)
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(stamp.name)
        os.rename(tmp, self.root / "..data")

    @property
    def path(self) -> Path:
        return self.root / "config.yaml"


def controller(tmp_path: Path, text: str) -> tuple[ReloadController, Projected]:
    files = Projected(tmp_path)
    files.write(text)
    sched, _ = scheduler(text)
    ctl = ReloadController(sched, path=files.path)
    ctl.start_from_file(text)
    return ctl, files


def test_a_symlink_swap_is_seen_and_the_same_text_is_no_reload(tmp_path: Path) -> None:
    ctl, files = controller(tmp_path, config_text({}))
    assert asyncio.run(ctl.check_file()) is None  # nothing changed
    files.write(config_text({}))  # a new directory, the same text: a resync
    assert asyncio.run(ctl.check_file()) is None
    binpack = config_text({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]})
    files.write(binpack)
    record = asyncio.run(ctl.check_file())
    assert record is not None and record.result == APPLIED and record.generation == 2
    assert ctl.scheduler.generation.number == 2 and record.origin == str(files.path)
    assert record.paused < record.seconds


def test_sighup_evaluates_the_file_even_unchanged(tmp_path: Path) -> None:
    ctl, _ = controller(tmp_path, config_text({}))
    record = asyncio.run(ctl.check_file(force=True))
    assert record is not None and record.result == UNCHANGED and ctl.results.get((UNCHANGED,)) == 1


def test_a_refused_file_keeps_the_running_configuration_and_says_why(tmp_path: Path) -> None:
    ctl, files = controller(tmp_path, config_text({}))
    files.write("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{plugins: {score: 3}}]\n")
    record = asyncio.run(ctl.check_file())
    assert record is not None and record.result == REFUSED and ctl.scheduler.generation.number == 1
    assert ctl.problem is not None and "profiles[0].plugins.score: must be a mapping" in ctl.problem
    assert ctl.problem.count(str(files.path)) == 1, ctl.problem  # the file named once
    z = ctl.configz()
    assert z["kubesched"]["status"]["fileDiffers"] is True and z["kubesched"]["status"]["generation"] == 1
    # Fixing the file clears it.
    files.write(config_text({}))
    record = asyncio.run(ctl.check_file())
    assert record is not None and record.result == UNCHANGED and ctl.problem is None


def test_configz_serves_the_configuration_in_force_with_its_defaults(tmp_path: Path) -> None:
    ctl, _ = controller(tmp_path, config_text({"schedulerName": "mine"}))
    z = ctl.configz()
    cc = z["componentconfig"]
    assert cc["kind"] == "KubeSchedulerConfiguration" and cc["profiles"][0]["schedulerName"] == "mine"
    assert cc["leaderElection"]["leaseDuration"] == "15s" and cc["podMaxBackoffSeconds"] == 10
    assert {"name": "TaintToleration", "weight": 3} in cc["profiles"][0]["plugins"]["score"]["enabled"]
    fit = next(e for e in cc["profiles"][0]["pluginConfig"] if e["name"] == "NodeResourcesFit")
    assert fit["args"]["scoringStrategy"]["type"] == "LeastAllocated"
    status = z["kubesched"]["status"]
    assert status["digest"] == ctl.scheduler.generation.digest and status["knownGood"]["generation"] == 1
    assert z["kubesched"]["sloGuard"]["window"] == 300.0


PLUGIN = """
from kubesched.framework.interface import NodeScorePlugin, Plugin

PREFERRED = {node!r}


class Prefer(Plugin, NodeScorePlugin):
    name = "Prefer"

    def score_node(self, state, pi, node):
        return 100 if node.name == PREFERRED else 0
"""


def test_an_edited_plugin_module_is_imported_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "plugins"
    pkg.mkdir()
    module = pkg / "reload_prefer_plugin.py"
    module.write_text(textwrap.dedent(PLUGIN).replace("{node!r}", "'a'"))
    monkeypatch.syspath_prepend(str(pkg))
    text = config_text({"plugins": {"multiPoint": {"enabled": [{"name": "reload_prefer_plugin:Prefer"}]}}})
    (tmp_path / "cm").mkdir()
    ctl, _ = controller(tmp_path / "cm", text)
    before = ctl.scheduler.frameworks["default-scheduler"].instances["reload_prefer_plugin:Prefer"]
    digest = ctl.scheduler.generation.digest
    time.sleep(0.01)
    module.write_text(textwrap.dedent(PLUGIN).replace("{node!r}", "'b'"))
    record = asyncio.run(ctl.check_file(force=True))  # SIGHUP: the configuration text did not change
    assert record is not None and record.result == APPLIED, record
    after = ctl.scheduler.frameworks["default-scheduler"].instances["reload_prefer_plugin:Prefer"]
    assert after is not before and type(after) is not type(before)
    assert ctl.scheduler.generation.digest != digest
    assert after.score_node(None, None, type("N", (), {"name": "b"})()) == 100
    # A module that no longer imports is refused, and the running classes stay.
    module.write_text("def broken(:\n")
    record = asyncio.run(ctl.check_file(force=True))
    assert record is not None and record.result == REFUSED
    assert "plugin module 'reload_prefer_plugin' changed but cannot be imported again: SyntaxError" in record.message
    assert ctl.scheduler.frameworks["default-scheduler"].instances["reload_prefer_plugin:Prefer"] is after
    # Neither import touched what runs: the first class still reads the globals it was written against.
    assert before.score_node(None, None, type("N", (), {"name": "a"})()) == 100
    assert after.score_node(None, None, type("N", (), {"name": "b"})()) == 100
    sys.modules.pop("reload_prefer_plugin", None)


def test_the_metrics_name_the_configuration_in_force(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    ctl, files = controller(tmp_path, config_text({}))
    files.write(config_text({"schedulerName": "other"}))
    asyncio.run(ctl.check_file())
    text = generate_latest(ctl.scheduler.metrics.registry()).decode()
    gen = ctl.scheduler.generation
    assert f'kubesched_config_info{{digest="{gen.digest}",generation="2"}} 1.0' in text
    assert 'kubesched_config_reloads_total{result="applied"} 1.0' in text
    assert "kubesched_config_last_reload_successful 1.0" in text
