"""Wrapping a gRPC method handler of any kind (unary or streaming, either direction) around a call.

grpc.aio accepts two shapes of streaming-response handler: an async generator that yields responses,
and a coroutine that writes them with ``context.write`` and returns None (grpcio-health's ``Watch`` is
one). It tells them apart by inspecting the function it is given, so a wrapper must not impose its
own shape on what it wraps. Every wrapper built here is a coroutine; for a streaming response it
drives whatever the inner handler returned: it awaits a coroutine, and writes the items of an
(async) iterator one by one.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import Any, TypeAlias, cast

import grpc

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
Handler: TypeAlias = "Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Any]"
Unary: TypeAlias = "Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]"
Streaming: TypeAlias = "Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Any]"
Around: TypeAlias = (
    "Callable[[Callable[[], Awaitable[Any]], grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]"
)
"""``around(run, context)``: does its work before and after ``await run()`` and returns its result."""


def rewrap(handler: grpc.RpcMethodHandler[Any, Any], around: Around) -> grpc.RpcMethodHandler[Any, Any]:
    """A handler of the same kind and serializers as ``handler`` whose calls run inside ``around``."""
    serializers = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            _single(cast(Handler, handler.unary_unary), around), **serializers
        )
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(
            _stream(cast(Handler, handler.unary_stream), around), **serializers
        )
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(
            _single(cast(Handler, handler.stream_unary), around), **serializers
        )
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(
            _stream(cast(Handler, handler.stream_stream), around), **serializers
        )
    return handler


def _single(inner: Handler, around: Around) -> Unary:
    async def behaviour(request: Any, context: Context) -> Any:
        async def run() -> Any:
            return await cast(Awaitable[Any], inner(request, context))

        return await around(run, context)

    return behaviour


def _stream(inner: Handler, around: Around) -> Streaming:
    async def behaviour(request: Any, context: Context) -> None:
        async def run() -> None:
            await drive(inner(request, context), context)

        await around(run, context)

    return behaviour


async def drive(result: Any, context: Context) -> None:
    """Send what a streaming handler produced: await a coroutine (it writes for itself), or write
    each item of an async or plain iterator."""
    if inspect.isawaitable(result):
        await result
    elif isinstance(result, AsyncIterable):
        async for item in result:
            await context.write(item)
    elif isinstance(result, Iterable):
        for item in result:
            await context.write(item)
    elif result is not None:
        raise TypeError(f"a streaming handler returned {type(result).__name__}, not a stream")
