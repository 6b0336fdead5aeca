"""A real headless Chromium (Debian packages chromium + chromium-driver) driven by Selenium.

Looked up as tools/chromium/ensure.sh finds them: $CHROMIUM_BIN / $CHROMEDRIVER_BIN, else
/usr/bin/chromium and /usr/bin/chromedriver, else on PATH. Missing, tests skip locally and fail
under CI=true (see integration/observe/conftest.py).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class BrowserMissing(RuntimeError):
    pass


def _find(env: str, default: str, name: str) -> str:
    given = os.environ.get(env)
    if given:
        if not os.access(given, os.X_OK):
            raise BrowserMissing(f"{env}={given} is not executable")
        return given
    if os.access(default, os.X_OK):
        return default
    found = shutil.which(name)
    if found:
        return found
    raise BrowserMissing(f"no {name} (install the Debian packages chromium and chromium-driver: make chromium-bin)")


def find_browser() -> tuple[str, str]:
    return _find("CHROMIUM_BIN", "/usr/bin/chromium", "chromium"), _find("CHROMEDRIVER_BIN", "/usr/bin/chromedriver", "chromedriver")


@contextmanager
def chromium(width: int = 1600, height: int = 1200) -> Iterator[Any]:
    """A Selenium WebDriver on a fresh headless Chromium profile, quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = find_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}",
                "--disable-extensions", "--no-first-run", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: Any) -> list[str]:
    return [f"{e.get('level')}: {e.get('message')}" for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def file_url(path: Path) -> str:
    return path.resolve().as_uri()
