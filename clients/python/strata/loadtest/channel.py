"""The channel a load test calls through: plaintext, TLS with a CA and client certificate, or TLS that
trusts whatever certificate the server presents (``insecure``, as grpcurl's ``-insecure``)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from strata.loadtest.methods import LoadTestError, host_and_port


@dataclass(frozen=True)
class TlsSpec:
    """TLS for the load test's channel. Files are PEM; each process reads them itself."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    insecure: bool = False

    def validate(self) -> TlsSpec:
        if (self.cert_file is None) != (self.key_file is None):
            raise LoadTestError("a client certificate needs both --cert and --key")
        if self.insecure and self.ca_file is not None:
            raise LoadTestError("--insecure does not verify the server: drop --cacert, or drop --insecure")
        return self


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise LoadTestError(f"cannot read {path}: {error.strerror}") from None


def credentials(target: str, tls: TlsSpec) -> tuple[grpc.ChannelCredentials, list[tuple[str, Any]]]:
    """Channel credentials and the options that go with them (a server-name override)."""
    root = _read(tls.ca_file)
    if tls.insecure:  # trust the certificate the server presents: no chain or CA check
        host, port = host_and_port(target)
        try:
            root = ssl.get_server_certificate((host, port), timeout=10).encode()
        except OSError as error:
            raise LoadTestError(f"cannot read the TLS certificate of {target}: {error}") from None
    creds = grpc.ssl_channel_credentials(
        root_certificates=root, private_key=_read(tls.key_file), certificate_chain=_read(tls.cert_file)
    )
    options = [("grpc.ssl_target_name_override", tls.server_name)] if tls.server_name else []
    return creds, options


def open_aio_channel(target: str, tls: TlsSpec | None, options: list[tuple[str, Any]]) -> grpc.aio.Channel:
    if tls is None:
        return grpc.aio.insecure_channel(target, options=options)
    creds, extra = credentials(target, tls)
    return grpc.aio.secure_channel(target, creds, options=[*options, *extra])


def open_channel(target: str, tls: TlsSpec | None) -> grpc.Channel:
    """A blocking channel (for reflection lookups)."""
    if tls is None:
        return grpc.insecure_channel(target)
    creds, extra = credentials(target, tls)
    return grpc.secure_channel(target, creds, options=extra)
