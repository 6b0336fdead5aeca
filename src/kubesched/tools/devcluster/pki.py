"""A throw-away PKI for one control plane: a CA, the apiserver's serving certificate, client
certificates, and the service-account token signing key. ECDSA P-256 keys: generated in microseconds."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=7)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


@dataclass(frozen=True)
class CertPair:
    cert_file: Path
    key_file: Path

    @property
    def cert_pem(self) -> bytes:
        return self.cert_file.read_bytes()

    @property
    def key_pem(self) -> bytes:
        return self.key_file.read_bytes()


class CertificateAuthority:
    """A self-signed CA written to `<dir>/ca.crt` and `<dir>/ca.key`, issuing leaf certificates into `dir`."""

    def __init__(self, directory: Path, common_name: str = "kubesched-test-ca") -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._key = _new_key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = dt.datetime.now(dt.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.cert_file = _write(directory / "ca.crt", self._cert.public_bytes(serialization.Encoding.PEM), 0o644)
        self.key_file = _write(directory / "ca.key", _key_pem(self._key))

    @property
    def cert_pem(self) -> bytes:
        return self.cert_file.read_bytes()

    def _issue(self, stem: str, subject: x509.Name, *, server: bool, sans: list[x509.GeneralName]) -> CertPair:
        key = _new_key()
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_encipherment=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    content_commitment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return CertPair(
            _write(self.dir / f"{stem}.crt", cert.public_bytes(serialization.Encoding.PEM), 0o644),
            _write(self.dir / f"{stem}.key", _key_pem(key)),
        )

    def serving_cert(self, stem: str, hosts: list[str]) -> CertPair:
        """A server certificate valid for these DNS names / IP addresses."""
        sans: list[x509.GeneralName] = []
        for h in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                sans.append(x509.DNSName(h))
        return self._issue(stem, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]), server=True, sans=sans)

    def client_cert(self, stem: str, user: str, groups: list[str] | tuple[str, ...] = ()) -> CertPair:
        """A client certificate the apiserver maps to `user` (CN) in `groups` (O)."""
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        return self._issue(stem, x509.Name(attrs), server=False, sans=[])


def service_account_keys(directory: Path) -> tuple[Path, Path]:
    """The token signing key pair: (private key file, public key file)."""
    key = _new_key()
    private = _write(directory / "sa.key", _key_pem(key))
    public = _write(
        directory / "sa.pub",
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        0o644,
    )
    return private, public
