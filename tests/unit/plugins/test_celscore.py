"""CELScore: node preferences as CEL rules; and the CEL plugins through the command line
(`kubesched simulate -c`, `kubesched config validate`) with the example profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

from builders import UnitHandle, cache_with, make_node, make_pod
from kubesched.cache.cache import Cache
from kubesched.cli import app
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.plugins.celscore import MAX_CONTRIBUTION, CELScore, CELScoreArgs
from unit.plugins.pluginkit import score_all

from ..simkit import profile_config, run

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "profiles" / "cel-rules.yaml"
TRAINING = '"workload" in pod.labels && pod.labels["workload"] == "ml-training"'
BIG_GPU = {"name": "big-gpu", "score": 80, "expression": (
    f'{TRAINING} && "gpu-mem" in node.labels && int(node.labels["gpu-mem"]) * 1024 * 1024 > quantity("32Gi")')}


def cluster() -> Cache:
    return cache_with([
        make_node("cpu").capacity(cpu="8", memory="32Gi").obj(),
        make_node("gpu-16").capacity(cpu="8", memory="32Gi").label({"gpu-mem": "16384"}).obj(),
        make_node("gpu-80").capacity(cpu="8", memory="64Gi").label({"gpu-mem": "81920"}).obj(),
    ], [make_pod("x").req(cpu="2", memory="16Gi").node("gpu-80").obj()])


def plugin(cache: Cache, *rules: dict[str, Any], **args: Any) -> CELScore:
    return CELScore(CELScoreArgs.model_validate({"rules": list(rules), **args}), UnitHandle(cache))


def scores(p: CELScore, cache: Cache, pi: Any) -> dict[str, tuple[int, int]]:
    """(raw, normalized) per node, PreScore then Score then NormalizeScore as the runtime runs them."""
    raw, normalized = score_all(p, pi, cache.table)
    return {name: (raw[name], normalized[name]) for name in raw}


@pytest.mark.parametrize("vectorize", [True, False])
def test_matched_rules_add_their_points(vectorize: bool) -> None:
    cache = cluster()
    busy = {"name": "busy", "score": -30, "expression": 'node.requested["cpu"] > 0'}
    p = plugin(cache, BIG_GPU, busy, vectorize=vectorize)
    training = make_pod("t").label(workload="ml-training").info()
    assert scores(p, cache, training) == {"cpu": (0, 0), "gpu-16": (0, 0), "gpu-80": (50, 50)}
    assert scores(p, cache, make_pod("web").info()) == {"cpu": (0, 0), "gpu-16": (0, 0), "gpu-80": (-30, 0)}


@pytest.mark.parametrize("vectorize", [True, False])
def test_value_rules_are_added_truncated_and_clamped(vectorize: bool) -> None:
    cache = cluster()
    free = {"name": "free-memory", "expression": 'double(node.free.memory) * 100.0 / double(node.allocatable.memory)'}
    bonus = {"name": "bonus", "expression": '"gpu-mem" in node.labels ? 70 : 0'}
    p = plugin(cache, free, bonus, vectorize=vectorize)
    got = scores(p, cache, make_pod("p").info())
    # cpu: 100% free; gpu-16: 100 + 70 held to 100 by NormalizeScore; gpu-80: 75% free + 70.
    assert got == {"cpu": (100, 100), "gpu-16": (170, 100), "gpu-80": (145, 100)}
    huge = plugin(cache, {"name": "huge", "expression": "9000000000000.5"}, vectorize=vectorize)
    assert scores(huge, cache, make_pod("p").info())["cpu"] == (MAX_CONTRIBUTION, 100)
    negative = plugin(cache, {"name": "neg", "expression": "-2.9"}, vectorize=vectorize)
    assert scores(negative, cache, make_pod("p").info())["cpu"] == (-2, 0)


@pytest.mark.parametrize("vectorize", [True, False])
@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ('node.labels["gpu-mem"] == "1" ? 1 : 0', "rule 'r' on node 'cpu': NOT_FOUND: Key not found in map"),
        ("double(node.requested.cpu) / 0.0", "rule 'r' on node 'cpu': the score nan is not a finite number"),
        ("node.allocatable.memory * node.allocatable.memory", "rule 'r' on node 'cpu': OUT_OF_RANGE: integer overflow"),
    ],
)
def test_an_evaluation_error_is_a_prescore_error(vectorize: bool, expression: str, words: str) -> None:
    cache = cluster()
    p = plugin(cache, {"name": "r", "expression": expression}, vectorize=vectorize)
    status = p.pre_score(CycleState(), make_pod("p").info(), cache.table, cache.table.rows())
    assert status is not None and status.code == Code.ERROR
    assert status.message().startswith(words)


def test_rule_kinds_are_checked_when_loading() -> None:
    with pytest.raises(ValidationError, match="must give int or double, it gives bool"):
        CELScoreArgs.model_validate({"rules": [{"name": "r", "expression": "true"}]})
    with pytest.raises(ValidationError, match="must give bool, it gives int"):
        CELScoreArgs.model_validate({"rules": [{"name": "r", "expression": "1", "score": 5}]})
    with pytest.raises(ValidationError, match=r"rules\.0\.score"):
        CELScoreArgs.model_validate({"rules": [{"name": "r", "expression": "true", "score": MAX_CONTRIBUTION + 1}]})


def test_explanations_list_the_rules_that_matched() -> None:
    cache = cluster()
    busy = {"name": "busy", "score": -30, "expression": 'node.requested["cpu"] > 0'}
    p = plugin(cache, BIG_GPU, busy)
    training = make_pod("t").label(workload="ml-training").info()
    table = cache.table
    assert p.explain_score(CycleState(), training, table, table.row_of("gpu-80")) == "big-gpu +80, busy -30"
    assert p.explain_score(CycleState(), training, table, table.row_of("cpu")) == "no rule matched"


def test_scheduler_places_by_the_rules_and_reports_their_errors() -> None:
    config = profile_config({
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "CELScore", "weight": 5}]}},
        "pluginConfig": [{"name": "CELScore", "args": {"rules": [
            BIG_GPU, {"name": "tier", "expression": 'node.labels["tier"] == "gold" ? 1 : 0'}]}}],
    })
    nodes = [make_node(n).without("ephemeral-storage").label({"tier": "gold", **labels}).manifest() for n, labels in
             (("a", {}), ("b", {"gpu-mem": "16384"}), ("c", {"gpu-mem": "40960"}))]
    result, _ = run(
        [*nodes, *(make_pod(f"t{i}").req(cpu="100m", memory="100Mi").label(workload="ml-training").manifest() for i in range(3))], config
    )
    assert {result.placements[f"default/t{i}"] for i in range(3)} == {"c"}
    result, _ = run(
        [*nodes, make_node("plain").without("ephemeral-storage").manifest(), make_pod("p").req(cpu="100m", memory="100Mi").manifest()],
        config,
    )
    assert result.placements["default/p"] is None
    assert "CELScore" in result.unschedulable["default/p"] and "rule 'tier' on node 'plain'" in result.unschedulable["default/p"]


# --- through the command line -------------------------------------------------------------------

runner = CliRunner()


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def manifests(path: Path) -> Path:
    items = [
        make_node("cpu-1").without("ephemeral-storage").manifest(),
        make_node("cpu-2").without("ephemeral-storage").manifest(),
        make_node("gpu-small")
        .without("ephemeral-storage")
        .capacity({"nvidia.com/gpu": "1"})
        .label({"nvidia.com/gpu.memory": "16384"})
        .manifest(),
        make_node("gpu-big")
        .without("ephemeral-storage")
        .capacity({"nvidia.com/gpu": "1"})
        .label({"nvidia.com/gpu.memory": "81920"})
        .manifest(),
        make_node("drained")
        .without("ephemeral-storage")
        .capacity({"nvidia.com/gpu": "1"})
        .label({"node.example.com/draining": "true"})
        .manifest(),
        *(make_pod(f"train-{i}").req(cpu="500m", memory="100Mi").label(workload="ml-training").manifest() for i in range(4)),
        *(make_pod(f"web-{i}").req(cpu="500m", memory="100Mi").manifest() for i in range(4)),
    ]
    path.write_text(yaml.safe_dump_all(items))
    return path


def test_simulate_with_the_example_profile(tmp_path: Path) -> None:
    """`kubesched simulate -c examples/profiles/cel-rules.yaml`: training pods go to the GPU node
    with more than 32Gi of GPU memory (+80 x 2 outweighs spreading), nothing goes to the drained
    node, and web pods may go anywhere else."""
    out = tmp_path / "out.json"
    result = invoke("simulate", str(manifests(tmp_path / "cluster.yaml")), "-q", "-c", str(EXAMPLE), "--json", str(out))
    assert result.exit_code == 0, result.output
    (r,) = json.loads(out.read_text())["results"]
    placements = r["placements"]
    assert {placements[f"default/train-{i}"] for i in range(4)} == {"gpu-big"}
    assert "drained" not in placements.values()
    assert all(placements[f"default/web-{i}"] for i in range(4))
    explained = invoke("simulate", str(tmp_path / "cluster.yaml"), "-q", "-c", str(EXAMPLE), "--explain", "default/train-0")
    assert "CELScore" in explained.output and "big-gpu-for-training +80" in explained.output


def test_config_validate_refuses_a_bad_rule_in_one_line(tmp_path: Path) -> None:
    config = yaml.safe_load(EXAMPLE.read_text())
    config["profiles"][0]["pluginConfig"][1]["args"]["rules"][1]["expression"] = 'node.fre["memory"] > 0'
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    result = invoke("config", "validate", str(bad))
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0] == (
        f"error: {bad}: profiles[0].pluginConfig[1].args.rules[1].expression: CELScore rule 'free-memory': "
        "at 1:5: undeclared reference to 'node.fre'"
    )


def test_config_validate_accepts_the_example() -> None:
    result = invoke("config", "validate", str(EXAMPLE))
    assert result.exit_code == 0 and "CELScore(2)" in result.output.replace("\n", "")


def test_unused_rows_do_not_matter() -> None:
    """Scores are per row asked: a subset of the rows gives the same numbers for those rows."""
    cache = cluster()
    p = plugin(cache, BIG_GPU)
    training = make_pod("t").label(workload="ml-training").info()
    rows = np.array([cache.table.row_of("gpu-80")])
    state = CycleState()
    assert p.pre_score(state, training, cache.table, rows) is None
    assert p.score(state, training, cache.table, rows).tolist() == [80]
