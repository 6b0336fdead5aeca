#!/usr/bin/env bash
# Makes sure the Prometheus server that tests/integration/metrics start is there; prints its path.
#
# Looked up as tests/integration/harness/prometheus.py does: $PROMETHEUS_BIN, /usr/bin/prometheus,
# then `prometheus` on PATH. Missing, it is installed from the Debian package `prometheus` when
# running as root with apt-get (its service is not started: the tests run their own server on
# 127.0.0.1); otherwise this says what to install and fails.
set -euo pipefail

# The first line of `$1 --version`, read whole before it is cut: `| head -n 1` under pipefail fails
# when the binary dies of SIGPIPE writing its second line after head has exited.
first_version_line() {
    local out
    out="$("$1" --version 2>&1)" || true
    printf '%s\n' "${out%%$'\n'*}"
}

found() { echo "prometheus-bin: $1 ($(first_version_line "$1"))"; exit 0; }

if [[ -n "${PROMETHEUS_BIN:-}" ]]; then
    [[ -f "$PROMETHEUS_BIN" && -x "$PROMETHEUS_BIN" ]] && found "$PROMETHEUS_BIN"
    echo "prometheus-bin: PROMETHEUS_BIN=$PROMETHEUS_BIN is not an executable file" >&2
    exit 1
fi
[[ -x /usr/bin/prometheus ]] && found /usr/bin/prometheus
if command -v prometheus >/dev/null 2>&1; then
    found "$(command -v prometheus)"
fi

if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<'MSG'
prometheus-bin: no Prometheus server binary (tests/integration/metrics run a real one).
  Install the Debian/Ubuntu package:   sudo apt-get install --no-install-recommends prometheus
  or point PROMETHEUS_BIN at a prometheus 2.x binary (https://prometheus.io/download/).
MSG
    exit 1
fi

echo "prometheus-bin: installing the Debian package prometheus"
# Keep the package's service from starting (a server on :9090 nobody asked for): invoke-rc.d and
# deb-systemd-invoke obey policy-rc.d. One already in place (container images have one) is left alone.
policy=/usr/sbin/policy-rc.d
if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends prometheus
[[ -x /usr/bin/prometheus ]] || { echo "prometheus-bin: the package did not install /usr/bin/prometheus" >&2; exit 1; }
first_version_line /usr/bin/prometheus
