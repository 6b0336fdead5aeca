"""A small synchronous Kubernetes REST client for test setup and assertions (stdlib only).

Deliberately independent of kubesched's own kube backend: what the tests check must not be read
through the code under test.
"""

from __future__ import annotations

import builtins
import contextlib
import http.client
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from kubesched.tools.devcluster.controlplane import write_kubeconfig

JSON = dict[str, Any]

# kind -> (group/version path prefix, plural, namespaced)
KINDS: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Pod": ("/api/v1", "pods", True),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Secret": ("/api/v1", "secrets", True),
    "Service": ("/api/v1", "services", True),
    "Event": ("/apis/events.k8s.io/v1", "events", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
}

FIELD_MANAGER = "kubesched-tests"


class ApiError(RuntimeError):
    """A non-2xx answer. `status` is the HTTP code; `body` the decoded Status object when there is one."""

    def __init__(self, method: str, path: str, status: int, body: JSON | str) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        if isinstance(body, dict):
            self.reason = str(body.get("reason", ""))
            self.message = str(body.get("message", ""))
        else:
            self.reason = ""
            self.message = body[:500]
        super().__init__(f"{method} {path}: HTTP {status} {self.reason}: {self.message}")


def collection_path(kind: str, namespace: str | None = None) -> str:
    try:
        prefix, plural, namespaced = KINDS[kind]
    except KeyError:
        raise ValueError(f"kind {kind!r} is not in harness.rest.KINDS; add it there") from None
    if namespaced:
        if not namespace:
            raise ValueError(f"{kind} is namespaced: give metadata.namespace")
        return f"{prefix}/namespaces/{namespace}/{plural}"
    return f"{prefix}/{plural}"


def object_path(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    return f"{collection_path(obj['kind'], meta.get('namespace'))}/{meta['name']}"


class Kube:
    """Admin (client certificate) or bearer-token access to one apiserver.

    Paths are absolute API paths (``/api/v1/nodes``). Answers are decoded JSON dicts. One keep-alive
    connection is reused and re-opened transparently when the server closed it (an apiserver
    restart, an idle timeout).
    """

    def __init__(
        self,
        server: str,
        ca_file: str | Path,
        *,
        cert_file: str | Path | None = None,
        key_file: str | Path | None = None,
        token: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme != "https" or not url.hostname:
            raise ValueError(f"server must be an https URL, got {server!r}")
        self.server = server.rstrip("/")
        self.host = url.hostname
        self.port = url.port or 443
        self.ca_file = Path(ca_file)
        self.cert_file = Path(cert_file) if cert_file else None
        self.key_file = Path(key_file) if key_file else None
        self.token = token
        self.timeout = timeout
        self.ssl_context = ssl.create_default_context(cafile=str(ca_file))
        if cert_file:
            self.ssl_context.load_cert_chain(str(cert_file), str(key_file) if key_file else None)
        self._conn: http.client.HTTPSConnection | None = None
        self._lock = threading.Lock()

    # -- plumbing ---------------------------------------------------------------------------

    def with_token(self, token: str) -> Kube:
        """The same server, authenticated by a bearer token instead."""
        return Kube(self.server, self.ca_file, token=token, timeout=self.timeout)

    def _new_connection(self, timeout: float | None = None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.ssl_context, timeout=timeout or self.timeout)

    def _headers(self, content_type: str | None, accept: str = "application/json") -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": "kubesched-integration-tests"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    @staticmethod
    def _url(path: str, params: dict[str, Any] | None) -> str:
        if not path.startswith("/"):
            raise ValueError(f"API paths start with '/': {path!r}")
        if params:
            query = urllib.parse.urlencode({k: _param(v) for k, v in params.items() if v is not None})
            return f"{path}{'&' if '?' in path else '?'}{query}"
        return path

    def request_raw(
        self,
        method: str,
        path: str,
        body: JSON | bytes | None = None,
        *,
        content_type: str | None = "application/json",
        params: dict[str, Any] | None = None,
    ) -> tuple[int, bytes]:
        """(status, body bytes) of one request, whatever the status."""
        url = self._url(path, params)
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = self._headers(content_type if data is not None else None)
        with self._lock:
            for attempt in (1, 2):
                reused = self._conn is not None
                if self._conn is None:
                    self._conn = self._new_connection()
                try:
                    self._conn.request(method, url, body=data, headers=headers)
                    resp = self._conn.getresponse()
                    payload = resp.read()
                except (
                    http.client.RemoteDisconnected,
                    ConnectionResetError,
                    BrokenPipeError,
                    http.client.CannotSendRequest,
                    ssl.SSLEOFError,
                ):
                    # A kept-alive connection the server closed meanwhile: open a new one, once.
                    self._close_locked()
                    if reused and attempt == 1:
                        continue
                    raise
                except Exception:
                    self._close_locked()
                    raise
                if resp.will_close:
                    self._close_locked()
                return resp.status, payload
        raise AssertionError("unreachable")

    def request(
        self,
        method: str,
        path: str,
        body: JSON | bytes | None = None,
        *,
        content_type: str | None = "application/json",
        params: dict[str, Any] | None = None,
    ) -> JSON:
        """The decoded answer of one request; ApiError unless 2xx."""
        status, payload = self.request_raw(method, path, body, content_type=content_type, params=params)
        decoded: JSON | str
        try:
            decoded = json.loads(payload) if payload else {}
        except ValueError:
            decoded = payload.decode(errors="replace")
        if not 200 <= status < 300:
            raise ApiError(method, path, status, decoded)
        if not isinstance(decoded, dict):
            raise ApiError(method, path, status, f"not a JSON object: {decoded!r}"[:500])
        return decoded

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    # -- verbs ------------------------------------------------------------------------------

    def get(self, path: str, params: dict[str, Any] | None = None) -> JSON:
        return self.request("GET", path, params=params)

    def get_or_none(self, path: str) -> JSON | None:
        try:
            return self.get(path)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, path: str, params: dict[str, Any] | None = None, *, page_size: int = 500) -> builtins.list[JSON]:
        """All items of a collection, following `continue` tokens."""
        items: builtins.list[JSON] = []
        query: dict[str, Any] = {"limit": page_size, **(params or {})}
        while True:
            page = self.get(path, query)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query = {**query, "continue": token}

    def create(self, path: str, body: JSON, params: dict[str, Any] | None = None) -> JSON:
        return self.request("POST", path, body, params=params)

    def replace(self, path: str, body: JSON) -> JSON:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: JSON | builtins.list[Any], content_type: str = "application/merge-patch+json") -> JSON:
        return self.request("PATCH", path, json.dumps(body).encode(), content_type=content_type)

    def delete(self, path: str, *, grace_period_seconds: int | None = None, missing_ok: bool = False, **params: Any) -> JSON:
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds  # type: ignore[assignment]
        try:
            return self.request("DELETE", path, body, params=params or None)
        except ApiError as e:
            if missing_ok and e.status == 404:
                return {}
            raise

    def apply_manifest(self, obj: JSON, *, force: bool = True) -> JSON:
        """Server-side apply of one object (create or update); the path comes from kind and metadata."""
        if "apiVersion" not in obj or "kind" not in obj:
            raise ValueError("a manifest needs apiVersion and kind")
        return self.request(
            "PATCH",
            object_path(obj),
            json.dumps(obj).encode(),
            content_type="application/apply-patch+yaml",
            params={"fieldManager": FIELD_MANAGER, "force": "true" if force else None},
        )

    def apply_manifests(self, docs: builtins.list[JSON] | str | Path) -> builtins.list[JSON]:
        """apply_manifest for each object of a list, a YAML string, or a YAML file (`---` separated)."""
        if isinstance(docs, Path):
            docs = docs.read_text()
        objs = [d for d in yaml.safe_load_all(docs) if d] if isinstance(docs, str) else docs
        return [self.apply_manifest(o) for o in objs]

    def watch(self, path: str, params: dict[str, Any] | None = None, *, timeout: float = 30.0) -> Iterator[JSON]:
        """The events of a watch (``?watch=1`` added), on a connection of its own, until the server ends it
        or `timeout` seconds pass without data. ApiError if the watch request itself is refused (e.g. 410)."""
        conn = self._new_connection(timeout=timeout)
        try:
            conn.request("GET", self._url(path, {**(params or {}), "watch": "1"}), headers=self._headers(None))
            resp = conn.getresponse()
            if resp.status != 200:
                payload = resp.read()
                try:
                    body: JSON | str = json.loads(payload)
                except ValueError:
                    body = payload.decode(errors="replace")
                raise ApiError("GET", path, resp.status, body)
            while True:
                try:
                    line = resp.readline()
                except TimeoutError:
                    return
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()

    # -- identities -------------------------------------------------------------------------

    def token_for(self, namespace: str, serviceaccount: str, seconds: int = 3600, audiences: builtins.list[str] | None = None) -> str:
        """A bound service-account token from the TokenRequest API (expirationSeconds >= 600)."""
        spec: JSON = {"expirationSeconds": seconds}
        if audiences:
            spec["audiences"] = audiences
        tr = self.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{serviceaccount}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        return str(tr["status"]["token"])

    def kubeconfig_for_token(self, token: str, path: str | Path) -> Path:
        """A kubeconfig for this server that authenticates with the bearer token."""
        return write_kubeconfig(Path(path), self.server, {"token": token}, ca_pem=self.ca_file.read_bytes(), user_name="token-user")

    def whoami(self) -> JSON:
        """status.userInfo of a SelfSubjectReview: who the apiserver thinks this client is."""
        review = self.create(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        )
        return dict(review["status"]["userInfo"])

    # -- waiting ----------------------------------------------------------------------------

    def wait_for(self, path: str, predicate: Callable[[JSON], bool], *, timeout: float = 30.0, interval: float = 0.1) -> JSON:
        """GET `path` until `predicate(obj)` holds; AssertionError with the last state on timeout."""
        deadline = time.monotonic() + timeout
        last: JSON | None = None
        while True:
            last = self.get_or_none(path)
            if last is not None and predicate(last):
                return last
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout} s waiting on {path}; last state: {json.dumps(last)[:2000]}")
            time.sleep(interval)


def _param(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
