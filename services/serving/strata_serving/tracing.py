"""The span API every layer may use: spans around work, the current trace id, context for threads.

Only the OpenTelemetry API is imported here (no SDK, no grpc), so the store, the indexing worker
and the retrieval engine can open spans without pulling the server in. Spans are no-ops until a
tracer provider is installed (:func:`strata_serving.server_tracing.configure_tracing`, from
``main()``). Work run in an executor thread must be submitted with :func:`in_context` to stay a
child of the calling span (threads do not inherit context variables).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from opentelemetry import trace

_P = ParamSpec("_P")
_R = TypeVar("_R")
_tracer = trace.get_tracer("strata")


def span(name: str, **attributes: str | int | float | bool) -> contextlib.AbstractContextManager[trace.Span]:
    """A child span of the current one around a piece of work (a new trace outside any)."""
    return _tracer.start_as_current_span(name, attributes=attributes)


def child_span(name: str, **attributes: str | int | float | bool) -> contextlib.AbstractContextManager[Any]:
    """A span only inside a trace: frequent background work (the outbox polling the store) does not
    start a trace of its own each time."""
    if not trace.get_current_span().get_span_context().is_valid:
        return contextlib.nullcontext()
    return _tracer.start_as_current_span(name, attributes=attributes)


def annotate(name: str, value: str | int | float | bool) -> None:
    """Record ``name = value`` on the current span (the RPC's server span inside a handler); nothing
    outside a recording span."""
    trace.get_current_span().set_attribute(name, value)


def in_context(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` bound to the caller's context (current span, request id), for an executor."""
    captured = contextvars.copy_context()

    @functools.wraps(function)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        return captured.copy().run(function, *args, **kwargs)

    return run


def current_trace_id() -> str | None:
    """The current trace id as 32 hex digits, or None outside a (valid) trace."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
