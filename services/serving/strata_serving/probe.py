"""Health probe for containers: ``python -m strata_serving.probe HOST:PORT [SERVICE]``.

Exits 0 when the server reports SERVING (for the whole server, or for SERVICE), 1 otherwise. For a
server that requires TLS, set ``STRATA_PROBE_TLS_ROOT_CERT`` (PEM CA) and, under mTLS, also
``STRATA_PROBE_TLS_CLIENT_CERT`` and ``STRATA_PROBE_TLS_CLIENT_KEY``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata_serving.tls import channel_credentials


def _channel(address: str) -> grpc.Channel:
    files = [
        os.environ.get(f"STRATA_PROBE_TLS_{name}") for name in ("ROOT_CERT", "CLIENT_CERT", "CLIENT_KEY")
    ]
    root, cert, key = (Path(value) if value else None for value in files)
    credentials = channel_credentials(root, cert, key)
    if credentials is None:
        return grpc.insecure_channel(address)
    return grpc.secure_channel(address, credentials)


def serving(address: str, service: str = "", timeout: float = 2.0) -> bool:
    with _channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stderr.write("usage: python -m strata_serving.probe HOST:PORT [SERVICE]\n")
        return 2
    return 0 if serving(args[0], args[1] if len(args) > 1 else "") else 1


if __name__ == "__main__":
    raise SystemExit(main())
