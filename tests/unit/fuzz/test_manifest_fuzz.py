"""Fuzzing the simulator's input: manifests as objects, as YAML text, and through the CLI.

Properties, for every generated input:
- the loader either loads (refused objects listed in `errors`) or raises ManifestError / LimitError
  with one line; never another exception;
- whatever it accepted simulates without an exception or a numpy floating-point warning;
- the CLI exits 0 or 2 with no traceback and a bounded amount of output;
- nothing takes more than 10 s.
Inputs are seeded (the `ci` hypothesis profile); `make fuzz` runs twenty times as many.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kubesched.backends.sim.clusterinput import ClusterInput, ManifestError
from kubesched.backends.sim.engine import Simulation
from kubesched.backends.sim.limits import LimitError
from kubesched.backends.sim.manifests import load_objects, load_paths
from kubesched.cli import app
from kubesched.config.parse import default_config
from unit.fuzz.budget import examples
from unit.fuzz.corpus import SEEDS, clusters

SLOW = 10.0  # seconds: the bar for any input under 1 MB
CONFIG = default_config()


def load(objects: list[dict[str, Any]]) -> ClusterInput | None:
    start = time.monotonic()
    try:
        cluster = load_objects(objects, keep_going=True)
    except (ManifestError, LimitError) as exc:
        assert "\n" not in str(exc), str(exc)
        cluster = None
    assert time.monotonic() - start < SLOW
    return cluster


def test_the_seeds_are_valid() -> None:
    cluster = load_objects(list(SEEDS))
    assert not cluster.errors
    assert len(cluster.nodes) == 2 and len(cluster.pods) == 2 + 3 + 2 + 2


@settings(max_examples=examples(600))
@given(clusters())
def test_the_loader_accepts_or_refuses_cleanly(objects: list[dict[str, Any]]) -> None:
    cluster = load(objects)
    if cluster is not None:
        for message in cluster.errors:
            assert "\n" not in message and len(message) < 5000, message


@settings(max_examples=examples(150))
@given(clusters(), st.integers(min_value=0, max_value=2**32))
def test_what_the_loader_accepts_simulates(objects: list[dict[str, Any]], seed: int) -> None:
    cluster = load(objects)
    if cluster is None:
        return
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            result = asyncio.run(Simulation(cluster, CONFIG, seed=seed).run())
        except LimitError:
            return
    assert time.monotonic() - start < SLOW
    assert result.pods_scheduled + result.pods_unschedulable + result.pods_gated <= result.pods_total


_TEXT_EDITS = st.sampled_from(("truncate", "duplicate-line", "delete-line", "indent", "insert", "tab"))


@settings(max_examples=examples(200))
@given(clusters(), st.lists(st.tuples(_TEXT_EDITS, st.integers(min_value=0), st.text(max_size=8)), max_size=3))
def test_edited_yaml_text_loads_or_is_refused(tmp_path_factory: Any, objects: list[dict[str, Any]], edits: list[Any]) -> None:
    text = yaml.safe_dump_all(objects, sort_keys=False)
    lines = text.splitlines()
    for edit, where, extra in edits:
        i = where % max(1, len(lines))
        if edit == "truncate":
            lines = lines[:i]
        elif edit == "duplicate-line" and lines:
            lines.insert(i, lines[i])
        elif edit == "delete-line" and lines:
            del lines[i]
        elif edit == "indent" and lines:
            lines[i] = "  " + lines[i]
        elif edit == "insert":
            lines.insert(i, extra)
        elif edit == "tab" and lines:
            lines[i] = "\t" + lines[i]
    path = tmp_path_factory.mktemp("yaml") / "cluster.yaml"
    path.write_text("\n".join(lines) + "\n")
    start = time.monotonic()
    try:
        cluster = load_paths([path], keep_going=True)
    except (ManifestError, LimitError) as exc:
        assert "\n" not in str(exc), str(exc)
        assert str(exc).startswith(str(path)), str(exc)
    else:
        assert isinstance(cluster, ClusterInput)
    assert time.monotonic() - start < SLOW


runner = CliRunner()


@settings(max_examples=examples(60))
@given(clusters())
def test_the_cli_exits_0_or_2_without_a_traceback(tmp_path_factory: Any, objects: list[dict[str, Any]]) -> None:
    folder: Path = tmp_path_factory.mktemp("cli")
    (folder / "cluster.yaml").write_text(yaml.safe_dump_all(objects, sort_keys=False))
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = runner.invoke(app, ["simulate", str(folder), "-q", "--json", str(folder / "out.json")])
    assert time.monotonic() - start < SLOW
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert len(result.output) < 100_000
