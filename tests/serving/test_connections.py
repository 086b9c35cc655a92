"""Connection hygiene through real servers: raw TCP connections that never speak HTTP/2 are closed
after the handshake timeout, the connection cap closes extra connections at accept, and a server
whose descriptors were filled by such connections serves a new client again once they are closed.
The descriptor limit is raised to the hard limit where the OS allows it (a refusal injected)."""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata_serving.connections import (
    DESCRIPTOR_RESERVE,
    MIN_CONNECTIONS,
    connection_cap,
    raise_descriptor_limit,
)
from strata_serving.server import GrpcServer
from strata_serving.settings import ServingSettings


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed ``sock`` (what it sent, its SETTINGS frame, is read and dropped)."""
    sock.setblocking(False)
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def _raw_connections(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


async def health_status(address: str, deadline_seconds: float = 5) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=deadline_seconds
        )
        return int(reply.status)


@pytest.fixture
async def quick_handshake() -> AsyncIterator[GrpcServer]:
    settings = ServingSettings.model_construct(handshake_timeout_seconds=1.0)
    server = GrpcServer(
        "127.0.0.1:0", service_names=["strata.test.Empty"], register=lambda _: None, serving=settings
    )
    await server.start()
    await server.mark_serving()
    yield server
    await server.stop(0)


async def test_connections_without_a_preface_are_closed_after_the_handshake_timeout(
    quick_handshake: GrpcServer,
) -> None:
    raw = _raw_connections(quick_handshake.port, 40)
    try:
        await asyncio.sleep(0.3)
        assert not any(closed_by_server(sock) for sock in raw)
        await asyncio.sleep(2.0)
        assert all(closed_by_server(sock) for sock in raw)
        assert await health_status(quick_handshake.address) == health_pb2.HealthCheckResponse.SERVING
    finally:
        for sock in raw:
            sock.close()


async def test_the_default_handshake_timeout_is_seconds_not_minutes() -> None:
    assert ServingSettings.model_construct().handshake_timeout_seconds <= 10


async def test_connections_beyond_the_cap_are_closed_at_accept() -> None:
    settings = ServingSettings.model_construct(max_connections=10)
    server = GrpcServer(
        "127.0.0.1:0", service_names=["strata.test.Empty"], register=lambda _: None, serving=settings
    )
    await server.start()
    try:
        raw = _raw_connections(server.port, 20)
        await asyncio.sleep(0.5)
        closed = sum(closed_by_server(sock) for sock in raw)
        assert closed == 10
        for sock in raw:
            sock.close()
    finally:
        await server.stop(0)


async def test_a_connection_idle_past_the_limit_is_closed_by_the_server() -> None:
    settings = ServingSettings.model_construct(max_connection_idle_seconds=0.5)
    server = GrpcServer("127.0.0.1:0", service_names=["x"], register=lambda _: None, serving=settings)
    await server.start()
    await server.mark_serving()
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert channel.get_state() is grpc.ChannelConnectivity.READY
            await asyncio.sleep(2.0)  # the client's own idle limit is 30 minutes
            assert channel.get_state() is grpc.ChannelConnectivity.IDLE  # the server sent GOAWAY
    finally:
        await server.stop(0)


def test_the_cap_keeps_a_reserve_of_descriptors() -> None:
    assert connection_cap(1024, None) == 1024 - DESCRIPTOR_RESERVE
    assert connection_cap(100, None) == MIN_CONNECTIONS
    assert connection_cap(1024, 50) == 50


def test_the_descriptor_limit_is_raised_to_the_hard_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    raised: list[tuple[int, tuple[int, int]]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", lambda which, limits: raised.append((which, limits)))
    assert raise_descriptor_limit() == 4096
    assert raised == [(resource.RLIMIT_NOFILE, (4096, 4096))]


def test_a_descriptor_limit_the_os_will_not_raise_is_kept_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(which: int, limits: tuple[int, int]) -> None:
        raise OSError("operation not permitted")  # a container without CAP_SYS_RESOURCE, say

    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", refuse)
    with caplog.at_level(logging.WARNING, logger="strata.server"):
        assert raise_descriptor_limit() == 1024
    assert [record.getMessage() for record in caplog.records] == [
        "could not raise the descriptor limit from 1024 to 4096"
    ]


_SERVER = textwrap.dedent(
    """
    import asyncio, resource, sys
    from strata_serving.server import GrpcServer
    from strata_serving.settings import ServingSettings

    async def main() -> None:
        settings = ServingSettings.model_construct(handshake_timeout_seconds=float(sys.argv[1]))
        server = GrpcServer("127.0.0.1:0", service_names=["x"], register=lambda _: None, serving=settings)
        await server.start()
        await server.mark_serving()
        print(server.port, flush=True)
        await asyncio.sleep(300)

    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    asyncio.run(main())
    """
)


@pytest.fixture
def low_descriptor_server() -> Iterator[int]:
    """A server in a child process whose descriptor limit is 256 (soft and hard), handshake timeout 2 s."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVER, "2.0"],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert child.stdout is not None
        yield int(child.stdout.readline())
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


async def test_a_new_client_connects_after_raw_connections_filled_the_descriptors(
    low_descriptor_server: int,
) -> None:
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 600
    raw = _raw_connections(low_descriptor_server, 300)
    try:
        started = time.monotonic()
        address = f"127.0.0.1:{low_descriptor_server}"
        while True:
            try:
                assert (
                    await health_status(address, deadline_seconds=1) == health_pb2.HealthCheckResponse.SERVING
                )
                break
            except grpc.aio.AioRpcError:
                assert time.monotonic() - started < 8, "no new connection within 8 s of the flood"
        await asyncio.sleep(2.5)  # the handshake timeout of the last ones accepted
        assert sum(closed_by_server(sock) for sock in raw) == 300
    finally:
        for sock in raw:
            sock.close()
