"""A real Prometheus server for integration tests, and the node-exporter it scrapes.

    stub = NodeExporterStub(["node-a", "node-b"]).start()   # /metrics on 127.0.0.1:<free port>
    stub.set_cpu("node-a", 0.9); stub.set_memory("node-a", 0.3)
    prom = PrometheusServer(find_prometheus(), workdir, [stub.target]).start()
    try:
        prom.wait_for_series('node_memory_MemTotal_bytes', 2)
        prom.query('1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5s]))')
        prom.stop(); prom.start()            # an outage: same port, same data directory
    finally:
        prom.stop(); stub.stop()

The stub serves node-exporter's series (`node_cpu_seconds_total`, `node_memory_MemAvailable_bytes`,
`node_memory_MemTotal_bytes`) for any number of nodes from one endpoint, each series carrying an
explicit `instance` label naming its node, as if every node's exporter had been scraped; the
Prometheus configuration therefore scrapes it with `honor_labels: true`. CPU counters advance in
real time: a CPU at utilization u spends u of each second in mode "user" and 1 - u in "idle", so
`1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[w]))` is u once Prometheus holds
two samples of the new utilization within the window.

The binary is $PROMETHEUS_BIN, else /usr/bin/prometheus, else `prometheus` on PATH (the Debian
package `prometheus`, which `make prometheus-bin` installs). Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from kubesched.tools.devcluster.procs import ManagedProcess, ProcessDied, StartupTimeout, free_port, wait_until

from .binaries import missing_binaries_outcome

DEFAULT_BINARY = Path("/usr/bin/prometheus")
START_TIMEOUT = 30.0
_PORT_RETRIES = 3

CPU_QUERY = '1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle"}}[{window}]))'
MEMORY_QUERY = "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes"


# --- the binary -------------------------------------------------------------------------------------


class PrometheusMissing(RuntimeError):
    """No Prometheus binary; the message says how to get one."""


def find_prometheus() -> Path:
    """The Prometheus binary to run, or PrometheusMissing saying how to install it."""
    configured = os.environ.get("PROMETHEUS_BIN")
    if configured:
        path = Path(configured)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise PrometheusMissing(f"PROMETHEUS_BIN={configured} is not an executable file")
        return path
    if DEFAULT_BINARY.is_file() and os.access(DEFAULT_BINARY, os.X_OK):
        return DEFAULT_BINARY
    on_path = shutil.which("prometheus")
    if on_path:
        return Path(on_path)
    raise PrometheusMissing(
        f"no Prometheus server binary ({DEFAULT_BINARY} missing, none on PATH, PROMETHEUS_BIN unset): "
        "run `make prometheus-bin` (as root it installs the Debian package: apt-get install prometheus) "
        "or set PROMETHEUS_BIN to a prometheus 2.x binary"
    )


def require_prometheus() -> Path:
    """find_prometheus() for a test: skips it, or fails it under CI=true, when there is none."""
    try:
        return find_prometheus()
    except PrometheusMissing as e:
        problem = str(e)
    missing_binaries_outcome(problem)  # raises Skipped, or Failed under CI=true
    raise AssertionError("unreachable")


# --- the exporter ---------------------------------------------------------------------------------------


@dataclass
class _Node:
    cpus: int
    utilization: float
    memory_total: int
    memory_used: float
    # The counters' value at `since`, per CPU (all CPUs of a node run at the same utilization).
    idle: float = 10_000.0
    user: float = 2_000.0
    since: float = field(default_factory=time.monotonic)

    def counters(self, now: float) -> tuple[float, float]:
        elapsed = now - self.since
        return self.idle + elapsed * (1.0 - self.utilization), self.user + elapsed * self.utilization

    def set_utilization(self, fraction: float, now: float) -> None:
        self.idle, self.user = self.counters(now)
        self.since = now
        self.utilization = fraction


def _check_fraction(fraction: float) -> float:
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"{fraction} is not a fraction between 0 and 1")
    return float(fraction)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class NodeExporterStub:
    """node-exporter-format /metrics for a set of nodes, from an HTTP server thread on 127.0.0.1.

    Works whatever the test does meanwhile (sync tests, asyncio tests): requests are served by
    the server's own threads. Utilizations can change at any time; a change is continuous for
    the counters (they never go back), as on a real machine.
    """

    def __init__(
        self,
        nodes: Iterable[str] = (),
        *,
        cpus: int = 4,
        cpu: float = 0.1,
        memory: float = 0.3,
        memory_total: int = 16 * 1024**3,
    ) -> None:
        self.default_cpus = cpus
        self.default_cpu = _check_fraction(cpu)
        self.default_memory = _check_fraction(memory)
        self.default_memory_total = memory_total
        self._nodes: dict[str, _Node] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.scrapes = 0
        for name in nodes:
            self.add_node(name)

    # -- nodes ------------------------------------------------------------------------------------

    def add_node(self, name: str, *, cpu: float | None = None, memory: float | None = None, cpus: int | None = None) -> None:
        with self._lock:
            self._nodes[name] = _Node(
                cpus=cpus or self.default_cpus,
                utilization=_check_fraction(self.default_cpu if cpu is None else cpu),
                memory_total=self.default_memory_total,
                memory_used=_check_fraction(self.default_memory if memory is None else memory),
            )

    def remove_node(self, name: str) -> None:
        """The node's series disappear from /metrics (Prometheus marks them stale at the next scrape)."""
        with self._lock:
            self._nodes.pop(name, None)

    @property
    def nodes(self) -> list[str]:
        with self._lock:
            return list(self._nodes)

    def set_cpu(self, node: str, fraction: float) -> None:
        """The node's CPUs are busy `fraction` of the time from now on (added if unknown)."""
        fraction = _check_fraction(fraction)
        with self._lock:
            n = self._nodes.get(node)
            if n is not None:
                n.set_utilization(fraction, time.monotonic())
                return
        self.add_node(node, cpu=fraction)

    def set_memory(self, node: str, fraction: float) -> None:
        """MemAvailable becomes (1 - fraction) of MemTotal (the node is added if unknown)."""
        fraction = _check_fraction(fraction)
        with self._lock:
            n = self._nodes.get(node)
            if n is not None:
                n.memory_used = fraction
                return
        self.add_node(node, memory=fraction)

    # -- serving ------------------------------------------------------------------------------------

    def render(self) -> str:
        """The exposition text a scrape gets now."""
        now = time.monotonic()
        with self._lock:
            nodes = [(name, n.cpus, *n.counters(now), n.memory_total, n.memory_used) for name, n in sorted(self._nodes.items())]
        cpu_lines = [
            "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.",
            "# TYPE node_cpu_seconds_total counter",
        ]
        avail_lines = [
            "# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.",
            "# TYPE node_memory_MemAvailable_bytes gauge",
        ]
        total_lines = [
            "# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.",
            "# TYPE node_memory_MemTotal_bytes gauge",
        ]
        for name, cpus, idle, user, mem_total, mem_used in nodes:
            inst = _escape(name)
            for i in range(cpus):
                cpu_lines.append(f'node_cpu_seconds_total{{cpu="{i}",instance="{inst}",mode="idle"}} {idle:.6f}')
                cpu_lines.append(f'node_cpu_seconds_total{{cpu="{i}",instance="{inst}",mode="user"}} {user:.6f}')
            avail_lines.append(f'node_memory_MemAvailable_bytes{{instance="{inst}"}} {round(mem_total * (1.0 - mem_used))}')
            total_lines.append(f'node_memory_MemTotal_bytes{{instance="{inst}"}} {mem_total}')
        return "\n".join([*cpu_lines, *avail_lines, *total_lines]) + "\n"

    def start(self) -> NodeExporterStub:
        if self._server is not None:
            raise RuntimeError("the exporter stub is already running")
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = stub.render().encode()
                with stub._lock:
                    stub.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: the kernel picks a free one, no race
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="node-exporter-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the exporter stub is not running")
        return int(self._server.server_address[1])

    @property
    def target(self) -> str:
        """host:port, as a scrape config's static target."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.target}/metrics"

    def __enter__(self) -> NodeExporterStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- the server -----------------------------------------------------------------------------------------


class PrometheusQueryError(RuntimeError):
    """Prometheus answered a query with an error (or not at all)."""


def prometheus_config(targets: Iterable[str], *, scrape_interval: str = "1s", job: str = "node-exporter") -> dict[str, Any]:
    return {
        "global": {"scrape_interval": scrape_interval, "scrape_timeout": scrape_interval, "evaluation_interval": scrape_interval},
        "scrape_configs": [
            {
                "job_name": job,
                # The stub's series carry their node's `instance`: keep it instead of the target's address.
                "honor_labels": True,
                "static_configs": [{"targets": list(targets)}],
            }
        ],
    }


class PrometheusServer:
    """One Prometheus process: its config, TSDB and log in `workdir`, listening on 127.0.0.1 only.

    stop() and start() again keep the port and the data directory, so clients configured with
    `url` see an outage and a recovery, not a new server.
    """

    def __init__(
        self,
        binary: Path,
        workdir: Path,
        targets: Iterable[str],
        *,
        scrape_interval: str = "1s",
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_file = self.workdir / "prometheus.yml"
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "prometheus.log"
        self.config_file.write_text(yaml.safe_dump(prometheus_config(targets, scrape_interval=scrape_interval)))
        self.start_timeout = start_timeout
        self.port = 0
        self.process: ManagedProcess | None = None
        self.startup_seconds: float | None = None
        self.started_at = 0.0  # wall-clock time of the last start(), as Prometheus timestamps samples

    @property
    def url(self) -> str:
        if not self.port:
            raise RuntimeError("Prometheus was never started")
        return f"http://127.0.0.1:{self.port}"

    def _argv(self) -> list[str]:
        return [
            str(self.binary),
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1h",
            "--log.level=info",
        ]

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> PrometheusServer:
        """Start (a new port the first time, the same one after stop()) and wait for /-/ready."""
        if self.running():
            raise RuntimeError("Prometheus is already running")
        t0 = time.monotonic()
        self.started_at = time.time()
        first = not self.port
        attempts = _PORT_RETRIES if first else 1
        for attempt in range(1, attempts + 1):
            if first:
                self.port = free_port()
            self.process = ManagedProcess("prometheus", self._argv(), self.log_path)
            self.process.start()
            try:
                wait_until(self._ready, timeout=self.start_timeout, what=f"Prometheus /-/ready on {self.url}", watch=[self.process])
                break
            except BaseException as e:
                self.process.stop()
                if isinstance(e, ProcessDied) and attempt < attempts and "address already in use" in self.process.log_tail():
                    continue
                raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def scraped_since_start(self) -> bool:
        """Whether every target has been scraped since the last start(): until then, a query answers
        from what was stored before (the first scrape waits for the discovery manager's 5 s tick)."""
        result = self.query("timestamp(up)")
        return bool(result) and all(float(r["value"][1]) >= self.started_at for r in result)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, SIGKILL after `timeout` seconds; idempotent. The data directory is kept."""
        if self.process is not None:
            self.process.stop(timeout=timeout)

    def kill(self) -> None:
        """SIGKILL at once (a crash)."""
        if self.process is not None:
            self.process.kill()

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def log_tail(self, lines: int = 50) -> str:
        return self.process.log_tail(lines) if self.process is not None else "(never started)"

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    # -- the HTTP API -------------------------------------------------------------------------------------

    def api(self, path: str, params: dict[str, str] | None = None, *, timeout: float = 5.0) -> Any:
        """GET /api/v1/<path>; the `data` of a successful answer, PrometheusQueryError otherwise."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as e:
            body = e.read()
        except (urllib.error.URLError, OSError) as e:
            raise PrometheusQueryError(f"{url}: {e}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise PrometheusQueryError(f"{url}: not JSON: {body[:200]!r}") from None
        if answer.get("status") != "success":
            raise PrometheusQueryError(f"{url}: {answer.get('errorType')}: {answer.get('error')}")
        return answer["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's vector: [{"metric": {...}, "value": [ts, "v"]}, ...]."""
        data = self.api("query", {"query": promql})
        if data["resultType"] != "vector":
            raise PrometheusQueryError(f"{promql!r} returned a {data['resultType']}, not a vector")
        return list(data["result"])

    def values(self, promql: str, label: str = "instance") -> dict[str, float]:
        """An instant query's values by one label (the node, by default)."""
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in self.query(promql)}

    def wait_for_series(self, promql: str, n: int, *, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Wait until the query returns at least `n` series; returns them."""

        def enough() -> list[dict[str, Any]] | None:
            result = self.query(promql)
            return result if len(result) >= n else None

        watch = [self.process] if self.process is not None else []
        try:
            return wait_until(enough, timeout=timeout, what=f"{n} series for {promql!r}", watch=watch)
        except StartupTimeout as e:
            raise StartupTimeout(f"{e}\n--- targets: {self._targets_summary()}") from None

    def wait_for_values(
        self, promql: str, expected: dict[str, float], *, tolerance: float = 0.02, label: str = "instance", timeout: float = 30.0
    ) -> dict[str, float]:
        """Wait until the query's values by `label` are `expected` (same keys, each within `tolerance`),
        as computed from samples scraped since the last start(): for a rate(), until its window holds
        enough samples of the current counters. Returns them.

        Only new samples count: after a restart, a rate() over samples stored before it can look right
        for a moment, then drift while the window empties (extrapolation) until scrapes resume."""
        last: dict[str, float] = {}

        def settled() -> dict[str, float] | None:
            nonlocal last
            if not self.scraped_since_start():
                return None
            last = self.values(promql, label)
            ok = last.keys() == expected.keys() and all(abs(last[k] - v) <= tolerance for k, v in expected.items())
            return last if ok else None

        watch = [self.process] if self.process is not None else []
        try:
            return wait_until(settled, timeout=timeout, what=f"{promql!r} to answer {expected}", watch=watch)
        except StartupTimeout as e:
            raise StartupTimeout(f"{e}\n--- last answer: {last}\n--- targets: {self._targets_summary()}") from None

    def _targets_summary(self) -> str:
        try:
            data = self.api("targets")
        except PrometheusQueryError as e:
            return str(e)
        return "; ".join(
            f"{t.get('scrapeUrl')} health={t.get('health')} lastError={t.get('lastError')!r}" for t in data.get("activeTargets", [])
        )
