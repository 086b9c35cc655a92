"""What one call carries into the calls it makes: request id, remaining deadline, trace context.

The request interceptor records these for the call being served (context variables, so each call's
task sees its own); a client inside the service — MemoryService's channel to RetrievalService — asks
:func:`outgoing_metadata` and :func:`outgoing_timeout` for what to send on. Outside a served call
(the outbox's background delivery) there is nothing to forward and the client's own cap applies.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Sequence

from opentelemetry import propagate

REQUEST_ID_KEY = "x-request-id"
MAX_REQUEST_ID_LENGTH = 128
"""The longest ``x-request-id`` kept (a UUID is 36 characters)."""
MIN_TIMEOUT_SECONDS = 0.001
"""Never send a zero or negative timeout: gRPC Python reads ``timeout=0`` as no deadline at all."""

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
deadline_var: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
"""Absolute ``time.monotonic()`` by which the caller of the current call stops waiting, if any."""


def set_deadline(time_remaining: float | None) -> None:
    """Record the current call's deadline from ``context.time_remaining()`` (None: no deadline)."""
    deadline_var.set(None if time_remaining is None else time.monotonic() + time_remaining)


def remaining_seconds() -> float | None:
    """Seconds left before the current call's caller gives up (None: no deadline, or no call)."""
    deadline = deadline_var.get()
    return None if deadline is None else deadline - time.monotonic()


def outgoing_timeout(cap: float) -> float:
    """The timeout for a call made on behalf of the current one: what its caller has left, at most
    ``cap`` (the service's own limit), and ``cap`` outside a served call."""
    left = remaining_seconds()
    if left is None:
        return cap
    return max(min(cap, left), MIN_TIMEOUT_SECONDS)


def printable(value: str, max_length: int = MAX_REQUEST_ID_LENGTH) -> bool:
    """The rule for every metadata value a service logs, echoes or forwards: 1 to ``max_length``
    printable ASCII characters without spaces (``!`` to ``~``). Anything else (CR, LF, ESC, NUL,
    DEL, non-ASCII) could forge a log line, drive a terminal, or make the next hop refuse the call."""
    return 0 < len(value) <= max_length and all("!" <= ch <= "~" for ch in value)


def outgoing_metadata(base: Sequence[tuple[str, str]] = ()) -> tuple[tuple[str, str], ...]:
    """``base`` plus the current request id and W3C trace context (``traceparent``, ``tracestate``);
    a trace value that is not printable ASCII (see :func:`printable`) is not forwarded."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    carrier = {key: value for key, value in carrier.items() if printable(value, 1024)}
    request_id = request_id_var.get()
    if request_id != "-":
        carrier[REQUEST_ID_KEY] = request_id
    return (*base, *carrier.items())
