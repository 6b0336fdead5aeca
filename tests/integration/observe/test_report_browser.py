"""`kubesched simulate --report` in a real headless Chromium: the page loads with no console
error and no network, its charts draw, selecting a pod shows its breakdown, and text from the
cluster stays text. The screenshots in docs/ come from this test.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from integration.harness.browser import chromium, console_errors, file_url
from kubesched.observe import report

DOCS = Path(__file__).resolve().parents[3] / "docs"
DEFAULT = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""
BINPACK = DEFAULT + """  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""


def _wait(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_the_report_in_a_real_browser(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    (tmp_path / "default.yaml").write_text(DEFAULT)
    (tmp_path / "binpack.yaml").write_text(BINPACK)
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "simulate", "-q", "-c", str(tmp_path / "default.yaml"),
         "-c", str(tmp_path / "binpack.yaml"), "--report", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    stripped = page.replace("http://www.w3.org/2000/svg", "")  # the SVG namespace is a name, not a fetch
    assert "http://" not in stripped and "https://" not in stripped and "default-src 'none'" in page
    with chromium(1600, 2600) as driver:
        driver.get(file_url(out))
        _wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.config")) == 2)
        assert console_errors(driver) == []
        sections = driver.find_elements(By.CSS_SELECTOR, "section.config")
        assert [s.get_attribute("data-config") for s in sections] == ["default", "binpack"]
        for section in sections:
            assert len(section.find_elements(By.CSS_SELECTOR, "svg.line polyline.series")) == 6
            assert len(section.find_elements(By.CSS_SELECTOR, "svg.heatmap rect")) > 100
            assert len(section.find_elements(By.CSS_SELECTOR, "svg.bars rect.bar")) > 0
            points = section.find_element(By.CSS_SELECTOR, "svg.line polyline.series").get_attribute("points")
            assert len(points.split()) > 10
        # Both side by side: the second section starts to the right of the first, on the same row.
        a, b = (s.rect for s in sections)
        assert b["x"] > a["x"] + a["width"] / 2 and abs(b["y"] - a["y"]) < 5
        DOCS.mkdir(exist_ok=True)
        driver.save_screenshot(str(DOCS / "report-overview.png"))

        # The decision explorer: a pending pod, then a scheduled one, in each configuration.
        for section in sections:
            select = Select(section.find_element(By.CSS_SELECTOR, "select.pod-select"))
            select.select_by_value("ml/train-giant")
            explorer = section.find_element(By.CSS_SELECTOR, ".explorer")
            _wait(lambda ex=explorer: "Nearest misses" in ex.text)
            assert "NodeResourcesFit" in explorer.text and "Insufficient nvidia.com/gpu" in explorer.text
            assert "Preemption would not help" in explorer.text
        driver.execute_script("arguments[0].scrollIntoView()", sections[0].find_element(By.CSS_SELECTOR, "select.pod-select"))
        time.sleep(0.2)
        driver.save_screenshot(str(DOCS / "report-explorer.png"))
        for section in sections:
            select = Select(section.find_element(By.CSS_SELECTOR, "select.pod-select"))
            scheduled = [o.get_attribute("value") for o in select.options if "(scheduled)" in o.text]
            assert scheduled
            explorer = section.find_element(By.CSS_SELECTOR, ".explorer")
            for value in scheduled:
                select.select_by_value(value)
                if "(chosen)" in explorer.text:
                    break
            assert "Scores of the cycle that placed it" in explorer.text and "(chosen)" in explorer.text
            assert "total" in explorer.text
        assert console_errors(driver) == []


def test_cluster_text_stays_text_in_the_browser(tmp_path: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    explanation = {"pod": "ns/p", "status": "pending", "profile": "p", "node": None, "nodes_total": 1, "message": evil,
                   "filter": {"feasible": 0, "rejected": [{"plugin": "X", "reason": evil, "count": 1, "nodes": ["n<b>1"]}],
                              "nearest": []}}
    config = {"label": "a<i>b", "summary": {k: 0 for k in ("pods_total", "pods_scheduled", "pods_unschedulable", "pods_gated",
              "cycles", "virtual_seconds", "pending_seconds_p99", "hotspot_node_seconds", "node_cpu_util_p99",
              "node_cpu_util_stddev")}, "preempted": 0, "utilization": None,
              "pending": {"buckets": ["0-1s"], "counts": [1], "pods": 1, "p50": 0, "p99": 0},
              "unschedulable": [{"message": evil, "pods": 1}], "explanations": {"ns/p": explanation}, "explained_cap": 10}
    out = tmp_path / "evil.html"
    out.write_text(report.render(evil, [config]))
    data_block = out.read_text().split('id="data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data_block and ">" not in data_block  # the data cannot end its element
    with chromium() as driver:
        driver.get(file_url(out))
        _wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.config")) == 1)
        Select(driver.find_element(By.CSS_SELECTOR, "select.pod-select")).select_by_value("ns/p")
        body = driver.find_element(By.TAG_NAME, "body").text
        assert evil in body and "a<i>b" in body and "n<b>1" in body
        assert driver.find_elements(By.TAG_NAME, "img") == []
        try:
            driver.switch_to.alert.text  # noqa: B018
            raise AssertionError("a script from the data ran")
        except NoAlertPresentException:
            pass
        assert console_errors(driver) == []
