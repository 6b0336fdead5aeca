"""Fuzzing the configuration loader: valid configurations with junk in them.

Inputs start from configurations that load (examples/profiles/*.yaml, and one that spells out every
in-tree plugin's args as kubesched's defaults), then get a few mutations: any leaf or subtree
replaced by junk (huge, negative and non-finite numbers, wrong types, long or odd strings, None,
nested lists), keys dropped, list items duplicated, unknown fields added; the YAML text itself gets
lines repeated or cut. The property: `load_config` returns a configuration whose scheduler runs a
small simulation, or raises ConfigError with a one-line message; nothing else, within 10 s. The real
`kubesched config validate` on a sample of the same inputs exits 0 or 2 without a traceback.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kubesched.config.errors import ConfigError
from kubesched.config.parse import default_config
from kubesched.config.types import SchedulerConfig
from kubesched.scheduler.configload import load_config
from kubesched.tools.bench import scheduling_basic
from unit.fuzz.budget import examples
from unit.fuzz.mutations import mutations_of

ROOT = Path(__file__).parents[3]
LIMIT_SECONDS = 10.0


def _spelled_out() -> dict[str, Any]:
    """A configuration naming every in-tree plugin with args, each set to its defaults as written
    in a file: every args field is a leaf the mutations can reach."""
    from kubesched.plugins.registry import in_tree_registry

    reg = in_tree_registry()
    extra = ["LoadAware", "TargetLoadPacking", "LoadVariationRiskBalancing", "MultiDimensionalScore", "HotValue"]
    names = [n for n, _ in default_config().profiles[0].plugin_classes.items()] + extra + ["SLAQueueSort"]
    plugin_config = []
    for name in names:
        model = reg.resolve(name).Args
        if model is not None:
            plugin_config.append({"name": name, "args": model().model_dump(mode="json", by_alias=True, exclude_none=True)})
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 16,
        "percentageOfNodesToScore": 0,
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "leaderElection": {"leaderElect": True, "leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s",
                           "resourceLock": "leases", "resourceName": "kubesched", "resourceNamespace": "kube-system"},
        "clientConnection": {"qps": 50, "burst": 100, "contentType": "application/json", "kubeconfig": ""},
        "profiles": [{
            "schedulerName": "default-scheduler",
            "percentageOfNodesToScore": 50,
            "plugins": {
                "queueSort": {"enabled": [{"name": "SLAQueueSort"}], "disabled": [{"name": "*"}]},
                "multiPoint": {"enabled": [{"name": n, "weight": 2} for n in extra]},
                "score": {"enabled": [{"name": "ImageLocality", "weight": 3}]},
            },
            "pluginConfig": plugin_config,
        }],
    }


def _documents() -> list[dict[str, Any]]:
    return [doc for p in sorted((ROOT / "examples" / "profiles").glob("*.yaml")) for doc in yaml.safe_load_all(p.read_text()) if doc]


def _seeds() -> list[dict[str, Any]]:
    return [*(d for d in _documents() if d.get("kind") != "KubeschedConfiguration"), _spelled_out()]


SEEDS = _seeds()
# The examples' second documents (reload, sloGuard, shadowProfiles), mutated beside a configuration
# whose profiles they can name.
EXT_SEEDS = [d for d in _documents() if d.get("kind") == "KubeschedConfiguration"]
EXT_BASE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "binpack"}]}

def mutated() -> st.SearchStrategy[dict[str, Any]]:
    return mutations_of(SEEDS)


def _dump(tree: Any) -> str:
    return yaml.safe_dump(tree, allow_unicode=True, sort_keys=False)


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


class _Tiny:
    """A five-node cluster with a few pods, built once: a configuration that loads must schedule it."""

    cluster = None

    @classmethod
    def get(cls) -> Any:
        if cls.cluster is None:
            cls.cluster = scheduling_basic(5, 8)
        return cls.cluster


def _runs(cfg: SchedulerConfig) -> None:
    from kubesched.backends.sim.engine import Simulation

    result = asyncio.run(Simulation(_Tiny.get(), cfg, seed=1).run())
    assert result.pods_total >= 0


def _check(path: Path) -> None:
    started = time.monotonic()
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        message = str(exc)
        assert message and "\n" not in message, f"not one line: {message!r}"
        assert len(message) < 2000, f"message of {len(message)} characters"
    else:
        _runs(cfg)
    elapsed = time.monotonic() - started
    assert elapsed < LIMIT_SECONDS, f"took {elapsed:.1f}s"


def test_the_seeds_load_and_run(tmp_path: Path) -> None:
    for seed in SEEDS:
        _runs(load_config(_write(tmp_path, _dump(seed))))


@settings(max_examples=examples(300))
@given(tree=mutated())
def test_mutated_configs_load_or_are_refused_in_one_line(tmp_path_factory: pytest.TempPathFactory, tree: dict[str, Any]) -> None:
    _check(_write(tmp_path_factory.mktemp("cfg"), _dump(tree)))


@settings(max_examples=examples(150))
@given(tree=mutations_of(EXT_SEEDS))
def test_mutated_kubesched_documents_load_or_are_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, tree: dict[str, Any]
) -> None:
    _check(_write(tmp_path_factory.mktemp("cfg"), _dump(EXT_BASE) + "---\n" + _dump(tree)))


@st.composite
def mangled_text(draw: st.DrawFn) -> str:
    """YAML text with lines repeated (duplicate keys), dropped, cut short, or an alias bomb inside."""
    lines = _dump(draw(mutated())).splitlines()
    op = draw(st.sampled_from(["repeat", "drop", "cut", "bomb", "tabs"]))
    i = draw(st.randoms(use_true_random=True)).randrange(max(1, len(lines)))
    if op == "repeat":
        lines.insert(i, lines[i])
    elif op == "drop":
        del lines[i]
    elif op == "cut":
        text = "\n".join(lines)
        return text[: draw(st.integers(0, len(text)))]
    elif op == "bomb":
        bomb = ["bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]"]
        bomb += [f"bomb{k}: &b{k} [*b{k - 1}, *b{k - 1}, *b{k - 1}, *b{k - 1}, *b{k - 1}, *b{k - 1}, *b{k - 1}, *b{k - 1}]"
                 for k in range(1, 9)]
        lines = bomb + lines
    else:
        lines[i] = lines[i].replace("  ", "\t")
    return "\n".join(lines) + "\n"


@settings(max_examples=examples(120))
@given(text=mangled_text())
def test_mangled_yaml_is_refused_or_loads(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    _check(_write(tmp_path_factory.mktemp("cfg"), text))


@settings(max_examples=examples(80))
@given(tree=mutated())
def test_config_validate_exits_0_or_2_without_a_traceback(tmp_path_factory: pytest.TempPathFactory, tree: dict[str, Any]) -> None:
    from kubesched.cli import app

    path = _write(tmp_path_factory.mktemp("cfg"), _dump(tree))
    started = time.monotonic()
    result = CliRunner().invoke(app, ["config", "validate", str(path)])
    assert time.monotonic() - started < LIMIT_SECONDS
    output = result.output
    assert result.exit_code in (0, 2), f"exit {result.exit_code}: {result.exception!r}\n{output}"
    assert "Traceback" not in output
    if result.exit_code == 2:
        assert output.startswith("error: ")
