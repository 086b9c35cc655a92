"""The CLIENT span of a call one service makes to another (MemoryService -> RetrievalService).

Opened around the outgoing call, with the metadata computed inside it, so the ``traceparent`` sent
names this span and the callee's SERVER span is its child: a trace then shows the hop (network,
queueing, the callee's own time) apart from the caller's work. Attributes follow OpenTelemetry's RPC
semantic conventions: ``rpc.system`` ``grpc``, ``rpc.service``, ``rpc.method``,
``rpc.grpc.status_code`` (0 for OK); a failed call also sets the span's status to ERROR.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import grpc
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

_tracer = trace.get_tracer("strata")


@contextlib.contextmanager
def client_span(service: str, method: str) -> Iterator[trace.Span]:
    """A CLIENT span for a call to ``service``/``method``; a ``grpc.RpcError`` raised inside sets its
    status code and passes on."""
    attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}
    with _tracer.start_as_current_span(
        f"{service}/{method}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except grpc.RpcError as failure:
            code = failure.code()
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            span.set_status(Status(StatusCode.ERROR, code.name))
            raise
        span.set_attribute("rpc.grpc.status_code", grpc.StatusCode.OK.value[0])
