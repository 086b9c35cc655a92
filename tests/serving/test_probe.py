"""``wait_until_serving``: a launcher's wait for a child server, against a real gRPC server."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from strata_serving.probe import serving, wait_until_serving


@pytest.fixture
def health_server() -> Iterator[tuple[str, health.HealthServicer]]:
    server = grpc.server(ThreadPoolExecutor(2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(None)


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_returns_once_the_server_reports_serving(
    health_server: tuple[str, health.HealthServicer], child: subprocess.Popen[bytes]
) -> None:
    address, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    wait_until_serving(address, child, within=10)
    assert serving(address)


def test_a_named_service_is_probed_by_its_own_status(
    health_server: tuple[str, health.HealthServicer],
) -> None:
    address, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set("strata.memory.v1.MemoryService", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert serving(address)
    assert not serving(address, "strata.memory.v1.MemoryService")
    servicer.set("strata.memory.v1.MemoryService", health_pb2.HealthCheckResponse.SERVING)
    assert serving(address, "strata.memory.v1.MemoryService")


def test_a_listener_that_never_answers_is_not_serving_once_the_timeout_passes() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never speaks HTTP/2
        started = time.monotonic()
        assert not serving(f"127.0.0.1:{silent.getsockname()[1]}", timeout=0.5)
    assert time.monotonic() - started < 10


def test_a_server_not_serving_times_out(
    health_server: tuple[str, health.HealthServicer], child: subprocess.Popen[bytes]
) -> None:
    address, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    with pytest.raises(TimeoutError, match="did not report SERVING"):
        wait_until_serving(address, child, within=0.5, every=0.05)


def test_a_child_that_exits_is_reported_with_its_exit_code(
    health_server: tuple[str, health.HealthServicer],
) -> None:
    address, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    exited.wait()
    with pytest.raises(RuntimeError, match="exited with code 3"):
        wait_until_serving(address, exited, within=10)
