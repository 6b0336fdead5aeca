"""Where the Kubernetes API is and how to authenticate to it.

Three sources, as kubectl and client-go read them:

- a kubeconfig file (`load_kubeconfig`): the context's cluster (server, CA, TLS server name,
  insecure-skip-tls-verify) and user (client certificate, token, tokenFile, exec credential plugin);
- the in-cluster service account (`load_incluster`): KUBERNETES_SERVICE_HOST/PORT and the projected
  token, CA and namespace files;
- `load_connection` picks one of them the way kube-scheduler does.

Every problem is one `KubeConfigError` whose message names the file and the context, cluster or user
and the field at fault.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubesched.api.yamlio import InputFileError, YamlError, load_one, read_text

__all__ = [
    "EXEC_API_VERSIONS",
    "SERVICE_ACCOUNT_DIR",
    "ConnectionConfig",
    "ExecCredential",
    "ExecProvider",
    "KubeConfigError",
    "default_kubeconfig_path",
    "load_connection",
    "load_incluster",
    "load_kubeconfig",
]

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
# Projected service-account tokens rotate; client-go re-reads the file once a minute.
TOKEN_FILE_REFRESH_SECONDS = 60.0
# Largest kubeconfig read (kubectl's merged configs with many embedded certificates stay far below).
MAX_KUBECONFIG_BYTES = 16 * 2**20
# A credential this close to its expiry is not used any more.
EXEC_EXPIRY_MARGIN_SECONDS = 5.0


class KubeConfigError(ValueError):
    """A kubeconfig, in-cluster or exec-plugin problem; the message names the source and the field."""


def _q(value: Any, limit: int = 100) -> str:
    """A user's value in a message: repr (one line, control characters escaped), cut to `limit`."""
    text = repr(value) if isinstance(value, str) else type(value).__name__ if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


# --- client certificates ---------------------------------------------------------------------------


def load_cert_chain_data(ctx: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Load a client certificate and key given as PEM bytes into `ctx`.

    `SSLContext.load_cert_chain` only reads files. On Linux the PEM goes through an anonymous memory
    file (memfd, never on disk); elsewhere through a private (0600) temporary file removed at once.
    Raises ssl.SSLError when the data is not a valid certificate/key pair.
    """
    data = cert_pem.rstrip(b"\n") + b"\n" + key_pem
    memfd_create: Callable[..., int] | None = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fd = -1
        try:
            fd = memfd_create("kubesched-client-cert")
            _write_all(fd, data)
            ctx.load_cert_chain(f"/proc/self/fd/{fd}")
            return
        except OSError as exc:
            if isinstance(exc, ssl.SSLError):
                raise
            log.debug("memfd for the client certificate failed (%s); using a private temporary file", exc)
        finally:
            if fd >= 0:
                os.close(fd)
    fd, name = tempfile.mkstemp(prefix="kubesched-client-cert-")  # mode 0600
    try:
        _write_all(fd, data)
        os.close(fd)
        fd = -1
        ctx.load_cert_chain(name)
    finally:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


# --- exec credential plugins -------------------------------------------------------------------------


@dataclass
class ExecCredential:
    """What an exec plugin printed: a bearer token or a client certificate, with an optional expiry."""

    token: str | None = None
    client_certificate_data: str | None = None
    client_key_data: str | None = None
    expiration: float | None = None  # wall clock, seconds since the epoch


class ExecProvider:
    """A client.authentication.k8s.io exec credential plugin (v1 or v1beta1).

    The plugin runs without stdin and prints an ExecCredential JSON document. Its credential is cached
    until its expirationTimestamp (or for ever without one); `invalidate()` (called when the server
    answers 401) makes the next call run the plugin again. Concurrent callers share one run.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        api_version: str = "client.authentication.k8s.io/v1",
        *,
        source: str = "exec plugin",
        install_hint: str = "",
        cluster_info: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.api_version = api_version
        self.source = source
        self.install_hint = install_hint
        self.cluster_info = dict(cluster_info) if cluster_info is not None else None
        self.timeout = timeout
        self.runs = 0
        self._clock = clock
        self._cached: ExecCredential | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    def invalidate(self) -> None:
        self._cached = None

    def _valid(self, cred: ExecCredential | None) -> bool:
        if cred is None:
            return False
        return cred.expiration is None or self._clock() < cred.expiration - EXEC_EXPIRY_MARGIN_SECONDS

    def _get_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        return self._lock

    async def credential(self, *, refresh: bool = False) -> ExecCredential:
        """The cached credential, or a new one from the plugin when there is none, it expired, or `refresh`."""
        seen = self._cached
        if not refresh and seen is not None and self._valid(seen):
            return seen
        async with self._get_lock():
            # Another caller may have run the plugin while this one waited for the lock.
            current = self._cached
            if current is not None and self._valid(current) and (not refresh or current is not seen):
                return current
            self._cached = await self._run()
            return self._cached

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster_info is not None:
            spec["cluster"] = self.cluster_info
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    async def _run(self) -> ExecCredential:
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self._exec_info()}
        hint = f" ({self.install_hint.strip()})" if self.install_hint.strip() else ""
        try:
            proc = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
        except FileNotFoundError:
            raise KubeConfigError(f"{self.source}: exec command {self.command!r} was not found{hint}") from None
        except OSError as exc:
            raise KubeConfigError(f"{self.source}: exec command {self.command!r} could not be started: {exc}{hint}") from None
        self.runs += 1
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await proc.communicate()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise KubeConfigError(f"{self.source}: exec command {self.command!r} did not finish within {self.timeout:g}s") from None
        stderr = err.decode(errors="replace").strip()
        if proc.returncode != 0:
            detail = f": {stderr[-500:]}" if stderr else ""
            raise KubeConfigError(f"{self.source}: exec command {self.command!r} exited with code {proc.returncode}{detail}")
        if stderr:
            log.debug("%s: exec plugin stderr: %s", self.source, stderr[-500:])
        return self._parse(out)

    def _parse(self, out: bytes) -> ExecCredential:
        what = f"{self.source}: exec command {self.command!r}"
        text = out.decode(errors="replace").strip()
        try:
            doc = json.loads(text)
        except ValueError:
            shown = text[:200] + ("..." if len(text) > 200 else "")
            raise KubeConfigError(f"{what} did not print an ExecCredential JSON document (got {shown!r})") from None
        if not isinstance(doc, dict):
            raise KubeConfigError(f"{what} printed JSON that is not an ExecCredential object")
        if doc.get("kind") != "ExecCredential":
            raise KubeConfigError(f"{what} printed kind {doc.get('kind')!r}, expected 'ExecCredential'")
        if doc.get("apiVersion") != self.api_version:
            raise KubeConfigError(f"{what} printed apiVersion {doc.get('apiVersion')!r}, expected {self.api_version!r} as configured")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise KubeConfigError(f"{what} printed an ExecCredential without status")
        token = status.get("token")
        cert = status.get("clientCertificateData")
        key = status.get("clientKeyData")
        for name, value in (("token", token), ("clientCertificateData", cert), ("clientKeyData", key)):
            if value is not None and not isinstance(value, str):
                raise KubeConfigError(f"{what}: status.{name} is not a string")
        if bool(cert) != bool(key):
            raise KubeConfigError(f"{what}: status.clientCertificateData and status.clientKeyData must be given together")
        if not token and not cert:
            raise KubeConfigError(f"{what}: the ExecCredential has neither status.token nor status.clientCertificateData/clientKeyData")
        expiration: float | None = None
        stamp = status.get("expirationTimestamp")
        if stamp is not None:
            try:
                expiration = datetime.fromisoformat(str(stamp)).timestamp()
            except ValueError:
                raise KubeConfigError(f"{what}: status.expirationTimestamp {stamp!r} is not an RFC 3339 time") from None
        return ExecCredential(token=token or None, client_certificate_data=cert or None, client_key_data=key or None, expiration=expiration)


# --- the connection --------------------------------------------------------------------------------


@dataclass
class ConnectionConfig:
    """Everything an ApiClient needs: the server URL, TLS settings and how to authenticate.

    `ssl` is an SSLContext for https servers (CA, client certificate), or False for plain http.
    Authentication is a static `token`, a `token_file` (re-read at most once a minute; it wins over
    `token` as in client-go), an exec plugin, or the client certificate already in `ssl`.
    """

    server: str
    ssl: ssl.SSLContext | bool
    token: str | None = None
    token_file: str | None = None
    exec_provider: ExecProvider | None = None
    namespace: str = "default"
    tls_server_name: str | None = None
    proxy_url: str | None = None
    source: str = ""
    # The kubeconfig's client certificate and key (PEM), also loaded into `ssl`: a client of
    # another server (the leader's debug endpoint) presents the same identity.
    client_cert: tuple[bytes, bytes] | None = None
    _file_token: str | None = field(default=None, init=False, repr=False)
    _file_token_read_at: float | None = field(default=None, init=False, repr=False)
    _exec_cert: tuple[str, str] | None = field(default=None, init=False, repr=False)

    async def auth_header(self) -> str | None:
        """The Authorization header value ("Bearer ..."), or None for client-certificate (or no) auth."""
        if self.exec_provider is not None:
            cred = await self.exec_provider.credential()
            if cred.token:
                return f"Bearer {cred.token}"
            if cred.client_certificate_data and cred.client_key_data:
                self._use_exec_certificate(cred.client_certificate_data, cred.client_key_data)
            return None
        if self.token_file:
            token = self._read_token_file()
            if token:
                return f"Bearer {token}"
        if self.token:
            return f"Bearer {self.token}"
        return None

    async def refresh_auth(self) -> bool:
        """Forget cached credentials after a 401; True when a retry may use different credentials."""
        if self.exec_provider is not None:
            self.exec_provider.invalidate()
            return True
        if self.token_file:
            self._file_token_read_at = None
            return True
        return False

    def _read_token_file(self) -> str | None:
        assert self.token_file is not None
        now = time.monotonic()
        if self._file_token_read_at is not None and now - self._file_token_read_at < TOKEN_FILE_REFRESH_SECONDS:
            return self._file_token
        try:
            token = Path(self.token_file).read_text().strip()
        except OSError as exc:
            if self._file_token is None and not self.token:
                raise KubeConfigError(f"{self.source or self.server}: token file {self.token_file}: {exc.strerror or exc}") from None
            log.warning("cannot re-read token file %s (%s); keeping the last token", self.token_file, exc)
            self._file_token_read_at = now
            return self._file_token
        self._file_token = token or self._file_token
        self._file_token_read_at = now
        return self._file_token

    def _use_exec_certificate(self, cert: str, key: str) -> None:
        if self._exec_cert == (cert, key):
            return
        if not isinstance(self.ssl, ssl.SSLContext):
            where = self.source or self.server
            raise KubeConfigError(f"{where}: the exec plugin returned a client certificate but the server is not https")
        try:
            load_cert_chain_data(self.ssl, cert.encode(), key.encode())
        except (ssl.SSLError, OSError) as exc:
            raise KubeConfigError(f"{self.source or self.server}: the exec plugin's client certificate/key do not load: {exc}") from None
        self._exec_cert = (cert, key)


# --- kubeconfig ------------------------------------------------------------------------------------


def default_kubeconfig_path() -> Path:
    """$KUBECONFIG's first existing file (no merging), else ~/.kube/config."""
    env = os.environ.get("KUBECONFIG", "")
    entries = [e for e in env.split(os.pathsep) if e]
    if entries:
        for entry in entries:
            candidate = Path(entry).expanduser()
            if candidate.is_file():
                return candidate
        raise KubeConfigError(f"KUBECONFIG={env}: none of its files exists")
    return Path.home() / ".kube" / "config"


def load_kubeconfig(path: str | None = None, context: str | None = None) -> ConnectionConfig:
    """Read a kubeconfig: `path`, else $KUBECONFIG, else ~/.kube/config; `context`, else current-context."""
    file = Path(path).expanduser() if path else default_kubeconfig_path()
    try:
        # Bounded: a kubeconfig is kilobytes (certificates included); /dev/zero must not fill memory.
        text = read_text(file, MAX_KUBECONFIG_BYTES, "kubeconfig")
    except InputFileError as exc:
        raise KubeConfigError(f"{file}: {exc}") from None
    return _KubeConfig(file, text).connection(context)


def _b64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise KubeConfigError(f"{where} must be a base64 string")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise KubeConfigError(f"{where} is not valid base64") from None


class _KubeConfig:
    def __init__(self, file: Path, text: str) -> None:
        self.file = file
        self.dir = file.resolve().parent
        try:
            # The shared bounded reader: duplicate keys refused, alias expansion and depth limited.
            doc = load_one(text)
        except YamlError as exc:
            raise KubeConfigError(f"{file}: {exc.located()}") from None
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise KubeConfigError(f"{file}: a kubeconfig must be a mapping (apiVersion: v1, kind: Config)")
        self.doc: dict[str, Any] = doc

    def _named(self, section: str, inner: str) -> dict[str, dict[str, Any]]:
        items = self.doc.get(section) or []
        if not isinstance(items, list):
            raise KubeConfigError(f"{self.file}: {section} must be a list")
        out: dict[str, dict[str, Any]] = {}
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise KubeConfigError(f"{self.file}: {section}[{i}] needs a name")
            body = item.get(inner) or {}
            if not isinstance(body, dict):
                raise KubeConfigError(f"{self.file}: {section}[{i}] ({_q(item['name'])}): {inner} must be a mapping")
            out.setdefault(item["name"], body)  # the first definition wins, as in client-go's merge
        return out

    def _str(self, body: Mapping[str, Any], key: str, where: str) -> str | None:
        value = body.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise KubeConfigError(f"{where}: {key} must be a string, got {_q(value)}")
        return value

    def _path(self, value: str) -> str:
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else self.dir / p)

    def _read(self, value: str, where: str, key: str) -> bytes:
        resolved = self._path(value)
        try:
            return Path(resolved).read_bytes()
        except OSError as exc:
            raise KubeConfigError(f"{where}: {key} {resolved}: {exc.strerror or exc}") from None

    def connection(self, context: str | None) -> ConnectionConfig:
        f = self.file
        name = context or self.doc.get("current-context")
        if not name:
            raise KubeConfigError(f"{f}: no context given and current-context is not set")
        if not isinstance(name, str):
            raise KubeConfigError(f"{f}: current-context must be a string, got {_q(name)}")
        contexts = self._named("contexts", "context")
        if name not in contexts:
            known = ", ".join(sorted(contexts)) or "none"
            what = "context" if context else "current-context"
            raise KubeConfigError(f"{f}: {what} {_q(name)} is not defined (contexts: {_q(known, 300)[1:-1]})")
        ctx = contexts[name]
        cwhere = f"{f}: context {_q(name)}"
        cluster_name = self._str(ctx, "cluster", cwhere)
        if not cluster_name:
            raise KubeConfigError(f"{cwhere}: cluster is not set")
        clusters = self._named("clusters", "cluster")
        if cluster_name not in clusters:
            raise KubeConfigError(f"{cwhere}: cluster {_q(cluster_name)} is not defined in clusters")
        user_name = self._str(ctx, "user", cwhere)
        user: dict[str, Any] = {}
        if user_name:
            users = self._named("users", "user")
            if user_name not in users:
                raise KubeConfigError(f"{cwhere}: user {_q(user_name)} is not defined in users")
            user = users[user_name]
        namespace = self._str(ctx, "namespace", cwhere) or "default"

        cluster = clusters[cluster_name]
        where = f"{f}: cluster {_q(cluster_name)}"
        server = self._str(cluster, "server", where)
        if not server:
            raise KubeConfigError(f"{where}: server is not set")
        parts = _url(server, where, "server")
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise KubeConfigError(f"{where}: server {_q(server)} is not an http(s) URL")
        tls_server_name = self._str(cluster, "tls-server-name", where)
        proxy_url = self._str(cluster, "proxy-url", where)
        if proxy_url and _url(proxy_url, where, "proxy-url").scheme not in ("http", "https"):
            raise KubeConfigError(f"{where}: proxy-url {_q(proxy_url)}: only http(s) proxies are supported")
        insecure = cluster.get("insecure-skip-tls-verify", False)
        if not isinstance(insecure, bool):
            raise KubeConfigError(f"{where}: insecure-skip-tls-verify must be true or false")
        ca_data = cluster.get("certificate-authority-data")
        ca_file = self._str(cluster, "certificate-authority", where)
        uwhere = f"{f}: user {_q(user_name)}"
        source = f"{f} (context {_q(name)})"

        ssl_ctx: ssl.SSLContext | bool = False
        client_cert: tuple[bytes, bytes] | None = None
        if parts.scheme == "https":
            if insecure and (ca_data or ca_file):
                raise KubeConfigError(f"{where}: certificate-authority(-data) cannot be combined with insecure-skip-tls-verify")
            ssl_ctx = self._ssl(cluster, where, ca_data, ca_file, insecure)
            client_cert = self._client_cert(ssl_ctx, user, uwhere)
        elif any(user.get(k) for k in ("client-certificate", "client-certificate-data")):
            raise KubeConfigError(f"{uwhere}: a client certificate needs an https server (cluster {_q(cluster_name)} has {_q(server)})")

        token = self._str(user, "token", uwhere)
        token_file = self._str(user, "tokenFile", uwhere)
        if token_file:
            token_file = self._path(token_file)
            self._read(token_file, uwhere, "tokenFile")
        if user.get("auth-provider"):
            provider = user["auth-provider"].get("name", "?") if isinstance(user["auth-provider"], dict) else "?"
            raise KubeConfigError(f"{uwhere}: auth-provider {_q(provider)} is not supported; use an exec credential plugin instead")
        if (user.get("username") or user.get("password")) and not (token or token_file or user.get("exec")):
            raise KubeConfigError(f"{uwhere}: username/password (basic) authentication is not supported by Kubernetes any more")
        exec_provider = None
        if user.get("exec") is not None:
            exec_provider = self._exec(user["exec"], uwhere, source, server, cluster, ca_data, ca_file, tls_server_name, insecure)
        return ConnectionConfig(
            server=server.rstrip("/"),
            ssl=ssl_ctx,
            token=token,
            token_file=token_file,
            exec_provider=exec_provider,
            namespace=namespace,
            tls_server_name=tls_server_name,
            proxy_url=proxy_url,
            source=source,
            client_cert=client_cert,
        )

    def _ssl(self, cluster: Mapping[str, Any], where: str, ca_data: Any, ca_file: str | None, insecure: bool) -> ssl.SSLContext:
        try:
            if ca_data:
                raw = _b64(ca_data, f"{where}: certificate-authority-data")
                if raw.lstrip().startswith(b"-----"):
                    ctx = ssl.create_default_context(cadata=raw.decode("ascii", errors="replace"))
                else:
                    ctx = ssl.create_default_context(cadata=raw)
            elif ca_file:
                pem = self._read(ca_file, where, "certificate-authority")
                if pem.lstrip().startswith(b"-----"):
                    ctx = ssl.create_default_context(cadata=pem.decode("ascii", errors="replace"))
                else:
                    ctx = ssl.create_default_context(cadata=pem)
            else:
                ctx = ssl.create_default_context()
        except KubeConfigError:
            raise
        except (ssl.SSLError, ValueError, TypeError) as exc:  # ValueError/TypeError: cadata that is no certificate at all
            field_name = "certificate-authority-data" if ca_data else "certificate-authority"
            raise KubeConfigError(f"{where}: {field_name} does not hold a valid CA certificate ({exc})") from None
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def _client_cert(self, ctx: ssl.SSLContext, user: Mapping[str, Any], where: str) -> tuple[bytes, bytes] | None:
        cert: bytes | None = None
        key: bytes | None = None
        if user.get("client-certificate-data"):
            cert = _b64(user["client-certificate-data"], f"{where}: client-certificate-data")
        elif (cert_file := self._str(user, "client-certificate", where)) is not None:
            cert = self._read(cert_file, where, "client-certificate")
        if user.get("client-key-data"):
            key = _b64(user["client-key-data"], f"{where}: client-key-data")
        elif (key_file := self._str(user, "client-key", where)) is not None:
            key = self._read(key_file, where, "client-key")
        if cert is None and key is None:
            return None
        if cert is None:
            raise KubeConfigError(f"{where}: client-key(-data) is set but client-certificate(-data) is not")
        if key is None:
            raise KubeConfigError(f"{where}: client-certificate(-data) is set but client-key(-data) is not")
        try:
            load_cert_chain_data(ctx, cert, key)
        except (ssl.SSLError, ValueError) as exc:
            raise KubeConfigError(
                f"{where}: client-certificate(-data)/client-key(-data) do not form a valid PEM certificate and key ({exc})"
            ) from None
        return cert, key

    def _exec(
        self,
        spec: Any,
        where: str,
        source: str,
        server: str,
        cluster: Mapping[str, Any],
        ca_data: Any,
        ca_file: str | None,
        tls_server_name: str | None,
        insecure: bool,
    ) -> ExecProvider:
        where = f"{where}: exec"
        if not isinstance(spec, dict):
            raise KubeConfigError(f"{where} must be a mapping")
        command = self._str(spec, "command", where)
        if not command:
            raise KubeConfigError(f"{where}: command is not set")
        if os.sep in command and not Path(command).is_absolute():
            command = self._path(command)  # client-go resolves only commands that are paths, not names on PATH
        api_version = self._str(spec, "apiVersion", where)
        if api_version not in EXEC_API_VERSIONS:
            raise KubeConfigError(f"{where}: apiVersion {_q(api_version)} is not supported (use one of {', '.join(EXEC_API_VERSIONS)})")
        args = spec.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise KubeConfigError(f"{where}: args must be a list of strings")
        env: dict[str, str] = {}
        env_items = spec.get("env") or []
        if not isinstance(env_items, list):
            raise KubeConfigError(f"{where}: env must be a list of name/value pairs")
        for i, item in enumerate(env_items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("value", ""), str):
                raise KubeConfigError(f"{where}: env[{i}] must have a string name and value")
            env[item["name"]] = item.get("value", "")
        if spec.get("interactiveMode") == "Always":
            raise KubeConfigError(f"{where}: interactiveMode Always needs a terminal, which a scheduler does not have")
        cluster_info: dict[str, Any] | None = None
        if spec.get("provideClusterInfo"):
            cluster_info = {"server": server, "insecure-skip-tls-verify": insecure}
            if tls_server_name:
                cluster_info["tls-server-name"] = tls_server_name
            if ca_data:
                cluster_info["certificate-authority-data"] = "".join(str(ca_data).split())
            elif ca_file:
                cluster_info["certificate-authority-data"] = base64.b64encode(self._read(ca_file, where, "certificate-authority")).decode()
            ext = cluster.get("extensions")
            if isinstance(ext, list):
                for item in ext:
                    if isinstance(item, dict) and item.get("name") == "client.authentication.k8s.io/exec":
                        cluster_info["config"] = item.get("extension")
            try:
                # The plugin reads this as JSON: NaN/Infinity or binary values would not parse there.
                json.dumps(cluster_info, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise KubeConfigError(f"{where}: the cluster's exec extension cannot be passed to the plugin as JSON: {exc}") from None
        return ExecProvider(
            command,
            args,
            env,
            api_version,
            source=source,
            install_hint=self._str(spec, "installHint", where) or "",
            cluster_info=cluster_info,
        )


def _url(value: str, where: str, key: str) -> Any:
    """urlsplit, with its ValueErrors (a bad IPv6 literal, a port out of range) as KubeConfigError."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - parsing the port is what raises
    except ValueError as exc:
        raise KubeConfigError(f"{where}: {key} {_q(value)} is not a valid URL: {exc}") from None
    if parts.hostname:
        try:
            # What connecting does with the name: a label over 63 characters or an empty one fails there.
            parts.hostname.encode("idna")
        except UnicodeError as exc:
            raise KubeConfigError(f"{where}: {key} {_q(value)} has an invalid host name: {exc}") from None
    return parts


# --- in-cluster --------------------------------------------------------------------------------------


def load_incluster(
    directory: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
    *,
    environ: Mapping[str, str] | None = None,
) -> ConnectionConfig:
    """The pod's service account: KUBERNETES_SERVICE_HOST/PORT and `directory`/{token,ca.crt,namespace}."""
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST", "")
    port = env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError("in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    base = Path(directory)
    token_file = base / "token"
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        raise KubeConfigError(f"in-cluster configuration: {token_file}: {exc.strerror or exc}") from None
    if not token:
        raise KubeConfigError(f"in-cluster configuration: {token_file} is empty")
    ca_file = base / "ca.crt"
    try:
        ctx = ssl.create_default_context(cafile=str(ca_file))
    except FileNotFoundError:
        raise KubeConfigError(f"in-cluster configuration: {ca_file}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        raise KubeConfigError(f"in-cluster configuration: {ca_file} does not hold a valid CA certificate ({exc})") from None
    try:
        namespace = (base / "namespace").read_text().strip() or "default"
    except OSError:
        namespace = "default"
    return ConnectionConfig(
        server=f"https://{host}:{port}",
        ssl=ctx,
        token_file=str(token_file),
        namespace=namespace,
        source=f"in-cluster ({base})",
    )


def load_connection(kubeconfig: str | None, *, context: str | None = None) -> ConnectionConfig:
    """The given kubeconfig; else in-cluster when KUBERNETES_SERVICE_HOST is set; else the default kubeconfig."""
    if kubeconfig:
        return load_kubeconfig(kubeconfig, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST") and context is None:
        return load_incluster()
    return load_kubeconfig(None, context)
