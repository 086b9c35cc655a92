"""TLS and mutual TLS credentials from PEM files, for servers and for service-to-service channels.

A server with a certificate and key accepts only TLS (a plaintext client fails its handshake); given
a client CA too, it also requires every client to present a certificate that CA signed (mTLS).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc


@dataclass(frozen=True)
class ServerTls:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.key_file.read_bytes(), self.cert_file.read_bytes())],
            root_certificates=self.client_ca_file.read_bytes() if self.client_ca_file else None,
            require_client_auth=self.client_ca_file is not None,
        )


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
