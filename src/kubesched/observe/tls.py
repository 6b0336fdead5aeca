"""The secure port's certificate: the one given (--tls-cert-file/--tls-private-key-file), or a
self-signed one made at start, as kube components do when given none."""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SELF_SIGNED_VALIDITY = dt.timedelta(days=365)


class CertificateError(ValueError):
    """A certificate or key file that cannot be used; the message names the file."""


@dataclass(frozen=True, slots=True)
class ServingCert:
    cert_pem: bytes
    key_pem: bytes

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the certificate's DER form: what a client pins."""
        return fingerprint(self.cert_pem)


def fingerprint(cert_pem: bytes) -> str:
    der = x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
    return hashlib.sha256(der).hexdigest()


def self_signed(hosts: list[str]) -> ServingCert:
    """An ECDSA P-256 certificate for `hosts` (names and IP addresses), signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hosts[0] if hosts else 'kubesched'}@kubesched")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return ServingCert(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def load_serving_cert(cert_file: str, key_file: str) -> ServingCert:
    try:
        cert_pem = Path(cert_file).read_bytes()
    except OSError as exc:
        raise CertificateError(f"--tls-cert-file {cert_file}: {exc.strerror}") from None
    try:
        key_pem = Path(key_file).read_bytes()
    except OSError as exc:
        raise CertificateError(f"--tls-private-key-file {key_file}: {exc.strerror}") from None
    try:
        x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        raise CertificateError(f"--tls-cert-file {cert_file}: not a PEM certificate ({exc})") from None
    return ServingCert(cert_pem, key_pem)


def server_context(cert: ServingCert, client_ca_pem: bytes | None) -> ssl.SSLContext:
    """TLS 1.2+; client certificates are asked for (not required) and verified against the
    client CA when one is given, so a request may authenticate with one."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # load_cert_chain reads files only: the pair goes through a private temporary directory.
    with tempfile.TemporaryDirectory(prefix="kubesched-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
        for path, data in ((cert_path, cert.cert_pem), (key_path, cert.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise CertificateError(f"the serving certificate and key do not go together: {exc.reason or exc}") from None
    if client_ca_pem:
        try:
            ctx.load_verify_locations(cadata=client_ca_pem.decode())
        except (ssl.SSLError, UnicodeDecodeError) as exc:
            raise CertificateError(f"the client CA bundle is not usable: {exc}") from None
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx
