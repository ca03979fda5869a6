"""The secured stack's secrets: a certificate authority, one server certificate for every TLS
listener, and a password per user, made on first use and kept in <home>/secrets (mode 0700,
each file 0600). Clients are pointed at these files (`cdfbridge-stack env --secure`), so no
value is ever printed.

The server certificate names exactly 127.0.0.1, the address every listener binds and
advertises: a client that reaches the services by another name (even `localhost`) fails
hostname verification, as it should.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import secrets
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from stack.settings import LOOPBACK, StackSettings

# Who is who: the broker among brokers, the pipeline's user on each service.
KAFKA_ADMIN = "admin"
KAFKA_USER = "cdfbridge"
CLICKHOUSE_USER = "cdfbridge"
REGISTRY_USER = "cdfbridge"
VALID_DAYS = 825


class Credentials:
    def __init__(self, settings: StackSettings) -> None:
        self.dir = settings.home / "secrets"

    @property
    def ca_path(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def cert_path(self) -> Path:
        return self.dir / "server.pem"

    @property
    def key_path(self) -> Path:
        return self.dir / "server.key"

    @property
    def keystore_path(self) -> Path:
        """The key and the certificate chain in one file: Kafka's PEM key store."""
        return self.dir / "server.keystore.pem"

    def password_path(self, service: str) -> Path:
        """kafka, kafka-admin, clickhouse or registry."""
        return self.dir / f"{service}.password"

    def password(self, service: str) -> str:
        path = self.password_path(service)
        if not path.exists():
            _write_private(path, secrets.token_urlsafe(24).encode())
        return path.read_text()

    def ensure(self) -> None:
        """Make whatever is missing; idempotent."""
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.keystore_path.exists():
            self._make_certificates()
        for service in ("kafka", "kafka-admin", "clickhouse", "registry"):
            self.password(service)

    def _make_certificates(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cdfbridge local CA")])
        ca = (
            _builder(ca_name, ca_name, ca_key.public_key(), now)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_signing_usage(cert_sign=True), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        server = (
            _builder(
                x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK)]),
                ca_name,
                key.public_key(),
                now,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_signing_usage(cert_sign=False), critical=True)
            .add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]),
                critical=False,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        pem = serialization.Encoding.PEM
        # PKCS#8 without a passphrase: what Kafka's PEM key store and nginx both read.
        private = key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        chain = server.public_bytes(pem) + ca.public_bytes(pem)
        _write_private(self.ca_path, ca.public_bytes(pem))
        _write_private(self.key_path, private)
        _write_private(self.cert_path, chain)
        _write_private(self.keystore_path, private + chain)  # last: marks the set complete


def sha256_hex(password: str) -> str:
    """ClickHouse's password_sha256_hex."""
    return hashlib.sha256(password.encode()).hexdigest()


def htpasswd_line(user: str, password: str) -> str:
    """`user:{SSHA}...`, a salted hash nginx's auth_basic reads."""
    salt = secrets.token_bytes(8)
    digest = hashlib.sha1(password.encode() + salt, usedforsecurity=False).digest()
    return f"{user}:{{SSHA}}{base64.b64encode(digest + salt).decode()}\n"


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )


def _signing_usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _write_private(path: Path, data: bytes) -> None:
    """Written whole under a temporary name, readable by its owner alone."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    temporary.replace(path)
