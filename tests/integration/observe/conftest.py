"""The browser and tracing tests skip without Chromium or the collector locally, and fail without them under CI=true."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.harness.binaries import in_ci
from integration.harness.browser import BrowserMissing, find_browser
from integration.harness.otelcol import CollectorMissing, find_otelcol

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if _HERE in item.path.parents]
    if not ours:
        return
    for find, missing, module in ((find_browser, BrowserMissing, "test_report_browser"), (find_otelcol, CollectorMissing, "test_tracing")):
        try:
            find()
        except missing as e:
            if in_ci():
                continue  # the tests fail on their own, naming what is missing
            for item in ours:
                if item.path.stem.startswith(module):  # test_tracing, test_tracing_run, ...
                    item.add_marker(pytest.mark.skip(reason=str(e)))
