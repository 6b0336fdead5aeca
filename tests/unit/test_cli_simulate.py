"""What a newcomer met in `kubesched simulate` and `kubesched explain` (issue 30, item 6): a run
without Nodes, the summary's figures, lines written whole into a file, and explanations that name
their configuration, keep every pod asked about, and exit with the documented codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from kubesched.cli import app

NODE = "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nstatus: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '10'}}}}\n"
POD = ("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n    image: pause\n"
       "    resources: {{requests: {{cpu: {cpu}}}}}\n")
BINPACK = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
           "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
           "      scoringStrategy:\n        type: MostAllocated\n")
DEFAULT = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def small_cluster(tmp_path: Path, pods: int = 3) -> Path:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "nodes.yaml").write_text(NODE.format(name="n1") + "---\n" + NODE.format(name="n2"))
    (tmp_path / "pods.yaml").write_text("---\n".join(POD.format(name=f"p{i}", cpu="500m") for i in range(pods)))
    return tmp_path


def test_no_nodes_keeps_kubes_message_says_once_what_to_do_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "pods.yaml").write_text(POD.format(name="a", cpu="1") + "---\n" + POD.format(name="b", cpu="1"))
    result = invoke("simulate", str(tmp_path / "pods.yaml"), "-q")
    assert result.exit_code == 2, result.output
    assert "2 x no nodes available to schedule pods" in result.output
    assert result.output.count("the input has no Nodes") == 1
    assert "a file of Node manifests" in result.output and "kubesched simulate web-batch" in result.output


def test_the_summary_explains_its_figures_and_says_na_without_usage(tmp_path: Path) -> None:
    result = invoke("simulate", str(small_cluster(tmp_path)), "-q")
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines() if line.count("│") == 3}
    assert rows["pods to place"] == "3"
    # Every pod placed at time 0: the run ends before the usage model measures anything.
    assert rows["hot node-seconds (cpu > 80%)"] == rows["node cpu use p99 (%)"] == rows["node cpu use stddev (%)"] == "n/a"
    assert "(ours)" not in result.output and "0.0" not in rows["node cpu use p99 (%)"]
    assert "pods to place: pods with no node whose schedulerName is one of the configuration's profiles" in result.output
    assert "hot node-seconds: over all nodes, the virtual seconds a node's measured cpu use stayed above 80%" in result.output
    assert "n/a: no usage measured: the run ended at virtual time 0s" in result.output and "docs/simulator.md" in result.output


def test_a_run_that_spans_time_measures_usage_and_says_it_is_the_requests() -> None:
    result = invoke("simulate", "preemption", "-q")
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines() if line.count("│") == 3}
    assert rows["node cpu use p99 (%)"] != "n/a" and float(rows["node cpu use p99 (%)"]) > 0
    assert "running pods use exactly their requests" in result.output


def test_titles_and_warnings_are_not_wrapped_into_a_file(tmp_path: Path) -> None:
    folder = tmp_path / ("a-cluster-directory-with-a-name-long-enough-to-wrap-" + "x" * 40)
    folder.mkdir()
    small_cluster(folder)
    (folder / "extra.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    result = invoke("simulate", str(folder), "-q")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"{folder.name}: 2 nodes, 3 pods" in lines
    warning = next(line for line in lines if line.startswith("warning: "))
    assert f"{folder.name}/extra.yaml: document 1): the simulator does not model this kind" in warning


def test_explain_of_a_pod_not_in_the_input_fails_before_the_run(tmp_path: Path) -> None:
    result = invoke("simulate", str(small_cluster(tmp_path)), "-q", "--explain", "default/nope")
    assert result.exit_code == 2
    assert "--explain default/nope: no such pod in the input" in result.output
    assert "pods to place" not in result.output  # nothing ran


def test_explain_names_the_configuration_and_the_profile(tmp_path: Path) -> None:
    (tmp_path / "binpack.yaml").write_text(BINPACK)
    (tmp_path / "default.yaml").write_text(DEFAULT)
    cluster = small_cluster(tmp_path / "cluster")
    result = invoke("simulate", str(cluster), "-q", "-c", str(tmp_path / "default.yaml"), "-c", str(tmp_path / "binpack.yaml"),
                    "--explain", "p1")
    assert result.exit_code == 0, result.output
    assert "default/p1 in configuration default (profile default-scheduler)" in result.output
    assert "default/p1 in configuration binpack (profile default-scheduler)" in result.output


@pytest.fixture
def saved_two_configs(tmp_path: Path) -> Path:
    (tmp_path / "binpack.yaml").write_text(BINPACK)
    (tmp_path / "default.yaml").write_text(DEFAULT)
    out = tmp_path / "out.json"
    result = invoke("simulate", str(small_cluster(tmp_path / "cluster")), "-q", "-c", str(tmp_path / "default.yaml"),
                    "-c", str(tmp_path / "binpack.yaml"), "--json", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_explain_from_explains_each_configuration(saved_two_configs: Path) -> None:
    text = invoke("explain", "p0", "--from", str(saved_two_configs))
    assert text.exit_code == 0, text.output
    assert "default/p0 in configuration default" in text.output and "default/p0 in configuration binpack" in text.output
    as_json = CliRunner().invoke(app, ["explain", "p0", "--from", str(saved_two_configs), "-o", "json"])
    assert as_json.exit_code == 0
    saved = json.loads(saved_two_configs.read_text())["results"]
    assert json.loads(as_json.stdout) == saved[0]["explanations"]["default/p0"]
    assert "explained default/p0 with configuration default, the first of default, binpack" in as_json.stderr


def test_profile_takes_a_configuration_or_a_profile_name(saved_two_configs: Path) -> None:
    saved = json.loads(saved_two_configs.read_text())["results"]
    by_configuration = invoke("explain", "p0", "--from", str(saved_two_configs), "--profile", "binpack", "-o", "json")
    assert by_configuration.exit_code == 0, by_configuration.output
    assert json.loads(by_configuration.output) == saved[1]["explanations"]["default/p0"]
    by_profile = invoke("explain", "p0", "--from", str(saved_two_configs), "--profile", "default-scheduler")
    assert by_profile.exit_code == 0, by_profile.output
    assert "in configuration default" in by_profile.output and "in configuration binpack" in by_profile.output
    unknown = invoke("explain", "p0", "--from", str(saved_two_configs), "--profile", "nope")
    assert unknown.exit_code == 2
    assert "no configuration or profile 'nope' (configurations: default, binpack; profiles: default-scheduler)" in unknown.output


def test_a_pod_not_explained_is_exit_2_everywhere(saved_two_configs: Path) -> None:
    result = invoke("explain", "default/nope", "--from", str(saved_two_configs))
    assert result.exit_code == 2 and "no explanation of pod default/nope" in result.output


def test_explain_takes_one_configuration(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(DEFAULT)
    result = invoke("explain", "p0", "-c", str(tmp_path / "a.yaml"), "-c", str(tmp_path / "a.yaml"), "--local")
    assert result.exit_code == 2 and "--config: one configuration, got 2" in result.output


def test_a_pod_named_with_explain_is_kept_wherever_it_falls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kubesched.cli.simfacts as simfacts

    monkeypatch.setattr(simfacts, "SAVED_EXPLANATIONS", 2)  # the first scheduled ones: p0 and p1
    out = tmp_path / "out.json"
    result = invoke("simulate", str(small_cluster(tmp_path / "cluster", pods=6)), "-q", "--json", str(out), "--explain", "p5")
    assert result.exit_code == 0, result.output
    (r,) = json.loads(out.read_text())["results"]
    assert set(r["explanations"]) == {"default/p5", "default/p0", "default/p1"}
    shown = invoke("explain", "p5", "--from", str(out))
    assert shown.exit_code == 0 and "default/p5" in shown.output and "scheduled" in shown.output
