#!/usr/bin/env bash
# Builds the real control plane used by kubesched's integration tests: etcd, kube-apiserver,
# kube-scheduler and kube-controller-manager (the tests run only its disruption controller), from
# the Go wrapper modules next to this script, through the Go module proxy.
#
#   tools/k8s/build.sh              build if missing, print the directory holding the binaries
#   tools/k8s/build.sh --force      rebuild even if the binaries are there
#   tools/k8s/build.sh --print-dir  only print the directory (nothing is built)
#
# The versions come from one place: the `require` lines of kube/go.mod (k8s.io/kubernetes) and
# etcd/go.mod (go.etcd.io/etcd/server/v3). The binaries land in
#   ${KUBESCHED_K8S_CACHE:-$HOME/.cache/kubesched}/k8s-<kubernetes version>/
# which tests/integration/harness/binaries.py looks up the same way. The directory appears
# atomically: everything is built into a temporary sibling, checked, then renamed into place.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The version a wrapper module requires, read from its go.mod (single-line or block form).
required_version() {
    awk -v mod="$2" '/=>/ { next } { for (i = 1; i < NF; i++) if ($i == mod) { print $(i + 1); exit } }' "$1"
}

KUBE_VERSION="$(required_version "$here/kube/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(required_version "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)"
if [[ ! "$KUBE_VERSION" =~ ^v1\.([0-9]+)\.[0-9]+$ ]]; then
    echo "build.sh: cannot read the k8s.io/kubernetes version from $here/kube/go.mod (got '${KUBE_VERSION}')" >&2
    exit 1
fi
KUBE_MINOR="${BASH_REMATCH[1]}"
if [[ ! "$ETCD_VERSION" =~ ^v3\.[0-9]+\.[0-9]+$ ]]; then
    echo "build.sh: cannot read the go.etcd.io/etcd/server/v3 version from $here/etcd/go.mod (got '${ETCD_VERSION}')" >&2
    exit 1
fi

CACHE="${KUBESCHED_K8S_CACHE:-$HOME/.cache/kubesched}"
DEST="$CACHE/k8s-$KUBE_VERSION"

force=0
case "${1:-}" in
    "") ;;
    --force) force=1 ;;
    --print-dir) echo "$DEST"; exit 0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

# True when running `$1 --version` prints the line $2 exactly. The whole output is read first and
# matched afterwards: piping it into `grep -q` would let grep exit at the first match, the binary
# die of SIGPIPE on its next line, and pipefail report a failure for a binary that is right.
reports_version() {
    local out
    out="$("$1" --version 2>/dev/null)" || return 1
    grep -qxF -- "$2" <<<"$out"
}

# True when the four binaries in $1 exist, run, and report the pinned versions.
binaries_ok() {
    local dir="$1" b
    for b in etcd kube-apiserver kube-scheduler kube-controller-manager; do
        [[ -x "$dir/$b" ]] || return 1
    done
    reports_version "$dir/kube-apiserver" "Kubernetes $KUBE_VERSION" || return 1
    reports_version "$dir/kube-scheduler" "Kubernetes $KUBE_VERSION" || return 1
    reports_version "$dir/kube-controller-manager" "Kubernetes $KUBE_VERSION" || return 1
    reports_version "$dir/etcd" "etcd Version: ${ETCD_VERSION#v}" || return 1
}

if [[ $force == 0 ]] && binaries_ok "$DEST"; then
    echo "$DEST"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    cat >&2 <<EOF
build.sh: the Go toolchain ('go') is not on PATH.
The integration tests need etcd $ETCD_VERSION, kube-apiserver and kube-scheduler $KUBE_VERSION,
built from tools/k8s with Go (https://go.dev/dl/, version 1.26 or newer). Either install Go and
run 'make k8s-bin' again, or point KUBEBUILDER_ASSETS at a directory that already holds
etcd, kube-apiserver and kube-scheduler of these versions.
EOF
    exit 1
fi

mkdir -p "$CACHE"

# One build at a time per cache (parallel CI jobs, make -j): the second waits, then finds it done.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE/.k8s-$KUBE_VERSION.lock"
    flock 9
    if [[ $force == 0 ]] && binaries_ok "$DEST"; then
        echo "$DEST"
        exit 0
    fi
fi

tmp="$(mktemp -d "$CACHE/.k8s-$KUBE_VERSION.tmp.XXXXXX")"
old=""
cleanup() {
    rm -rf "$tmp"
    [[ -z "$old" ]] || rm -rf "$old"
}
trap cleanup EXIT

# Static binaries like the release builds; no VCS stamping of the wrapper module (its checkout may
# not be a git repository, or one owned by another user).
export CGO_ENABLED="${CGO_ENABLED:-0}"
goflags=(-mod=readonly -trimpath -buildvcs=false)

# What kube's hack/lib/version.sh stamps, so `--version` and GET /version say the real release.
build_date="$(date ${SOURCE_DATE_EPOCH:+--date=@$SOURCE_DATE_EPOCH} -u +%Y-%m-%dT%H:%M:%SZ)"
kube_ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    # The module zip carries no commit: gitCommit stays empty rather than the "$Format:%H$" placeholder.
    kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$KUBE_MINOR"
    kube_ldflags+=" -X $pkg.gitCommit= -X $pkg.buildDate=$build_date"
done

echo "build.sh: building kube-apiserver, kube-scheduler, kube-controller-manager $KUBE_VERSION and etcd $ETCD_VERSION with $(go version | awk '{print $3}') (a few minutes the first time)" >&2
start=$SECONDS
(cd "$here/etcd" && go build "${goflags[@]}" -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
(cd "$here/kube" && go build "${goflags[@]}" -ldflags "$kube_ldflags" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager)

if ! binaries_ok "$tmp"; then
    echo "build.sh: the freshly built binaries do not report the expected versions:" >&2
    for b in etcd kube-apiserver kube-scheduler kube-controller-manager; do "$tmp/$b" --version 2>&1 | sed "s/^/  $b: /" >&2 || true; done
    exit 1
fi
chmod 0755 "$tmp"

# A directory cannot be renamed over a non-empty one: move the stale one aside first.
if [[ -e "$DEST" ]]; then
    old="$CACHE/.k8s-$KUBE_VERSION.old.$$"
    mv "$DEST" "$old"
fi
mv "$tmp" "$DEST"
echo "build.sh: built in $((SECONDS - start)) s" >&2
echo "$DEST"
