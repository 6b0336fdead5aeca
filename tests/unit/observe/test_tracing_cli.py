"""--tracing-config-file as a user meets it: a bad file is one line naming the field, exit 2, before
anything runs (run, simulate, bench alike)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import app

HEAD = "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n"


@pytest.mark.parametrize("command", [["run"], ["simulate", "basic", "-q"], ["bench", "--nodes", "2", "--pods", "2", "-q"]])
def test_a_bad_tracing_file_is_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    bad = tmp_path / "tracing.yaml"
    bad.write_text(HEAD + "samplingRatePerMillion: 1500000\n")
    result = CliRunner().invoke(app, [*command, "--tracing-config-file", str(bad)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "samplingRatePerMillion: Invalid value: 1500000" in result.output and str(bad) in result.output.replace("\n", "")


def test_simulate_and_bench_run_with_tracing_off(tmp_path: Path) -> None:
    off = tmp_path / "tracing.yaml"
    off.write_text(HEAD)  # samplingRatePerMillion defaults to 0: off, nothing is sent anywhere
    for command in (["simulate", "basic", "-q"], ["bench", "--nodes", "3", "--pods", "5", "-q"]):
        result = CliRunner().invoke(app, [*command, "--tracing-config-file", str(off)])
        assert result.exit_code == 0, result.output
