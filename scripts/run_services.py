"""`make run`: start RetrievalService and MemoryService as two processes, stop both on Ctrl-C/SIGTERM.

Each service is its own process (as in production, where each scales on its own); this launcher only
starts them in order, waits until each reports SERVING, and forwards shutdown signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVICES = (
    ("retrieval", "strata_retrieval.main", "STRATA_RETRIEVAL_ADDRESS", "127.0.0.1:50052"),
    ("memory", "strata_memory.main", "STRATA_MEMORY_ADDRESS", "127.0.0.1:50051"),
)


def wait_serving(address: str, process: subprocess.Popen[bytes], within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"service on {address} exited with code {process.returncode}")
            try:
                if (
                    health.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    == health_pb2.HealthCheckResponse.SERVING
                ):
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise SystemExit(f"service on {address} did not report SERVING within {within:.0f} s")


def main() -> int:
    processes: list[subprocess.Popen[bytes]] = []
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        for name, module, variable, default in SERVICES:
            address = os.environ.get(variable, default)
            process = subprocess.Popen([sys.executable, "-m", module])
            processes.append(process)
            wait_serving(address, process)
            print(f"strata: {name} service SERVING on {address}", file=sys.stderr)
        while not stopping and all(p.poll() is None for p in processes):
            time.sleep(0.5)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
