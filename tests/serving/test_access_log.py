"""The access log records the status the client saw: DEADLINE_EXCEEDED and CANCELLED, not OK; and OK
for a call that finished within its deadline, however little of it was left."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata_serving.server import GrpcServer

SERVICE = "strata.test.Slow"


async def _slow(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    await asyncio.sleep(float(request.decode()))
    return request


async def _slow_stream(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[bytes]:
    yield b"first"
    await asyncio.sleep(float(request.decode()))
    yield b"second"


def _register(server: grpc.aio.Server) -> None:
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Slow": grpc.unary_unary_rpc_method_handler(_slow),
            "SlowStream": grpc.unary_stream_rpc_method_handler(_slow_stream),
        },
    )
    server.add_generic_rpc_handlers((handler,))


@pytest.fixture
async def server() -> AsyncIterator[GrpcServer]:
    srv = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_register)
    await srv.start()
    yield srv
    await srv.stop(0)


async def _logged_code(caplog: pytest.LogCaptureFixture, method: str) -> str:
    for _ in range(200):  # the server logs when its handler ends, a moment after the client gave up
        codes = [
            getattr(r, "rpc_code", None) for r in caplog.records if getattr(r, "rpc_method", "") == method
        ]
        if codes:
            return str(codes[0])
        await asyncio.sleep(0.01)
    raise AssertionError(f"no access log line for {method}")


async def test_a_call_past_its_deadline_is_logged_deadline_exceeded(
    server: GrpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="strata.rpc")
    async with grpc.aio.insecure_channel(server.address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await channel.unary_unary(f"/{SERVICE}/Slow", None, None)(b"1.0", timeout=0.1)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert await _logged_code(caplog, f"/{SERVICE}/Slow") == "DEADLINE_EXCEEDED"


async def test_a_call_that_ends_within_its_deadline_is_logged_ok(
    server: GrpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="strata.rpc")
    async with grpc.aio.insecure_channel(server.address) as channel:
        reply = await channel.unary_unary(f"/{SERVICE}/Slow", None, None)(b"0", timeout=0.99)
    assert reply == b"0"
    assert await _logged_code(caplog, f"/{SERVICE}/Slow") == "OK"  # under a second left is not late


async def test_a_cancelled_stream_is_logged_cancelled(
    server: GrpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="strata.rpc")
    async with grpc.aio.insecure_channel(server.address) as channel:
        call = channel.unary_stream(f"/{SERVICE}/SlowStream", None, None)(b"1.0")
        assert await call.read() == b"first"
        call.cancel()
    assert await _logged_code(caplog, f"/{SERVICE}/SlowStream") == "CANCELLED"


async def test_health_checks_are_logged_at_debug(
    server: GrpcServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="strata.rpc")
    async with grpc.aio.insecure_channel(server.address) as channel:
        await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    levels = [r.levelno for r in caplog.records if getattr(r, "rpc_method", "").startswith("/grpc.health")]
    assert levels == [logging.DEBUG]
