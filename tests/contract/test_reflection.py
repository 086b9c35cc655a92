"""Server reflection as today's tools use it (issue 31 item 8): ``grpc.reflection.v1`` is served
beside ``v1alpha`` (grpcurl 1.9+ and Postman ask v1 first), and a method's full name is a symbol
reflection resolves, so ``grpcurl describe Service.Method`` works."""

from __future__ import annotations

import subprocess

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2 as wire  # v1's messages are v1alpha's, field for field

from tests.contract.test_grpcurl_recipes import grpcurl_dir

METHOD = "strata.memory.v1.MemoryService.CreateAgent"


def _ask(target: str, version: str, request: wire.ServerReflectionRequest) -> wire.ServerReflectionResponse:
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=wire.ServerReflectionRequest.SerializeToString,
            response_deserializer=wire.ServerReflectionResponse.FromString,
        )
        (reply,) = list(call(iter([request]), timeout=10))
    return reply


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_both_reflection_versions_list_the_services_and_resolve_a_method(
    memory_target: str, version: str
) -> None:
    listed = _ask(memory_target, version, wire.ServerReflectionRequest(list_services=""))
    names = {service.name for service in listed.list_services_response.service}
    assert {
        "strata.memory.v1.MemoryService",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= names
    found = _ask(memory_target, version, wire.ServerReflectionRequest(file_containing_symbol=METHOD))
    assert found.WhichOneof("message_response") == "file_descriptor_response", found
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(b)
        for b in found.file_descriptor_response.file_descriptor_proto
    ]
    assert files[0].name == "strata/memory/v1/memory_service.proto"
    missing = _ask(
        memory_target, version, wire.ServerReflectionRequest(file_containing_symbol=METHOD + "Nope")
    )
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


def test_grpcurl_describes_a_method(memory_target: str) -> None:
    described = subprocess.run(
        [f"{grpcurl_dir()}/grpcurl", "-plaintext", memory_target, "describe", METHOD],
        capture_output=True,
        text=True,
        check=False,
    )
    assert described.returncode == 0, described.stderr
    assert (
        "rpc CreateAgent ( .strata.memory.v1.CreateAgentRequest ) returns ( .strata.memory.v1.Agent );"
        in (described.stdout)
    )
