"""What already answers at an address a launcher is about to give a service (``make run``).

A launcher that starts a service on a port someone holds would see the old server answer SERVING
and report the new one as up. :func:`what_answers` asks first: nothing (the connection is refused:
the port is free), a gRPC server (named by the services its health service reports SERVING, or
"a gRPC server" when it reports neither Strata service), or something that is not plaintext gRPC.
On Linux the listening process is named too, from ``/proc/net/tcp*`` and the processes' sockets.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

STRATA_SERVICES = ("strata.memory.v1.MemoryService", "strata.retrieval.v1.RetrievalService")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def what_answers(address: str) -> str | None:
    """A sentence naming what accepts connections at ``HOST:PORT``, or ``None`` when nothing does."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=1.0):
            pass
    except OSError:
        return None
    owner = _listener(int(port))
    by = f" (pid {owner})" if owner else ""
    return f"{address} already answers: {_kind(address)}{by}"


def _kind(address: str) -> str:
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        serving = []
        for service in STRATA_SERVICES:
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=1.0)
            except grpc.RpcError as error:
                if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    return "a process that does not speak plaintext gRPC"
                continue  # NOT_FOUND: not this service; UNIMPLEMENTED: no health service
            serving.append(f"{service} {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}")
    return (
        f"a gRPC server with {', '.join(serving)}" if serving else "a gRPC server serving no Strata service"
    )


def _listener(port: int) -> str | None:
    """``PID COMMAND`` of the process listening on ``port`` when /proc shows it, else ``None``."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    for process in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if any(str(fd.readlink()) in inodes for fd in (process / "fd").iterdir()):
                command = (process / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                return f"{process.name}: {command}"
    return None
