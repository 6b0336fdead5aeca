"""The command line fed mistakes, as a new user would: one clear line, exit 2, nothing else."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubesched.cli import MAX_MESSAGE_CHARS, MAX_TOKEN_CHARS, app, clip

runner = CliRunner()

NODE = "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nstatus: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '10'}}}}\n"
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: {container}\n    image: pause\n"
    "    resources: {{requests: {{cpu: 100m}}}}\n"
)


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def test_json_to_a_missing_directory_is_refused_before_the_run(tmp_path: Path) -> None:
    start = time.monotonic()
    code, out = invoke("simulate", "-q", "--json", str(tmp_path / "nope" / "out.json"))
    assert code == 2
    assert f"--json {tmp_path / 'nope' / 'out.json'}: no such directory" in out
    assert "scheduled" not in out  # nothing ran
    assert time.monotonic() - start < 5


def test_json_to_a_directory_is_refused(tmp_path: Path) -> None:
    code, out = invoke("bench", "--nodes", "10", "--pods", "10", "-q", "--json", str(tmp_path))
    assert code == 2 and "is a directory" in out


def test_json_to_an_unwritable_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The permission check stands in for a non-root user here: tests run as root in CI, and root
    may write anywhere (os.access is faked for that one directory, and says so)."""
    import kubesched.cli.common as cli

    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    real_access = os.access

    def access(path: object, mode: int) -> bool:
        if Path(str(path)) == locked and mode & os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(cli.os, "access", access)
    code, out = invoke("simulate", "basic", "-q", "--json", str(locked / "o.json"))
    assert code == 2
    assert f"--json {locked / 'o.json'}: permission denied" in out


def test_json_to_a_read_only_file_system_path_fails_cleanly() -> None:
    # /proc is not writable even for root: the check or the write must say so, with exit 2.
    code, out = invoke("bench", "--nodes", "10", "--pods", "10", "-q", "--json", "/proc/kubesched-out.json")
    assert code == 2 and "--json /proc/kubesched-out.json" in out


@pytest.mark.parametrize("command", [["simulate", "basic"], ["bench", "--nodes", "5", "--pods", "5"]])
def test_a_negative_seed_is_a_usage_error(command: list[str]) -> None:
    code, out = invoke(*command, "-q", "--seed", "-1")
    assert code == 2
    assert "Invalid value for '--seed'" in out and "greater than or equal to 0" in out


def test_the_missing_path_is_the_one_named(tmp_path: Path) -> None:
    code, out = invoke("simulate", "basic", str(tmp_path / "other.yaml"), "-q")
    assert code == 2
    assert f"{tmp_path / 'other.yaml'}: no such file, directory or built-in scenario" in out
    assert "basic:" not in out


def test_built_in_scenarios_and_files_mix(tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(NODE.format(name="extra-node"))
    out_json = tmp_path / "o.json"
    code, out = invoke("simulate", "basic", str(extra), "-q", "--json", str(out_json))
    assert code == 0, out
    (result,) = json.loads(out_json.read_text())["results"]
    assert result["pods_scheduled"] == result["pods_total"] > 0


def test_refused_objects_are_reported_and_the_rest_runs(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(NODE.format(name="n1"))
    (tmp_path / "pods.yaml").write_text(POD.format(name="good", container="c") + "---\n" + POD.format(name="bad", container="C_1"))
    out_json = tmp_path / "o.json"
    code, out = invoke("simulate", str(tmp_path), "-q", "--json", str(out_json))
    assert code == 2
    assert 'The Pod "bad" is invalid: spec.containers[0].name: Invalid value: "C_1"' in out
    assert "1 object refused" in out
    data = json.loads(out_json.read_text())
    (result,) = data["results"]
    assert result["placements"] == {"default/good": "n1"}
    assert len(data["refused"]) == 1


def test_a_file_of_invalid_yaml_in_a_directory_is_refused_and_the_rest_runs(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(NODE.format(name="n1"))
    (tmp_path / "pods.yaml").write_text(POD.format(name="good", container="c"))
    (tmp_path / "values.yaml").write_text("replicas: [1, 2\nimage: x\n")
    out_json = tmp_path / "o.json"
    code, out = invoke("simulate", str(tmp_path), "-q", "--json", str(out_json))
    assert code == 2
    assert f"{tmp_path / 'values.yaml'}: document 1: line " in out and "invalid YAML" in out
    assert "1 object refused" in out
    (result,) = json.loads(out_json.read_text())["results"]
    assert result["placements"] == {"default/good": "n1"}


def test_of_two_configurations_the_wrong_one_is_named(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 101\n")
    code, out = invoke("simulate", "basic", "-q", "-c", str(good), "-c", str(bad))
    assert code == 2
    assert f"error: {bad}: percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]" in out
    manifest = tmp_path / "web.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    code, out = invoke("simulate", "basic", "-q", "-c", str(manifest))
    assert code == 2
    assert f'{manifest}: this is a Kubernetes manifest (kind "Deployment", apiVersion "apps/v1"), not a ' in out
    assert "older versions" not in out


def test_a_huge_value_is_not_echoed_whole(tmp_path: Path) -> None:
    huge = "x" * 10_000_000
    (tmp_path / "pod.yaml").write_text(POD.format(name="p", container=huge))
    code, out = invoke("simulate", str(tmp_path / "pod.yaml"), "-q")
    assert code == 2
    assert len(out) < 20_000
    assert "(9999900 more)" in out


def test_clip_cuts_long_words_and_long_messages() -> None:
    assert clip("short message") == "short message"
    word = "a" * (MAX_TOKEN_CHARS + 50)
    assert clip(f"x {word} y") == f"x {'a' * (MAX_TOKEN_CHARS // 2)}...({len(word) - MAX_TOKEN_CHARS // 2} more characters) y"
    long = "word " * 5000
    assert len(clip(long)) < MAX_MESSAGE_CHARS + 50


def test_ctrl_c_stops_a_run_within_a_second() -> None:
    """SIGINT in the middle of a long simulation: a short line, exit 130, no traceback, promptly."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kubesched.cli import main; main()", "bench", "--nodes", "2000", "--pods", "200000", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )
    try:
        time.sleep(4)  # imports, then well inside the run
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, errs = proc.communicate(timeout=15)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (out, errs)
    assert errs.strip() == "interrupted"
    assert "Traceback" not in out + errs
    # A second on an idle machine; the test suite shares two cores, hence the margin.
    assert took < 3, took


def test_nothing_left_after_refusals_is_said_plainly(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(POD.format(name="Web", container="c"))
    code, out = invoke("simulate", str(tmp_path / "pod.yaml"), "-q")
    assert code == 2
    assert 'The Pod "Web" is invalid' in out
    assert "nothing left to simulate: every node and pod was refused" in out
    assert "scheduling cycles" not in out
