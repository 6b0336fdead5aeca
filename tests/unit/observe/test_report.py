"""observe.report: what the page carries, bounded, and escaped (the browser test is in
tests/integration/observe)."""

from __future__ import annotations

import json

from builders import make_node, make_pod
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
    data = report.config_report("default", sim, result)
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
