"""Tracing for the servers: a server span per call, W3C context across hops, the provider ``main()`` installs.

``main()`` installs a provider with :func:`configure_tracing` when the settings name an exporter;
with none (the default) no span is recorded, but an incoming ``traceparent`` still reaches the calls
made on its behalf, so a mesh's own tracing sees one trace. The interceptors open and close each
call's span with :func:`server_span` and :func:`end_server_span`. Spans around work inside a call
use the API-only :mod:`strata_serving.tracing`.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator, Mapping
from enum import StrEnum

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

_tracer = trace.get_tracer("strata")


class TraceExporter(StrEnum):
    NONE = "none"
    OTLP = "otlp"  # OTLP over gRPC to ``otlp_endpoint``
    CONSOLE = "console"  # one JSON object per span on stdout, for a quick look


@contextlib.contextmanager
def server_span(method: str, incoming: Mapping[str, str]) -> Iterator[trace.Span]:
    """The span of one served call, continuing the caller's trace when it sent ``traceparent``.

    With no tracer provider installed and no trace context in the call's metadata there is nothing
    to record or pass on: the call runs outside any span, without the cost of extracting, attaching
    and starting a non-recording one (bench/perf/findings.md).
    """
    if _trace_fields().isdisjoint(incoming) and not _provider_installed():
        yield trace.INVALID_SPAN
        return
    token = otel_context.attach(propagate.extract(incoming))
    service, _, name = method.lstrip("/").rpartition("/")
    try:
        with _tracer.start_as_current_span(
            f"{service}/{name}",
            kind=trace.SpanKind.SERVER,
            attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": name},
            record_exception=False,
            set_status_on_exception=False,
        ) as current:
            yield current
    finally:
        otel_context.detach(token)


_fields_of: tuple[object, frozenset[str]] = (None, frozenset())


def _trace_fields() -> frozenset[str]:
    """The metadata keys the installed propagator reads (``traceparent``, ``tracestate``, ``baggage``
    by default), computed again only when another propagator is installed."""
    global _fields_of  # noqa: PLW0603  (a cache of the process-wide propagator's fields)
    textmap = propagate.get_global_textmap()
    if _fields_of[0] is not textmap:
        _fields_of = (textmap, frozenset(textmap.fields))
    return _fields_of[1]


def _provider_installed() -> bool:
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def end_server_span(current: trace.Span, code: grpc.StatusCode) -> None:
    """Record the call's final status on its span (errors as the span's status)."""
    if not current.is_recording():
        return
    current.set_attribute("rpc.grpc.status_code", code.value[0])
    if code is not grpc.StatusCode.OK:
        current.set_status(trace.Status(trace.StatusCode.ERROR, code.name))


def configure_tracing(
    service_name: str,
    exporter: TraceExporter,
    *,
    otlp_endpoint: str | None = None,
    sample_ratio: float = 1.0,
) -> TracerProvider | None:
    """Install the process's tracer provider for ``exporter`` (nothing for NONE) and return it."""
    if exporter is TraceExporter.NONE:
        return None
    provider = tracer_provider(service_name, sample_ratio)
    provider.add_span_processor(BatchSpanProcessor(_exporter(exporter, otlp_endpoint)))
    trace.set_tracer_provider(provider)
    return provider


def tracer_provider(service_name: str, sample_ratio: float = 1.0) -> TracerProvider:
    """A provider naming ``service_name``; follows the caller's sampling decision, else samples
    ``sample_ratio`` of new traces."""
    return TracerProvider(
        resource=Resource.create({"service.name": service_name}),
        sampler=ParentBased(TraceIdRatioBased(sample_ratio)),
        id_generator=_PrivateRandomIds(),
    )


class _PrivateRandomIds(RandomIdGenerator):
    """Random trace and span ids, as the SDK's default makes them, but from a generator of their own:
    the default draws from the process's global ``random`` state, which every span then advances (a
    program embedding the server would see its seeded sequence move per call)."""

    def __init__(self) -> None:
        self._random = random.Random()

    def generate_span_id(self) -> int:
        while (span_id := self._random.getrandbits(64)) == trace.INVALID_SPAN_ID:
            pass
        return span_id

    def generate_trace_id(self) -> int:
        while (trace_id := self._random.getrandbits(128)) == trace.INVALID_TRACE_ID:
            pass
        return trace_id


def _exporter(exporter: TraceExporter, otlp_endpoint: str | None) -> SpanExporter:
    if exporter is TraceExporter.CONSOLE:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    return otlp_exporter(otlp_endpoint)


def otlp_exporter(endpoint: str | None) -> SpanExporter:
    """OTLP/gRPC to ``endpoint``: ``host:port`` and ``http://host:port`` are plaintext (a collector
    in the same cluster or pod), ``https://host:port`` is TLS; any other scheme is refused at
    start-up. (The exporter alone takes a scheme-less endpoint as TLS, so against a plaintext
    collector every span was silently lost.) Unset: the exporter's default, localhost:4317."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # only when asked
        OTLPSpanExporter,
    )

    if not endpoint:
        return OTLPSpanExporter()
    scheme, found, rest = endpoint.partition("://")
    if not found:
        scheme, rest = "http", endpoint
    if scheme not in {"http", "https"}:
        raise ValueError(
            f"STRATA_*_OTLP_ENDPOINT {endpoint!r}: write host:port or http://host:port (plaintext) "
            "or https://host:port (TLS)"
        )
    exporter: SpanExporter = OTLPSpanExporter(endpoint=rest, insecure=scheme == "http")
    return exporter
