"""Child processes: the two services through their public entry points (``python -m
strata_memory.main``, ``python -m strata_retrieval.main``) with a descriptor limit, as a deployment
runs them, and the flood clients."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

READY_SECONDS = 300.0


def free_address() -> str:
    """A loopback address with a port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


class Child:
    """``python -m MODULE ARGS`` whose descriptor limit is ``nofile`` (soft and hard) when given.

    Its stderr goes to ``log``; :meth:`stop` sends SIGTERM and returns what it printed on stdout.
    """

    def __init__(
        self,
        module: str,
        args: list[str],
        log: Path,
        *,
        env: Mapping[str, str] | None = None,
        nofile: int | None = None,
    ) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        with log.open("a") as err:
            self._process = subprocess.Popen(
                [sys.executable, "-m", module, *args],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=os.environ | {"OPENBLAS_NUM_THREADS": "1"} | dict(env or {}),
                preexec_fn=limit if nofile is not None else None,  # noqa: PLW1509 - setrlimit only
            )

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    def stop(self) -> str:
        """SIGTERM, wait, and return the child's stdout."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
        try:
            out, _ = self._process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            out, _ = self._process.communicate()
        return out or ""


async def wait_serving(address: str, child: Child, seconds: float = READY_SECONDS) -> None:
    """Until ``address`` answers SERVING (or ``child`` exits, or ``seconds`` pass: RuntimeError)."""
    until = time.monotonic() + seconds
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < until and child.alive():
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{address} did not report SERVING")
