"""The command line as a user meets it: outputs, JSON shape, and clean failures (exit 2, no traceback)."""

import json

from typer.testing import CliRunner

from kubesched.cli import app

runner = CliRunner()


def invoke(*args):
    result = runner.invoke(app, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def test_simulate_default_scenario_writes_json(tmp_path):
    out = tmp_path / "out.json"
    result = invoke("simulate", "-q", "--json", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    (r,) = data["results"]
    for key in ("profile", "pods_total", "pods_scheduled", "pods_unschedulable", "wall_seconds", "pods_per_second",
                "placements", "unschedulable", "preempted"):
        assert key in r
    assert r["pods_total"] == len(r["placements"])
    assert r["pods_scheduled"] > 0 and r["preempted"], "the default scenario exercises preemption"
    assert all(m.startswith(("0/", "Scheduling is blocked due to non-empty scheduling gates")) for m in r["unschedulable"].values())


def test_simulate_compares_configs_side_by_side(tmp_path):
    packer = tmp_path / "packer.yaml"
    packer.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      scoringStrategy:\n        type: MostAllocated\n"
    )
    out = tmp_path / "out.json"
    result = invoke("simulate", "basic", "-q", "--config", str(packer), "--config", str(packer), "--json", str(out))
    assert result.exit_code == 0, result.output
    first, second = json.loads(out.read_text())["results"]
    assert first["placements"] == second["placements"]
    assert "packer" in result.output


def test_simulate_manifest_files(tmp_path):
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n"
    )
    (tmp_path / "pods.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  containers:\n  - name: c\n    image: x\n"
        "    resources: {requests: {cpu: '2'}}\n"
    )
    out = tmp_path / "o.json"
    result = invoke("simulate", str(tmp_path), "-q", "--json", str(out))
    assert result.exit_code == 0, result.output
    (r,) = json.loads(out.read_text())["results"]
    assert r["unschedulable"]["default/big"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_bad_manifest_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
                   "    resources: {requests: {cpu: lots}}\n")
    result = invoke("simulate", str(bad), "-q")
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and "default/p" in result.output and "cpu" in result.output


def test_unknown_scenario():
    result = invoke("simulate", "no-such-thing", "-q")
    assert result.exit_code == 2 and "built-in" in result.output


def test_config_validate(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    result = invoke("config", "validate", str(good))
    assert result.exit_code == 0 and "default-scheduler" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: s\n  plugins:\n    filter:\n      enabled: [{name: NoSuchPlugin}]\n"
    )
    result = invoke("config", "validate", str(bad))
    assert result.exit_code == 2
    assert "profiles[0].plugins.filter.enabled[0]" in result.output and "NoSuchPlugin" in result.output


def test_config_validate_prints_kubes_default_profile(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    result = invoke("config", "validate", str(good))
    assert result.exit_code == 0
    lines = result.output.splitlines()
    points = {line.split(":")[0].strip(): line.split(":", 1)[1].strip() for line in lines if line.startswith("  ")}
    # kube-scheduler v1.37.2's default multiPoint list expanded to each extension point its plugins
    # implement (default gates). kube's DynamicResources is a PodGroupPostFilter too (pod groups'
    # claims, DRAWorkloadResourceClaims): kubesched's is not yet.
    assert points == {
        "preEnqueue": "SchedulingGates, DynamicResources, DefaultPreemption",
        "queueSort": "PrioritySort",
        "preFilter": "NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, "
                     "VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity, "
                     "DynamicResources, NodeDeclaredFeatures",
        "filter": "NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, "
                  "VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread, InterPodAffinity, "
                  "DynamicResources, NodeDeclaredFeatures",
        "postFilter": "DynamicResources, DefaultPreemption",
        "preScore": "TaintToleration, NodeAffinity, NodeResourcesFit, VolumeBinding, PodTopologySpread, InterPodAffinity, "
                    "NodeResourcesBalancedAllocation",
        "score": "TaintToleration(3), NodeAffinity(2), NodeResourcesFit(1), VolumeBinding(1), PodTopologySpread(2), "
                 "InterPodAffinity(2), DynamicResources(2), NodeResourcesBalancedAllocation(1), ImageLocality(1)",
        "reserve": "VolumeBinding, DynamicResources",
        "preBind": "VolumeBinding, DynamicResources",
        "bind": "DefaultBinder",
        "placementScore": "NodeResourcesFit",
        "podGroupPostFilter": "DefaultPreemption",
    }
    assert not [line for line in lines if line.startswith("note:")]


def test_bad_config_refused_before_simulating(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                   "percentageOfNodesToScore: 150\n")
    result = invoke("simulate", "basic", "-q", "--config", str(bad))
    assert result.exit_code == 2 and "percentageOfNodesToScore" in result.output


def test_bench_json(tmp_path):
    out = tmp_path / "b.json"
    result = invoke("bench", "--nodes", "200", "--pods", "400", "-q", "--json", str(out))
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())
    assert figures["pods_scheduled"] == 400
    assert figures["pods_per_second"] > 0 and figures["cycle_ms_p99"] >= figures["cycle_ms_p50"] > 0


def test_simulate_saves_explanations_that_explain_reads(tmp_path):
    out = tmp_path / "out.json"
    result = invoke("simulate", "-q", "--json", str(out), "--explain", "ml/train-giant")
    assert result.exit_code == 0, result.output
    assert "ml/train-giant" in result.output and "Nodes rejected" in result.output
    (r,) = json.loads(out.read_text())["results"]
    assert set(r["unschedulable"]) <= set(r["explanations"])
    shown = invoke("explain", "ml/train-giant", "--from", str(out))
    assert shown.exit_code == 0, shown.output
    assert "Nearest misses" in shown.output and "preemption would not help" in shown.output
    as_json = invoke("explain", "train-giant", "-n", "ml", "--from", str(out), "-o", "json")
    assert json.loads(as_json.output) == r["explanations"]["ml/train-giant"]


def test_explain_refuses_bad_input_in_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    for args, expected in [
        (("explain", "Bad_Name", "--from", str(bad)), "a lowercase RFC 1123 subdomain"),
        (("explain", "ns/x", "--from", str(tmp_path / "missing.json")), "cannot read"),
        (("explain", "ns/x", "--from", str(bad)), "not the output of `kubesched simulate --json`"),
        (("explain", "ns/x", "--from", str(bad), "-o", "yaml"), "must be text or json"),
    ]:
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert expected in result.output
