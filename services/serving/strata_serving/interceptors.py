"""Server interceptor: request ids, one access-log line per call, and error translation.

Handlers raise :class:`~strata_serving.errors.StrataError`; this interceptor turns it into the mapped
status code with ``google.rpc.Status`` details in the trailing metadata. Any other exception is logged
with its traceback and answered as INTERNAL without leaking its text.
"""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import grpc

from strata_serving.errors import StrataError
from strata_serving.status import STATUS_DETAILS_KEY, rich_status, status_code_for

REQUEST_ID_KEY = "x-request-id"
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
log = logging.getLogger("strata.rpc")

Unary: TypeAlias = "Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]"
Streaming: TypeAlias = "Callable[[Any, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[Any]]"

if TYPE_CHECKING:  # grpc's classes are generic only in their type stubs
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:
    _Interceptor = grpc.aio.ServerInterceptor


class RequestContextInterceptor(_Interceptor):
    """Tags each call with a request id, logs its outcome and maps domain errors to statuses."""

    async def intercept_service(  # type: ignore[override]  # grpc returns None for unknown methods
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        incoming = dict(handler_call_details.invocation_metadata or ())
        request_id = str(incoming.get(REQUEST_ID_KEY) or uuid.uuid4().hex)
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                _wrap_unary(cast(Unary, handler.unary_unary), method, request_id),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                _wrap_stream(cast(Streaming, handler.unary_stream), method, request_id),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # client- and bidi-streaming calls pass through untouched


def _wrap_unary(inner: Unary, method: str, request_id: str) -> Unary:
    async def behaviour(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        request_id_var.set(request_id)
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            return await inner(request, context)
        except StrataError as error:
            code = status_code_for(error)
            await _abort(context, error, request_id)
        except Exception:
            code = grpc.StatusCode.INTERNAL
            if _already_aborted(context):
                code = context.code() or code
                raise
            log.exception("unhandled error in %s request_id=%s", method, request_id)
            await context.abort(code, f"internal error (request id {request_id})")
        finally:
            _log_call(method, request_id, code, started)

    return behaviour


def _wrap_stream(inner: Streaming, method: str, request_id: str) -> Streaming:
    async def behaviour(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        request_id_var.set(request_id)
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            async for item in inner(request, context):
                yield item
        except StrataError as error:
            code = status_code_for(error)
            await _abort(context, error, request_id)
        except Exception:
            code = grpc.StatusCode.INTERNAL
            if _already_aborted(context):
                raise
            log.exception("unhandled error in %s request_id=%s", method, request_id)
            await context.abort(code, f"internal error (request id {request_id})")
        finally:
            _log_call(method, request_id, code, started)

    return behaviour


async def _abort(context: grpc.aio.ServicerContext[Any, Any], error: StrataError, request_id: str) -> None:
    details = rich_status(error).SerializeToString()
    await context.abort(
        status_code_for(error),
        error.message,
        trailing_metadata=((STATUS_DETAILS_KEY, details), (REQUEST_ID_KEY, request_id)),
    )


def _already_aborted(context: grpc.aio.ServicerContext[Any, Any]) -> bool:
    """True when the handler called ``context.abort`` itself (the exception is then the abort signal)."""
    code = context.code()
    return code is not None and code != grpc.StatusCode.OK


def _log_call(method: str, request_id: str, code: grpc.StatusCode, started: float) -> None:
    elapsed_ms = (time.perf_counter() - started) * 1000
    log.info(
        "rpc %s code=%s ms=%.2f request_id=%s",
        method,
        code.name,
        elapsed_ms,
        request_id,
        extra={"rpc_method": method, "rpc_code": code.name, "elapsed_ms": round(elapsed_ms, 3)},
    )
