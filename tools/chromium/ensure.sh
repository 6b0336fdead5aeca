#!/usr/bin/env bash
# Makes sure the headless browser of tests/integration/observe is there: Chromium and its
# WebDriver, found as tests/integration/harness/browser.py finds them ($CHROMIUM_BIN and
# $CHROMEDRIVER_BIN, /usr/bin/chromium and /usr/bin/chromedriver, then PATH). Missing, they are
# installed from the Debian packages chromium and chromium-driver when running as root with
# apt-get; otherwise this says what to install and fails.
set -euo pipefail

have() {
    local env="$1" default="$2" name="$3"
    if [[ -n "${!env:-}" ]]; then [[ -x "${!env}" ]]; return; fi
    [[ -x "$default" ]] || command -v "$name" >/dev/null 2>&1
}

if have CHROMIUM_BIN /usr/bin/chromium chromium && have CHROMEDRIVER_BIN /usr/bin/chromedriver chromedriver; then
    echo "chromium-bin: $(chromium --version 2>/dev/null || echo "${CHROMIUM_BIN:-chromium}")"
    exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<'MSG'
chromium-bin: no Chromium and chromedriver (tests/integration/observe drive a real headless browser).
  Install the Debian/Ubuntu packages:   sudo apt-get install --no-install-recommends chromium chromium-driver
  or point CHROMIUM_BIN and CHROMEDRIVER_BIN at a Chromium and its matching chromedriver.
MSG
    exit 1
fi
echo "chromium-bin: installing the Debian packages chromium and chromium-driver"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null
echo "chromium-bin: $(chromium --version)"
