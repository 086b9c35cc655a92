"""A hint under the two failures that mean "the CLI is talking to the wrong place".

* UNAVAILABLE with nothing answering gRPC at the target: the services are not running there.
* UNIMPLEMENTED from a server that does not serve MemoryService: another service answers (most often
  RetrievalService's port); the hint names what it serves, asked through server reflection.

Both hints name the address and how to point the CLI at MemoryService (``--target`` or
``STRATA_MEMORY_TARGET``). Any other failure is the server's own answer and gets no hint.
"""

from __future__ import annotations

import grpc

from strata.client import DEFAULT_TARGET
from strata.client.arguments import TARGET_ENV

MEMORY_SERVICE = "strata.memory.v1.MemoryService"
_POINT = (
    f"point the CLI at MemoryService with --target HOST:PORT or {TARGET_ENV}=HOST:PORT "
    f"(make run: {DEFAULT_TARGET})"
)


def hint(
    code: grpc.StatusCode, target: str, credentials: grpc.ChannelCredentials | None = None
) -> str | None:
    """The hint line for a call to ``target`` that failed with ``code``, or ``None``."""
    if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED):
        return None
    services = served_services(target, credentials)
    if code is grpc.StatusCode.UNAVAILABLE:
        return (
            f"hint: nothing answers gRPC at {target}; start the services (make run), or {_POINT}"
            if services is None
            else None
        )
    if services is None or MEMORY_SERVICE in services:
        return None  # a MemoryService without this method (an older version) says so itself
    named = [service for service in services if not service.startswith("grpc.")]
    what = ", ".join(named) if named else "no Strata service"
    return f"hint: {target} serves {what}, not {MEMORY_SERVICE}; {_POINT}"


def served_services(
    target: str, credentials: grpc.ChannelCredentials | None = None, timeout: float = 2.0
) -> list[str] | None:
    """The services ``target`` lists through reflection; ``[]`` when it answers but cannot list
    them; ``None`` when nothing answers gRPC there (no connection within ``timeout``)."""
    channel = grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)
    with channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return None
        try:
            from grpc_reflection.v1alpha import reflection_pb2  # installed with the services
        except ImportError:
            return []
        call = channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        try:
            replies = list(call(iter([request]), timeout=timeout))
        except grpc.RpcError:
            return []
    return [service.name for reply in replies for service in reply.list_services_response.service]
