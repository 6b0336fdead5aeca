# The two commands of the README: `make demo` and `make test`. Both set up .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test unit integration conformance fuzz k8s-bin perf-src prometheus-bin chromium-bin otelcol-bin lint typecheck known-fields bench bench-kube bench-bind clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/kubesched simulate

# The whole suite, integration tests included: they run against a real etcd, kube-apiserver and
# kube-scheduler, which k8s-bin builds once (Go, through the module proxy) into ~/.cache/kubesched,
# a real Prometheus server, which prometheus-bin installs (the Debian package) if missing, and a real
# headless Chromium for the HTML report, which chromium-bin installs (Debian packages) if missing.
test: $(STAMP) lint typecheck k8s-bin perf-src prometheus-bin chromium-bin otelcol-bin
	$(BIN)/python -m pytest

unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit

integration: $(STAMP) k8s-bin prometheus-bin chromium-bin otelcol-bin
	$(BIN)/python -m pytest tests/integration

# The differential conformance suite on CONFORMANCE_SCENARIOS generated scenarios (default 300, from
# CONFORMANCE_SEED, default 1): each through the real kube-scheduler and through `kubesched run` on one
# real apiserver; disagreements are written to CONFORMANCE_OUT (default: pytest's tmp dir) as replayable files.
CONFORMANCE_SCENARIOS ?= 300
conformance: $(STAMP) k8s-bin
	cd tests && CONFORMANCE_SCENARIOS=$(CONFORMANCE_SCENARIOS) ../$(BIN)/python -m pytest integration/conformance -q -p no:cacheprovider

# The fuzz suite at twenty times the inputs `make test` gives it, with a fresh random seed each run
# (hypothesis prints it with any failure; replay with --hypothesis-seed=N). FUZZ_EXAMPLES=100 for more.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests/unit/fuzz -p no:cacheprovider --hypothesis-show-statistics -q

# Rewrites src/kubesched/api/known-fields.json (the fields each kind the manifests may hold has) from
# the pinned kube-apiserver's OpenAPI, after a kind is added; tests/integration/api checks it is current.
known-fields: $(STAMP) k8s-bin
	cd tests && ../$(BIN)/python -m integration.harness.openapi

# Builds the control-plane binaries if missing (seconds when they are there); envtest-style
# KUBEBUILDER_ASSETS, when set, is used instead and nothing is built.
k8s-bin:
ifeq ($(strip $(KUBEBUILDER_ASSETS)),)
	@tools/k8s/build.sh
else
	@echo "k8s-bin: using KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS)"
endif

# Makes sure a Prometheus server binary is there (PROMETHEUS_BIN, /usr/bin/prometheus or PATH); as
# root with apt-get, installs the Debian package prometheus if not; otherwise says what to install and fails.
prometheus-bin:
	@tools/prometheus/ensure.sh

# Makes sure Chromium and chromedriver are there for the report's browser tests (tests/integration/observe);
# as root with apt-get, installs the Debian packages chromium and chromium-driver if not.
chromium-bin:
	@tools/chromium/ensure.sh

# Builds the OpenTelemetry Collector the tracing tests export to (OTLP receiver and debug exporter only),
# with Go through the module proxy, into ~/.cache/kubesched/otelcol-<version>/ (about a minute, once).
otelcol-bin:
	@tools/otelcol/build.sh

# ruff, and the layers of docs/architecture.md as import-linter contracts (pyproject.toml, [tool.importlinter]).
lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# kube-scheduler's scheduler_perf workloads are read from the k8s.io/kubernetes module of the pinned
# release in Go's module cache (nothing of them is copied here); this makes sure it is there.
perf-src:
	@cd tools/k8s/kube && go mod download k8s.io/kubernetes

# The core-only table: every scheduler_perf workload labelled `performance` of the pinned release,
# on the simulator (kubesched's scheduling core, no API server), one after another; JSON in bench-sim.json.
bench: $(STAMP) perf-src
	$(BIN)/kubesched bench --scheduler-perf all --label performance --json bench-sim.json

# The same workloads on a real kube-apiserver, through kubesched and through the real kube-scheduler
# in alternating order (BENCH_ROUNDS rounds, default 2; a fresh etcd and kube-apiserver per run);
# BENCH_WORKLOADS narrows it (e.g. "--workload SchedulingBasic/5000Nodes_10000Pods", with
# BENCH_CONFIG=misc). JSON in bench-kube.json. Hours for the whole set on a 2-core machine.
BENCH_ROUNDS ?= 2
BENCH_CONFIG ?= all
BENCH_WORKLOADS ?=
bench-kube: $(STAMP) k8s-bin perf-src
	$(BIN)/kubesched bench --scheduler-perf $(BENCH_CONFIG) $(BENCH_WORKLOADS) --label performance --kube --vs kube-scheduler \
		--rounds $(BENCH_ROUNDS) --json bench-kube.json

# Binding 1,000 pods onto 100 nodes through a real kube-apiserver: kubesched, then kube-scheduler.
bench-bind: $(STAMP) k8s-bin
	cd tests && ../$(BIN)/python -m integration.perf.bind_throughput

# 200,000 pods created and deleted through the scheduler on the simulated cluster; fails if the
# resident memory at the end exceeds its level after warm-up by more than 3% + 3 MiB (tests/unit/test_soak.py).
.PHONY: soak
soak: $(STAMP)
	KUBESCHED_SOAK_PODS=200000 $(BIN)/python -m pytest tests/unit/test_soak.py -q -s -p no:cacheprovider --timeout 1800 -k flat

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
