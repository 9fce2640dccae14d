"""A throwaway certificate authority for the fake's edge: one CA and one wildcard certificate for
``*.{domain}``, made with ``cryptography`` and written to a private temporary folder that
:meth:`Certs.close` removes. Clients trust the CA's PEM (``ca_file``); nothing else does."""

from __future__ import annotations

import datetime
import shutil
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class Certs:
    """The CA (``ca_file``) and a server context presenting ``*.{domain}`` signed by it."""

    def __init__(self, domain: str) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="e2bfake-tls-"))
        now = datetime.datetime.now(datetime.timezone.utc)
        start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (
            x509.CertificateBuilder()
            .subject_name(_name("e2b fake edge CA"))
            .issuer_name(_name("e2b fake edge CA"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        leaf = (
            x509.CertificateBuilder()
            .subject_name(_name(f"*.{domain}"))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"*.{domain}")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_file = self._folder / "ca.pem"
        self.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        chain, key_file = self._folder / "edge.pem", self._folder / "edge.key"
        chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_pem(key))
        self.server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server.load_cert_chain(chain, key_file)

    def client(self) -> ssl.SSLContext:
        """A client context that trusts only this CA (hostnames checked, as any client does)."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def close(self) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)
