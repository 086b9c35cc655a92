"""A gRPC proxy that loses responses, as a mesh does when a connection resets after the server replied.

Every unary call is forwarded byte for byte to the upstream server. For the methods named in
``lose``, the first ``times`` responses are dropped once the upstream has answered (the server
committed the write) and the caller gets UNAVAILABLE instead: what Envoy answers when the upstream
connection resets, a proxy times out or a pod is drained between the reply and the client. The fault
injection of the idempotent-write tests; everything else is a real server and a real client.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:  # generic in grpc-stubs only
    Handler = grpc.GenericRpcHandler[bytes, bytes]
else:
    Handler = grpc.GenericRpcHandler

STREAMING = frozenset({"/grpc.health.v1.Health/Watch", "/strata.memory.v1.MemoryService/Reindex"})


class LossyProxy:
    def __init__(self, upstream: str, lose: Iterable[str], *, times: int = 1) -> None:
        self._upstream_address = upstream
        self._lose = {f"/strata.memory.v1.MemoryService/{name}" for name in lose}
        self._times = times
        self.forwarded: Counter[str] = Counter()
        """Calls forwarded upstream, per method name."""
        self.lost: Counter[str] = Counter()
        """Responses dropped after the upstream answered, per method name."""
        self._server: grpc.aio.Server | None = None
        self._channel: grpc.aio.Channel | None = None
        self.address = ""

    async def start(self) -> str:
        """Serve on a free port (in the running loop, which must be the one that stops it)."""
        self._server = grpc.aio.server()
        self._server.add_generic_rpc_handlers([_Forwarding(self)])
        port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        self._channel = grpc.aio.insecure_channel(self._upstream_address)
        self.address = f"127.0.0.1:{port}"
        return self.address

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(None)
        if self._channel is not None:
            await self._channel.close(None)

    async def forward(
        self, method: str, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bytes:
        assert self._channel is not None
        name = method.rsplit("/", 1)[-1]
        self.forwarded[name] += 1
        call = self._channel.unary_unary(method, None, None)
        metadata = tuple((key, value) for key, value in context.invocation_metadata() or ())
        try:
            response: bytes = await call(request, metadata=metadata)
        except grpc.aio.AioRpcError as error:
            trailers: Any = error.trailing_metadata() or ()  # the details (ErrorInfo) go back as they came
            await context.abort(error.code(), error.details() or "", tuple(trailers))
        if method in self._lose and self.lost[name] < self._times:
            self.lost[name] += 1
            await context.abort(grpc.StatusCode.UNAVAILABLE, "upstream connect error or disconnect/reset")
        return response

    async def forward_stream(
        self, method: str, request: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        """A server-streaming call (the clients' Health/Watch, which their balancing follows)."""
        assert self._channel is not None
        metadata = tuple((key, value) for key, value in context.invocation_metadata() or ())
        async for response in self._channel.unary_stream(method, None, None)(request, metadata=metadata):
            yield response


class _Forwarding(Handler):
    def __init__(self, proxy: LossyProxy) -> None:
        self._proxy = proxy

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        method = details.method
        if method in STREAMING:

            async def stream(
                request: bytes, context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[bytes]:
                async for response in self._proxy.forward_stream(method, request, context):
                    yield response

            return grpc.unary_stream_rpc_method_handler(stream)

        async def handle(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            return await self._proxy.forward(method, request, context)

        return grpc.unary_unary_rpc_method_handler(handle)
