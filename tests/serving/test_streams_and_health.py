"""Streaming handlers of every shape through the interceptors, and health Watch/List, on a real server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata_serving.errors import NotFound
from strata_serving.server import GrpcServer

SERVICE = "strata.test.Streams"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def _generator(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[bytes]:
    for part in request.split(b","):
        if part == b"missing":
            raise NotFound("no such part", reason="PART_NOT_FOUND")
        yield part


async def _writer(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    for part in request.split(b","):
        if part == b"missing":
            raise NotFound("no such part", reason="PART_NOT_FOUND")
        await context.write(part)


async def _collect(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    return b"+".join([part async for part in requests])


async def _echo_all(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[bytes]:
    async for part in requests:
        yield part.upper()


def _register(server: grpc.aio.Server) -> None:
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Generator": grpc.unary_stream_rpc_method_handler(_generator),
            "Writer": grpc.unary_stream_rpc_method_handler(_writer),
            "Collect": grpc.stream_unary_rpc_method_handler(_collect),
            "EchoAll": grpc.stream_stream_rpc_method_handler(_echo_all),
        },
    )
    server.add_generic_rpc_handlers((handler,))


@pytest.fixture
async def server() -> AsyncIterator[GrpcServer]:
    srv = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_register)
    await srv.start()
    await srv.mark_serving()
    yield srv
    await srv.stop(0)


@pytest.fixture
async def channel(server: GrpcServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(server.address) as opened:
        yield opened


@pytest.mark.parametrize("method", ["Generator", "Writer"])
async def test_server_streams_of_both_shapes_pass_through(channel: grpc.aio.Channel, method: str) -> None:
    call = channel.unary_stream(f"/{SERVICE}/{method}", None, None)(b"a,b,c")
    assert [part async for part in call] == [b"a", b"b", b"c"]


@pytest.mark.parametrize("method", ["Generator", "Writer"])
async def test_domain_error_in_a_stream_keeps_its_status(channel: grpc.aio.Channel, method: str) -> None:
    call = channel.unary_stream(f"/{SERVICE}/{method}", None, None)(b"a,missing")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        _ = [part async for part in call]
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_client_and_bidi_streams_pass_through(channel: grpc.aio.Channel) -> None:
    collected = await channel.stream_unary(f"/{SERVICE}/Collect", None, None)(iter([b"x", b"y"]))
    echoed = channel.stream_stream(f"/{SERVICE}/EchoAll", None, None)(iter([b"x", b"y"]))
    assert collected == b"x+y"
    assert [part async for part in echoed] == [b"X", b"Y"]


async def test_health_list_names_every_service(channel: grpc.aio.Channel) -> None:
    reply = await health_pb2_grpc.HealthStub(channel).List(health_pb2.HealthListRequest())
    assert {name: status.status for name, status in reply.statuses.items()} == {
        "": SERVING,
        SERVICE: SERVING,
    }


async def test_watch_streams_serving_then_not_serving_on_drain(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=SERVICE))
        updates = aiter(watch)
        first = await anext(updates)
        stopping = asyncio.ensure_future(server.stop(1.0, drain=0.5))
        second = await anext(updates)
        listed = await health_pb2_grpc.HealthStub(channel).List(health_pb2.HealthListRequest())
        await stopping
    assert (first.status, second.status) == (SERVING, NOT_SERVING)
    assert {status.status for status in listed.statuses.values()} == {NOT_SERVING}


async def test_a_call_made_while_draining_is_still_answered(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        stopping = asyncio.ensure_future(server.stop(1.0, drain=1.0))
        await asyncio.sleep(0.1)
        during = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE))
        parts = [p async for p in channel.unary_stream(f"/{SERVICE}/Writer", None, None)(b"still,here")]
        await stopping
    assert during.status == NOT_SERVING
    assert parts == [b"still", b"here"]
