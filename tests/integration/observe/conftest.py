"""The browser tests skip without Chromium locally and fail without it under CI=true."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.harness.binaries import in_ci
from integration.harness.browser import BrowserMissing, find_browser

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = [item for item in items if _HERE in item.path.parents]
    if not ours:
        return
    try:
        find_browser()
    except BrowserMissing as e:
        if in_ci():
            return  # the tests fail on their own, naming what is missing
        for item in ours:
            item.add_marker(pytest.mark.skip(reason=str(e)))
