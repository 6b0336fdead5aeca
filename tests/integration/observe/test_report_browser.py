"""`kubesched simulate --report` in a real headless Chromium: the page loads with no console
error and no network, its charts draw (requests per node, usage over one time axis, a heatmap with
axes and a colour scale, labels apart), plain manifests get no empty charts, selecting a pod shows
its breakdown, a run with DRA devices shows their use per DeviceClass and a pod's devices, and text
from the cluster stays text. The screenshots in docs/ come from this test:
it writes them there only when KUBESCHED_DOC_SCREENSHOTS=1 (so a test run leaves the tree clean),
else beside the test's other files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from integration.harness.browser import chromium, console_errors, file_url
from kubesched.observe import report

DOCS = Path(__file__).resolve().parents[3] / "docs"


def _screenshots(tmp_path: Path) -> Path:
    """docs/ when refreshing the documentation's screenshots, else the test's own directory."""
    return DOCS if os.environ.get("KUBESCHED_DOC_SCREENSHOTS") == "1" else tmp_path
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


def _boxes(driver, section, selector: str) -> list[dict[str, float]]:  # type: ignore[no-untyped-def]
    return driver.execute_script(
        "return [...arguments[0].querySelectorAll(arguments[1])].map(e => { const r = e.getBoundingClientRect(); "
        "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: e.textContent}; });", section, selector)


def _texts_and_x(driver, section, selector: str) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    """Texts with their x inside their svg (the same in two sections if the axes are the same)."""
    return driver.execute_script(
        "return [...arguments[0].querySelectorAll(arguments[1])].map(e => [e.textContent, "
        "Math.round(e.getBoundingClientRect().left - e.ownerSVGElement.getBoundingClientRect().left)]);", section, selector)


def _assert_apart(boxes: list[dict[str, float]]) -> None:
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            apart = a["right"] <= b["left"] or b["right"] <= a["left"] or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
            assert apart, f"labels {a['text']!r} and {b['text']!r} overlap: {a} {b}"


def _assert_report_drawing(driver, section) -> None:  # type: ignore[no-untyped-def]
    """What every section with measured usage draws: requests per node, a heatmap with axes and a
    colour scale, and labels that do not run into each other."""
    from selenium.webdriver.common.by import By

    assert len(section.find_elements(By.CSS_SELECTOR, "svg.requests polyline.req")) == 2
    heatmap = section.find_element(By.CSS_SELECTOR, "svg.heatmap")
    assert len(heatmap.find_elements(By.CSS_SELECTOR, "text.node")) >= 5
    assert len(heatmap.find_elements(By.CSS_SELECTOR, "text.time")) >= 3
    assert len(heatmap.find_elements(By.CSS_SELECTOR, "rect.scale")) == 20
    assert [t.text for t in heatmap.find_elements(By.CSS_SELECTOR, "text.scale-tick")] == ["0%", "50%", "80%", "100%"]
    assert "cpu use, % of allocatable" in heatmap.find_element(By.CSS_SELECTOR, "text.scale-title").text
    for selector in ("svg.bars text.bucket", "svg.heatmap text.node", "svg.heatmap text.time", "svg.line text.time"):
        _assert_apart(_boxes(driver, section, selector))
    buckets = [b["text"] for b in _boxes(driver, section, "svg.bars text.bucket")]
    assert buckets[0] == "0s-1s" and buckets[-1] == ">1h"


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
            _assert_report_drawing(driver, section)
        # One time axis for both runs: the same ticks at the same places, whatever each run's length.
        ticks = [_texts_and_x(driver, s, "svg.line text.time") for s in sections]
        assert ticks[0] == ticks[1] and len(ticks[0]) >= 3
        # Both side by side: the second section starts to the right of the first, on the same row.
        a, b = (s.rect for s in sections)
        assert b["x"] > a["x"] + a["width"] / 2 and abs(b["y"] - a["y"]) < 5
        shots = _screenshots(tmp_path)
        shots.mkdir(exist_ok=True)
        driver.save_screenshot(str(shots / "report-overview.png"))

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
        driver.save_screenshot(str(shots / "report-explorer.png"))
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
              "unschedulable": [{"message": evil, "pods": 1}], "explanations": {"ns/p": explanation}, "explained_cap": 10,
              "usage_gap": evil, "requests": {"nodes": 1, "rank": [0], "cpu": [50.0], "memory": [10.0], "cpu_mean": 50.0,
                                              "memory_mean": 10.0, "in_use": 1, "cpu_over_80": 0,
                                              "fullest": [{"node": "n<b>1", "cpu": 50.0, "memory": 10.0}]}}
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


NODES = """apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '20'}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
status: {allocatable: {cpu: '4', memory: 8Gi, pods: '20'}}
"""
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: nginx, resources: {requests: {cpu: 500m, memory: 256Mi}}}
"""


def test_plain_manifests_draw_requests_and_no_empty_charts(tmp_path: Path) -> None:
    """Manifests as `kubectl get -o yaml` gives them: every pod placed at time 0, no usage measured.
    The page says so instead of drawing empty charts, and still shows what each node holds."""
    from selenium.webdriver.common.by import By

    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "nodes.yaml").write_text(NODES)
    (tmp_path / "cluster" / "web.yaml").write_text(DEPLOYMENT)
    out = tmp_path / "plain.html"
    done = subprocess.run([sys.executable, "-m", "kubesched.cli", "simulate", "-q", str(tmp_path / "cluster"), "--report", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    with chromium(1200, 1400) as driver:
        driver.get(file_url(out))
        _wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.config")) == 1)
        assert console_errors(driver) == []
        section = driver.find_element(By.CSS_SELECTOR, "section.config")
        assert section.find_elements(By.CSS_SELECTOR, "svg.line") == [] and section.find_elements(By.CSS_SELECTOR, "svg.heatmap") == []
        gap = section.find_element(By.CSS_SELECTOR, ".usage-gap").text
        assert gap.startswith("Not drawn: no usage measured: the run ended at virtual time 0s")
        requests = section.find_element(By.CSS_SELECTOR, "svg.requests")
        assert requests.size["width"] > 300 and requests.size["height"] > 100
        lines = requests.find_elements(By.CSS_SELECTOR, "polyline.req")
        assert len(lines) == 2 and all(len(line.get_attribute("points").split()) == 2 for line in lines)
        assert "2 of 2 nodes hold pods that request something" in section.text
        assert "hot node-seconds" in section.text.lower() and "n/a" in section.text
        _assert_apart(_boxes(driver, section, "svg.bars text.bucket"))


def test_runs_of_different_lengths_share_the_time_axis(tmp_path: Path) -> None:
    import numpy as np
    from selenium.webdriver.common.by import By

    def run(label: str, seconds: float) -> report.Run:
        times = np.arange(15.0, seconds + 1, 15.0)
        usage = report.UsageSamples(times=times, started_at=0.0, nodes=["n0", "n1"], cpu=np.full((times.size, 2), 0.5),
                                    memory=np.full((times.size, 2), 0.5), declared=True)
        return report.Run(label=label, figures={"virtual_seconds": seconds, "unschedulable": {}, "preempted": []}, pending_waits=[0.0],
                          explanations={}, explained_cap=10, usage=usage, usage_gap=None,
                          requests=report.NodeRequests(nodes=["n0", "n1"], cpu=np.array([0.5, 0.2]), memory=np.array([0.1, 0.0])))

    out = tmp_path / "two.html"
    out.write_text(report.render("two lengths", [report.config_report(run("short", 600.0)), report.config_report(run("long", 3600.0))]))
    with chromium(1600, 1400) as driver:
        driver.get(file_url(out))
        _wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.config")) == 2)
        assert console_errors(driver) == []
        short, long = driver.find_elements(By.CSS_SELECTOR, "section.config")
        for selector in ("svg.line text.time", "svg.heatmap text.time"):
            assert _texts_and_x(driver, short, selector) == _texts_and_x(driver, long, selector)
        assert _texts_and_x(driver, short, "svg.line text.time")[-1][0] == "1h"

        def right_end(section) -> float:  # type: ignore[no-untyped-def]
            line = section.find_element(By.CSS_SELECTOR, "svg.line polyline.series")
            return max(float(p.split(",")[0]) for p in line.get_attribute("points").split())

        assert right_end(short) < right_end(long) / 4  # 10 minutes of an hour's axis
        assert len(short.find_elements(By.CSS_SELECTOR, "svg.line line.run-end")) == 2
        assert long.find_elements(By.CSS_SELECTOR, "line.run-end") == []


DEVICES = """apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status: {allocatable: {cpu: "8", memory: 32Gi}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "!device.allowMultipleAllocations"}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: shared-gpu}
spec:
  selectors: [{cel: {expression: device.allowMultipleAllocations}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-node
  pool: {name: gpu-node, generation: 0, resourceSliceCount: 1}
  devices:
  - {name: gpu-0}
  - {name: gpu-1}
  - {name: gpu-2, allowMultipleAllocations: true, capacity: {memory: {value: 40Gi}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: whole, namespace: default}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: share, namespace: default}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: shared-gpu, capacity: {requests: {memory: 10Gi}}}}]}}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: whole}]
  containers: [{name: c, image: trainer, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: default}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: share}]
  containers: [{name: c, image: server, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
"""


def test_device_use_and_a_pods_devices_in_the_browser(tmp_path: Path) -> None:
    """A run with DRA devices: device use per DeviceClass, and the devices a placed pod got."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    (tmp_path / "devices.yaml").write_text(DEVICES)
    out = tmp_path / "devices.html"
    done = subprocess.run([sys.executable, "-m", "kubesched.cli", "simulate", "-q", str(tmp_path / "devices.yaml"),
                           "--report", str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    with chromium(1200, 1400) as driver:
        driver.get(file_url(out))
        _wait(lambda: len(driver.find_elements(By.CSS_SELECTOR, "section.config")) == 1)
        section = driver.find_element(By.CSS_SELECTOR, "section.config")
        assert "Devices at the end of the run, per DeviceClass" in section.text
        rows = [row.text for table in section.find_elements(By.CSS_SELECTOR, "table")
                for row in table.find_elements(By.CSS_SELECTOR, "tr") if row.text.startswith(("gpu ", "shared-gpu "))]
        assert rows == ["gpu 1 2 50", "shared-gpu 1 1 100 memory 10Gi of 40Gi (25%)"]
        Select(section.find_element(By.CSS_SELECTOR, "select.pod-select")).select_by_value("default/server")
        _wait(lambda: "Devices it got" in section.find_element(By.CSS_SELECTOR, ".explorer").text)
        explorer = section.find_element(By.CSS_SELECTOR, ".explorer").text
        assert "gpu.example.com/gpu-node/gpu-2" in explorer and "memory 10Gi" in explorer
        assert console_errors(driver) == []
