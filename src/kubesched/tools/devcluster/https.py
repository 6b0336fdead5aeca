"""A plain HTTPS GET for probing the processes of a throw-away control plane (their /readyz, /metrics):
standard library only, no connection kept."""

from __future__ import annotations

import functools
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path


def _stamp(path: Path | None) -> int:
    return path.stat().st_mtime_ns if path is not None else 0


@functools.lru_cache(maxsize=32)
def _context(ca_file: Path | None, cert: Path | None, key: Path | None, _stamps: tuple[int, ...]) -> ssl.SSLContext:
    """A context per set of files (and their modification times: a file rewritten gets a new one)."""
    if ca_file is None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # a scheduler's self-signed serving certificate
    else:
        ctx = ssl.create_default_context(cafile=str(ca_file))
    if cert is not None and key is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


def https_get(url: str, *, ca_file: Path | None = None, client_cert: tuple[Path, Path] | None = None,
              params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None,
              timeout: float = 5.0) -> tuple[int, bytes]:
    """(status, body) of a GET; `ca_file` None trusts any server certificate (only for loopback
    processes of our own); `client_cert` is (certificate file, key file). An HTTP error status is
    returned, not raised; a connection failure raises OSError."""
    if params:
        url = f"{url}?{urllib.parse.urlencode(params)}"
    cert, key = client_cert if client_cert is not None else (None, None)
    request = urllib.request.Request(url, headers=dict(headers or {}))
    context = _context(ca_file, cert, key, (_stamp(ca_file), _stamp(cert), _stamp(key)))
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()
