"""A throw-away control plane: etcd and kube-apiserver on 127.0.0.1, with a fresh PKI and data dir.

    cp = ControlPlane(find_binaries(), workdir, settings=ApiserverSettings(...)).start()
    try:
        ...                                 # cp.server, cp.ca_file, cp.admin_kubeconfig, cp.admin_cert
    finally:
        cp.stop()

`kubesched bench --scheduler-perf ... --kube` runs each workload on one of these (a fresh one per
run: a new etcd data dir is how runs are isolated), and the integration tests' harness builds its
control plane on it. Everything (certificates, etcd data, kubeconfigs, one log file per process)
lives in `workdir`. Nothing listens anywhere but 127.0.0.1. No controller-manager runs: nodes keep
the taints and conditions they are given, and pods are deleted with a zero grace period (no kubelet
would ever confirm a graceful deletion).
"""

from __future__ import annotations

import atexit
import base64
import json
import shutil
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from kubesched.tools.devcluster.binaries import Binaries, find_binaries
from kubesched.tools.devcluster.https import https_get
from kubesched.tools.devcluster.pki import CertificateAuthority, CertPair, service_account_keys
from kubesched.tools.devcluster.procs import ManagedProcess, ProcessDied, StartupTimeout, free_port, wait_until

START_TIMEOUT = 60.0
ADMIN_USER = "kubesched-admin"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# How often a start is tried again when a port picked as free was taken before the process bound it.
_PORT_RETRIES = 3


@dataclass(frozen=True)
class ApiserverSettings:
    """What differs between the control planes of the tests and of the bench."""

    feature_gates: str = ""  # --feature-gates, as kube takes them ("A=true,B=false")
    runtime_config: str = ""  # --runtime-config ("scheduling.k8s.io/v1beta1=true")
    disable_admission_plugins: str = "ServiceAccount"  # no service-account controller runs
    authorization_mode: str = "Node,RBAC"
    request_timeout: str = ""  # a Go duration; "" keeps kube-apiserver's (1m0s)
    extra_args: tuple[str, ...] = ()


def write_kubeconfig(
    path: Path, server: str, user: dict[str, Any], *, ca_pem: bytes | None = None, ca_file: Path | None = None,
    user_name: str = "kubesched-test",
) -> Path:
    """A kubeconfig with one cluster/user/context; `user` is the kubeconfig `user:` mapping. The CA is
    embedded (`ca_pem`) or referenced by path (`ca_file`)."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    elif ca_file is not None:
        cluster["certificate-authority"] = str(ca_file)
    else:
        raise ValueError("give ca_pem or ca_file")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubesched-test", "cluster": cluster}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": "kubesched-test", "context": {"cluster": "kubesched-test", "user": user_name}}],
        "current-context": "kubesched-test",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def cert_data(pair: CertPair) -> dict[str, object]:
    """A kubeconfig `user:` with the client certificate embedded."""
    return {
        "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
        "client-key-data": base64.b64encode(pair.key_pem).decode(),
    }


class ControlPlane:
    """etcd + kube-apiserver, started by start(), always stopped by stop() (or the atexit sweep)."""

    def __init__(self, binaries: Binaries | None = None, workdir: Path | None = None, *,
                 settings: ApiserverSettings | None = None, start_timeout: float = START_TIMEOUT) -> None:
        self.binaries = binaries or find_binaries()
        self.settings = settings or ApiserverSettings()
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

    def get(self, path: str, params: dict[str, str] | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
        """(status, body) of a GET on the apiserver as the admin."""
        cert = self.admin_cert
        return https_get(self.server + path, ca_file=self.ca_file, client_cert=(cert.cert_file, cert.key_file), params=params,
                         timeout=timeout)

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
        for proc in (self.apiserver, self.etcd):
            if proc is not None:
                proc.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def processes(self) -> list[ManagedProcess]:
        return [p for p in (self.etcd, self.apiserver) if p is not None]

    # -- internals ----------------------------------------------------------------------------

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

    def apiserver_argv(self) -> list[str]:
        """kube-apiserver's command line."""
        assert self._serving is not None and self._sa_key is not None and self._sa_pub is not None
        assert self._front_proxy_ca is not None and self._front_proxy_client is not None
        s = self.settings
        argv = [
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
            f"--authorization-mode={s.authorization_mode}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={self._sa_pub}",
            f"--service-account-signing-key-file={self._sa_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--disable-admission-plugins={s.disable_admission_plugins}",
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
        ]
        if s.feature_gates:
            argv.append(f"--feature-gates={s.feature_gates}")
        if s.runtime_config:
            argv.append(f"--runtime-config={s.runtime_config}")
        if s.request_timeout:
            argv.append(f"--request-timeout={s.request_timeout}")
        return [*argv, *s.extra_args, "--v=1"]

    def _start_apiserver(self, *, new_port: bool) -> None:
        attempts = _PORT_RETRIES if new_port else 1
        for attempt in range(1, attempts + 1):
            if new_port:
                self.apiserver_port = free_port()
            self.apiserver = ManagedProcess("kube-apiserver", self.apiserver_argv(), self.apiserver_log)
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
        try:
            wait_until(
                lambda: self.get("/readyz")[0] == 200, timeout=self.start_timeout, what=f"kube-apiserver /readyz on {self.server}",
                watch=[self.apiserver, self.etcd],
            )
        except StartupTimeout as e:
            # Show the verbose readiness checks: they name the post-start hook that is stuck.
            try:
                status, body = self.get("/readyz", {"verbose": "true"})
            except OSError:
                raise e from None
            raise StartupTimeout(f"{e}\n--- /readyz?verbose (HTTP {status}):\n{body.decode(errors='replace')}") from e

    def _wait_for_system_namespaces(self) -> None:
        assert self.apiserver is not None

        def present() -> bool:
            return all(self.get(f"/api/v1/namespaces/{ns}")[0] == 200 for ns in ("default", "kube-system"))

        wait_until(present, timeout=self.start_timeout, what="the default and kube-system namespaces", watch=[self.apiserver])

    def _write_kubeconfigs(self) -> None:
        admin = self.admin_cert
        write_kubeconfig(self.admin_kubeconfig, self.server, cert_data(admin), ca_pem=self.ca.cert_pem, user_name=ADMIN_USER)
        write_kubeconfig(
            self.admin_kubeconfig_files,
            self.server,
            {"client-certificate": str(admin.cert_file), "client-key": str(admin.key_file)},
            ca_file=self.ca_file,
            user_name=ADMIN_USER,
        )
