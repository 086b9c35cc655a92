"""TLS and mutual TLS credentials from PEM files, for servers and for service-to-service channels.

A server with a certificate and key accepts only TLS (a plaintext client fails its handshake); given
a client CA too, it also requires every client to present a certificate that CA signed (mTLS).
The files are checked before gRPC sees them (gRPC only fails to bind): a problem is a
``TlsConfigError`` naming the file and what is wrong, never taken for a port in use.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc


class TlsConfigError(ValueError):
    """A TLS file the server cannot use; the message names the file and what is wrong with it."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"TLS: {problem}")


@dataclass(frozen=True)
class ServerTls:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None

    def check(self) -> None:
        """Raise ``TlsConfigError`` for an unreadable file, a file without a PEM certificate or key,
        or a key that does not belong to the certificate (gRPC itself only fails to bind)."""
        for role, path in (
            ("certificate", self.cert_file),
            ("key", self.key_file),
            ("client CA", self.client_ca_file),
        ):
            if path is not None:
                try:
                    path.read_bytes()
                except OSError as error:
                    raise TlsConfigError(f"the {role} {path} cannot be read ({error.strerror})") from None
        _load_certificates("certificate", self.cert_file)
        if self.client_ca_file is not None:
            _load_certificates("client CA", self.client_ca_file)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.cert_file, self.key_file, password=_no_password)
        except ssl.SSLError as error:
            if "KEY_VALUES_MISMATCH" in str(error):
                raise TlsConfigError(
                    f"the key {self.key_file} does not belong to the certificate {self.cert_file}"
                ) from None
            raise TlsConfigError(
                f"the key {self.key_file} holds no usable PEM private key ({error.reason or error})"
            ) from None
        except _EncryptedKey:
            raise TlsConfigError(f"the key {self.key_file} is encrypted; give it unencrypted") from None

    def credentials(self) -> grpc.ServerCredentials:
        self.check()
        return grpc.ssl_server_credentials(
            [(self.key_file.read_bytes(), self.cert_file.read_bytes())],
            root_certificates=self.client_ca_file.read_bytes() if self.client_ca_file else None,
            require_client_auth=self.client_ca_file is not None,
        )


class _EncryptedKey(Exception):
    """The key asked for a password (a server has no one to ask)."""


def _no_password() -> str:
    raise _EncryptedKey


def _load_certificates(role: str, path: Path) -> None:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError as error:
        raise TlsConfigError(
            f"the {role} {path} holds no usable PEM certificate ({error.reason or error})"
        ) from None


def server_tls(cert: Path | None, key: Path | None, client_ca: Path | None) -> ServerTls | None:
    """The server's TLS set-up from its settings, or ``None`` for plaintext; half a pair is an error."""
    if cert is None and key is None:
        if client_ca is not None:
            raise ValueError("a client CA (mTLS) needs the server's own certificate and key too")
        return None
    if cert is None or key is None:
        raise ValueError("TLS needs both a certificate file and a key file")
    return ServerTls(cert, key, client_ca)


def channel_credentials(
    root_cert: Path | None, client_cert: Path | None = None, client_key: Path | None = None
) -> grpc.ChannelCredentials | None:
    """Client credentials: ``None`` (plaintext) unless a root CA or a client certificate is given.

    Without ``root_cert`` the system's trust store verifies the server.
    """
    if root_cert is None and client_cert is None and client_key is None:
        return None
    if (client_cert is None) != (client_key is None):
        raise ValueError("a client certificate needs its key (and the other way round)")
    return grpc.ssl_channel_credentials(
        root_certificates=root_cert.read_bytes() if root_cert else None,
        private_key=client_key.read_bytes() if client_key else None,
        certificate_chain=client_cert.read_bytes() if client_cert else None,
    )
