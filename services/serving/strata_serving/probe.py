"""Health probe for containers: ``python -m strata_serving.probe HOST:PORT [SERVICE]``.

Exits 0 when the server reports SERVING (for the whole server, or for SERVICE), 1 otherwise. For a
server that requires TLS, set ``STRATA_PROBE_TLS_ROOT_CERT`` (PEM CA) and, under mTLS, also
``STRATA_PROBE_TLS_CLIENT_CERT`` and ``STRATA_PROBE_TLS_CLIENT_KEY``.

:func:`wait_until_serving` is the same check polled for a child process a launcher started
(``make run``, ``make run-cluster``, the replica benchmarks).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
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


def wait_until_serving(
    address: str,
    process: subprocess.Popen[bytes],
    within: float = 120.0,
    every: float = 0.2,
    *,
    refusal: Callable[[str], str | None] | None = None,
) -> None:
    """Return once the server ``process`` started on ``address`` reports SERVING.

    Raises :class:`RuntimeError` if the process exits first, or as soon as ``refusal(address)``
    (asked while the server is not SERVING) says why it never will, and :class:`TimeoutError` after
    ``within`` seconds.
    """
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the process for {address} exited with code {process.returncode}")
        if serving(address, timeout=1.0):
            return
        if refusal is not None and (why := refusal(address)):
            raise RuntimeError(f"refuses to serve at {address}: {why}")
        time.sleep(every)
    raise TimeoutError(f"{address} did not report SERVING within {within:.0f} s")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stderr.write("usage: python -m strata_serving.probe HOST:PORT [SERVICE]\n")
        return 2
    return 0 if serving(args[0], args[1] if len(args) > 1 else "") else 1


if __name__ == "__main__":
    raise SystemExit(main())
