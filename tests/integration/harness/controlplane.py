"""A real control plane for integration tests: etcd and kube-apiserver on 127.0.0.1.

    cp = ControlPlane().start()
    try:
        kube = cp.kube()                    # admin REST helper (client certificate, system:masters)
        ...                                 # cp.server, cp.ca_file, cp.admin_kubeconfig
        cp.compact_etcd(); cp.restart_apiserver()
    finally:
        cp.stop()

Everything (certificates, etcd data, kubeconfigs, one log file per process) lives in `workdir`.
Nothing listens anywhere but 127.0.0.1. No controller-manager runs: nodes keep the taints and
conditions the tests give them, namespaces are finalized by the harness, and pods are deleted with
a zero grace period (no kubelet would ever confirm a graceful deletion).
"""

from __future__ import annotations

import atexit
import base64
import json
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from .binaries import Binaries, find_binaries
from .pki import CertificateAuthority, CertPair, service_account_keys
from .procs import ManagedProcess, ProcessDied, StartupTimeout, free_port, wait_until
from .rest import Kube, write_kubeconfig

START_TIMEOUT = 60.0
ADMIN_USER = "kubesched-admin"
# Feature gates of the control plane's components (kube-apiserver, and kube-scheduler as a peer).
FEATURE_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
# kube-scheduler's, unless a test asks for others (TopologyAwareWorkloadScheduling changes how
# every pod group is placed: only the tests of that placement turn it on).
SCHEDULER_FEATURE_GATES = "GenericWorkload=true"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# How often a start is tried again when a port picked as free was taken before the process bound it.
_PORT_RETRIES = 3


class EtcdError(RuntimeError):
    """etcd's JSON gateway refused a request."""


class ControlPlane:
    """etcd + kube-apiserver, started by start(), always stopped by stop() (or the atexit sweep)."""

    def __init__(self, binaries: Binaries | None = None, workdir: Path | None = None, *, start_timeout: float = START_TIMEOUT) -> None:
        self.binaries = binaries or find_binaries()
        self._own_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="kubesched-cp-")) if workdir is None else Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.start_timeout = start_timeout
        self.pki_dir = self.workdir / "pki"
        self.etcd_data_dir = self.workdir / "etcd-data"
        self.etcd_port = 0
        self.etcd_peer_port = 0
        self.apiserver_port = 0
        self.etcd: ManagedProcess | None = None
        self.apiserver: ManagedProcess | None = None
        self.startup_seconds: float | None = None
        self._ca: CertificateAuthority | None = None
        self._admin: CertPair | None = None
        self._serving: CertPair | None = None
        self._sa_key: Path | None = None
        self._sa_pub: Path | None = None
        self._front_proxy_ca: CertificateAuthority | None = None
        self._front_proxy_client: CertPair | None = None
        self._probe: Kube | None = None

    # -- public attributes --------------------------------------------------------------------

    @property
    def server(self) -> str:
        """The apiserver's https URL."""
        if not self.apiserver_port:
            raise RuntimeError("the control plane is not started")
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def ca(self) -> CertificateAuthority:
        if self._ca is None:
            raise RuntimeError("the control plane is not started")
        return self._ca

    @property
    def ca_file(self) -> Path:
        return self.ca.cert_file

    @property
    def admin_cert(self) -> CertPair:
        """The system:masters client certificate (CN=kubesched-admin, O=system:masters)."""
        if self._admin is None:
            raise RuntimeError("the control plane is not started")
        return self._admin

    @property
    def admin_kubeconfig(self) -> Path:
        """Kubeconfig with the admin client certificate and the CA embedded (*-data fields)."""
        return self.workdir / "admin.kubeconfig"

    @property
    def admin_kubeconfig_files(self) -> Path:
        """The same credentials, referenced by file path (certificate-authority, client-certificate, client-key)."""
        return self.workdir / "admin-files.kubeconfig"

    @property
    def apiserver_log(self) -> Path:
        return self.workdir / "kube-apiserver.log"

    @property
    def etcd_log(self) -> Path:
        return self.workdir / "etcd.log"

    def kube(self) -> Kube:
        """A new admin REST helper."""
        return Kube(self.server, self.ca_file, cert_file=self.admin_cert.cert_file, key_file=self.admin_cert.key_file)

    def kubeconfig_for_user(self, user: str, groups: list[str] | tuple[str, ...] = (), path: Path | None = None) -> Path:
        """A kubeconfig authenticating with a fresh client certificate for `user` in `groups`."""
        stem = "user-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        pair = self.ca.client_cert(stem, user, groups)
        return write_kubeconfig(
            path or self.workdir / f"{stem}.kubeconfig", self.server, _cert_data(pair), ca_pem=self.ca.cert_pem, user_name=user
        )

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        t0 = time.monotonic()
        atexit.register(self.stop)  # an interpreter exit without stop() still cleans up
        try:
            self._make_pki()
            self._start_etcd()
            self._start_apiserver(new_port=True)
            self._write_kubeconfigs()
            self._wait_for_system_namespaces()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop the apiserver, then etcd; remove the workdir if the control plane created it. Idempotent."""
        atexit.unregister(self.stop)
        if self._probe is not None:
            self._probe.close()
        for proc in (self.apiserver, self.etcd):
            if proc is not None:
                proc.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port, certificates and etcd; wait for /readyz.

        Its watch cache starts empty, at etcd's current revision: watches from older resourceVersions
        that the cache cannot serve are answered 410 Gone.
        """
        if self.apiserver is None:
            raise RuntimeError("the control plane is not started")
        self.apiserver.stop(timeout=30.0)
        if self._probe is not None:
            self._probe.close()
        self._start_apiserver(new_port=False)

    def kill_apiserver(self) -> None:
        """SIGKILL the apiserver (a crash); start_apiserver_again() brings it back on the same port."""
        if self.apiserver is not None:
            self.apiserver.kill()

    def start_apiserver_again(self) -> None:
        if self.apiserver is not None and self.apiserver.running():
            raise RuntimeError("kube-apiserver is running")
        self._start_apiserver(new_port=False)

    def etcd_revision(self) -> int:
        """etcd's current revision (the header of a range request through the JSON gateway)."""
        # A key that never exists: the answer is just the header.
        answer = self._etcd_post("/v3/kv/range", {"key": _b64("/kubesched-harness/revision-probe"), "limit": 1})
        return int(answer["header"]["revision"])

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (physically); returns that revision."""
        revision = self.etcd_revision()
        try:
            self._etcd_post("/v3/kv/compaction", {"revision": revision, "physical": True})
        except EtcdError as e:
            # Nothing was written since the last compaction: it is compacted already.
            if "required revision has been compacted" not in str(e):
                raise
        return revision

    # -- internals ----------------------------------------------------------------------------

    def _etcd_post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(
            self.etcd_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise EtcdError(f"etcd {path}: HTTP {e.code}: {e.read().decode(errors='replace')}") from None
        if not isinstance(answer, dict):
            raise RuntimeError(f"etcd {path} answered {answer!r}")
        return answer

    def _make_pki(self) -> None:
        self._ca = CertificateAuthority(self.pki_dir)
        self._serving = self._ca.serving_cert(
            "apiserver", ["127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "10.0.0.1"]
        )
        self._admin = self._ca.client_cert("admin", ADMIN_USER, ["system:masters"])
        self._sa_key, self._sa_pub = service_account_keys(self.pki_dir)
        # The aggregation layer's front proxy, as kubeadm sets it up: its own CA, so that no client
        # certificate of the main CA can assert X-Remote-User. With it, delegated authentication
        # (kube-scheduler's, kubesched's) finds a complete extension-apiserver-authentication ConfigMap.
        self._front_proxy_ca = CertificateAuthority(self.pki_dir / "front-proxy", "kubesched-front-proxy-ca")
        self._front_proxy_client = self._front_proxy_ca.client_cert("front-proxy-client", "front-proxy-client")

    def _start_etcd(self) -> None:
        for attempt in range(1, _PORT_RETRIES + 1):
            self.etcd_port, self.etcd_peer_port = free_port(), free_port()
            shutil.rmtree(self.etcd_data_dir, ignore_errors=True)
            client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
            self.etcd = ManagedProcess(
                "etcd",
                [
                    str(self.binaries.etcd),
                    "--name=kubesched-test",
                    f"--data-dir={self.etcd_data_dir}",
                    f"--listen-client-urls={client}",
                    f"--advertise-client-urls={client}",
                    f"--listen-peer-urls={peer}",
                    f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=kubesched-test={peer}",
                    "--initial-cluster-state=new",
                    "--unsafe-no-fsync",
                    "--auto-compaction-retention=0",
                    "--quota-backend-bytes=8589934592",
                    "--log-level=warn",
                ],
                self.etcd_log,
            )
            self.etcd.start()
            try:
                wait_until(self._etcd_healthy, timeout=self.start_timeout, what=f"etcd health on {client}", watch=[self.etcd])
                return
            except ProcessDied:
                if attempt < _PORT_RETRIES and "address already in use" in self.etcd.log_tail():
                    continue
                raise

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as resp:
            return resp.status == 200 and json.loads(resp.read()).get("health") == "true"

    def _apiserver_argv(self) -> list[str]:
        assert self._serving is not None and self._sa_key is not None and self._sa_pub is not None
        assert self._front_proxy_ca is not None and self._front_proxy_client is not None
        return [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers={self.etcd_url}",
            "--etcd-compaction-interval=0",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.apiserver_port}",
            f"--cert-dir={self.workdir / 'apiserver-cert-dir'}",
            f"--tls-cert-file={self._serving.cert_file}",
            f"--tls-private-key-file={self._serving.key_file}",
            f"--client-ca-file={self.ca_file}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={self._sa_pub}",
            f"--service-account-signing-key-file={self._sa_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--disable-admission-plugins=ServiceAccount",
            f"--requestheader-client-ca-file={self._front_proxy_ca.cert_file}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self._front_proxy_client.cert_file}",
            f"--proxy-client-key-file={self._front_proxy_client.key_file}",
            "--allow-privileged=true",
            # The "kubernetes" Service's endpoints would be 127.0.0.1, which Endpoints validation refuses.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            # Gang scheduling's API (Workloads, PodGroups, pod.spec.schedulingGroup): beta in v1.37,
            # off by default, and a beta API is served only when asked for; topology constraints on
            # PodGroups are dropped unless TopologyAwareWorkloadScheduling is on.
            f"--feature-gates={FEATURE_GATES}",
            "--runtime-config=scheduling.k8s.io/v1beta1=true",
            "--v=1",
        ]

    def _start_apiserver(self, *, new_port: bool) -> None:
        attempts = _PORT_RETRIES if new_port else 1
        for attempt in range(1, attempts + 1):
            if new_port:
                self.apiserver_port = free_port()
            self.apiserver = ManagedProcess("kube-apiserver", self._apiserver_argv(), self.apiserver_log)
            self.apiserver.start()
            try:
                self._wait_ready()
                return
            except ProcessDied:
                if attempt < attempts and "address already in use" in self.apiserver.log_tail():
                    continue
                raise

    def _wait_ready(self) -> None:
        assert self.apiserver is not None and self.etcd is not None
        if self._probe is None or not self._probe.server.endswith(f":{self.apiserver_port}"):
            self._probe = Kube(self.server, self.ca_file, cert_file=self.admin_cert.cert_file, key_file=self.admin_cert.key_file, timeout=5)
        probe = self._probe

        def ready() -> bool:
            status, _ = probe.request_raw("GET", "/readyz")
            return status == 200

        try:
            wait_until(
                ready, timeout=self.start_timeout, what=f"kube-apiserver /readyz on {self.server}", watch=[self.apiserver, self.etcd]
            )
        except StartupTimeout as e:
            # Show the verbose readiness checks: they name the post-start hook that is stuck.
            try:
                status, body = probe.request_raw("GET", "/readyz", params={"verbose": "true"})
                raise StartupTimeout(f"{e}\n--- /readyz?verbose (HTTP {status}):\n{body.decode(errors='replace')}") from e
            except OSError:
                raise e from None

    def _wait_for_system_namespaces(self) -> None:
        assert self._probe is not None and self.apiserver is not None
        probe = self._probe

        def present() -> bool:
            return all(probe.request_raw("GET", f"/api/v1/namespaces/{ns}")[0] == 200 for ns in ("default", "kube-system"))

        wait_until(present, timeout=self.start_timeout, what="the default and kube-system namespaces", watch=[self.apiserver])

    def _write_kubeconfigs(self) -> None:
        admin = self.admin_cert
        write_kubeconfig(self.admin_kubeconfig, self.server, _cert_data(admin), ca_pem=self.ca.cert_pem, user_name=ADMIN_USER)
        write_kubeconfig(
            self.admin_kubeconfig_files,
            self.server,
            {"client-certificate": str(admin.cert_file), "client-key": str(admin.key_file)},
            ca_file=self.ca_file,
            user_name=ADMIN_USER,
        )


def _cert_data(pair: CertPair) -> dict[str, object]:
    return {
        "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
        "client-key-data": base64.b64encode(pair.key_pem).decode(),
    }


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()
