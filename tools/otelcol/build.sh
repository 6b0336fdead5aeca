#!/usr/bin/env bash
# Builds the minimal OpenTelemetry Collector (OTLP receiver, debug exporter) that kubesched's
# tracing tests export to, from main.go and go.mod next to this script, through the Go module proxy.
#
#   tools/otelcol/build.sh              build if missing, print the binary's path
#   tools/otelcol/build.sh --print      only print where the binary goes (nothing is built)
#
# The version is the go.opentelemetry.io/collector/otelcol requirement of go.mod; the binary lands in
#   ${KUBESCHED_K8S_CACHE:-$HOME/.cache/kubesched}/otelcol-<version>/otelcol
# (tests/integration/harness/otelcol.py looks it up the same way), built into a temporary file first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION="$(awk '$1 == "go.opentelemetry.io/collector/otelcol" { print $2; exit }' "$here/go.mod")"
if [[ ! "$VERSION" =~ ^v0\.[0-9]+\.[0-9]+$ ]]; then
    echo "otelcol/build.sh: cannot read the go.opentelemetry.io/collector/otelcol version from $here/go.mod (got '$VERSION')" >&2
    exit 1
fi
CACHE="${KUBESCHED_K8S_CACHE:-$HOME/.cache/kubesched}"
DEST="$CACHE/otelcol-$VERSION/otelcol"
if [[ "${1:-}" == "--print" ]]; then echo "$DEST"; exit 0; fi
if [[ -x "$DEST" ]] && "$DEST" --version >/dev/null 2>&1; then echo "$DEST"; exit 0; fi
if ! command -v go >/dev/null 2>&1; then
    echo "otelcol/build.sh: the Go toolchain ('go') is not on PATH; the tracing tests need an OpenTelemetry Collector built from $here" >&2
    exit 1
fi
mkdir -p "$(dirname "$DEST")"
tmp="$(mktemp "$DEST.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
echo "otelcol-bin: building the OpenTelemetry Collector $VERSION (OTLP receiver, debug exporter) into $DEST" >&2
(cd "$here" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$tmp" .)
"$tmp" --version >/dev/null
mv "$tmp" "$DEST"
trap - EXIT
echo "$DEST"
