"""observe.report: what the page carries, bounded, and escaped (the browser test is in
tests/integration/observe)."""

from __future__ import annotations

import json

import numpy as np

from builders import make_node, make_pod
from kubesched.cli.simfacts import kept_explanations, report_run
from kubesched.observe import report
from unit.simkit import run


def test_script_json_cannot_end_its_element() -> None:
    text = report._script_json({"m": "</script><!-- \u2028 & >"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"m": "</script><!-- \u2028 & >"}


def test_a_configuration_report_from_a_simulation() -> None:
    objects = [
        make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest(),
        make_node("n2").capacity(cpu="2").without("ephemeral-storage").manifest(),
        make_pod("a").req(cpu="500m", memory="100Mi").manifest(),
        make_pod("b").req(cpu="4", memory="100Mi").manifest(),
    ]
    result, sim = run(objects)
    data = report.config_report(report_run(sim.input, sim, result, kept_explanations(sim, result, [])))
    assert data["summary"]["pods_total"] == 2 and data["summary"]["pods_scheduled"] == 1
    assert set(data["explanations"]) == {"default/a", "default/b"}
    assert next(iter(data["explanations"])) == "default/b"  # pending pods first
    assert data["unschedulable"] == [{"message": result.unschedulable["default/b"], "pods": 1}]
    assert data["pending"]["pods"] == 2 and sum(data["pending"]["counts"]) == 2
    page = report.render("tiny", [data])
    assert page.startswith("<!DOCTYPE html>") and "{{DATA}}" not in page and "<title>kubesched simulation: tiny</title>" in page


def test_time_is_downsampled() -> None:
    import numpy as np

    times = np.arange(10_000, dtype=float)
    values = np.ones((10_000, 3))
    t, v = report._downsample(times, values)
    assert t.size == report.TIME_POINTS and v.shape == (report.TIME_POINTS, 3)


def _run(label: str, *, seconds: float, usage: report.UsageSamples | None, gap: str | None = None,
         nodes: int = 3) -> report.Run:
    names = [f"n{i}" for i in range(nodes)]
    return report.Run(
        label=label, figures={"virtual_seconds": seconds, "pods_total": 1, "unschedulable": {}, "preempted": []},
        pending_waits=[0.0], explanations={}, explained_cap=10, usage=usage, usage_gap=gap,
        requests=report.NodeRequests(nodes=names, cpu=np.linspace(0, 1, nodes), memory=np.linspace(1, 0, nodes)),
    )


def _usage(seconds: float, nodes: int = 3) -> report.UsageSamples:
    times = np.arange(15.0, seconds + 1, 15.0)
    return report.UsageSamples(times=times, started_at=0.0, nodes=[f"n{i}" for i in range(nodes)],
                               cpu=np.full((times.size, nodes), 0.5), memory=np.full((times.size, nodes), 0.25), declared=False)


def test_no_usage_means_no_charts_and_the_reason_instead() -> None:
    data = report.config_report(_run("plain", seconds=0.0, usage=None, gap="no usage measured: the run ended at virtual time 0s"))
    assert data["utilization"] is None and data["usage_gap"] == "no usage measured: the run ended at virtual time 0s"
    assert data["requests"]["nodes"] == 3  # what is requested per node is there without a usage model


def test_requests_per_node_are_sorted_and_bounded() -> None:
    run = _run("big", seconds=0.0, usage=None, nodes=5000)
    q = report.config_report(run)["requests"]
    assert len(q["cpu"]) == len(q["memory"]) == len(q["rank"]) <= report.REQUEST_POINTS
    assert q["rank"][0] == 0 and q["rank"][-1] == 4999
    assert q["cpu"] == sorted(q["cpu"], reverse=True) and q["cpu"][0] == 100.0 and q["cpu"][-1] == 0.0
    assert q["in_use"] == 5000 and q["cpu_over_80"] == 1000
    assert [f["node"] for f in q["fullest"]] == ["n4999", "n4998", "n4997", "n4996", "n4995"]


def test_runs_of_different_lengths_share_one_time_axis() -> None:
    short, long = _run("short", seconds=300.0, usage=_usage(300.0)), _run("long", seconds=1800.0, usage=_usage(1800.0))
    page = report.render("two", [report.config_report(short), report.config_report(long)])
    data = json.loads(page.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["time_end"] == 1800.0
    first = data["configs"][0]["utilization"]
    assert first["cpu"]["t"][0] == 15.0 and first["t0"] == 0.0  # the scrape at the start covers time before the run


def test_pending_buckets_have_short_labels() -> None:
    assert report.pending_times([0.5, 90.0, 4000.0])["buckets"] == [
        "0s-1s", "1s-5s", "5s-10s", "10s-30s", "30s-1m", "1m-2m", "2m-5m", "5m-10m", "10m-30m", "30m-1h", ">1h"]


def test_text_that_reads_like_a_placeholder_is_never_filled_in() -> None:
    page = report.render("{{DATA}}", [report.config_report(_run("{{TITLE}}", seconds=0.0, usage=None))])
    assert page.count('<script type="application/json" id="data">') == 1
    assert "<title>kubesched simulation: {{DATA}}</title>" in page
    assert json.loads(page.split('id="data">', 1)[1].split("</script>", 1)[0])["configs"][0]["label"] == "{{TITLE}}"


def test_observe_imports_nothing_above_it() -> None:
    """observe/ sits under the framework (which imports its metrics, records and tracing): the report
    takes what it draws as data, and imports neither the scheduler nor what is above it."""
    import ast
    from pathlib import Path

    import kubesched.observe

    above = ("kubesched.scheduler", "kubesched.backends", "kubesched.plugins", "kubesched.tools", "kubesched.cli")
    for path in Path(kubesched.observe.__file__).parent.rglob("*.py"):
        for statement in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in statement.names] if isinstance(statement, ast.Import) else \
                [statement.module or ""] if isinstance(statement, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith(above), f"{path.name} imports {name}"


def test_device_use_per_class_when_the_run_has_devices() -> None:
    from builders import make_device_class, make_resource_claim
    from builders.dra import make_resource_slice

    whole = make_device_class("whole")
    whole["spec"] = {"selectors": [{"cel": {"expression": "!device.allowMultipleAllocations"}}]}
    shared = make_device_class("shared")
    shared["spec"] = {"selectors": [{"cel": {"expression": "device.allowMultipleAllocations"}}]}
    rs = make_resource_slice("n1-gpus", "n1", devices=3)
    rs["spec"]["devices"][2].update({"allowMultipleAllocations": True, "capacity": {"memory": {"value": "40Gi"}}})
    share = make_resource_claim("s1", device_class="shared")
    share["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": {"memory": "10Gi"}}
    objects = [make_node("n1").capacity(cpu="4").without("ephemeral-storage").manifest(), whole, shared, rs,
               make_resource_claim("w1", device_class="whole"), share,
               make_pod("a").req(cpu="100m").resource_claim("gpu", claim="w1").manifest(),
               make_pod("b").req(cpu="100m").resource_claim("gpu", claim="s1").manifest()]
    result, sim = run(objects)
    assert result.pods_scheduled == 2
    data = report.config_report(report_run(sim.input, sim, result, kept_explanations(sim, result, [])))
    assert data["devices"] == [
        {"class": "shared", "devices": 1, "allocated": 1, "percent": 100.0, "shared": 1,
         "capacity": [{"name": "memory", "used": "10Gi", "total": "40Gi", "percent": 25.0}]},
        {"class": "whole", "devices": 2, "allocated": 1, "percent": 50.0, "shared": 0, "capacity": []},
    ]
    assert data["explanations"]["default/b"]["devices"][0]["devices"][0]["consumed_capacity"] == {"memory": "10Gi"}
    assert "Devices at the end of the run, per DeviceClass" in report.render("devices", [data])


def test_no_devices_section_without_devices() -> None:
    result, sim = run([make_node("n1").capacity(cpu="1").without("ephemeral-storage").manifest()])
    data = report.config_report(report_run(sim.input, sim, result, {}))
    assert data["devices"] == []
