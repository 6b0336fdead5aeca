"""Kubeconfig, in-cluster and exec-plugin loading (kubesched.client.config).

Everything here is local files and real subprocesses (small Python scripts as exec plugins); no
server is involved.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings

from kubesched.client import config as cfgmod
from kubesched.client.config import ConnectionConfig, ExecProvider, KubeConfigError, load_connection, load_incluster, load_kubeconfig
from unit.fuzz.budget import examples
from unit.fuzz.mutations import mutations_of

from .conftest import Pki, write


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def kubeconfig(
    path: Path,
    *,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
    current: str | None = "main",
    extra_contexts: list[dict[str, Any]] | None = None,
) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c1", "cluster": cluster if cluster is not None else {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u1", "user": user or {}}],
        "contexts": [{"name": "main", "context": context or {"cluster": "c1", "user": "u1"}}, *(extra_contexts or [])],
    }
    if current:
        doc["current-context"] = current
    return write(path, yaml.safe_dump(doc))


# --- certificates ------------------------------------------------------------------------------


def test_certificate_data(tmp_path: Path, pki: Pki) -> None:
    path = kubeconfig(
        tmp_path / "config",
        cluster={"server": "https://127.0.0.1:6443/", "certificate-authority-data": b64(pki.ca_pem), "tls-server-name": "api.example.test"},
        user={"client-certificate-data": b64(pki.client_cert_pem), "client-key-data": b64(pki.client_key_pem)},
        context={"cluster": "c1", "user": "u1", "namespace": "team-a"},
    )
    conn = load_kubeconfig(str(path))
    assert conn.server == "https://127.0.0.1:6443"
    assert conn.namespace == "team-a"
    assert conn.tls_server_name == "api.example.test"
    assert isinstance(conn.ssl, ssl.SSLContext)
    assert conn.ssl.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in conn.ssl.get_ca_certs()] == [((("commonName", "kubesched-unit-ca"),),)]
    assert conn.token is None and conn.exec_provider is None


async def test_client_certificate_gives_no_auth_header(tmp_path: Path, pki: Pki) -> None:
    path = kubeconfig(
        tmp_path / "config",
        cluster={"server": "https://h:6443", "certificate-authority-data": b64(pki.ca_pem)},
        user={"client-certificate-data": b64(pki.client_cert_pem), "client-key-data": b64(pki.client_key_pem)},
    )
    assert await load_kubeconfig(str(path)).auth_header() is None


def test_files_resolve_relative_to_the_kubeconfig(tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "kube"
    write(base / "pki" / "ca.crt", pki.ca_pem)
    write(base / "pki" / "client.crt", pki.client_cert_pem)
    write(base / "pki" / "client.key", pki.client_key_pem)
    write(base / "token", "file-token\n")
    path = kubeconfig(
        base / "config",
        cluster={"server": "https://h:6443", "certificate-authority": "pki/ca.crt"},
        user={"client-certificate": "pki/client.crt", "client-key": "pki/client.key", "tokenFile": "token"},
    )
    monkeypatch.chdir(tmp_path)  # not the kubeconfig's directory
    conn = load_kubeconfig(str(path))
    assert isinstance(conn.ssl, ssl.SSLContext)
    assert len(conn.ssl.get_ca_certs()) == 1
    assert conn.token_file == str((base / "token").resolve())


def test_missing_certificate_file_names_the_field_and_path(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", cluster={"server": "https://h:6443", "certificate-authority": "nope/ca.crt"})
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path))
    msg = str(err.value)
    assert str(path) in msg and "cluster 'c1'" in msg and "certificate-authority" in msg and "nope/ca.crt" in msg


def test_bad_base64_names_the_user_and_field(tmp_path: Path, pki: Pki) -> None:
    path = kubeconfig(
        tmp_path / "config",
        user={"client-certificate-data": b64(pki.client_cert_pem), "client-key-data": "not base64 !!"},
    )
    with pytest.raises(KubeConfigError, match=r"user 'u1': client-key-data is not valid base64") as err:
        load_kubeconfig(str(path))
    assert str(path) in str(err.value)


def test_certificate_without_key(tmp_path: Path, pki: Pki) -> None:
    path = kubeconfig(tmp_path / "config", user={"client-certificate-data": b64(pki.client_cert_pem)})
    with pytest.raises(KubeConfigError, match=r"user 'u1': client-certificate\(-data\) is set but client-key\(-data\) is not"):
        load_kubeconfig(str(path))


def test_mismatched_certificate_and_key(tmp_path: Path, pki: Pki) -> None:
    path = kubeconfig(
        tmp_path / "config",
        user={"client-certificate-data": b64(pki.client_cert_pem), "client-key-data": b64(pki.other_key_pem)},
    )
    with pytest.raises(KubeConfigError, match=r"user 'u1': client-certificate\(-data\)/client-key\(-data\) do not form"):
        load_kubeconfig(str(path))


def test_garbage_ca_data(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", cluster={"server": "https://h:6443", "certificate-authority-data": b64("hello")})
    with pytest.raises(KubeConfigError, match=r"cluster 'c1': certificate-authority-data does not hold a valid CA certificate"):
        load_kubeconfig(str(path))


def test_insecure_skip_tls_verify(tmp_path: Path, pki: Pki) -> None:
    path = kubeconfig(tmp_path / "config", cluster={"server": "https://h:6443", "insecure-skip-tls-verify": True})
    conn = load_kubeconfig(str(path))
    assert isinstance(conn.ssl, ssl.SSLContext)
    assert conn.ssl.verify_mode == ssl.CERT_NONE and not conn.ssl.check_hostname
    both = kubeconfig(
        tmp_path / "both",
        cluster={"server": "https://h:6443", "insecure-skip-tls-verify": True, "certificate-authority-data": b64(pki.ca_pem)},
    )
    with pytest.raises(KubeConfigError, match="insecure-skip-tls-verify"):
        load_kubeconfig(str(both))


def test_plain_http_server(tmp_path: Path) -> None:
    conn = load_kubeconfig(str(kubeconfig(tmp_path / "config", cluster={"server": "http://127.0.0.1:8080"})))
    assert conn.ssl is False


# --- tokens ------------------------------------------------------------------------------------


async def test_token(tmp_path: Path) -> None:
    conn = load_kubeconfig(str(kubeconfig(tmp_path / "config", user={"token": "abc.def"})))
    assert await conn.auth_header() == "Bearer abc.def"
    assert await conn.refresh_auth() is False


async def test_token_file_is_reread_at_most_once_a_minute(tmp_path: Path) -> None:
    token = write(tmp_path / "tok", "one\n")
    conn = load_kubeconfig(str(kubeconfig(tmp_path / "config", user={"tokenFile": "tok", "token": "static"})))
    assert await conn.auth_header() == "Bearer one"  # tokenFile wins over token, as in client-go
    token.write_text("two")
    assert await conn.auth_header() == "Bearer one"
    assert conn._file_token_read_at is not None
    conn._file_token_read_at -= cfgmod.TOKEN_FILE_REFRESH_SECONDS + 1
    assert await conn.auth_header() == "Bearer two"
    token.write_text("three")
    assert await conn.refresh_auth() is True  # a 401 forces a re-read
    assert await conn.auth_header() == "Bearer three"
    token.unlink()
    assert await conn.refresh_auth() is True
    assert await conn.auth_header() == "Bearer three"  # an unreadable file keeps the last token


def test_missing_token_file(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=r"user 'u1': tokenFile .*missing"):
        load_kubeconfig(str(kubeconfig(tmp_path / "config", user={"tokenFile": "missing"})))


def test_auth_provider_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match=r"user 'u1': auth-provider 'gcp' is not supported; use an exec"):
        load_kubeconfig(str(kubeconfig(tmp_path / "config", user={"auth-provider": {"name": "gcp"}})))


# --- contexts and structure ----------------------------------------------------------------------


def test_context_selection_and_namespace(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        user={"token": "t"},
        extra_contexts=[{"name": "other", "context": {"cluster": "c1", "user": "u1", "namespace": "ns-other"}}],
    )
    assert load_kubeconfig(str(path)).namespace == "default"
    assert load_kubeconfig(str(path), context="other").namespace == "ns-other"


def test_unknown_context(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config")
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path), context="prod")
    assert str(err.value) == f"{path}: context 'prod' is not defined (contexts: main)"


def test_no_current_context(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="current-context is not set"):
        load_kubeconfig(str(kubeconfig(tmp_path / "config", current=None)))


def test_context_naming_a_missing_user_or_cluster(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "a", context={"cluster": "c1", "user": "ghost"})
    with pytest.raises(KubeConfigError, match=r"context 'main': user 'ghost' is not defined"):
        load_kubeconfig(str(path))
    path = kubeconfig(tmp_path / "b", context={"cluster": "c9", "user": "u1"})
    with pytest.raises(KubeConfigError, match=r"context 'main': cluster 'c9' is not defined"):
        load_kubeconfig(str(path))


def test_missing_server(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", cluster={"certificate-authority-data": "eA=="})
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path))
    assert str(err.value) == f"{path}: cluster 'c1': server is not set"


def test_bad_yaml_and_missing_file(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad", "clusters: [oops\n")
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(bad))
    assert str(err.value).startswith(f"{bad}: line 2, column 1: invalid YAML: ")
    with pytest.raises(KubeConfigError, match="absent: no such file"):
        load_kubeconfig(str(tmp_path / "absent"))
    listy = write(tmp_path / "listy", "- 1\n- 2\n")
    with pytest.raises(KubeConfigError, match="must be a mapping"):
        load_kubeconfig(str(listy))


def test_kubeconfig_env_first_existing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = kubeconfig(tmp_path / "second", user={"token": "from-env"})
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "first-missing"), str(path)]))
    assert load_kubeconfig().token == "from-env"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(KubeConfigError, match="none of its files exists"):
        load_kubeconfig()


def test_home_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    kubeconfig(tmp_path / ".kube" / "config", user={"token": "home"})
    assert load_kubeconfig().token == "home"


def test_load_connection_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = kubeconfig(tmp_path / "explicit", user={"token": "explicit"})
    default = kubeconfig(tmp_path / "default", user={"token": "default"})
    monkeypatch.setenv("KUBECONFIG", str(default))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    assert load_connection(str(explicit)).token == "explicit"
    monkeypatch.setattr(cfgmod, "load_incluster", lambda: ConnectionConfig(server="https://in-cluster", ssl=False))
    assert load_connection(None).server == "https://in-cluster"
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert load_connection(None).token == "default"


# --- in-cluster ----------------------------------------------------------------------------------


async def test_incluster(tmp_path: Path, pki: Pki) -> None:
    write(tmp_path / "token", "sa-token\n")
    write(tmp_path / "ca.crt", pki.ca_pem)
    write(tmp_path / "namespace", "kube-system")
    conn = load_incluster(tmp_path, environ={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"})
    assert conn.server == "https://10.96.0.1:443"
    assert conn.namespace == "kube-system"
    assert conn.token_file == str(tmp_path / "token")
    assert await conn.auth_header() == "Bearer sa-token"
    assert isinstance(conn.ssl, ssl.SSLContext) and len(conn.ssl.get_ca_certs()) == 1


def test_incluster_ipv6_and_default_namespace(tmp_path: Path, pki: Pki) -> None:
    write(tmp_path / "token", "t")
    write(tmp_path / "ca.crt", pki.ca_pem)
    conn = load_incluster(tmp_path, environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"})
    assert conn.server == "https://[fd00::1]:6443"
    assert conn.namespace == "default"


def test_incluster_errors(tmp_path: Path, pki: Pki) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"):
        load_incluster(tmp_path, environ={})
    with pytest.raises(KubeConfigError, match=f"{tmp_path / 'token'}"):
        load_incluster(tmp_path, environ=env)
    write(tmp_path / "token", "t")
    with pytest.raises(KubeConfigError, match=r"ca\.crt"):
        load_incluster(tmp_path, environ=env)
    write(tmp_path / "ca.crt", "garbage")
    with pytest.raises(KubeConfigError, match=r"ca\.crt does not hold a valid CA certificate"):
        load_incluster(tmp_path, environ=env)


# --- exec plugins --------------------------------------------------------------------------------

PLUGIN = r"""
import datetime, json, os, pathlib, sys
mode, counter = sys.argv[1], pathlib.Path(sys.argv[2])
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
api = info["apiVersion"]
if mode == "garbage":
    print("Please log in at https://example.test")
    sys.exit(0)
if mode == "fail":
    print("error: refresh token expired", file=sys.stderr)
    sys.exit(3)
if mode == "wrong-version":
    api = "client.authentication.k8s.io/v1alpha1"
status = {"token": os.environ.get("TOKEN_PREFIX", "tok") + "-" + str(n)}
if mode == "expiring":
    exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    status["expirationTimestamp"] = exp.strftime("%Y-%m-%dT%H:%M:%SZ")
if mode == "no-token":
    status = {}
if mode == "cert":
    status = {"clientCertificateData": pathlib.Path(sys.argv[3]).read_text(), "clientKeyData": pathlib.Path(sys.argv[4]).read_text()}
if mode == "info":
    status = {"token": json.dumps(info, sort_keys=True)}
print(json.dumps({"apiVersion": api, "kind": "ExecCredential", "status": status}))
"""


def exec_config(tmp_path: Path, mode: str, api_version: str = "client.authentication.k8s.io/v1", **extra: Any) -> Path:
    script = write(tmp_path / "plugin.py", PLUGIN)
    spec: dict[str, Any] = {
        "apiVersion": api_version,
        "command": sys.executable,
        "args": [str(script), mode, str(tmp_path / "runs"), *extra.pop("more_args", [])],
        "interactiveMode": "Never",
        **extra,
    }
    return kubeconfig(tmp_path / "config", user={"exec": spec})


@pytest.mark.parametrize("api_version", ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"])
async def test_exec_token_is_cached(tmp_path: Path, api_version: str) -> None:
    conn = load_kubeconfig(str(exec_config(tmp_path, "plain", api_version, env=[{"name": "TOKEN_PREFIX", "value": "exec"}])))
    assert conn.exec_provider is not None and conn.exec_provider.api_version == api_version
    assert await conn.auth_header() == "Bearer exec-1"
    assert await conn.auth_header() == "Bearer exec-1"  # no expiry: cached for good
    assert conn.exec_provider.runs == 1
    assert await conn.refresh_auth() is True  # what ApiClient does on a 401
    assert await conn.auth_header() == "Bearer exec-2"


async def test_exec_runs_again_on_expiry(tmp_path: Path) -> None:
    conn = load_kubeconfig(str(exec_config(tmp_path, "expiring")))
    provider = conn.exec_provider
    assert provider is not None
    now = [time.time()]
    provider._clock = lambda: now[0]
    assert await conn.auth_header() == "Bearer tok-1"
    now[0] += 1800
    assert await conn.auth_header() == "Bearer tok-1"
    now[0] += 1800  # past the expirationTimestamp
    assert await conn.auth_header() == "Bearer tok-2"
    assert provider.runs == 2


async def test_exec_concurrent_callers_share_one_run(tmp_path: Path) -> None:
    import asyncio

    conn = load_kubeconfig(str(exec_config(tmp_path, "plain")))
    headers = await asyncio.gather(*(conn.auth_header() for _ in range(10)))
    assert set(headers) == {"Bearer tok-1"}
    assert conn.exec_provider is not None and conn.exec_provider.runs == 1


async def test_exec_env_carries_exec_info(tmp_path: Path, pki: Pki) -> None:
    path = exec_config(tmp_path, "info", provideClusterInfo=True)
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = b64(pki.ca_pem)
    path.write_text(yaml.safe_dump(doc))
    header = await load_kubeconfig(str(path)).auth_header()
    assert header is not None
    info = json.loads(header.removeprefix("Bearer "))
    assert info["apiVersion"] == "client.authentication.k8s.io/v1" and info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://127.0.0.1:6443"
    assert info["spec"]["cluster"]["certificate-authority-data"] == b64(pki.ca_pem)


async def test_exec_garbage_output(tmp_path: Path) -> None:
    conn = load_kubeconfig(str(exec_config(tmp_path, "garbage")))
    with pytest.raises(KubeConfigError) as err:
        await conn.auth_header()
    msg = str(err.value)
    assert str(tmp_path / "config") in msg and "context 'main'" in msg
    assert "did not print an ExecCredential JSON document" in msg and "Please log in" in msg


async def test_exec_failure_shows_stderr(tmp_path: Path) -> None:
    conn = load_kubeconfig(str(exec_config(tmp_path, "fail")))
    with pytest.raises(KubeConfigError, match=r"exited with code 3: error: refresh token expired"):
        await conn.auth_header()


async def test_exec_wrong_api_version_and_empty_status(tmp_path: Path) -> None:
    conn = load_kubeconfig(str(exec_config(tmp_path, "wrong-version")))
    with pytest.raises(KubeConfigError, match=r"printed apiVersion 'client.authentication.k8s.io/v1alpha1', expected"):
        await conn.auth_header()
    conn = load_kubeconfig(str(exec_config(tmp_path, "no-token")))
    with pytest.raises(KubeConfigError, match=r"neither status.token nor status.clientCertificateData"):
        await conn.auth_header()


async def test_exec_missing_command(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        user={
            "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubesched-no-such-plugin", "installHint": "install it"}
        },
    )
    with pytest.raises(KubeConfigError, match=r"exec command 'kubesched-no-such-plugin' was not found \(install it\)"):
        await load_kubeconfig(str(path)).auth_header()


def test_exec_config_errors(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "a", user={"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}})
    with pytest.raises(KubeConfigError, match=r"user 'u1': exec: apiVersion 'client.authentication.k8s.io/v1alpha1' is not supported"):
        load_kubeconfig(str(path))
    path = kubeconfig(tmp_path / "b", user={"exec": {"apiVersion": "client.authentication.k8s.io/v1"}})
    with pytest.raises(KubeConfigError, match=r"user 'u1': exec: command is not set"):
        load_kubeconfig(str(path))


def test_exec_relative_command_resolves_against_the_kubeconfig(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        user={"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/plugin"}},
    )
    provider = load_kubeconfig(str(path)).exec_provider
    assert provider is not None and provider.command == str(tmp_path.resolve() / "bin" / "plugin")
    path = kubeconfig(tmp_path / "config2", user={"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws"}})
    provider = load_kubeconfig(str(path)).exec_provider
    assert provider is not None and provider.command == "aws"  # looked up on PATH


async def test_exec_client_certificate_is_loaded(tmp_path: Path, pki: Pki) -> None:
    cert = write(tmp_path / "c.pem", pki.client_cert_pem)
    key = write(tmp_path / "k.pem", pki.client_key_pem)
    path = exec_config(tmp_path, "cert", more_args=[str(cert), str(key)])
    conn = load_kubeconfig(str(path))
    assert await conn.auth_header() is None
    assert conn._exec_cert is not None


async def test_exec_provider_direct() -> None:
    provider = ExecProvider(sys.executable, ["-c", "print('{}')"], source="unit")
    with pytest.raises(KubeConfigError, match="printed kind None, expected 'ExecCredential'"):
        await provider.credential()


# --- bad values: one message naming the field, never a traceback ------------------------------------


def test_duplicate_keys_alias_bombs_and_binary_files(tmp_path: Path) -> None:
    dup = write(tmp_path / "dup", "current-context: a\ncurrent-context: b\n")
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(dup))
    assert str(err.value) == f"{dup}: line 2, column 1: duplicate key 'current-context'"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 8) + "]" for k in range(1, 9)]
    bomb = write(tmp_path / "bomb", "\n".join(lines) + "\n")
    with pytest.raises(KubeConfigError, match="aliases expand this document by"):
        load_kubeconfig(str(bomb))
    if Path("/dev/zero").exists():
        with pytest.raises(KubeConfigError) as err:
            load_kubeconfig("/dev/zero")
        assert str(err.value) == "/dev/zero: larger than 16 MiB, the limit for a kubeconfig"
    binary = write(tmp_path / "binary", b"\xff\xfe\x00garbage")
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(binary))
    assert str(err.value).startswith(f"{binary}: not UTF-8 text (")


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"server": float("inf")}, "cluster 'c1': server must be a string, got inf"),
        ({"server": float("nan")}, "cluster 'c1': server must be a string, got nan"),
        ({"server": 10**400}, "cluster 'c1': server must be a string, got "),
        ({"server": ["https://a"]}, "cluster 'c1': server must be a string, got list"),
        ({"server": "https://[::1"}, "cluster 'c1': server 'https://[::1' is not a valid URL: Invalid IPv6 URL"),
        ({"server": "https://host:99999"}, "cluster 'c1': server 'https://host:99999' is not a valid URL: Port out of range 0-65535"),
        ({"server": "https://host:port"}, "cluster 'c1': server 'https://host:port' is not a valid URL: Port could not be cast"),
        ({"server": "https://:6443"}, "cluster 'c1': server 'https://:6443' is not an http(s) URL"),
        ({"server": "https://" + "a" * 100_000}, "cluster 'c1': server 'https://aaaa"),
        ({"server": "https://a..b"}, "cluster 'c1': server 'https://a..b' has an invalid host name: "),
        ({"server": "https://a", "proxy-url": "http://[x"}, "cluster 'c1': proxy-url 'http://[x' is not a valid URL"),
        ({"server": "https://a", "insecure-skip-tls-verify": "yes"}, "cluster 'c1': insecure-skip-tls-verify must be true or false"),
        ({"server": "https://a", "certificate-authority-data": float("inf")},
         "cluster 'c1': certificate-authority-data must be a base64 string"),
    ],
)
def test_bad_cluster_values(tmp_path: Path, cluster: dict[str, Any], message: str) -> None:
    path = kubeconfig(tmp_path / "kc", cluster=cluster)
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path))
    text = str(err.value)
    assert text.startswith(f"{path}: {message}")
    assert "\n" not in text and len(text) < 400


def test_bad_context_and_exec_values(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", current=None)
    doc = yaml.safe_load(path.read_text())
    doc["current-context"] = ["main"]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path))
    assert str(err.value) == f"{path}: current-context must be a string, got list"

    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "env": 5}
    path = kubeconfig(tmp_path / "kc2", user={"exec": exec_spec})
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path))
    assert str(err.value) == f"{path}: user 'u1': exec: env must be a list of name/value pairs"

    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "provideClusterInfo": True}
    path = kubeconfig(tmp_path / "kc3", user={"exec": exec_spec}, cluster={
        "server": "https://a",
        "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": {"ratio": float("nan")}}],
    })
    with pytest.raises(KubeConfigError) as err:
        load_kubeconfig(str(path))
    assert str(err.value).startswith(f"{path}: user 'u1': exec: the cluster's exec extension cannot be passed to the plugin as JSON")


def _fuzz_seeds() -> list[dict[str, Any]]:
    base = {
        "apiVersion": "v1", "kind": "Config", "current-context": "main",
        "clusters": [{"name": "c1", "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True,
                                                "tls-server-name": "kubernetes", "proxy-url": "http://proxy:3128"}}],
        "users": [{"name": "u1", "user": {"token": "abc"}}],
        "contexts": [{"name": "main", "context": {"cluster": "c1", "user": "u1", "namespace": "kube-system"}}],
    }
    with_exec = copy.deepcopy(base)
    with_exec["users"][0]["user"] = {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/true", "args": ["a", "b"],
        "env": [{"name": "A", "value": "b"}], "provideClusterInfo": True, "installHint": "install it",
        "interactiveMode": "Never",
    }}
    with_exec["clusters"][0]["cluster"]["extensions"] = [
        {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x", "n": 1}},
    ]
    return [base, with_exec]


@settings(max_examples=examples(150))
@given(doc=mutations_of(_fuzz_seeds()))
def test_fuzzed_kubeconfigs_load_or_fail_in_one_line(tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any]) -> None:
    path = tmp_path_factory.mktemp("kc") / "config"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    started = time.monotonic()
    try:
        conn = load_kubeconfig(str(path))
    except KubeConfigError as exc:
        message = str(exc)
        assert message and "\n" not in message and len(message) < 2000, message
    else:
        assert conn.server.startswith(("http://", "https://"))
    assert time.monotonic() - started < 10
