"""The integration tests' control plane: kubesched.tools.devcluster's (etcd and kube-apiserver on
127.0.0.1, a throw-away PKI), with the API groups and gates the tests need, and what only tests do
to it.

    cp = ControlPlane().start()
    try:
        kube = cp.kube()                    # admin REST helper (client certificate, system:masters)
        ...                                 # cp.server, cp.ca_file, cp.admin_kubeconfig
        cp.compact_etcd(); cp.restart_apiserver()
    finally:
        cp.stop()

Namespaces are finalized by the harness, and pods are deleted with a zero grace period (no kubelet
would ever confirm a graceful deletion).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kubesched.tools.devcluster import controlplane as core
from kubesched.tools.devcluster.binaries import Binaries

from .rest import Kube

START_TIMEOUT = core.START_TIMEOUT
# Feature gates of the control plane's components (kube-apiserver, and kube-scheduler as a peer).
FEATURE_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
# kube-scheduler's, unless a test asks for others (TopologyAwareWorkloadScheduling changes how
# every pod group is placed: only the tests of that placement turn it on).
SCHEDULER_FEATURE_GATES = "GenericWorkload=true"
# Gang scheduling's API (Workloads, PodGroups, pod.spec.schedulingGroup): beta in v1.37, off by
# default, and a beta API is served only when asked for; topology constraints on PodGroups are
# dropped unless TopologyAwareWorkloadScheduling is on.
APISERVER = core.ApiserverSettings(feature_gates=FEATURE_GATES, runtime_config="scheduling.k8s.io/v1beta1=true")


class EtcdError(RuntimeError):
    """etcd's JSON gateway refused a request."""


class ControlPlane(core.ControlPlane):
    """etcd + kube-apiserver, started by start(), always stopped by stop() (or the atexit sweep)."""

    def __init__(self, binaries: Binaries | None = None, workdir: Path | None = None, *, start_timeout: float = START_TIMEOUT) -> None:
        super().__init__(binaries, workdir, settings=APISERVER, start_timeout=start_timeout)

    def start(self) -> ControlPlane:
        super().start()
        return self

    def __enter__(self) -> ControlPlane:
        return self.start()

    def kube(self) -> Kube:
        """A new admin REST helper."""
        return Kube(self.server, self.ca_file, cert_file=self.admin_cert.cert_file, key_file=self.admin_cert.key_file)

    def kubeconfig_for_user(self, user: str, groups: list[str] | tuple[str, ...] = (), path: Path | None = None) -> Path:
        """A kubeconfig authenticating with a fresh client certificate for `user` in `groups`."""
        stem = "user-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in user)
        pair = self.ca.client_cert(stem, user, groups)
        return core.write_kubeconfig(
            path or self.workdir / f"{stem}.kubeconfig", self.server, core.cert_data(pair), ca_pem=self.ca.cert_pem, user_name=user
        )

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port, certificates and etcd; wait for /readyz.

        Its watch cache starts empty, at etcd's current revision: watches from older resourceVersions
        that the cache cannot serve are answered 410 Gone.
        """
        if self.apiserver is None:
            raise RuntimeError("the control plane is not started")
        self.apiserver.stop(timeout=30.0)
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


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()
