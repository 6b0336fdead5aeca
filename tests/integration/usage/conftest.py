"""Fixtures for tests against a real Prometheus server scraping a node-exporter stub.

- `prometheus_binary` (session): the Prometheus binary (harness.prometheus.find_prometheus). Missing,
  the tests that need it are skipped with a reason saying what to install, except under CI=true,
  where they fail: a CI run must never pass by skipping the real Prometheus.
- `node_exporter` (function): a NodeExporterStub on 127.0.0.1 with no nodes yet (`add_node`,
  `set_cpu`, `set_memory`).
- `prometheus` (function): a PrometheusServer scraping it every second, started (about 1 s) and
  stopped after the test; its log is shown with a failing test's report.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from integration.harness.prometheus import NodeExporterStub, PrometheusServer, require_prometheus


@pytest.fixture(scope="session")
def prometheus_binary() -> Path:
    return require_prometheus()


@pytest.fixture
def node_exporter() -> Iterator[NodeExporterStub]:
    stub = NodeExporterStub().start()
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture
def prometheus(prometheus_binary: Path, node_exporter: NodeExporterStub, tmp_path: Path) -> Iterator[PrometheusServer]:
    server = PrometheusServer(prometheus_binary, tmp_path / "prometheus", [node_exporter.target])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    server = getattr(item, "funcargs", {}).get("prometheus")
    if isinstance(server, PrometheusServer):
        report.sections.append((f"prometheus log ({server.log_path})", server.log_tail(80)))
