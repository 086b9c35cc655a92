"""strata_serving through a real grpc.aio server: error translation, health, reflection (with the
protos' comments), the address it logs."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from strata.memory.v1 import memory_service_pb2  # noqa: F401  (its files in the descriptor pool)
from strata_serving.errors import FailedPrecondition, InvalidArgument, NotFound
from strata_serving.server import GrpcServer
from strata_serving.status import bad_request_from, error_info_from

SERVICE = "strata.test.Echo"


async def _raise_for(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    match request:
        case b"missing":
            raise NotFound("block 'human' not found", reason="BLOCK_NOT_FOUND", metadata={"label": "human"})
        case b"bad":
            raise InvalidArgument.field("limit", "must be positive")
        case b"full":
            raise FailedPrecondition("over budget", reason="CHAR_LIMIT_EXCEEDED", metadata={"limit": 5})
        case b"boom":
            raise RuntimeError("secret internals")
    return request


def _register(server: grpc.aio.Server) -> None:
    handler = grpc.method_handlers_generic_handler(
        SERVICE, {"Echo": grpc.unary_unary_rpc_method_handler(_raise_for)}
    )
    server.add_generic_rpc_handlers((handler,))


@pytest.fixture
async def server() -> AsyncIterator[GrpcServer]:
    srv = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_register)
    await srv.start()
    yield srv
    await srv.stop(0)


async def _call(server: GrpcServer, payload: bytes) -> grpc.aio.AioRpcError:
    async with grpc.aio.insecure_channel(server.address) as channel:
        echo = channel.unary_unary(f"/{SERVICE}/Echo", None, None)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await echo(payload)
        return caught.value


async def test_ok_call_passes_through(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        assert await channel.unary_unary(f"/{SERVICE}/Echo", None, None)(b"hello") == b"hello"


async def test_domain_error_becomes_status_with_error_info(server: GrpcServer) -> None:
    error = await _call(server, b"full")
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error.details() == "over budget"
    info = error_info_from(error.trailing_metadata())
    assert info is not None
    assert info.reason == "CHAR_LIMIT_EXCEEDED"
    assert dict(info.metadata) == {"limit": "5"}


async def test_field_violation_is_reported_as_bad_request(server: GrpcServer) -> None:
    error = await _call(server, b"bad")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    bad_request = bad_request_from(error.trailing_metadata())
    assert bad_request is not None
    assert [(v.field, v.description) for v in bad_request.field_violations] == [("limit", "must be positive")]


async def test_not_found_maps_to_not_found(server: GrpcServer) -> None:
    assert (await _call(server, b"missing")).code() == grpc.StatusCode.NOT_FOUND


async def test_unknown_exception_is_internal_without_leaking_text(server: GrpcServer) -> None:
    error = await _call(server, b"boom")
    assert error.code() == grpc.StatusCode.INTERNAL
    assert re.fullmatch(r"internal error \(request id [0-9a-f]{32}\)", error.details() or "")  # no "secret"


async def test_health_reports_not_serving_until_marked(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        before = await stub.Check(health_pb2.HealthCheckRequest(service=SERVICE))
        await server.mark_serving()
        after = await stub.Check(health_pb2.HealthCheckRequest(service=SERVICE))
    assert before.status == health_pb2.HealthCheckResponse.NOT_SERVING
    assert after.status == health_pb2.HealthCheckResponse.SERVING


async def test_reflection_lists_the_service(server: GrpcServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        responses = [r async for r in stub.ServerReflectionInfo(iter([request]))]
    names = {s.name for s in responses[0].list_services_response.service}
    assert SERVICE in names
    assert "grpc.health.v1.Health" in names


async def test_reflection_serves_a_strata_file_with_its_comments(server: GrpcServer) -> None:
    symbol = reflection_pb2.ServerReflectionRequest(
        file_containing_symbol="strata.memory.v1.MemoryService.CreateAgent"
    )
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        (reply,) = [r async for r in stub.ServerReflectionInfo(iter([symbol]))]
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in reply.file_descriptor_response.file_descriptor_proto
    ]
    assert files[0].name == "strata/memory/v1/memory_service.proto"
    comments = [location.leading_comments for location in files[0].source_code_info.location]
    assert any("CreateAgent attaches the given blocks" in comment for comment in comments)


async def test_a_started_server_logs_where_it_listens(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="strata.server")
    srv = GrpcServer("127.0.0.1:0", service_names=[SERVICE], register=_register)
    await srv.start()
    try:
        assert f"listening on {srv.address}" in [record.getMessage() for record in caplog.records]
    finally:
        await srv.stop(0)
