"""`kubesched --version`, and help as a newcomer reads it: piped whole, flags shown as flags."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app
from kubesched.tools.perf.source import KUBE_VERSION

REPO = Path(__file__).resolve().parents[2]
COMMANDS = [["--help"], ["simulate", "--help"], ["bench", "--help"], ["run", "--help"], ["explain", "--help"],
            ["config", "validate", "--help"]]


def test_version_names_kubesched_and_the_kube_scheduler_release() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert result.output == f"kubesched {version} (matches kube-scheduler {KUBE_VERSION})\n"
    assert KUBE_VERSION == "v1.37.2"


def _piped_help(args: list[str], **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH", "LINES")} | env
    done = subprocess.run([sys.executable, "-m", "kubesched.cli", *args], capture_output=True, text=True, env=environ,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_help_into_a_pipe_is_not_cut(args: list[str]) -> None:
    out = _piped_help(args)
    assert "…" not in out, out  # rich's mark of a cut word
    assert "<bool>" not in out, out
    assert max(len(line) for line in out.splitlines()) > 80
    assert "Usage: kubesched " in out


def test_flags_read_as_flags() -> None:
    out = _piped_help(["simulate", "--help"])
    quiet = next(line for line in out.splitlines() if "--quiet" in line)
    assert "-q" in quiet and "<" not in quiet and "No progress bar." in quiet
    assert "KubeSchedulerConfiguration; repeat to compare." in out


def test_columns_still_decide_when_set() -> None:
    out = _piped_help(["simulate", "--help"], COLUMNS="100")
    assert max(len(line) for line in out.splitlines()) == 100


def test_exit_codes_are_in_the_help() -> None:
    simulate = " ".join(_piped_help(["simulate", "--help"]).split())
    assert "Exit codes: 0 the simulation ran; 2 bad input" in simulate and "no Nodes in the input" in simulate
    explain = " ".join(_piped_help(["explain", "--help"]).split())
    assert "Exit codes: 0 the pod was explained" in explain and "2 no such pod, or bad input" in explain
