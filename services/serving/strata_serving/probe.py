"""Health probe for containers: ``python -m strata_serving.probe HOST:PORT [SERVICE]``.

Exits 0 when the server reports SERVING (for the whole server, or for SERVICE), 1 otherwise.
"""

from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def serving(address: str, service: str = "", timeout: float = 2.0) -> bool:
    with grpc.insecure_channel(address) as channel:
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
