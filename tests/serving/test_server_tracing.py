"""The tracer provider the services build (strata_serving.server_tracing.tracer_provider): trace and span
ids of the sizes a W3C traceparent carries (128 and 64 bits), drawn from a generator of its own, so a
program embedding a server keeps its seeded ``random`` sequence; a call's final status on its span.
tests/system/test_tracing.py follows spans through real servers."""

from __future__ import annotations

import random

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from strata_serving.server_tracing import end_server_span, tracer_provider


def test_ids_fit_a_traceparent_and_leave_the_global_random_state_alone() -> None:
    random.seed(7)
    expected = random.random()
    random.seed(7)
    provider = tracer_provider("strata-test")
    try:
        tracer = provider.get_tracer("test")
        ids = []
        for _ in range(64):
            with tracer.start_as_current_span("call") as span:
                ids.append((span.get_span_context().trace_id, span.get_span_context().span_id))
    finally:
        provider.shutdown()
    assert all(0 < trace_id < 2**128 and 0 < span_id < 2**64 for trace_id, span_id in ids)
    assert len({span_id for _, span_id in ids}) == 64
    assert random.random() == expected


@pytest.mark.parametrize(
    ("code", "status", "description"),
    [
        (grpc.StatusCode.OK, trace.StatusCode.UNSET, None),
        (grpc.StatusCode.NOT_FOUND, trace.StatusCode.ERROR, "NOT_FOUND"),
        (grpc.StatusCode.INTERNAL, trace.StatusCode.ERROR, "INTERNAL"),
    ],
)
def test_a_calls_final_code_is_on_its_span_and_an_error_is_its_status(
    code: grpc.StatusCode, status: trace.StatusCode, description: str | None
) -> None:
    provider = tracer_provider("strata-test")
    exported = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    try:
        with provider.get_tracer("test").start_as_current_span("call") as span:
            end_server_span(span, code)
    finally:
        provider.shutdown()
    (finished,) = exported.get_finished_spans()
    assert finished.attributes is not None
    assert finished.attributes["rpc.grpc.status_code"] == code.value[0]
    assert (finished.status.status_code, finished.status.description) == (status, description)
