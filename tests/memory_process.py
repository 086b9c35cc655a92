"""A ``strata-memory`` process, for tests that need a real one: ``kill -9``, SIGTERM, several replicas.

In-process servers (``start_memory_server``) cover everything else; a child process is what a test
needs to kill the server for real or to run replicas side by side on one store.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.hermetic import unreachable_address


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_serving(address: str, within: float) -> None:
    """Poll the gRPC health service at ``address`` until it says SERVING (TimeoutError after ``within`` s)."""
    async with grpc.aio.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        deadline = asyncio.get_running_loop().time() + within
        while True:
            try:
                reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"the server at {address} did not become SERVING within {within:.0f} s")
            await asyncio.sleep(0.1)


class MemoryProcess:
    """``python -m strata_memory.main`` on a free port over ``database_url``."""

    def __init__(self, database_url: str, *, retrieval_address: str | None = None, **settings: str) -> None:
        """``retrieval_address``: the RetrievalService to index into (by default one nobody listens
        on); ``settings``: further ``STRATA_MEMORY_*`` settings by field name, as strings."""
        self.address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "STRATA_MEMORY_ADDRESS": self.address,
            "STRATA_MEMORY_DATABASE_URL": database_url,
            "STRATA_MEMORY_RETRIEVAL_ADDRESS": retrieval_address or unreachable_address(),
            **{f"STRATA_MEMORY_{name.upper()}": value for name, value in settings.items()},
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "strata_memory.main"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    async def wait_serving(self, within: float = 60.0) -> None:
        await wait_serving(self.address, within)

    def kill(self) -> None:
        """``kill -9`` (if it is still running), then reap it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
