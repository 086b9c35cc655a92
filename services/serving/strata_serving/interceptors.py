"""Server interceptor: request ids, deadlines, a span and metrics per call, one access-log line, and
error translation.

Handlers raise :class:`~strata_serving.errors.StrataError`; this interceptor turns it into the mapped
status code with ``google.rpc.Status`` details in the trailing metadata. Any other exception is logged
with its traceback and answered as INTERNAL without leaking its text. Every kind of handler is
wrapped (unary and streaming, async generators and ``context.write`` coroutines alike, see
:mod:`strata_serving.handlers`). The access log and metrics record the status the client saw: a call
whose deadline passed is DEADLINE_EXCEEDED and one the client cancelled is CANCELLED, even when the
handler itself finished. A caller's ``x-request-id`` that is not printable ASCII is replaced by a
fresh id before anything logs, echoes or forwards it. Health checks are logged at DEBUG: a probe
every few seconds is not news. A client ends a ``Health/Watch`` (an endless stream: a balancing
channel or a probe following a server) by cancelling it; that cancellation is its normal end, so it
is recorded as OK, not CANCELLED (a deadline that passes is still DEADLINE_EXCEEDED).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import grpc

from strata_serving import server_tracing
from strata_serving.errors import StrataError
from strata_serving.handlers import Context, Streaming, Unary, rewrap
from strata_serving.metrics import RpcMetrics, rpc_labels
from strata_serving.propagation import (
    MAX_REQUEST_ID_LENGTH,
    REQUEST_ID_KEY,
    printable,
    request_id_var,
    set_deadline,
)
from strata_serving.status import STATUS_DETAILS_KEY, rich_status, status_code_for

__all__ = ["REQUEST_ID_KEY", "RequestContextInterceptor", "Streaming", "Unary", "request_id_var"]

log = logging.getLogger("strata.rpc")
_QUIET_PREFIX = "/grpc.health.v1.Health/"
ENDLESS_STREAMS = frozenset({"/grpc.health.v1.Health/Watch"})
"""Server streams that end only when their client cancels them: that cancel is recorded as OK."""

if TYPE_CHECKING:  # grpc's classes are generic only in their type stubs
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:
    _Interceptor = grpc.aio.ServerInterceptor


class RequestContextInterceptor(_Interceptor):
    """Tags each call with a request id and trace span, logs and counts its outcome, and maps
    domain errors to statuses. ``metrics`` (optional) receives each call's method, code and time."""

    def __init__(self, metrics: RpcMetrics | None = None) -> None:
        self._metrics = metrics

    async def intercept_service(  # type: ignore[override]  # grpc returns None for unknown methods
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        incoming = {
            key: value
            for key, value in handler_call_details.invocation_metadata or ()
            if isinstance(value, str)
        }
        request_id = _request_id(incoming.get(REQUEST_ID_KEY), method)
        kind = _KINDS[handler.request_streaming, handler.response_streaming]
        return rewrap(handler, _CallScope(method, request_id, incoming, self._metrics, kind))


_KINDS = {
    (False, False): "unary",
    (True, False): "client_stream",
    (False, True): "server_stream",
    (True, True): "bidi_stream",
}


_REQUEST_IDS = random.Random()
"""A private generator: drawing ids must not advance the process's global ``random`` state (a program
embedding the server, or a test seeding ``random``, would see its sequence change per call)."""


def _request_id(given: str | None, method: str) -> str:
    """The caller's ``x-request-id`` if it is printable ASCII of at most ``MAX_REQUEST_ID_LENGTH``
    characters (:func:`~strata_serving.propagation.printable`); otherwise a fresh id, and the log
    says so (naming only the length: the raw value is never logged, echoed or forwarded)."""
    if given is None or given == "":
        return _new_request_id()
    if printable(given):
        return given
    fresh = _new_request_id()
    log.warning(
        "x-request-id replaced by %s in %s: %d characters, not 1-%d printable ASCII characters",
        fresh,
        method,
        len(given),
        MAX_REQUEST_ID_LENGTH,
    )
    return fresh


def _new_request_id() -> str:
    """32 random hex digits, like ``uuid4().hex``: a log correlation id, not a secret, so drawn from
    ``random`` rather than a getrandom syscall per call (bench/perf/findings.md)."""
    return f"{_REQUEST_IDS.getrandbits(128):032x}"


class _CallScope:
    """What runs around one call's handler (built per call, so it holds only that call's data)."""

    def __init__(
        self,
        method: str,
        request_id: str,
        incoming: dict[str, str],
        metrics: RpcMetrics | None,
        kind: str = "unary",
    ) -> None:
        self.method = method
        self.labels = rpc_labels(method, kind)
        self.request_id = request_id
        self.incoming = incoming
        self.metrics = metrics
        self.deadline: float | None = None

    async def __call__(self, run: Callable[[], Awaitable[Any]], context: Context) -> Any:
        request_id_var.set(self.request_id)
        self.deadline = context.time_remaining()
        set_deadline(self.deadline)
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        if self.metrics is not None:
            self.metrics.started(self.labels)
        with server_tracing.server_span(self.method, self.incoming) as span:
            try:
                result = await run()
            except StrataError as error:
                code = status_code_for(error)
                await _abort(context, error, self.request_id)
            except asyncio.CancelledError:
                code = _cancelled_code(context)
                if code is grpc.StatusCode.CANCELLED and self.method in ENDLESS_STREAMS:
                    code = grpc.StatusCode.OK
                raise
            except Exception:
                if _already_aborted(context):
                    code = context.code() or grpc.StatusCode.UNKNOWN
                    raise
                code = grpc.StatusCode.INTERNAL
                log.exception("unhandled error in %s request_id=%s", self.method, self.request_id)
                await context.abort(code, f"internal error (request id {self.request_id})")
            else:
                code = _finished_code(context)
                return result
            finally:
                server_tracing.end_server_span(span, code)
                self._record(code, started)

    def _record(self, code: grpc.StatusCode, started: float) -> None:
        elapsed = time.perf_counter() - started
        if self.metrics is not None:
            self.metrics.finished(self.labels, code.name, elapsed)
        level = logging.DEBUG if self.method.startswith(_QUIET_PREFIX) else logging.INFO
        if not log.isEnabledFor(level):
            return
        elapsed_ms = elapsed * 1000
        extra: dict[str, Any] = {
            "rpc_method": self.method,
            "rpc_code": code.name,
            "elapsed_ms": round(elapsed_ms, 3),
        }
        if self.deadline is not None:
            extra["deadline_ms"] = round(self.deadline * 1000, 1)
        log.log(
            level,
            "rpc %s code=%s ms=%.2f request_id=%s",
            self.method,
            code.name,
            elapsed_ms,
            self.request_id,
            extra=extra,
        )


def _deadline_passed(context: Context) -> bool:
    remaining = context.time_remaining()
    return remaining is not None and remaining <= 0


def _cancelled_code(context: Context) -> grpc.StatusCode:
    """The status the client saw for a call gRPC cancelled under the handler."""
    return grpc.StatusCode.DEADLINE_EXCEEDED if _deadline_passed(context) else grpc.StatusCode.CANCELLED


def _finished_code(context: Context) -> grpc.StatusCode:
    """The status of a call whose handler returned: late or cancelled calls never reached the client
    as OK, and a handler may have set a code without raising."""
    if _deadline_passed(context):
        return grpc.StatusCode.DEADLINE_EXCEEDED
    if context.cancelled():
        return grpc.StatusCode.CANCELLED
    return context.code() or grpc.StatusCode.OK


async def _abort(context: Context, error: StrataError, request_id: str) -> None:
    details = rich_status(error).SerializeToString()
    await context.abort(
        status_code_for(error),
        error.message,
        trailing_metadata=((STATUS_DETAILS_KEY, details), (REQUEST_ID_KEY, request_id)),
    )


def _already_aborted(context: Context) -> bool:
    """True when the handler called ``context.abort`` itself (the exception is then the abort signal)."""
    code = context.code()
    return code is not None and code != grpc.StatusCode.OK
